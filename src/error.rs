//! The one error type of idemkit, with a stable kind per case that the Java and C faces map.

use crate::key::KeyError;

/// A stable, language-neutral name for each way a call can be refused or fail.
///
/// The numeric codes are part of the C ABI and the Java binding; never renumber them. New kinds
/// may be added, so a `match` needs a wildcard arm.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(i32)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The key could not be derived from the input (bad JSON, blank explicit key, ...). Nothing ran.
    InvalidKey = 1,
    /// A policy, tool or store was configured wrongly. Raised when it is built, never per call.
    Configuration = 2,
    /// A repeat of a call whose remembered outcome is a failure (`RETURN_CACHED` with `cacheFailures`).
    CachedFailure = 3,
    /// A repeat under `FAIL_FAST`: the key is remembered or in progress. Nothing ran.
    FailFast = 4,
    /// The key was still in progress when the caller's deadline came. Nothing ran.
    InProgress = 5,
    /// The key's claim was abandoned (its lease ended without an outcome): the effect may or may
    /// not have happened, so an operator has to resolve the record. Nothing ran.
    Indeterminate = 6,
    /// The store could not be reached or answered an error. Nothing ran.
    StoreUnavailable = 7,
    /// The remembered result was too large to keep; the first caller got it, repeats get this.
    OutcomeTooLarge = 8,
    /// The call's deadline passed while its body ran; the claim stays in progress.
    Timeout = 9,
    /// A bug inside idemkit (a panic caught at a language boundary, a broken invariant).
    Internal = 10,
    /// A repeat of a key with another payload than the call that made its record (SPEC v1.1
    /// rule 9; HTTP's 422). Nothing ran: a new request needs a new key.
    PayloadMismatch = 11,
}

impl ErrorKind {
    /// Every kind, in code order.
    pub const ALL: [ErrorKind; 11] = [
        ErrorKind::InvalidKey,
        ErrorKind::Configuration,
        ErrorKind::CachedFailure,
        ErrorKind::FailFast,
        ErrorKind::InProgress,
        ErrorKind::Indeterminate,
        ErrorKind::StoreUnavailable,
        ErrorKind::OutcomeTooLarge,
        ErrorKind::Timeout,
        ErrorKind::Internal,
        ErrorKind::PayloadMismatch,
    ];

    /// The stable numeric code (C ABI, Java).
    pub fn code(self) -> i32 {
        self as i32
    }

    /// The kind with this code, if any.
    pub fn from_code(code: i32) -> Option<ErrorKind> {
        ErrorKind::ALL.iter().copied().find(|k| k.code() == code)
    }

    /// The stable snake_case name (logs, CLI JSON, Java `kind()` names).
    pub fn name(self) -> &'static str {
        match self {
            ErrorKind::InvalidKey => "invalid_key",
            ErrorKind::Configuration => "configuration",
            ErrorKind::CachedFailure => "cached_failure",
            ErrorKind::FailFast => "fail_fast",
            ErrorKind::InProgress => "in_progress",
            ErrorKind::Indeterminate => "indeterminate",
            ErrorKind::StoreUnavailable => "store_unavailable",
            ErrorKind::OutcomeTooLarge => "outcome_too_large",
            ErrorKind::Timeout => "timeout",
            ErrorKind::Internal => "internal",
            ErrorKind::PayloadMismatch => "payload_mismatch",
        }
    }
}

