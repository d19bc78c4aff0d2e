//! The one wrapper every JNI export goes through: it catches panics, maps errors to Java
//! exceptions, and never throws while an exception is pending.

use std::any::Any;
use std::sync::OnceLock;

use jni::errors::ErrorPolicy;
use jni::objects::{JClass, JObject, JString, JThrowable, JValue};
use jni::refs::Global;
use jni::strings::JNIString;
use jni::sys::jint;
use jni::{jni_sig, jni_str, Env, EnvUnowned};

/// Why a native call did not produce its value.
#[derive(Debug)]
pub enum Failure {
    /// idemkit refused or failed the call; Java gets the exception class of its kind.
    Idemkit(idemkit::Error),
    /// As `Idemkit`, for an error the core raised without a key, about a call that has one.
    Keyed(idemkit::Error, String),
    /// A handle was 0 (never created, or already destroyed by its owner).
    NullHandle(&'static str),
    /// An argument Java should never pass (a bug in the binding).
    IllegalArgument(String),
    /// An operation refused in the state it found (an operator action on a record it must not
    /// change): Java gets an `IllegalStateException` with the core's message.
    IllegalState(String),
    /// A JNI call failed; if it threw, that exception is already pending.
    Jni(jni::errors::Error),
}

impl From<jni::errors::Error> for Failure {
    fn from(error: jni::errors::Error) -> Self {
        Failure::Jni(error)
    }
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failure::Idemkit(e) | Failure::Keyed(e, _) => write!(f, "{e}"),
            Failure::NullHandle(what) => write!(f, "{what} is closed (native handle 0)"),
            Failure::IllegalArgument(m) | Failure::IllegalState(m) => f.write_str(m),
            Failure::Jni(e) => write!(f, "JNI call failed: {e}"),
        }
    }
}

impl From<idemkit::Error> for Failure {
    fn from(error: idemkit::Error) -> Self {
        Failure::Idemkit(error)
    }
}

/// What the body of an export answers.
pub type Result<T> = std::result::Result<T, Failure>;

/// Runs `body` as the whole of a native method: its value, or a Java exception and a default.
pub fn entry<'local, T, F>(env: &mut EnvUnowned<'local>, body: F) -> T
where
    T: Default,
    F: FnOnce(&mut Env<'local>) -> Result<T>,
{
    env.with_env(body).resolve::<ThrowJava>()
}

/// The error policy: idemkit errors become `IdempotencyException`s (or the configuration
/// exceptions) through `dev.idemkit.NativeErrors.create`, panics become an internal
/// `IdempotencyException`, a 0 handle a `NullPointerException`.
pub(crate) struct ThrowJava;

impl<T: Default> ErrorPolicy<T, Failure> for ThrowJava {
    type Captures<'unowned_env_local: 'native_method, 'native_method> = ();

    fn on_error<'unowned_env_local: 'native_method, 'native_method>(
        env: &mut Env<'unowned_env_local>,
        _cap: &mut Self::Captures<'unowned_env_local, 'native_method>,
        err: Failure,
    ) -> jni::errors::Result<T> {
        if env.exception_check() {
            // A Java exception is already on its way (thrown by a JNI call): leave it alone.
            return Ok(T::default());
        }
        let summary = err.to_string();
        let thrown = match err {
            Failure::Idemkit(error) => throw_idemkit(env, &error, None),
            Failure::Keyed(error, key) => throw_idemkit(env, &error, Some(&key)),
            Failure::NullHandle(what) => env.throw_new(
                jni_str!("java/lang/NullPointerException"),
                JNIString::from(format!(
                    "{what} is closed or was never opened (native handle 0)"
                )),
            ),
            Failure::IllegalArgument(message) => env.throw_new(
                jni_str!("java/lang/IllegalArgumentException"),
                JNIString::from(message),
            ),
            Failure::IllegalState(message) => env.throw_new(
                jni_str!("java/lang/IllegalStateException"),
                JNIString::from(message),
            ),
            Failure::Jni(error) => throw_internal(env, &format!("JNI call failed: {error}")),
        };
        settle(env, thrown, &summary)
    }

    fn on_panic<'unowned_env_local: 'native_method, 'native_method>(
        env: &mut Env<'unowned_env_local>,
        _cap: &mut Self::Captures<'unowned_env_local, 'native_method>,
        payload: Box<dyn Any + Send + 'static>,
    ) -> jni::errors::Result<T> {
        let message = panic_message(&payload);
        // Dropping a payload may itself panic: never let that unwind into the JVM.
        if let Err(again) = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| drop(payload)))
        {
            std::mem::forget(again);
        }
        if env.exception_check() {
            return Ok(T::default());
        }
        let message = format!("panic in idemkit native code: {message}");
        let thrown = throw_internal(env, &message);
        settle(env, thrown, &message)
    }
}

