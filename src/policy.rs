//! The idempotency policy a call site declares, and the tool (call site) that carries it.

use std::time::Duration;

use crate::error::Error;

/// How a call's key is derived (SPEC §1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum KeyStrategy {
    /// The digest of the canonical input (or of the `key_arguments` subset). Deduplicated in the store.
    #[default]
    HashInput,
    /// The digest of a key the call site supplies. Deduplicated in the store.
    Explicit,
    /// A fresh random UUID per logical call, sent upstream only; nothing is deduplicated locally.
    Uuid,
    /// No protection at all.
    None,
}

impl KeyStrategy {
    /// Whether calls with this strategy claim keys in the store.
    pub fn uses_store(self) -> bool {
        matches!(self, KeyStrategy::HashInput | KeyStrategy::Explicit)
    }

    /// The SPEC name (`HASH_INPUT`, ...).
    pub fn name(self) -> &'static str {
        match self {
            KeyStrategy::HashInput => "HASH_INPUT",
            KeyStrategy::Explicit => "EXPLICIT",
            KeyStrategy::Uuid => "UUID",
            KeyStrategy::None => "NONE",
        }
    }

    /// Parses a SPEC name.
    pub fn from_name(name: &str) -> Option<KeyStrategy> {
        [
            KeyStrategy::HashInput,
            KeyStrategy::Explicit,
            KeyStrategy::Uuid,
            KeyStrategy::None,
        ]
        .into_iter()
        .find(|s| s.name() == name)
    }
}

/// What a repeat of a remembered call gets (SPEC §1, `onCacheHit`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum RetryBehavior {
    /// A remembered success is returned; a remembered failure fails with the cached-failure error.
    #[default]
    ReturnCached,
    /// A remembered success is returned; a remembered failure is run again.
    ReturnCachedIfSuccess,
    /// Any repeat fails at once with the fail-fast error, and an in-progress key is not waited for.
    FailFast,
}

impl RetryBehavior {
    /// The SPEC name (`RETURN_CACHED`, ...).
    pub fn name(self) -> &'static str {
        match self {
            RetryBehavior::ReturnCached => "RETURN_CACHED",
            RetryBehavior::ReturnCachedIfSuccess => "RETURN_CACHED_IF_SUCCESS",
            RetryBehavior::FailFast => "FAIL_FAST",
        }
    }

    /// Parses a SPEC name.
    pub fn from_name(name: &str) -> Option<RetryBehavior> {
        [
            RetryBehavior::ReturnCached,
            RetryBehavior::ReturnCachedIfSuccess,
            RetryBehavior::FailFast,
        ]
        .into_iter()
        .find(|s| s.name() == name)
    }
}

/// The longest TTL or lease a policy may have: 100 years. Longer spans would overflow the
/// millisecond timestamps every store keeps.
pub const MAX_SPAN: Duration = Duration::from_secs(100 * 365 * 24 * 3600);

/// An idempotency policy: how keys are made and what repeats get.
///
/// Build one with [`Policy::default`] and the `with_*` methods; it is validated when a
/// [`Tool`] is built from it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Policy {
    pub strategy: KeyStrategy,
    /// How long a record is kept after its outcome (default 3600 s).
    pub ttl: Duration,
    pub on_cache_hit: RetryBehavior,
    /// Whether failed calls are remembered too (default false).
    pub cache_failures: bool,
    /// For `HASH_INPUT`: the argument names that identify the effect; empty = the whole input.
    pub key_arguments: Vec<String>,
    /// How long an in-progress claim holds before its owner is presumed dead (default 300 s).
    pub lease: Duration,
}

impl Default for Policy {
    fn default() -> Self {
        Policy {
            strategy: KeyStrategy::HashInput,
            ttl: Duration::from_secs(3600),
            on_cache_hit: RetryBehavior::ReturnCached,
            cache_failures: false,
            key_arguments: Vec::new(),
            lease: Duration::from_secs(300),
        }
    }
}

impl Policy {
    /// A policy with the SPEC defaults and this strategy.
    pub fn new(strategy: KeyStrategy) -> Policy {
        Policy {
            strategy,
            ..Policy::default()
        }
    }

    pub fn with_ttl(mut self, ttl: Duration) -> Policy {
        self.ttl = ttl;
        self
    }