impl std::fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Why an idemkit call did not produce a fresh result.
///
/// Each variant has one stable [`ErrorKind`] ([`Error::kind`]), the same code in Java and C. The
/// messages name the tool, the key and what to do; they never contain a store password. New
/// variants may be added, so a `match` needs a wildcard arm.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The key could not be derived from the call's input (bad JSON, a blank explicit key, a
    /// tenant over 1,024 bytes, ...). Kind [`ErrorKind::InvalidKey`]; nothing ran and the store
    /// was not touched. Fix the input.
    #[error("invalid idempotency key for `{tool}`: {source}")]
    InvalidKey {
        /// The tool whose call was refused.
        tool: String,
        /// What is wrong with the input, and where.
        #[source]
        source: KeyError,
    },
    /// A tool or store was configured wrongly (an empty tool name, a bad store URL, ...). Kind
    /// [`ErrorKind::Configuration`]; raised when it is built or opened, never per call.
    #[error("{0}")]
    Configuration(String),
    /// A policy or tool setting is out of range or inconsistent (a zero TTL, a timeout not
    /// shorter than the lease, ...). Kind [`ErrorKind::Configuration`]; raised by [`Tool::new`],
    /// [`Tool::with_timeout`] and [`Tool::check_parameters`]. The message names the settings as
    /// the Rust API does; [`SettingMessage::render`] names them as another face does.
    ///
    /// [`Tool::new`]: crate::Tool::new
    /// [`Tool::with_timeout`]: crate::Tool::with_timeout
    /// [`Tool::check_parameters`]: crate::Tool::check_parameters
    #[error("{0}")]
    InvalidSetting(SettingMessage),
    /// A repeat of a call whose remembered outcome is a failure (`RETURN_CACHED` with
    /// `cache_failures`). Kind [`ErrorKind::CachedFailure`]; the body did not run again.
    #[error("`{tool}` failed before with {error_type}: {message} (key {key}); the failure is remembered, so the call was not run again")]
    CachedFailure {
        /// The tool.
        tool: String,
        /// The call's key (64 hex digits).
        key: String,
        /// The type name of the original error.
        error_type: String,
        /// The message of the original error.
        message: String,
    },
    /// A repeat under `FAIL_FAST`: the key is remembered or in progress. Kind
    /// [`ErrorKind::FailFast`]; nothing ran.
    #[error(
        "`{tool}` was already {state} under key {key} and its policy is FAIL_FAST; nothing was run"
    )]
    FailFast {
        /// The tool.
        tool: String,
        /// The call's key (64 hex digits).
        key: String,
        /// `"completed"` or `"in progress"`.
        state: &'static str,
    },
    /// Another call still held the key when this caller's deadline came. Kind
    /// [`ErrorKind::InProgress`]; nothing ran. Retry later: the holder's outcome will answer.
    #[error("`{tool}` is still in progress under key {key} in another call and the deadline passed after waiting {waited_ms} ms; nothing was run")]
    InProgress {
        /// The tool.
        tool: String,
        /// The call's key (64 hex digits).
        key: String,
        /// How long the caller waited, in milliseconds.
        waited_ms: u64,
    },
    /// The key's outcome is unknown: its claim was abandoned (its lease ended without an
    /// outcome), or an `EFFECTFUL` body failed and its failure is held (SPEC v1.1 rule 7). The
    /// effect may or may not have happened. Kind [`ErrorKind::Indeterminate`]. `ran` says whose
    /// body it was: this call's (it ran and failed just now) or an earlier call's (nothing ran
    /// now). An operator resolves the record (`idemkit resolve`), or it expires.
    #[error("`{tool}` has an indeterminate outcome under key {key}: {}, so the effect may or may not have happened; {}. Release or resolve this one key in-process (Rust `idemkit::store::settle_key`, Java `IdempotencyStore.releaseKey`/`resolveKey`, C `idemkit_store_release_key`/`idemkit_store_resolve_key`), with the CLI (idemkit resolve --key {key}{}) or wait for it to expire", indeterminate_cause(.held.as_deref(), *.ran), if *.ran { "do not retry it before checking its effect" } else { "nothing was run" }, tenant_flag(.tenant.as_deref()))]
    Indeterminate {
        /// The tool.
        tool: String,
        /// The call's key (64 hex digits).
        key: String,
        /// The call's tenant (records are tenant-scoped, so the operator command names it).
        tenant: Option<String>,
        /// For an `EFFECTFUL` tool whose body failed: the failure that was held (SPEC v1.1
        /// rule 7). `None`: a claim whose lease ended without an outcome.
        held: Option<Box<crate::record::Failure>>,
        /// `true`: this call ran the body and its failure is the one held; `false`: this call
        /// met a record an earlier call left (held or abandoned) and ran nothing. Faces tell a
        /// caller what happened to its own call from it.
        ran: bool,
    },
    /// The store could not be reached or answered an error during a tool's call. Kind
    /// [`ErrorKind::StoreUnavailable`]; the body did not run. The driver's error, when there
    /// is one, is the [`source`](std::error::Error::source).
    #[error("idempotency store unavailable for `{tool}`: {message}; nothing was run")]
    StoreUnavailable {
        /// The tool.
        tool: String,
        /// What the store said, and which store (without secrets).
        message: String,
        /// The Redis or PostgreSQL driver's error behind it, if any.
        #[source]
        source: Option<DriverError>,
    },
    /// A store operation that is no tool's call (opening a store, forgetting a tenant, ...)
    /// could not reach the store or got an error back. Its kind is
    /// [`ErrorKind::StoreUnavailable`]; it names no tool. The driver's error, when there is
    /// one, is the [`source`](std::error::Error::source).
    #[error("{operation}: {message}")]
    StoreOperation {
        /// What was being done.
        operation: StoreOperation,
        /// What the store said (without secrets).
        message: String,
        /// The Redis or PostgreSQL driver's error behind it, if any.
        #[source]
        source: Option<DriverError>,
    },
    /// The remembered result was larger than the store keeps: the first caller got it, repeats
    /// get this. Kind [`ErrorKind::OutcomeTooLarge`]; nothing ran.
    #[error("`{tool}` completed under key {key} but its result ({bytes} bytes) was larger than the store keeps, so it cannot be replayed; nothing was run")]
    OutcomeTooLarge {
        /// The tool.
        tool: String,
        /// The call's key (64 hex digits).
        key: String,
        /// The size of the result, in bytes.
        bytes: u64,
    },
    /// The call's deadline passed while its body ran. Kind [`ErrorKind::Timeout`].
    #[error("`{tool}` ran past its deadline of {timeout_ms} ms under key {key}; {outcome}")]
    Timeout {
        /// The tool.
        tool: String,
        /// The call's key (64 hex digits).
        key: String,
        /// The tool's deadline, in milliseconds.
        timeout_ms: u64,
        /// What became of the body's outcome (SPEC v1.1 rule 3): recorded late, released, or
        /// unknown with the claim left in progress.
        outcome: String,
    },
    /// A repeat of a key whose record was made by a call with another payload: the fingerprints
    /// of the two inputs differ (SPEC v1.1 rule 9). Kind [`ErrorKind::PayloadMismatch`]; nothing
    /// ran and the record is unchanged. Checked for `EXPLICIT` keys given a payload, and for
    /// `HASH_INPUT` with `key_arguments` when the policy asks
    /// ([`Policy::with_reject_payload_mismatch`](crate::Policy::with_reject_payload_mismatch)).
    #[error("`{tool}` was called under key {key} with another payload than the call that made the record{}; nothing was run. A new request needs a new key", tenant_note(.tenant.as_deref()))]
    PayloadMismatch {
        /// The tool.
        tool: String,
        /// The call's key (64 hex digits).
        key: String,
        /// The call's tenant.
        tenant: Option<String>,
    },
    /// The upstream answered a request sent under the call's key with its own payload-mismatch
    /// status (422, or 417 as some middleware sends): it has a record of this key made by a
    /// request with another payload (SPEC v1.1 rule 12). Kind [`ErrorKind::PayloadMismatch`];
    /// the claim was released and nothing was recorded. Only for tools whose upstream honours
    /// the key ([`Policy::with_upstream_honors_key`](crate::Policy::with_upstream_honors_key)).
    #[error("{}", upstream_payload_mismatch(.tool, .key, .tenant, *.status, Setting::rust_name))]
    UpstreamPayloadMismatch {
        /// The tool.
        tool: String,
        /// The call's key (64 hex digits).
        key: String,
        /// The call's tenant.
        tenant: Option<String>,
        /// The upstream's status (422 or 417).
        status: u16,
    },
    /// A bug inside idemkit (a panic caught at a language boundary, a broken invariant). Kind
    /// [`ErrorKind::Internal`]; please report it.
    #[error("internal error in idemkit: {0}")]
    Internal(String),
}

