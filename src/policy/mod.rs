//! The idempotency policy a call site declares, and the tool (call site) that carries it.

use std::time::Duration;

use crate::error::{Error, Setting, SettingMessage};

mod kinds;
mod retry;
#[cfg(test)]
mod tests;
mod tool;
mod validate;

pub use kinds::{
    Effect, Exchange, ExchangeVerdict, FailureClass, FailureSettlement, KeyStrategy, RetryBehavior,
};
pub use retry::RetryPolicy;
pub use tool::Tool;

/// The longest TTL or lease a policy may have: 100 years. Longer spans would overflow the
/// millisecond timestamps every store keeps.
pub const MAX_SPAN: Duration = Duration::from_secs(100 * 365 * 24 * 3600);

/// An idempotency policy: how keys are made and what repeats get.
///
/// Build one with [`Policy::default`] or [`Policy::new`] and the `with_*` methods; it is
/// validated when a [`Tool`] is built from it. Its fields can be read; new ones may be added,
/// so it cannot be built as a struct literal outside this crate.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Policy {
    /// How the key is derived (default [`KeyStrategy::HashInput`]).
    pub strategy: KeyStrategy,
    /// How long a record is kept after its outcome (default 3600 s).
    pub ttl: Duration,
    /// What a repeat of a remembered call gets (default [`RetryBehavior::ReturnCached`]).
    pub on_cache_hit: RetryBehavior,
    /// Whether failed calls are remembered too (default false).
    pub cache_failures: bool,
    /// For `HASH_INPUT`: the argument names that identify the effect; empty = the whole input.
    pub key_arguments: Vec<String>,
    /// How long an in-progress claim holds before its owner is presumed dead (default 300 s).
    pub lease: Duration,
    /// What the body does to the world, which decides what its failure means (default
    /// [`Effect::Idempotent`]).
    pub effect: Effect,
    /// Error types whose failures are known to have had no effect: released, so a retry runs.
    /// Matched against the names a face reports for the error (Java: the exception's class and
    /// its superclasses and interfaces, fully qualified; Rust: the error type's short and full
    /// names). First in the classification.
    pub no_effect_errors: Vec<String>,
    /// Error types whose failures are permanent: recorded as failures (replayed under
    /// `RETURN_CACHED`). Second in the classification, after `no_effect_errors`.
    pub permanent_errors: Vec<String>,
    /// For a key the application derives (`EXPLICIT` from a key supplier, [`KeyStrategy::HashInput`]
    /// with `key_arguments`): whether a repeat whose whole input differs from the recorded
    /// call's (another payload fingerprint) is refused with [`Error::PayloadMismatch`] (default
    /// false: such a key names the fields that are the identity, so the others may differ).
    /// A key from outside the application ([`KeyOrigin::Outside`]) is always checked; plain
    /// `HASH_INPUT` keys on the whole input and cannot mismatch (SPEC v1.2 §9 rule 1; see
    /// [`Policy::checks_payload`]).
    pub reject_payload_mismatch: bool,
    /// Whether the tool's upstream deduplicates by the `Idempotency-Key` it is sent, as Stripe
    /// does (default false). Only then may a request that reached the upstream be sent again
    /// after a transport error, a 5xx or a 409, and only then may a later call take over an
    /// abandoned claim and resend under the same key (SPEC v1.1 rule 12; see
    /// [`Policy::judge_exchange`]).
    pub upstream_honors_key: bool,
}