    pub fn with_on_cache_hit(mut self, on_cache_hit: RetryBehavior) -> Policy {
        self.on_cache_hit = on_cache_hit;
        self
    }

    pub fn with_cache_failures(mut self, cache_failures: bool) -> Policy {
        self.cache_failures = cache_failures;
        self
    }

    pub fn with_key_arguments<I, S>(mut self, names: I) -> Policy
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.key_arguments = names.into_iter().map(Into::into).collect();
        self
    }

    pub fn with_lease(mut self, lease: Duration) -> Policy {
        self.lease = lease;
        self
    }

    /// Checks the policy for the tool `tool`; messages name the field and the fix.
    pub fn validate(&self, tool: &str) -> Result<(), Error> {
        if self.ttl.is_zero() {
            return Err(Error::config(format!(
                "ttlSeconds must be > 0 on `{tool}`; it was 0. Use strategy NONE for no protection"
            )));
        }
        for (field, value) in [("ttlSeconds", self.ttl), ("leaseSeconds", self.lease)] {
            if value > MAX_SPAN {
                return Err(Error::config(format!(
                    "{field} must be at most {} s (100 years) on `{tool}`; it was {} s",
                    MAX_SPAN.as_secs(),
                    value.as_secs()
                )));
            }
        }
        if self.lease.is_zero() {
            return Err(Error::config(format!(
                "leaseSeconds must be > 0 on `{tool}`; it was 0. Set it longer than the body can run"
            )));
        }
        if !self.key_arguments.is_empty() && self.strategy != KeyStrategy::HashInput {
            return Err(Error::config(format!(
                "keyArguments is set on `{tool}` but its strategy is {}; keyArguments only applies to HASH_INPUT",
                self.strategy.name()
            )));
        }
        let mut seen = std::collections::HashSet::new();
        for name in &self.key_arguments {
            if name.is_empty() {
                return Err(Error::config(format!(
                    "keyArguments on `{tool}` contains an empty name; list parameter names"
                )));
            }
            // Names equal after NFC select the same member of the input.
            if !seen.insert(crate::key::nfc(name)) {
                return Err(Error::config(format!(
                    "keyArguments on `{tool}` names `{name}` twice (names are compared after \
                     NFC normalisation); list each parameter once"
                )));
            }
        }
        Ok(())
    }
}

/// A call site: a named tool or action with its policy and optional deadline.
///
/// The name is the key's scope, so two tools never share a key.
///
/// Cheap to clone: clones share one validated definition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tool {
    inner: std::sync::Arc<ToolDefinition>,
}

#[derive(Debug, PartialEq, Eq)]
struct ToolDefinition {
    name: String,
    /// The name in NFC: the scope that identifies the tool's records (SPEC v1.1 rule 1).
    scope: String,
    policy: Policy,
    timeout: Option<Duration>,
}

impl Tool {
    /// A tool with this name and policy and no deadline; validated here.
    pub fn new(name: impl Into<String>, policy: Policy) -> Result<Tool, Error> {
        Tool::with_timeout(name, policy, None)
    }

    /// A tool whose calls (store lookup, waiting and body together) must finish within `timeout`.
    pub fn with_timeout(
        name: impl Into<String>,
        policy: Policy,
        timeout: Option<Duration>,
    ) -> Result<Tool, Error> {
        let name = name.into();
        if name.trim().is_empty() {
            return Err(Error::config(
                "a tool name must not be empty: it is the scope of every key the tool makes",
            ));
        }
        let scope = crate::key::nfc(&name).into_owned();
        if scope.len() > crate::key::MAX_IDENTITY_BYTES {
            let start: String = name.chars().take(40).collect();
            return Err(Error::config(format!(
                "the tool name `{start}…` is {} bytes of UTF-8 (after NFC normalisation), over \
                 the limit of {}: it is the scope of every key the tool makes; use a shorter name",
                scope.len(),
                crate::key::MAX_IDENTITY_BYTES
            )));
        }
        policy.validate(&name)?;
        if let Some(t) = timeout {
            if t.is_zero() {
                return Err(Error::config(format!(
                    "timeoutMs must be > 0 on `{name}`; leave it unset for no deadline"
                )));
            }
            if policy.strategy.uses_store() && t >= policy.lease {
                return Err(Error::config(format!(
                    "timeoutMs ({} ms) must be shorter than leaseSeconds ({} s) on `{name}`: \
                     raise leaseSeconds or lower timeoutMs, or a live call could be reported abandoned",
                    t.as_millis(),
                    policy.lease.as_secs_f64()
                )));
            }
        }
        Ok(Tool {
            inner: std::sync::Arc::new(ToolDefinition {
                name,
                scope,
                policy,
                timeout,
            }),
        })
    }