/// ` (tenant "t")`, or nothing without a tenant, for [`Error::PayloadMismatch`]'s message.
fn tenant_note(tenant: Option<&str>) -> String {
    tenant
        .map(|t| format!(" (tenant {t:?})"))
        .unwrap_or_default()
}

/// The text of [`Error::UpstreamPayloadMismatch`], naming the key-arguments setting by `name`
/// (each face as its users write it: Rust `` `key_arguments` ``, Java `keyArguments`).
fn upstream_payload_mismatch(
    tool: &str,
    key: &str,
    tenant: &Option<String>,
    status: u16,
    name: impl Fn(Setting) -> &'static str,
) -> String {
    format!(
        "`{tool}` sent key {key} upstream and the upstream answered {status}: it holds this key for a request with another payload{}; nothing was recorded. The upstream compares the whole request, so an argument outside {} changed it; send the original payload, or use a new key for a new request",
        tenant_note(tenant.as_deref()),
        name(Setting::KeyArguments)
    )
}

/// Why an outcome is indeterminate, for [`Error::Indeterminate`]'s message.
fn indeterminate_cause(held: Option<&crate::record::Failure>, ran: bool) -> String {
    match held {
        None => "a call claimed it and its lease ended without an outcome".to_owned(),
        Some(f) => format!(
            "{} body failed with {}: {} and the tool is EFFECTFUL, so the failure is held",
            if ran {
                "this call's"
            } else {
                "an earlier call's"
            },
            f.error_type,
            f.message
        ),
    }
}

