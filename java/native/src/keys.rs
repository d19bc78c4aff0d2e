//! `IdempotencyKeys`: the core's key derivation (SPEC §2) over JSON text, touching no store.
//!
//! Every text crosses as ASCII JSON with non-ASCII characters escaped (`JsonInput` on the Java
//! side): scope, tenant and run as string literals, the key arguments as an array of them, the
//! input as the caller's JSON text (or, for an explicit key, a string literal). So a lone
//! surrogate anywhere reaches the core's parser and is refused as an invalid key naming the field.

use idemkit::key::{derive_key, KeyError, KeyInput, KeyScope};
use idemkit::{CanonicalValue, Error};
use jni::objects::{JByteArray, JString};
use jni::sys::jint;
use jni::Env;

use crate::boundary::{Failure, Result};

/// The bytes of `array` (its first `length`, or all of it for `None`); `None` for a null array.
fn read(env: &Env<'_>, array: &JByteArray<'_>, length: Option<jint>) -> Result<Option<Vec<u8>>> {
    if array.is_null() {
        return Ok(None);
    }
    let length = match length {
        Some(length) => usize::try_from(length)
            .map_err(|_| Failure::IllegalArgument(format!("negative input length {length}")))?,
        None => array.len(env)?,
    };
    let mut buf = vec![0i8; length];
    // Throws (and answers an error) when `length` is beyond the array.
    array.get_region(env, 0, &mut buf)?;
    // i8 → u8 reinterprets each byte.
    Ok(Some(buf.into_iter().map(|b| b as u8).collect()))
}

fn utf8(field: &str, bytes: &[u8]) -> Result<String> {
    String::from_utf8(bytes.to_vec())
        .map_err(|e| Failure::IllegalArgument(format!("{field} is not UTF-8 ({e}); a binding bug")))
}

/// The JSON literal `bytes` of `field`, parsed by the core (NFC strings, no lone surrogates).
/// A refusal names `field` where the parser said `input`.
fn literal(scope: &str, field: &str, bytes: &[u8]) -> Result<CanonicalValue> {
    let text = utf8(field, bytes)?;
    CanonicalValue::parse(&text).map_err(|error| match error {
        KeyError::LoneSurrogate { path, offset, code } => Failure::Idemkit(Error::InvalidKey {
            tool: scope.to_owned(),
            source: KeyError::LoneSurrogate {
                path: path.replacen("input", field, 1),
                offset,
                code,
            },
        }),
        other => Failure::IllegalArgument(format!(
            "{field} did not cross as a JSON literal ({other}); a binding bug"
        )),
    })
}

fn string_literal(scope: &str, field: &str, bytes: &[u8]) -> Result<String> {
    match literal(scope, field, bytes)? {
        CanonicalValue::String(s) => Ok(s),
        _ => Err(Failure::IllegalArgument(format!(
            "{field} must cross as a JSON string; a binding bug"
        ))),
    }
}

/// The 64-hex key of the input (`explicit`: of the explicit key) in this scope, tenant and run,
/// with these key arguments (a JSON array of strings, or null for the whole input).
#[allow(clippy::too_many_arguments)]
pub(crate) fn derive<'l>(
    env: &mut Env<'l>,
    scope: &JByteArray<'_>,
    tenant: &JByteArray<'_>,
    run: &JByteArray<'_>,
    key_arguments: &JByteArray<'_>,
    input: &JByteArray<'_>,
    length: jint,
    explicit: bool,
) -> Result<JString<'l>> {
    let scope_bytes = read(env, scope, None)?
        .ok_or_else(|| Failure::IllegalArgument("the scope is null".into()))?;
    // Until the scope is known, errors name it as it crossed.
    let scope = string_literal(
        &String::from_utf8_lossy(&scope_bytes),
        "scope",
        &scope_bytes,
    )?;
    let identity = |field: &str, array: &JByteArray<'_>| -> Result<Option<String>> {
        read(env, array, None)?
            .map(|bytes| string_literal(&scope, field, &bytes))
            .transpose()
    };
    let tenant = identity("tenant", tenant)?;
    let run = identity("run", run)?;
    let key_arguments = match read(env, key_arguments, None)? {
        None => Vec::new(),
        Some(bytes) => match literal(&scope, "keyArguments", &bytes)? {
            CanonicalValue::Array(items) => items
                .into_iter()
                .map(|item| match item {
                    CanonicalValue::String(name) => Ok(name),
                    _ => Err(Failure::IllegalArgument(
                        "keyArguments must cross as a JSON array of strings; a binding bug".into(),
                    )),
                })
                .collect::<Result<Vec<_>>>()?,
            _ => {
                return Err(Failure::IllegalArgument(
                    "keyArguments must cross as a JSON array; a binding bug".into(),
                ))
            }
        },
    };
    let input = read(env, input, Some(length))?
        .ok_or_else(|| Failure::IllegalArgument("the input is null".into()))?;
    let explicit_key;
    let json;
    let key_input = if explicit {
        explicit_key = string_literal(&scope, "explicit key", &input)?;
        KeyInput::Explicit(&explicit_key)
    } else {
        json = utf8("the input", &input)?;
        KeyInput::Json(&json)
    };
    let key_scope = KeyScope {
        scope: &scope,
        tenant: tenant.as_deref(),
        run: run.as_deref(),
    };
    let key = derive_key(&key_scope, key_input, &key_arguments).map_err(|source| {
        Failure::Idemkit(Error::InvalidKey {
            tool: scope.clone(),
            source,
        })
    })?;
    Ok(JString::from_str(env, key.hex())?)
}

/// The payload fingerprint of JSON text (SPEC v1.1 rule 9), for `IdempotencyKeys.fingerprint`:
/// the lowercase hex SHA-256 of its canonical JSON.
pub(crate) fn fingerprint<'l>(
    env: &mut Env<'l>,
    input: &JByteArray<'_>,
    length: jint,
) -> Result<JString<'l>> {
    let input = read(env, input, Some(length))?
        .ok_or_else(|| Failure::IllegalArgument("the input is null".into()))?;
    let json = utf8("the input", &input)?;
    let invalid = |source| {
        Failure::Idemkit(Error::InvalidKey {
            tool: "IdempotencyKeys.fingerprint".into(),
            source,
        })
    };
    let hex = idemkit::key::fingerprint(KeyInput::Json(&json))
        .map_err(invalid)?
        .ok_or_else(|| Failure::IllegalArgument("JSON text has a fingerprint".into()))?;
    Ok(JString::from_str(env, hex)?)
}