/// Where a call's key comes from, which decides whether a repeat is checked against the
/// record's payload fingerprint (SPEC v1.2 §9 rule 1; [`Policy::checks_payload`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum KeyOrigin {
    /// The application derives it (a key supplier, `key_arguments`): it names the fields that
    /// are the identity, and the others may differ unless the policy refuses it.
    #[default]
    Application,
    /// It comes from outside the application (a caller's inbound `Idempotency-Key`, a key a
    /// client sends): another payload under it is refused, as the IETF draft's 422 means.
    Outside,
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
            effect: Effect::Idempotent,
            no_effect_errors: Vec::new(),
            permanent_errors: Vec::new(),
            reject_payload_mismatch: false,
            upstream_honors_key: false,
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

    /// Keeps each record for `ttl` after its outcome (or after its lease ends without one);
    /// after that the key is free and a repeat runs again. Must be more than zero and at most
    /// [`MAX_SPAN`]; otherwise building the [`Tool`] fails with [`Error::InvalidSetting`].
    pub fn with_ttl(mut self, ttl: Duration) -> Policy {
        self.ttl = ttl;
        self
    }

    /// Sets what a repeat of a remembered call gets: the remembered result, a run again after a
    /// remembered failure, or a [`FailFast`](crate::ErrorKind::FailFast) error.
    pub fn with_on_cache_hit(mut self, on_cache_hit: RetryBehavior) -> Policy {
        self.on_cache_hit = on_cache_hit;
        self
    }

    /// Whether a failed body's error is remembered (`true`: repeats get it as a
    /// [`CachedFailure`](crate::ErrorKind::CachedFailure) under `RETURN_CACHED`) or its claim
    /// released so a retry runs again (`false`, the default).
    pub fn with_cache_failures(mut self, cache_failures: bool) -> Policy {
        self.cache_failures = cache_failures;
        self
    }

    /// For [`KeyStrategy::HashInput`]: keys on these members of the input only (the arguments
    /// that identify the effect), not the whole input. Building the [`Tool`] fails with
    /// [`Error::InvalidSetting`] for another strategy, an empty name or a name given twice
    /// (also as two spellings equal after NFC).
    pub fn with_key_arguments<I, S>(mut self, names: I) -> Policy
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.key_arguments = names.into_iter().map(Into::into).collect();
        self
    }

    /// Sets how long a claim holds while its body runs: after `lease` without an outcome the
    /// claim is abandoned and repeats get [`Indeterminate`](crate::ErrorKind::Indeterminate).
    /// Set it longer than the body can run. Must be more than zero, at most [`MAX_SPAN`], and
    /// longer than the tool's timeout; otherwise building the [`Tool`] fails with
    /// [`Error::InvalidSetting`].
    pub fn with_lease(mut self, lease: Duration) -> Policy {
        self.lease = lease;
        self
    }

    /// For `EXPLICIT`, and `HASH_INPUT` with `key_arguments`: refuses a repeat whose whole input
    /// differs from the recorded call's with [`Error::PayloadMismatch`] (SPEC v1.2 §9 rule 1);
    /// see [`Policy::reject_payload_mismatch`].
    pub fn with_reject_payload_mismatch(mut self, reject: bool) -> Policy {
        self.reject_payload_mismatch = reject;
        self
    }

    /// Whether a repeat of a key of this `origin` is checked against the record's payload
    /// fingerprint (SPEC v1.2 §9 rule 1): a key from outside always; a key the application
    /// derives (`EXPLICIT`, `HASH_INPUT` with `key_arguments`) only with
    /// [`Policy::reject_payload_mismatch`]. Plain `HASH_INPUT` keys on the whole input (it
    /// cannot mismatch); `UUID` and `NONE` keep no record.
    pub fn checks_payload(&self, origin: KeyOrigin) -> bool {
        match self.strategy {
            KeyStrategy::Explicit => origin == KeyOrigin::Outside || self.reject_payload_mismatch,
            KeyStrategy::HashInput => {
                self.reject_payload_mismatch && !self.key_arguments.is_empty()
            }
            KeyStrategy::Uuid | KeyStrategy::None => false,
        }
    }

    /// Declares that the upstream deduplicates by the `Idempotency-Key` it is sent (SPEC v1.1
    /// rule 12); see [`Policy::upstream_honors_key`].
    pub fn with_upstream_honors_key(mut self, honors: bool) -> Policy {
        self.upstream_honors_key = honors;
        self
    }

    /// What a failed exchange with an upstream means for sending it again and for settling the
    /// claim — one rule for every face (SPEC v1.1 rules 7 and 12). The face reports only what
    /// it saw ([`Exchange`]) and whether the request carried the call's key.
    ///
    /// - Nothing was written to the connection: the request never reached the upstream, so it
    ///   may always be sent again ([`ExchangeVerdict::Resend`]).
    /// - A `READ_ONLY` tool's failure may be sent again (it reads only).
    /// - The request carried the key and the upstream honours it: after no answer, a 5xx or a
    ///   409 ("an earlier request with this key is still in progress") it may be sent again
    ///   under the same key; a 422 or 417 (the upstream's answer to a key reused with another
    ///   payload) is [`ExchangeVerdict::PayloadMismatch`].
    /// - Otherwise the answer is final and never resent: a request that reached an upstream
    ///   that does not honour the key, answered by no answer or a 5xx, has an unknown outcome,
    ///   settled by the policy's classification ([`Policy::settle_failure`]: `EFFECTFUL` holds
    ///   it, `IDEMPOTENT` releases it); a 4xx is a refusal, classified the same way.
    pub fn judge_exchange(&self, exchange: Exchange, key_sent: bool) -> ExchangeVerdict {
        let honored = key_sent && self.upstream_honors_key;
        match exchange {
            Exchange::NotSent => ExchangeVerdict::Resend,
            _ if self.effect == Effect::ReadOnly => ExchangeVerdict::Resend,
            Exchange::NoAnswer if honored => ExchangeVerdict::Resend,
            Exchange::Answered(status) if honored && (status >= 500 || status == 409) => {
                ExchangeVerdict::Resend
            }
            Exchange::Answered(status @ (422 | 417)) if honored => {
                ExchangeVerdict::PayloadMismatch(status)
            }
            Exchange::NoAnswer | Exchange::Answered(_) => ExchangeVerdict::Final,
        }
    }

    /// Sets what the body does to the world (SPEC v1.1 rule 7).
    pub fn with_effect(mut self, effect: Effect) -> Policy {
        self.effect = effect;
        self
    }

    /// Error types whose failures are known to have had no effect (released, so a retry runs).
    pub fn with_no_effect_errors<I, S>(mut self, types: I) -> Policy
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.no_effect_errors = types.into_iter().map(Into::into).collect();
        self
    }

    /// Error types whose failures are permanent (recorded as failures, never retried).
    pub fn with_permanent_errors<I, S>(mut self, types: I) -> Policy
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.permanent_errors = types.into_iter().map(Into::into).collect();
        self
    }

    /// What becomes of a claimed call whose body failed — the one classification every face
    /// uses (SPEC v1.1 rule 7), first match wins:
    ///
    /// 1. what the face knows (`class`: a Rust classifier, a C caller's report);
    /// 2. a name in `types` listed in [`Policy::no_effect_errors`] → released;
    /// 3. one listed in [`Policy::permanent_errors`] → recorded;
    /// 4. `cache_failures` → recorded;
    /// 5. the effect's default: `IDEMPOTENT` (and `READ_ONLY`) released, `EFFECTFUL` held.
    ///
    /// `types` are the names the error answers to, most specific first.
    pub fn settle_failure<S: AsRef<str>>(
        &self,
        types: &[S],
        class: Option<FailureClass>,
    ) -> FailureSettlement {
        let listed = |list: &[String]| {
            types
                .iter()
                .any(|t| list.iter().any(|l| l.as_str() == t.as_ref()))
        };
        match class {
            Some(FailureClass::NoEffect) => FailureSettlement::Release,
            Some(FailureClass::Permanent) => FailureSettlement::Record,
            None if listed(&self.no_effect_errors) => FailureSettlement::Release,
            None if listed(&self.permanent_errors) => FailureSettlement::Record,
            None if self.cache_failures => FailureSettlement::Record,
            None => match self.effect {
                Effect::ReadOnly | Effect::Idempotent => FailureSettlement::Release,
                Effect::Effectful => FailureSettlement::Hold,
            },
        }
    }
}