impl Error {
    /// The stable kind of this error.
    pub fn kind(&self) -> ErrorKind {
        match self {
            Error::InvalidKey { .. } => ErrorKind::InvalidKey,
            Error::Configuration(_) | Error::InvalidSetting(_) => ErrorKind::Configuration,
            Error::CachedFailure { .. } => ErrorKind::CachedFailure,
            Error::FailFast { .. } => ErrorKind::FailFast,
            Error::InProgress { .. } => ErrorKind::InProgress,
            Error::Indeterminate { .. } => ErrorKind::Indeterminate,
            Error::StoreUnavailable { .. } | Error::StoreOperation { .. } => {
                ErrorKind::StoreUnavailable
            }
            Error::OutcomeTooLarge { .. } => ErrorKind::OutcomeTooLarge,
            Error::Timeout { .. } => ErrorKind::Timeout,
            Error::PayloadMismatch { .. } | Error::UpstreamPayloadMismatch { .. } => {
                ErrorKind::PayloadMismatch
            }
            Error::Internal(_) => ErrorKind::Internal,
        }
    }

    /// The 64-hex key the error is about, when it is about one.
    pub fn key(&self) -> Option<&str> {
        match self {
            Error::CachedFailure { key, .. }
            | Error::FailFast { key, .. }
            | Error::InProgress { key, .. }
            | Error::Indeterminate { key, .. }
            | Error::OutcomeTooLarge { key, .. }
            | Error::Timeout { key, .. }
            | Error::PayloadMismatch { key, .. }
            | Error::UpstreamPayloadMismatch { key, .. } => Some(key),
            _ => None,
        }
    }

    /// The error's message with every setting it names called by `name`: how a face other than
    /// Rust shows it (see [`SettingMessage::render`]); the [`Display`](std::fmt::Display) uses
    /// [`Setting::rust_name`].
    pub fn render(&self, name: impl Fn(Setting) -> &'static str) -> String {
        match self {
            Error::InvalidSetting(message) => message.render(name),
            Error::UpstreamPayloadMismatch {
                tool,
                key,
                tenant,
                status,
            } => upstream_payload_mismatch(tool, key, tenant, *status, name),
            other => other.to_string(),
        }
    }

    pub(crate) fn config(message: impl Into<String>) -> Error {
        Error::Configuration(message.into())
    }

    /// The Redis or PostgreSQL driver's error behind a store error, if any (the same as
    /// [`source`](std::error::Error::source), typed).
    pub fn driver_error(&self) -> Option<&DriverError> {
        match self {
            Error::StoreUnavailable { source, .. } | Error::StoreOperation { source, .. } => {
                source.as_ref()
            }
            _ => None,
        }
    }
}

/// A policy or tool setting, as an [`Error::InvalidSetting`] names it.
///
/// Each face names settings its own way: the Rust API `ttl`, Java `ttlSeconds`, C
/// `ttl_seconds`. The core decides what is wrong; a face only chooses the names
/// ([`SettingMessage::render`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Setting {
    /// How long a record is kept ([`Policy::ttl`](crate::Policy::ttl)).
    Ttl,
    /// How long a claim holds ([`Policy::lease`](crate::Policy::lease)).
    Lease,
    /// The caller's deadline ([`Tool::with_timeout`](crate::Tool::with_timeout)).
    Timeout,
    /// The input members that identify the effect
    /// ([`Policy::key_arguments`](crate::Policy::key_arguments)).
    KeyArguments,
    /// Whether failures are recorded ([`Policy::cache_failures`](crate::Policy::cache_failures)).
    CacheFailures,
    /// What the body does to the world ([`Policy::effect`](crate::Policy::effect)).
    Effect,
    /// Error types whose failures had no effect
    /// ([`Policy::no_effect_errors`](crate::Policy::no_effect_errors)).
    NoEffectErrors,
    /// Error types whose failures are permanent
    /// ([`Policy::permanent_errors`](crate::Policy::permanent_errors)).
    PermanentErrors,
    /// Runs in all of a retry policy
    /// ([`RetryPolicy::max_attempts`](crate::RetryPolicy::max_attempts)).
    MaxAttempts,
    /// The first pause of a retry policy
    /// ([`RetryPolicy::initial_backoff`](crate::RetryPolicy::initial_backoff)).
    InitialBackoff,
    /// The longest pause of a retry policy
    /// ([`RetryPolicy::max_backoff`](crate::RetryPolicy::max_backoff)).
    MaxBackoff,
    /// The error types a retry policy retries
    /// ([`RetryPolicy::retry_on`](crate::RetryPolicy::retry_on)).
    RetryOn,
}