    /// Checks that every `key_arguments` name is one of `parameters` (done when a tool is registered).
    pub fn check_parameters<S: AsRef<str>>(&self, parameters: &[S]) -> Result<(), Error> {
        for name in &self.inner.policy.key_arguments {
            if !parameters.iter().any(|p| p.as_ref() == name) {
                let known: Vec<&str> = parameters.iter().map(|p| p.as_ref()).collect();
                return Err(Error::config(format!(
                    "keyArguments on `{}` names `{name}`, which is not a parameter of the tool; its parameters are [{}]",
                    self.inner.name,
                    known.join(", ")
                )));
            }
        }
        Ok(())
    }

    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// The name in NFC, as records keep it (SPEC v1.1 rule 1).
    pub fn scope(&self) -> &str {
        &self.inner.scope
    }

    pub fn policy(&self) -> &Policy {
        &self.inner.policy
    }

    pub fn timeout(&self) -> Option<Duration> {
        self.inner.timeout
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zero_ttl_is_refused_naming_tool_and_field() {
        let err = Tool::new("send_email", Policy::default().with_ttl(Duration::ZERO)).unwrap_err();
        assert_eq!(err.kind(), crate::ErrorKind::Configuration);
        assert!(err
            .to_string()
            .contains("ttlSeconds must be > 0 on `send_email`"));
    }

    #[test]
    fn a_ttl_or_lease_beyond_100_years_is_refused() {
        let huge = Duration::from_secs(10_000_000_000_000_000);
        let err = Tool::new("t", Policy::default().with_ttl(huge)).unwrap_err();
        assert!(
            err.to_string().contains("ttlSeconds must be at most"),
            "{err}"
        );
        let err = Tool::new("t", Policy::default().with_lease(huge)).unwrap_err();
        assert!(
            err.to_string().contains("leaseSeconds must be at most"),
            "{err}"
        );
        assert!(Tool::new("t", Policy::default().with_ttl(MAX_SPAN)).is_ok());
    }

    #[test]
    fn zero_lease_is_refused() {
        let err = Tool::new("t", Policy::default().with_lease(Duration::ZERO)).unwrap_err();
        assert!(err.to_string().contains("leaseSeconds must be > 0"));
    }

    #[test]
    fn timeout_not_shorter_than_lease_is_refused() {
        let policy = Policy::default().with_lease(Duration::from_secs(2));
        let err =
            Tool::with_timeout("t", policy.clone(), Some(Duration::from_secs(2))).unwrap_err();
        assert!(err
            .to_string()
            .contains("must be shorter than leaseSeconds"));
        assert!(Tool::with_timeout("t", policy, Some(Duration::from_millis(1999))).is_ok());
    }

    #[test]
    fn unknown_key_argument_is_refused_at_registration() {
        let tool = Tool::new("book", Policy::default().with_key_arguments(["flight"])).unwrap();
        assert!(tool.check_parameters(&["flight", "seat"]).is_ok());
        let err = tool.check_parameters(&["flihgt"]).unwrap_err();
        assert!(err
            .to_string()
            .contains("`flight`, which is not a parameter"));
    }

    #[test]
    fn names_round_trip() {
        for s in [
            KeyStrategy::HashInput,
            KeyStrategy::Explicit,
            KeyStrategy::Uuid,
            KeyStrategy::None,
        ] {
            assert_eq!(KeyStrategy::from_name(s.name()), Some(s));
        }
        for b in [
            RetryBehavior::ReturnCached,
            RetryBehavior::ReturnCachedIfSuccess,
            RetryBehavior::FailFast,
        ] {
            assert_eq!(RetryBehavior::from_name(b.name()), Some(b));
        }
    }
}
