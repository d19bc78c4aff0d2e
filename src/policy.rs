//! The idempotency policy a call site declares, and the tool (call site) that carries it.

use std::time::Duration;

use crate::error::{Error, Setting, SettingMessage};

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

/// What a tool's body does to the world, which decides what its failure means (SPEC v1.1 rule 7).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Effect {
    /// Reads only: nothing is claimed or recorded, and a failure may be retried.
    ReadOnly,
    /// Acts, but the same action twice equals once, or a failure is known to have had no effect
    /// (the v1 behaviour and the default): claimed and deduplicated; a failure is released (or
    /// recorded with `cache_failures`) and may be retried.
    #[default]
    Idempotent,
    /// Acts, and a failure may have acted anyway (a timeout inside a payment call): claimed and
    /// deduplicated; a failure is *held* — recorded as an indeterminate outcome, answered with
    /// the indeterminate error to this caller and every repeat until an operator resolves it,
    /// and never retried automatically.
    Effectful,
}

impl Effect {
    /// The SPEC name (`READ_ONLY`, `IDEMPOTENT`, `EFFECTFUL`).
    pub fn name(self) -> &'static str {
        match self {
            Effect::ReadOnly => "READ_ONLY",
            Effect::Idempotent => "IDEMPOTENT",
            Effect::Effectful => "EFFECTFUL",
        }
    }

    /// Parses a SPEC name.
    pub fn from_name(name: &str) -> Option<Effect> {
        [Effect::ReadOnly, Effect::Idempotent, Effect::Effectful]
            .into_iter()
            .find(|e| e.name() == name)
    }
}

/// What a face knows about a failure of its body, when it knows more than the error's type
/// (a Rust classifier, a C caller's report). The policy's lists classify by type otherwise.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FailureClass {
    /// The failure is known to have had no effect (the request never left, a validation error):
    /// the claim is released and the call may be retried.
    NoEffect,
    /// The failure is permanent and its effect is known (a declined card): it is recorded as a
    /// failure, replayed to repeats under `RETURN_CACHED`, and never retried.
    Permanent,
}

/// What becomes of a claimed call whose body failed: decided by [`Policy::settle_failure`], the
/// one classification every face uses (SPEC v1.1 rule 7).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FailureSettlement {
    /// The claim is released: the failure had no effect, so the next call (or a retry) runs.
    Release,
    /// The failure is recorded; repeats get it (`RETURN_CACHED`) or run again
    /// (`RETURN_CACHED_IF_SUCCESS`).
    Record,
    /// The failure may have had an effect: recorded as an indeterminate outcome, and every
    /// repeat gets the indeterminate error until an operator resolves the record.
    Hold,
}

/// What a face saw of one failed request to an upstream (SPEC v1.1 rule 12): all that
/// [`Policy::judge_exchange`] needs to decide whether it may be sent again.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Exchange {
    /// Nothing was written to the connection (connection refused, name not resolved, connect
    /// timeout): the upstream never saw the request.
    NotSent,
    /// The request was (or may have been) written, and no answer came: the connection was
    /// reset or closed, or the answer was cut.
    NoAnswer,
    /// The upstream answered with this status, which is not a success.
    Answered(u16),
}

/// What [`Policy::judge_exchange`] decided about a failed exchange.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ExchangeVerdict {
    /// Safe to send again under the same key, keeping the claim, while the retry budget and the
    /// deadline allow; when they do not, the claim is released (a later call sends again).
    Resend,
    /// Not sent again: the failure is settled by the policy's classification
    /// ([`Policy::settle_failure`]).
    Final,
    /// The upstream says the key was used before with another payload (this status: 422, or
    /// 417 as some middleware sends): the claim is released and the caller gets the
    /// payload-mismatch error.
    PayloadMismatch(u16),
}