impl Setting {
    /// The setting's name in the Rust API, as the [`Display`](std::fmt::Display) of an
    /// [`Error::InvalidSetting`] shows it: `` `ttl` ``, `` `lease` ``, `` `timeout` ``,
    /// `` `key_arguments` ``.
    pub fn rust_name(self) -> &'static str {
        match self {
            Setting::Ttl => "`ttl`",
            Setting::Lease => "`lease`",
            Setting::Timeout => "`timeout`",
            Setting::KeyArguments => "`key_arguments`",
            Setting::CacheFailures => "`cache_failures`",
            Setting::Effect => "`effect`",
            Setting::NoEffectErrors => "`no_effect_errors`",
            Setting::PermanentErrors => "`permanent_errors`",
            Setting::MaxAttempts => "`max_attempts`",
            Setting::InitialBackoff => "`initial_backoff`",
            Setting::MaxBackoff => "`max_backoff`",
            Setting::RetryOn => "`retry_on`",
        }
    }
}

/// The text of an [`Error::InvalidSetting`], with the settings it names kept apart so that each
/// face can name them as its users write them.
///
/// Its [`Display`](std::fmt::Display) uses [`Setting::rust_name`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SettingMessage {
    parts: Vec<Part>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Part {
    Text(String),
    Setting(Setting),
}

impl SettingMessage {
    pub(crate) fn new() -> SettingMessage {
        SettingMessage { parts: Vec::new() }
    }

    /// Appends literal text.
    pub(crate) fn text(mut self, text: impl Into<String>) -> SettingMessage {
        self.parts.push(Part::Text(text.into()));
        self
    }

    /// Appends the name of a setting, as the face rendering the message calls it.
    pub(crate) fn setting(mut self, setting: Setting) -> SettingMessage {
        self.parts.push(Part::Setting(setting));
        self
    }

    /// The settings the message names, in order (a setting named twice is listed twice).
    pub fn settings(&self) -> impl Iterator<Item = Setting> + '_ {
        self.parts.iter().filter_map(|p| match p {
            Part::Setting(s) => Some(*s),
            Part::Text(_) => None,
        })
    }

    /// The message with every setting called by `name`: how a face other than Rust shows the
    /// error (Java: `|s| match s { Setting::Ttl => "ttlSeconds", ... }`).
    pub fn render(&self, name: impl Fn(Setting) -> &'static str) -> String {
        let mut out = String::new();
        for part in &self.parts {
            match part {
                Part::Text(text) => out.push_str(text),
                Part::Setting(setting) => out.push_str(name(*setting)),
            }
        }
        out
    }
}

impl std::fmt::Display for SettingMessage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.render(Setting::rust_name))
    }
}

impl From<SettingMessage> for Error {
    fn from(message: SettingMessage) -> Error {
        Error::InvalidSetting(message)
    }
}

/// The error of the Redis or PostgreSQL driver behind a store error, kept as the
/// [`source`](std::error::Error::source) of [`StoreError::Unavailable`],
/// [`Error::StoreUnavailable`] and [`Error::StoreOperation`].
///
/// Its [`Display`](std::fmt::Display), and that of each error in its own `source()` chain, is
/// the driver's text with the store URL's secrets hidden when the store was being opened (SPEC
/// v1.1 rule 11). [`DriverError::get_ref`] gives the driver's error itself, to downcast
/// (`redis::RedisError`, `tokio_postgres::Error`); its own text is not redacted, so neither
/// `Display` nor `Debug` of a `DriverError` shows it.
#[derive(Clone)]
pub struct DriverError(std::sync::Arc<DriverLink>);

