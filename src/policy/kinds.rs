//! The kinds a policy is made of: key strategies, repeat behaviours, effect kinds, failure
//! classes and web-exchange verdicts.

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

/// What becomes of a claimed call whose body failed: decided by [`Policy::settle_failure`](super::Policy::settle_failure), the
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
/// [`Policy::judge_exchange`](super::Policy::judge_exchange) needs to decide whether it may be sent again.
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

/// What [`Policy::judge_exchange`](super::Policy::judge_exchange) decided about a failed exchange.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ExchangeVerdict {
    /// Safe to send again under the same key, keeping the claim, while the retry budget and the
    /// deadline allow; when they do not, the claim is released (a later call sends again).
    Resend,
    /// Not sent again: the failure is settled by the policy's classification
    /// ([`Policy::settle_failure`](super::Policy::settle_failure)).
    Final,
    /// The upstream says the key was used before with another payload (this status: 422, or
    /// 417 as some middleware sends): the claim is released and the caller gets the
    /// payload-mismatch error.
    PayloadMismatch(u16),
}
