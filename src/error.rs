//! The one error type of idemkit, with a stable kind per case that the Java and C faces map.

use crate::key::KeyError;

/// A stable, language-neutral name for each way a call can be refused or fail.
///
/// The numeric codes are part of the C ABI and the Java binding; never renumber them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(i32)]
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
}

impl ErrorKind {
    /// Every kind, in code order.
    pub const ALL: [ErrorKind; 10] = [
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
        }
    }
}

impl std::fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Why an idemkit call did not produce a fresh result.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    #[error("invalid idempotency key for `{tool}`: {source}")]
    InvalidKey {
        tool: String,
        #[source]
        source: KeyError,
    },
    #[error("{0}")]
    Configuration(String),
    #[error("`{tool}` failed before with {error_type}: {message} (key {key}); the failure is remembered, so the call was not run again")]
    CachedFailure {
        tool: String,
        key: String,
        error_type: String,
        message: String,
    },
    #[error(
        "`{tool}` was already {state} under key {key} and its policy is FAIL_FAST; nothing was run"
    )]
    FailFast {
        tool: String,
        key: String,
        /// `"completed"` or `"in progress"`.
        state: &'static str,
    },
    #[error("`{tool}` is still in progress under key {key} in another call and the deadline passed after waiting {waited_ms} ms; nothing was run")]
    InProgress {
        tool: String,
        key: String,
        waited_ms: u64,
    },
    #[error("`{tool}` has an indeterminate outcome under key {key}: {}, so the effect may or may not have happened; nothing was run. Resolve the record (idemkit resolve --key {key}{}) or wait for it to expire", indeterminate_cause(.held.as_deref()), tenant_flag(.tenant.as_deref()))]
    Indeterminate {
        tool: String,
        key: String,
        /// The call's tenant (records are tenant-scoped, so the operator command names it).
        tenant: Option<String>,
        /// For an `EFFECTFUL` tool whose body failed: the failure that was held (SPEC v1.1
        /// rule 7). `None`: a claim whose lease ended without an outcome.
        held: Option<Box<crate::record::Failure>>,
    },
    #[error("idempotency store unavailable for `{tool}`: {message}; nothing was run")]
    StoreUnavailable { tool: String, message: String },
    /// A store operation that is no tool's call (opening a store, forgetting a tenant, ...)
    /// could not reach the store or got an error back. Its kind is
    /// [`ErrorKind::StoreUnavailable`]; it names no tool.
    #[error("{operation}: {message}")]
    StoreOperation {
        operation: StoreOperation,
        message: String,
    },
    #[error("`{tool}` completed under key {key} but its result ({bytes} bytes) was larger than the store keeps, so it cannot be replayed; nothing was run")]
    OutcomeTooLarge {
        tool: String,
        key: String,
        bytes: u64,
    },
    #[error("`{tool}` ran past its deadline of {timeout_ms} ms under key {key}; {outcome}")]
    Timeout {
        tool: String,
        key: String,
        timeout_ms: u64,
        /// What became of the body's outcome (SPEC v1.1 rule 3): recorded late, released, or
        /// unknown with the claim left in progress.
        outcome: String,
    },
    #[error("internal error in idemkit: {0}")]
    Internal(String),
}

/// Why an outcome is indeterminate, for [`Error::Indeterminate`]'s message.
fn indeterminate_cause(held: Option<&crate::record::Failure>) -> String {
    match held {
        None => "a call claimed it and its lease ended without an outcome".to_owned(),
        Some(f) => format!(
            "its body failed with {}: {} and the tool is EFFECTFUL, so the failure is held",
            f.error_type, f.message
        ),
    }
}

impl Error {
    /// The stable kind of this error.
    pub fn kind(&self) -> ErrorKind {
        match self {
            Error::InvalidKey { .. } => ErrorKind::InvalidKey,
            Error::Configuration(_) => ErrorKind::Configuration,
            Error::CachedFailure { .. } => ErrorKind::CachedFailure,
            Error::FailFast { .. } => ErrorKind::FailFast,
            Error::InProgress { .. } => ErrorKind::InProgress,
            Error::Indeterminate { .. } => ErrorKind::Indeterminate,
            Error::StoreUnavailable { .. } | Error::StoreOperation { .. } => {
                ErrorKind::StoreUnavailable
            }
            Error::OutcomeTooLarge { .. } => ErrorKind::OutcomeTooLarge,
            Error::Timeout { .. } => ErrorKind::Timeout,
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
            | Error::Timeout { key, .. } => Some(key),
            _ => None,
        }
    }

    pub(crate) fn config(message: impl Into<String>) -> Error {
        Error::Configuration(message.into())
    }
}

/// A store operation outside the calls of tools, named in [`Error::StoreOperation`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoreOperation {
    /// Opening the store; `store` is its URL without secrets.
    Open { store: String },
    /// Deleting every record of a tenant (`None`: the records without a tenant).
    Forget { tenant: Option<String> },
    /// Deleting the expired records.
    PurgeExpired,
    /// Creating the store's table.
    CreateTable,
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
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StoreError {
    #[error("{0}")]
    Unavailable(String),
    #[error("store misconfigured: {0}")]
    Configuration(String),
    #[error("record in the store is corrupt or of an unknown format: {0}")]
    Corrupt(String),
}

impl StoreError {
    pub fn unavailable(message: impl std::fmt::Display) -> StoreError {
        StoreError::Unavailable(message.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An operation error names the operation in words, never as a tool in backticks.
    #[test]
    fn operation_errors_name_the_operation() {
        let forget = Error::StoreOperation {
            operation: StoreOperation::Forget {
                tenant: Some("acme".into()),
            },
            message: "Redis at redis://127.0.0.1:6390/0: connection refused".into(),
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