/// One error of a [`DriverError`]'s chain.
struct DriverLink {
    text: String,
    next: Option<DriverError>,
    original: Option<Box<dyn std::error::Error + Send + Sync + 'static>>,
}

impl DriverError {
    /// Keeps `error`, with its text and the texts of its sources copied for display.
    #[cfg_attr(not(any(feature = "redis", feature = "postgres")), allow(dead_code))]
    pub(crate) fn new(error: impl std::error::Error + Send + Sync + 'static) -> DriverError {
        let mut texts = vec![error.to_string()];
        let mut source = error.source();
        while let Some(cause) = source {
            texts.push(cause.to_string());
            source = cause.source();
        }
        let original: Box<dyn std::error::Error + Send + Sync + 'static> = Box::new(error);
        DriverError::chain(texts, Some(original))
    }

    /// The chain of `texts` (the first on top), holding `original` at the top.
    fn chain(
        texts: Vec<String>,
        mut original: Option<Box<dyn std::error::Error + Send + Sync + 'static>>,
    ) -> DriverError {
        let count = texts.len();
        let mut next = None;
        for (i, text) in texts.into_iter().rev().enumerate() {
            next = Some(DriverError(std::sync::Arc::new(DriverLink {
                text,
                next,
                original: if i + 1 == count {
                    original.take()
                } else {
                    None
                },
            })));
        }
        next.expect("one text at least")
    }

    /// The driver's error itself (`None` for the errors further down its chain), to downcast.
    /// Its text may contain what [`Display`](std::fmt::Display) hides: do not show it.
    pub fn get_ref(&self) -> Option<&(dyn std::error::Error + Send + Sync + 'static)> {
        self.0.original.as_deref()
    }

    /// The texts of the chain, top first.
    fn texts(&self) -> Vec<&str> {
        let mut texts = Vec::new();
        let mut link = Some(self);
        while let Some(e) = link {
            texts.push(e.0.text.as_str());
            link = e.0.next.as_ref();
        }
        texts
    }

    /// The same error with `hide` applied to every text of its chain (say, hiding the secrets
    /// of the URL being opened).
    #[cfg_attr(not(any(feature = "redis", feature = "postgres")), allow(dead_code))]
    pub(crate) fn scrubbed(self, hide: &dyn Fn(&str) -> String) -> DriverError {
        let texts = self.texts().into_iter().map(hide).collect();
        let original = match std::sync::Arc::try_unwrap(self.0) {
            Ok(mut link) => link.original.take(),
            // Shared: the copy keeps the texts only (the original stays with the other holder).
            Err(_) => None,
        };
        DriverError::chain(texts, original)
    }
}

/// The texts of the chain, never the driver's error itself (its `Debug` may show what
/// `Display` hides).
impl std::fmt::Debug for DriverError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.texts()).finish()
    }
}

impl std::fmt::Display for DriverError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0.text)
    }
}

impl std::error::Error for DriverError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.0
            .next
            .as_ref()
            .map(|e| e as &(dyn std::error::Error + 'static))
    }
}

/// Two driver errors are equal when they read the same (the driver's own error has no `==`).
impl PartialEq for DriverError {
    fn eq(&self, other: &DriverError) -> bool {
        self.texts() == other.texts()
    }
}

impl Eq for DriverError {}

/// A store operation outside the calls of tools, named in [`Error::StoreOperation`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum StoreOperation {
    /// Opening the store; `store` is its URL without secrets.
    Open {
        /// The store's URL, without secrets.
        store: String,
    },
    /// Deleting every record of a tenant (`None`: the records without a tenant).
    Forget {
        /// The tenant, in NFC (`None`: the records without a tenant).
        tenant: Option<String>,
    },
    /// Deleting the expired records.
    PurgeExpired,
    /// Creating the store's table.
    CreateTable,
    /// Releasing or resolving one key (the in-process operator action, `settle_key`).
    SettleKey {
        /// The 64-hex key.
        key: String,
        /// The tenant, in NFC (`None`: no tenant).
        tenant: Option<String>,
    },
}