/// Makes sure an exception is pending before the native method returns its default value: if
/// building the mapped exception failed without leaving one, a plain `IllegalStateException`
/// carries the message instead. (`throw*` answers `Err(JavaException)` once one is pending.)
fn settle<T: Default>(
    env: &mut Env<'_>,
    thrown: jni::errors::Result<()>,
    message: &str,
) -> jni::errors::Result<T> {
    if env.exception_check() {
        return Ok(T::default());
    }
    let detail = match thrown {
        Ok(()) | Err(jni::errors::Error::JavaException) => String::new(),
        Err(other) => format!(" (the exception mapping failed: {other})"),
    };
    match env.throw_new(
        jni_str!("java/lang/IllegalStateException"),
        JNIString::from(format!("idemkit: {message}{detail}")),
    ) {
        Ok(()) | Err(jni::errors::Error::JavaException) => Ok(T::default()),
        Err(other) => Err(other),
    }
}

fn panic_message(payload: &Box<dyn Any + Send + 'static>) -> String {
    if let Some(s) = payload.downcast_ref::<&'static str>() {
        (*s).to_owned()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "non-string panic payload".to_owned()
    }
}

/// `dev.idemkit.NativeErrors` and its static factory, looked up once.
struct ErrorFactory {
    class: Global<JClass<'static>>,
    create: jni::objects::JStaticMethodID,
}

static FACTORY: OnceLock<ErrorFactory> = OnceLock::new();

fn factory(env: &mut Env<'_>) -> jni::errors::Result<&'static ErrorFactory> {
    if let Some(f) = FACTORY.get() {
        return Ok(f);
    }
    let class = env.find_class(jni_str!("dev/idemkit/NativeErrors"))?;
    let create = env.get_static_method_id(
        &class,
        jni_str!("create"),
        jni_sig!("(ILjava/lang/String;Ljava/lang/String;Ljava/lang/String;Ljava/lang/String;Ljava/lang/String;Z)Ljava/lang/RuntimeException;"),
    )?;
    let class = env.new_global_ref(&class)?;
    Ok(FACTORY.get_or_init(|| ErrorFactory { class, create }))
}

/// Builds the Java exception for `code` through the one Java-side mapping, and throws it.
/// `ran`: this call ran the body (the core's answer for a held failure).
#[allow(clippy::too_many_arguments)]
fn throw_coded(
    env: &mut Env<'_>,
    code: jint,
    message: &str,
    tool: Option<&str>,
    key: Option<&str>,
    error_type: Option<&str>,
    error_message: Option<&str>,
    ran: bool,
) -> jni::errors::Result<()> {
    let factory = factory(env)?;
    let message = JString::from_str(env, message)?;
    let mut optional = |s: Option<&str>| -> jni::errors::Result<JObject<'_>> {
        Ok(match s {
            Some(s) => JString::from_str(env, s)?.into(),
            None => JObject::null(),
        })
    };
    let tool = optional(tool)?;
    let key = optional(key)?;
    let error_type = optional(error_type)?;
    let error_message = optional(error_message)?;
    let args = [
        JValue::Int(code).as_jni(),
        JValue::Object(&message).as_jni(),
        JValue::Object(&tool).as_jni(),
        JValue::Object(&key).as_jni(),
        JValue::Object(&error_type).as_jni(),
        JValue::Object(&error_message).as_jni(),
        JValue::Bool(ran).as_jni(),
    ];
    // SAFETY: the method ID was looked up on this class with exactly this signature.
    let created = unsafe {
        env.call_static_method_unchecked(
            &factory.class,
            factory.create,
            jni::signature::ReturnType::Object,
            &args,
        )?
    };
    let throwable: JThrowable = env.cast_local::<JThrowable>(created.l()?)?;
    env.throw(throwable)
}

/// Throws `error`'s exception; `call_key` is the call's key for an error that names none itself.
fn throw_idemkit(
    env: &mut Env<'_>,
    error: &idemkit::Error,
    call_key: Option<&str>,
) -> jni::errors::Result<()> {
    use idemkit::Error as E;
    let (tool, error_type, error_message) = match error {
        E::InvalidKey { tool, .. }
        | E::FailFast { tool, .. }
        | E::InProgress { tool, .. }
        | E::Indeterminate { tool, .. }
        | E::StoreUnavailable { tool, .. }
        | E::OutcomeTooLarge { tool, .. }
        | E::Timeout { tool, .. }
        | E::PayloadMismatch { tool, .. }
        | E::UpstreamPayloadMismatch { tool, .. } => (Some(tool.as_str()), None, None),
        E::CachedFailure {
            tool,
            error_type,
            message,
            ..
        } => (
            Some(tool.as_str()),
            Some(error_type.as_str()),
            Some(message.as_str()),
        ),
        _ => (None, None, None),
    };
    throw_coded(
        env,
        error.kind().code(),
        // The settings it names as Java writes them (`keyArguments`).
        &error.render(crate::ops::java_name),
        tool,
        error.key().or(call_key),
        error_type,
        error_message,
        matches!(error, E::Indeterminate { ran: true, .. }),
    )
}

fn throw_internal(env: &mut Env<'_>, message: &str) -> jni::errors::Result<()> {
    let code = idemkit::ErrorKind::Internal.code();
    throw_coded(env, code, message, None, None, None, None, false)
}