impl RetryPolicy {
    /// The resends of a request answered 409 ("still in progress") by a key-honouring upstream,
    /// unless the call's own retry policy allows more: up to 8 requests, 100 ms doubling to 2 s,
    /// within the call's deadline.
    pub fn in_progress() -> RetryPolicy {
        RetryPolicy::attempts(8).with_backoff(Duration::from_millis(100), Duration::from_secs(2))
    }
}

/// How failed calls are retried (SPEC v1.1 rule 8): up to `max_attempts` runs in all, with a
/// capped, jittered pause between them, under the same key and within the call's one deadline.
///
/// Only failures the policy settles by releasing the claim are retried: `READ_ONLY` and
/// `IDEMPOTENT` failures, and failures classified as having had no effect. Held (`EFFECTFUL`)
/// and recorded failures never are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Runs in all, the first included (1 = no retry).
    pub max_attempts: u32,
    /// The pause before the first retry; it doubles per retry up to `max_backoff`, and each pause
    /// is drawn at random between half of it and all of it.
    pub initial_backoff: Duration,
    /// The longest pause.
    pub max_backoff: Duration,
    /// Error type names (as in [`Policy::no_effect_errors`]) that are retried; empty: every
    /// failure the rules allow.
    pub retry_on: Vec<String>,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_attempts: 3,
            initial_backoff: Duration::from_millis(100),
            max_backoff: Duration::from_secs(2),
            retry_on: Vec::new(),
        }
    }
}

impl RetryPolicy {
    /// Up to `max_attempts` runs in all, with the default pauses (100 ms doubling to 2 s).
    pub fn attempts(max_attempts: u32) -> RetryPolicy {
        RetryPolicy {
            max_attempts,
            ..RetryPolicy::default()
        }
    }

    /// Sets the first pause and the longest one.
    pub fn with_backoff(mut self, initial: Duration, max: Duration) -> RetryPolicy {
        self.initial_backoff = initial;
        self.max_backoff = max;
        self
    }