impl std::fmt::Display for StoreOperation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StoreOperation::Open { store } => write!(f, "cannot open {store}"),
            StoreOperation::Forget { tenant: Some(t) } => write!(
                f,
                "store unavailable while forgetting tenant {}",
                shell_word(t)
            ),
            StoreOperation::Forget { tenant: None } => {
                f.write_str("store unavailable while forgetting the records without a tenant")
            }
            StoreOperation::PurgeExpired => {
                f.write_str("store unavailable while purging expired records")
            }
            StoreOperation::CreateTable => {
                f.write_str("store unavailable while creating the table")
            }
            StoreOperation::SettleKey { key, tenant } => write!(
                f,
                "store unavailable while settling key {key}{}",
                tenant_flag(tenant.as_deref())
            ),
        }
    }
}

/// ` --tenant '<tenant>'` for an operator command about a record of `tenant`, or nothing.
fn tenant_flag(tenant: Option<&str>) -> String {
    tenant
        .map(|t| format!(" --tenant {}", shell_word(t)))
        .unwrap_or_default()
}

/// Whether `c` must not reach a terminal raw: control characters (C0, DEL, C1), which can move
/// the cursor, end a line or start an escape sequence, and the bidirectional formatting and
/// line-separator characters, which can make text read differently from what it is.
pub fn is_unsafe_to_show(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{061C}' | '\u{200E}' | '\u{200F}' | '\u{2028}'..='\u{202E}' | '\u{2066}'..='\u{2069}'
        )
}

/// `text` for a human-readable line: every character [`is_unsafe_to_show`] and the backslash
/// escaped as in a Rust string literal (`\n`, `\u{1b}`, `\\`), so a stored text can neither
/// drive the terminal nor fake a line of output. Other text is unchanged.
pub fn escape_for_display(text: &str) -> std::borrow::Cow<'_, str> {
    if !text.chars().any(|c| c == '\\' || is_unsafe_to_show(c)) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if is_unsafe_to_show(c) => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
            c => out.push(c),
        }
    }
    std::borrow::Cow::Owned(out)
}

/// `text` as one word of a shell command an operator may paste: in single quotes, so nothing in
/// it is expanded (a `'` inside becomes `'\''`). Text with a character [`is_unsafe_to_show`] is
/// written as `$'...'` instead, with those characters' UTF-8 bytes as `\xHH` escapes (bash, zsh,
/// ksh), so the command shows no raw control character and still gives back the exact text.
pub fn shell_word(text: &str) -> String {
    if !text.chars().any(is_unsafe_to_show) {
        return format!("'{}'", text.replace('\'', "'\\''"));
    }
    let mut out = String::from("$'");
    for c in text.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\'' => out.push_str("\\'"),
            c if is_unsafe_to_show(c) => {
                let mut bytes = [0u8; 4];
                for b in c.encode_utf8(&mut bytes).bytes() {
                    out.push_str(&format!("\\x{b:02x}"));
                }
            }
            c => out.push(c),
        }
    }
    out.push('\'');
    out
}

/// A store failure: the server is unreachable, timed out or answered an error.
///
/// The executor turns it into [`Error::StoreUnavailable`]; it never reads as permission to run.
/// New variants may be added, so a `match` needs a wildcard arm.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// The server could not be reached, timed out or answered an error: the message says
    /// which store (without secrets) and what happened; the driver's error is the source.
    #[error("{message}")]
    Unavailable {
        /// What happened, and where.
        message: String,
        /// The Redis or PostgreSQL driver's error behind it, if any.
        #[source]
        source: Option<DriverError>,
    },
    /// The store is set up wrongly (a missing table, a bad URL, an evicting Redis): fix the
    /// configuration; retrying will not help.
    #[error("store misconfigured: {0}")]
    Configuration(String),
    /// A record could not be read back: it was written by something else or by an unknown
    /// format version.
    #[error("record in the store is corrupt or of an unknown format: {0}")]
    Corrupt(String),
}

impl StoreError {
    /// An [`StoreError::Unavailable`] with this message and no driver error (for stores of
    /// your own).
    pub fn unavailable(message: impl std::fmt::Display) -> StoreError {
        StoreError::Unavailable {
            message: message.to_string(),
            source: None,
        }
    }

    /// An [`StoreError::Unavailable`] whose message is `context` and the driver's error (as
    /// `{context}: {error}`), keeping the error as the source.
    #[cfg_attr(not(feature = "redis"), allow(dead_code))]
    pub(crate) fn driver(
        context: impl std::fmt::Display,
        error: impl std::error::Error + Send + Sync + 'static,
    ) -> StoreError {
        StoreError::Unavailable {
            message: format!("{context}: {error}"),
            source: Some(DriverError::new(error)),
        }
    }

    /// An [`StoreError::Unavailable`] with this whole message, keeping `error` as the source.
    #[cfg_attr(not(feature = "postgres"), allow(dead_code))]
    pub(crate) fn driver_message(
        message: impl Into<String>,
        error: impl std::error::Error + Send + Sync + 'static,
    ) -> StoreError {
        StoreError::Unavailable {
            message: message.into(),
            source: Some(DriverError::new(error)),
        }
    }

    /// The driver's error behind this one, if any.
    pub fn driver_error(&self) -> Option<&DriverError> {
        match self {
            StoreError::Unavailable { source, .. } => source.as_ref(),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The Rust face names the Rust setting (`key_arguments`); another face renders its own.
    #[test]
    fn an_upstream_payload_mismatch_names_the_setting_as_each_face_writes_it() {
        let error = Error::UpstreamPayloadMismatch {
            tool: "create_order".into(),
            key: "ab".repeat(32),
            tenant: None,
            status: 422,
        };
        let rust = error.to_string();
        assert!(
            rust.contains("an argument outside `key_arguments` changed it"),
            "{rust}"
        );
        assert!(!rust.contains("keyArguments"), "{rust}");
        let java = error.render(|s| match s {
            Setting::KeyArguments => "keyArguments",
            other => other.rust_name(),
        });
        assert!(
            java.contains("an argument outside keyArguments changed it"),
            "{java}"
        );
        assert_eq!(java.replace("keyArguments", "`key_arguments`"), rust);
    }

    #[derive(Debug, thiserror::Error)]
    #[error("cannot log in as app with password hunter2")]
    struct Echoing(#[source] std::io::Error);

    /// A driver error keeps its chain as texts, scrubbed everywhere when asked; Debug shows
    /// only those texts; the driver's error itself stays reachable to downcast.
    #[test]
    fn a_driver_error_is_a_source_chain_without_secrets() {
        let io = std::io::Error::new(std::io::ErrorKind::PermissionDenied, "hunter2 refused");
        let driver = DriverError::new(Echoing(io)).scrubbed(&|t| t.replace("hunter2", "***"));
        let error = Error::StoreOperation {
            operation: StoreOperation::Open {
                store: "postgres://app:***@db/app".into(),
            },
            message: "cannot connect".into(),
            source: Some(driver.clone()),
        };
        let mut shown = format!("{error} {error:?}");
        let mut source = std::error::Error::source(&error);
        let mut texts = Vec::new();
        while let Some(cause) = source {
            shown.push_str(&format!(" {cause} {cause:?}"));
            texts.push(cause.to_string());
            source = cause.source();
        }
        assert_eq!(
            texts,
            ["cannot log in as app with password ***", "*** refused"]
        );
        assert!(!shown.contains("hunter2"), "{shown}");
        let original = driver.get_ref().expect("the driver's error");
        assert!(original.downcast_ref::<Echoing>().is_some());
        assert_eq!(error.driver_error(), Some(&driver));
    }

    /// An operation error names the operation in words, never as a tool in backticks.
    #[test]
    fn operation_errors_name_the_operation() {
        let forget = Error::StoreOperation {
            operation: StoreOperation::Forget {
                tenant: Some("acme".into()),
            },
            message: "Redis at redis://127.0.0.1:6390/0: connection refused".into(),
            source: None,
        };
        assert_eq!(forget.kind(), ErrorKind::StoreUnavailable);
        assert_eq!(
            forget.to_string(),
            "store unavailable while forgetting tenant 'acme': Redis at redis://127.0.0.1:6390/0: connection refused"
        );
        let open = Error::StoreOperation {
            operation: StoreOperation::Open {
                store: "redis://:***@127.0.0.1:6390/0".into(),
            },
            message: "connection refused".into(),
            source: None,
        };
        assert_eq!(
            open.to_string(),
            "cannot open redis://:***@127.0.0.1:6390/0: connection refused"
        );
        let no_tenant = StoreOperation::Forget { tenant: None }.to_string();
        assert_eq!(
            no_tenant,
            "store unavailable while forgetting the records without a tenant"
        );
        assert_eq!(open.key(), None);
    }
}