    /// Retries only failures with one of these error type names.
    pub fn with_retry_on<I, S>(mut self, types: I) -> RetryPolicy
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.retry_on = types.into_iter().map(Into::into).collect();
        self
    }

    /// Checks the policy.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidSetting`] naming the setting and the fix: no runs at all, a longest
    /// pause shorter than the first or over [`MAX_SPAN`], an empty error type name.
    pub fn validate(&self) -> Result<(), Error> {
        let say = SettingMessage::new;
        if self.max_attempts == 0 {
            return Err(say()
                .text("the retry policy's ")
                .setting(Setting::MaxAttempts)
                .text(" must be at least 1 (1 = run once, no retry); it was 0")
                .into());
        }
        if self.max_backoff < self.initial_backoff {
            return Err(say()
                .text("the retry policy's ")
                .setting(Setting::MaxBackoff)
                .text(format!(
                    " ({} ms) must not be shorter than its ",
                    self.max_backoff.as_millis()
                ))
                .setting(Setting::InitialBackoff)
                .text(format!(" ({} ms)", self.initial_backoff.as_millis()))
                .into());
        }
        if self.max_backoff > MAX_SPAN {
            return Err(say()
                .text("the retry policy's ")
                .setting(Setting::MaxBackoff)
                .text(" must be at most 100 years")
                .into());
        }
        if self.retry_on.iter().any(|t| t.trim().is_empty()) {
            return Err(say()
                .text("the retry policy's ")
                .setting(Setting::RetryOn)
                .text(" contains an empty error type name; list error type names")
                .into());
        }
        Ok(())
    }

    /// The pause before retry number `retry` (0 = the first retry): the doubled backoff, capped,
    /// drawn between half of it and all of it.
    pub fn pause(&self, retry: u32) -> Duration {
        let doubled = self
            .initial_backoff
            .saturating_mul(1u32.checked_shl(retry.min(31)).unwrap_or(u32::MAX));
        let cap = doubled.min(self.max_backoff);
        let half = cap / 2;
        let spread = (cap - half).as_nanos() as u64;
        let jitter = if spread == 0 {
            0
        } else {
            rand::random::<u64>() % (spread + 1)
        };
        half + Duration::from_nanos(jitter)
    }

    /// Whether a failure with these type names may be retried by this policy's `retry_on`.
    pub fn covers<S: AsRef<str>>(&self, types: &[S]) -> bool {
        self.retry_on.is_empty()
            || types
                .iter()
                .any(|t| self.retry_on.iter().any(|r| r.as_str() == t.as_ref()))
    }
}

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

    /// Checks the policy for the tool `tool`.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidSetting`] naming the tool, the setting and the fix: a zero TTL or
    /// lease, one over [`MAX_SPAN`], `key_arguments` with a strategy other than `HASH_INPUT`,
    /// or an empty or repeated name in `key_arguments`; an effect that contradicts
    /// `cache_failures` or the error lists, or an empty or twice-listed error type.
    pub fn validate(&self, tool: &str) -> Result<(), Error> {
        let say = SettingMessage::new;
        if self.ttl.is_zero() {
            return Err(say()
                .setting(Setting::Ttl)
                .text(format!(
                    " must be > 0 on `{tool}`; it was 0. Use strategy NONE for no protection"
                ))
                .into());
        }
        for (setting, value) in [(Setting::Ttl, self.ttl), (Setting::Lease, self.lease)] {
            if value > MAX_SPAN {
                return Err(say()
                    .setting(setting)
                    .text(format!(
                        " must be at most {} s (100 years) on `{tool}`; it was {} s",
                        MAX_SPAN.as_secs(),
                        value.as_secs()
                    ))
                    .into());
            }
        }
        if self.lease.is_zero() {
            return Err(say()
                .setting(Setting::Lease)
                .text(format!(
                    " must be > 0 on `{tool}`; it was 0. Set it longer than the body can run"
                ))
                .into());
        }
        if !self.key_arguments.is_empty() && self.strategy != KeyStrategy::HashInput {
            return Err(say()
                .setting(Setting::KeyArguments)
                .text(format!(
                    " is set on `{tool}` but its strategy is {}; ",
                    self.strategy.name()
                ))
                .setting(Setting::KeyArguments)
                .text(" only applies to HASH_INPUT")
                .into());
        }
        if self.effect == Effect::ReadOnly && self.cache_failures {
            return Err(say()
                .setting(Setting::CacheFailures)
                .text(format!(" is set on `{tool}` but its "))
                .setting(Setting::Effect)
                .text(
                    " is READ_ONLY, which claims and records nothing; drop it or choose IDEMPOTENT or EFFECTFUL",
                )
                .into());
        }
        if self.effect == Effect::ReadOnly && !self.permanent_errors.is_empty() {
            return Err(say()
                .setting(Setting::PermanentErrors)
                .text(format!(" lists error types on `{tool}` but its "))
                .setting(Setting::Effect)
                .text(
                    " is READ_ONLY, which records nothing; drop them or choose IDEMPOTENT or EFFECTFUL",
                )
                .into());
        }
        for (setting, list) in [
            (Setting::NoEffectErrors, &self.no_effect_errors),
            (Setting::PermanentErrors, &self.permanent_errors),
        ] {
            if list.iter().any(|t| t.trim().is_empty()) {
                return Err(say()
                    .setting(setting)
                    .text(format!(
                        " on `{tool}` contains an empty error type name; list error type names"
                    ))
                    .into());
            }
        }
        if let Some(both) = self
            .no_effect_errors
            .iter()
            .find(|t| self.permanent_errors.contains(t))
        {
            return Err(say()
                .text(format!("`{both}` is listed on `{tool}` both in "))
                .setting(Setting::NoEffectErrors)
                .text(" and in ")
                .setting(Setting::PermanentErrors)
                .text("; list it once")
                .into());
        }
        let mut seen = std::collections::HashSet::new();
        for name in &self.key_arguments {
            if name.is_empty() {
                return Err(say()
                    .setting(Setting::KeyArguments)
                    .text(format!(
                        " on `{tool}` contains an empty name; list parameter names"
                    ))
                    .into());
            }
            // Names equal after NFC select the same member of the input.
            if !seen.insert(crate::key::nfc(name)) {
                return Err(say()
                    .setting(Setting::KeyArguments)
                    .text(format!(
                        " on `{tool}` names `{name}` twice (names are compared after \
                         NFC normalisation); list each parameter once"
                    ))
                    .into());
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
    ///
    /// # Errors
    ///
    /// [`Error::Configuration`] for an empty name or one over 1,024 bytes after NFC;
    /// [`Error::InvalidSetting`] for a policy that [`Policy::validate`] refuses.
    pub fn new(name: impl Into<String>, policy: Policy) -> Result<Tool, Error> {
        Tool::with_timeout(name, policy, None)
    }

    /// A tool whose calls (store lookup, waiting and body together) must finish within `timeout`
    /// (`None`: no deadline). A caller still waiting at the deadline gets
    /// [`InProgress`](crate::ErrorKind::InProgress), a body still running
    /// [`Timeout`](crate::ErrorKind::Timeout).
    ///
    /// # Errors
    ///
    /// As [`Tool::new`], and [`Error::InvalidSetting`] for a zero timeout or, when the strategy
    /// uses the store, one not shorter than the lease (a live call could be reported
    /// abandoned).
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
                return Err(SettingMessage::new()
                    .setting(Setting::Timeout)
                    .text(format!(
                        " must be > 0 on `{name}`; leave it unset for no deadline"
                    ))
                    .into());
            }
            if policy.strategy.uses_store() && t >= policy.lease {
                return Err(SettingMessage::new()
                    .setting(Setting::Timeout)
                    .text(format!(" ({} ms) must be shorter than ", t.as_millis()))
                    .setting(Setting::Lease)
                    .text(format!(
                        " ({} s) on `{name}`: raise ",
                        policy.lease.as_secs_f64()
                    ))
                    .setting(Setting::Lease)
                    .text(" or lower ")
                    .setting(Setting::Timeout)
                    .text(", or a live call could be reported abandoned")
                    .into());
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

    /// Checks that every `key_arguments` name is one of `parameters` (done when a tool is
    /// registered by a face that knows the parameter names, such as Java).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidSetting`] naming the first name that is not a parameter, and listing the
    /// parameters.
    pub fn check_parameters<S: AsRef<str>>(&self, parameters: &[S]) -> Result<(), Error> {
        for name in &self.inner.policy.key_arguments {
            if !parameters.iter().any(|p| p.as_ref() == name) {
                let known: Vec<&str> = parameters.iter().map(|p| p.as_ref()).collect();
                return Err(SettingMessage::new()
                    .setting(Setting::KeyArguments)
                    .text(format!(
                        " on `{}` names `{name}`, which is not a parameter of the tool; its parameters are [{}]",
                        self.inner.name,
                        known.join(", ")
                    ))
                    .into());
            }
        }
        Ok(())
    }

    /// The tool's name, as given.
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// The name in NFC, as records keep it (SPEC v1.1 rule 1).
    pub fn scope(&self) -> &str {
        &self.inner.scope
    }

    /// The tool's (validated) policy.
    pub fn policy(&self) -> &Policy {
        &self.inner.policy
    }

    /// The tool's deadline for a whole call, if it has one.
    pub fn timeout(&self) -> Option<Duration> {
        self.inner.timeout
    }
}

#[cfg(test)]
mod tests {

    #[test]
    fn failure_classification_follows_spec_order() {
        use FailureSettlement::*;
        let effectful = Policy::default().with_effect(Effect::Effectful);
        let listed = effectful
            .clone()
            .with_no_effect_errors(["Refused"])
            .with_permanent_errors(["Declined"]);
        let none: Option<FailureClass> = None;
        // What the face knows comes first.
        assert_eq!(
            listed.settle_failure(&["Declined"], Some(FailureClass::NoEffect)),
            Release
        );
        assert_eq!(
            listed.settle_failure(&["Refused"], Some(FailureClass::Permanent)),
            Record
        );
        // Then no-effect before permanent, matching any of the type names.
        assert_eq!(
            listed.settle_failure(&["Declined", "Refused"], none),
            Release
        );
        assert_eq!(listed.settle_failure(&["Sub", "Declined"], none), Record);
        // Then cache_failures, then the effect's default.
        assert_eq!(
            effectful
                .clone()
                .with_cache_failures(true)
                .settle_failure(&["X"], none),
            Record
        );
        assert_eq!(effectful.settle_failure(&["X"], none), Hold);
        assert_eq!(Policy::default().settle_failure(&["X"], none), Release);
        assert_eq!(
            Policy::default()
                .with_effect(Effect::ReadOnly)
                .settle_failure(&["X"], none),
            Release
        );
    }

    /// SPEC v1.1 rule 12: a request that reached the upstream is resent only when the upstream
    /// honours the key and the key was sent; a request never sent always may be.
    #[test]
    fn exchanges_are_resent_only_when_safe() {
        use Exchange::*;
        use ExchangeVerdict::*;
        let plain = Policy::default();
        let honors = Policy::default().with_upstream_honors_key(true);
        for policy in [&plain, &honors] {
            assert_eq!(policy.judge_exchange(NotSent, true), Resend);
            assert_eq!(policy.judge_exchange(NotSent, false), Resend);
            assert_eq!(policy.judge_exchange(Answered(400), true), Final);
        }
        for exchange in [NoAnswer, Answered(500), Answered(503), Answered(409)] {
            assert_eq!(plain.judge_exchange(exchange, true), Final, "{exchange:?}");
            assert_eq!(
                honors.judge_exchange(exchange, true),
                Resend,
                "{exchange:?}"
            );
            assert_eq!(
                honors.judge_exchange(exchange, false),
                Final,
                "{exchange:?}"
            );
        }
        assert_eq!(
            honors.judge_exchange(Answered(422), true),
            PayloadMismatch(422)
        );
        assert_eq!(
            honors.judge_exchange(Answered(417), true),
            PayloadMismatch(417)
        );
        assert_eq!(plain.judge_exchange(Answered(422), true), Final);
        let read_only = Policy::default().with_effect(Effect::ReadOnly);
        assert_eq!(read_only.judge_exchange(Answered(502), false), Resend);
    }

    #[test]
    fn effect_lists_and_read_only_are_checked_at_registration() {
        let read_only = Policy::default().with_effect(Effect::ReadOnly);
        let message = |p: Policy| p.validate("search").unwrap_err().to_string();
        assert!(message(read_only.clone().with_cache_failures(true)).contains("READ_ONLY"));
        assert!(message(read_only.with_permanent_errors(["Declined"])).contains("READ_ONLY"));
        assert!(
            message(Policy::default().with_no_effect_errors([" "])).contains("`no_effect_errors`")
        );
        let both = Policy::default()
            .with_no_effect_errors(["Timeout"])
            .with_permanent_errors(["Timeout"]);
        assert!(message(both).contains("`Timeout`"));
        for effect in ["READ_ONLY", "IDEMPOTENT", "EFFECTFUL"] {
            assert_eq!(Effect::from_name(effect).unwrap().name(), effect);
        }
        assert_eq!(Effect::default(), Effect::Idempotent);
    }

    #[test]
    fn retry_pauses_double_up_to_the_cap_with_jitter_between_half_and_all() {
        let retry = RetryPolicy::attempts(10)
            .with_backoff(Duration::from_millis(100), Duration::from_millis(350));
        for _ in 0..200 {
            for (n, full) in [(0, 100), (1, 200), (2, 350), (9, 350), (40, 350)] {
                let pause = retry.pause(n);
                let full = Duration::from_millis(full);
                assert!(pause >= full / 2 && pause <= full, "retry {n}: {pause:?}");
            }
        }
        assert!(retry.covers(&["Anything"]));
        let only = retry.with_retry_on(["Timeout"]);
        assert!(only.covers(&["Sub", "Timeout"]));
        assert!(!only.covers(&["Refused"]));
    }

    use super::*;

    #[test]
    fn zero_ttl_is_refused_naming_tool_and_field() {
        let err = Tool::new("send_email", Policy::default().with_ttl(Duration::ZERO)).unwrap_err();
        assert_eq!(err.kind(), crate::ErrorKind::Configuration);
        assert!(err
            .to_string()
            .contains("`ttl` must be > 0 on `send_email`"));
    }

    #[test]
    fn a_ttl_or_lease_beyond_100_years_is_refused() {
        let huge = Duration::from_secs(10_000_000_000_000_000);
        let err = Tool::new("t", Policy::default().with_ttl(huge)).unwrap_err();
        assert!(err.to_string().contains("`ttl` must be at most"), "{err}");
        let err = Tool::new("t", Policy::default().with_lease(huge)).unwrap_err();
        assert!(err.to_string().contains("`lease` must be at most"), "{err}");
        assert!(Tool::new("t", Policy::default().with_ttl(MAX_SPAN)).is_ok());
    }

    #[test]
    fn zero_lease_is_refused() {
        let err = Tool::new("t", Policy::default().with_lease(Duration::ZERO)).unwrap_err();
        assert!(err.to_string().contains("`lease` must be > 0"));
    }

    #[test]
    fn timeout_not_shorter_than_lease_is_refused() {
        let policy = Policy::default().with_lease(Duration::from_secs(2));
        let err =
            Tool::with_timeout("t", policy.clone(), Some(Duration::from_secs(2))).unwrap_err();
        assert!(err.to_string().contains("must be shorter than `lease`"));
        assert!(Tool::with_timeout("t", policy, Some(Duration::from_millis(1999))).is_ok());
    }

    /// The Rust face names the Rust settings; a face with other names (Java: `ttlSeconds`)
    /// renders the same decision with its own, and the settings are named as data.
    #[test]
    fn setting_errors_name_the_setting_as_each_face_does() {
        let policy = Policy::default().with_lease(Duration::from_secs(2));
        let err = Tool::with_timeout("t", policy, Some(Duration::from_secs(2))).unwrap_err();
        assert_eq!(err.kind(), crate::ErrorKind::Configuration);
        assert_eq!(
            err.to_string(),
            "`timeout` (2000 ms) must be shorter than `lease` (2 s) on `t`: raise `lease` or \
             lower `timeout`, or a live call could be reported abandoned"
        );
        let Error::InvalidSetting(message) = &err else {
            panic!("{err:?}")
        };
        assert_eq!(
            message.settings().collect::<Vec<_>>(),
            [
                Setting::Timeout,
                Setting::Lease,
                Setting::Lease,
                Setting::Timeout
            ]
        );
        let java = |s: Setting| match s {
            Setting::Ttl => "ttlSeconds",
            Setting::Lease => "leaseSeconds",
            Setting::Timeout => "timeoutMs",
            Setting::KeyArguments => "keyArguments",
            other => other.rust_name(),
        };
        assert_eq!(
            message.render(java),
            "timeoutMs (2000 ms) must be shorter than leaseSeconds (2 s) on `t`: raise \
             leaseSeconds or lower timeoutMs, or a live call could be reported abandoned"
        );
        for policy in [
            Policy::default().with_ttl(Duration::ZERO),
            Policy::default().with_lease(Duration::ZERO),
            Policy::new(KeyStrategy::Explicit).with_key_arguments(["a"]),
            Policy::default().with_key_arguments(["a", "a"]),
        ] {
            let err = Tool::new("t", policy).unwrap_err();
            let text = err.to_string();
            for java_name in ["ttlSeconds", "leaseSeconds", "timeoutMs", "keyArguments"] {
                assert!(!text.contains(java_name), "{text}");
            }
            assert!(matches!(err, Error::InvalidSetting(_)), "{err:?}");
        }
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
