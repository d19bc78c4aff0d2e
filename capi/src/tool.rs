//! Tools for C callers: a name (the scope of its keys), a validated policy and a deadline.

use std::ffi::c_char;
use std::time::Duration;

use crate::boundary::{check_struct_size, guard, guard_void, required_str, str_array, Fault};
use crate::IdemkitStatus;
use idemkit_core::error::Error;
use idemkit_core::policy::{Effect, KeyStrategy, Policy, RetryBehavior, RetryPolicy, Tool};

/// How a tool's keys are derived (SPEC §1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(i32)]
pub enum IdemkitStrategy {
    /// The digest of the canonical JSON input (or of its `key_arguments` members).
    HashInput = 0,
    /// The digest of a key the caller supplies.
    Explicit = 1,
    /// A fresh random UUID per call, for an upstream `Idempotency-Key` header only; nothing is
    /// deduplicated.
    Uuid = 2,
    /// No protection at all.
    None = 3,
}

impl IdemkitStrategy {
    pub(crate) fn from_code(code: i32) -> Option<IdemkitStrategy> {
        [
            IdemkitStrategy::HashInput,
            IdemkitStrategy::Explicit,
            IdemkitStrategy::Uuid,
            IdemkitStrategy::None,
        ]
        .into_iter()
        .find(|s| *s as i32 == code)
    }

    fn strategy(self) -> KeyStrategy {
        match self {
            IdemkitStrategy::HashInput => KeyStrategy::HashInput,
            IdemkitStrategy::Explicit => KeyStrategy::Explicit,
            IdemkitStrategy::Uuid => KeyStrategy::Uuid,
            IdemkitStrategy::None => KeyStrategy::None,
        }
    }

    fn from_strategy(strategy: KeyStrategy) -> IdemkitStrategy {
        match strategy {
            KeyStrategy::HashInput => IdemkitStrategy::HashInput,
            KeyStrategy::Explicit => IdemkitStrategy::Explicit,
            KeyStrategy::Uuid => IdemkitStrategy::Uuid,
            KeyStrategy::None => IdemkitStrategy::None,
        }
    }
}

/// What a repeat of a remembered call gets (SPEC §1, `onCacheHit`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(i32)]
pub enum IdemkitOnCacheHit {
    /// A remembered success is returned; a remembered failure is answered as a cached failure.
    ReturnCached = 0,
    /// A remembered success is returned; a remembered failure runs again.
    ReturnCachedIfSuccess = 1,
    /// Any repeat fails at once with `IDEMKIT_STATUS_FAIL_FAST`, and an in-progress key is not
    /// waited for.
    FailFast = 2,
}

impl IdemkitOnCacheHit {
    fn from_code(code: i32) -> Option<RetryBehavior> {
        [
            (IdemkitOnCacheHit::ReturnCached, RetryBehavior::ReturnCached),
            (
                IdemkitOnCacheHit::ReturnCachedIfSuccess,
                RetryBehavior::ReturnCachedIfSuccess,
            ),
            (IdemkitOnCacheHit::FailFast, RetryBehavior::FailFast),
        ]
        .into_iter()
        .find(|(c, _)| *c as i32 == code)
        .map(|(_, behavior)| behavior)
    }

    fn from_behavior(behavior: RetryBehavior) -> IdemkitOnCacheHit {
        match behavior {
            RetryBehavior::ReturnCached => IdemkitOnCacheHit::ReturnCached,
            RetryBehavior::ReturnCachedIfSuccess => IdemkitOnCacheHit::ReturnCachedIfSuccess,
            RetryBehavior::FailFast => IdemkitOnCacheHit::FailFast,
        }
    }
}

/// What a tool's body does to the world, which decides what its failure means (SPEC v1.1
/// rule 7). Carried in `idemkit_policy.effect`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(i32)]
pub enum IdemkitEffect {
    /// Acts, but the same action twice equals once, or a failure is known to have had no
    /// effect (the default, and the behaviour of a policy without `effect`): claimed and
    /// deduplicated; a failure is released (or recorded with `cache_failures`) and may be
    /// retried. Code 0, so that a policy filled by an older program means this.
    Idempotent = 0,
    /// Reads only: nothing is claimed or recorded, every call runs, and a failure may be
    /// retried. `cache_failures` and `permanent_errors` are refused with it.
    ReadOnly = 1,
    /// Acts, and a failure may have acted anyway (a timeout inside a payment call): claimed and
    /// deduplicated; a failure is *held*: recorded as an indeterminate outcome, answered with
    /// `IDEMKIT_STATUS_INDETERMINATE` to this caller and every repeat until an operator
    /// resolves it, and never retried.
    Effectful = 2,
}

impl IdemkitEffect {
    fn from_code(code: i32) -> Option<Effect> {
        [
            (IdemkitEffect::Idempotent, Effect::Idempotent),
            (IdemkitEffect::ReadOnly, Effect::ReadOnly),
            (IdemkitEffect::Effectful, Effect::Effectful),
        ]
        .into_iter()
        .find(|(c, _)| *c as i32 == code)
        .map(|(_, effect)| effect)
    }

    fn from_effect(effect: Effect) -> IdemkitEffect {
        match effect {
            Effect::ReadOnly => IdemkitEffect::ReadOnly,
            Effect::Idempotent => IdemkitEffect::Idempotent,
            Effect::Effectful => IdemkitEffect::Effectful,
        }
    }
}

/// An idempotency policy (SPEC §1). Fill it with
/// `idemkit_policy_default(&policy, sizeof policy)` and change what you need; it is validated
/// by `idemkit_tool_new`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct IdemkitPolicy {
    /// `sizeof(idemkit_policy)` as the program was compiled, set by `idemkit_policy_default`:
    /// the version of this struct. Later versions of the library only add fields at the end and
    /// accept the sizes of earlier ones; a size the library does not know (0: the struct was
    /// not filled by `idemkit_policy_default`, or larger than its own: a newer header than the
    /// library) is refused with `IDEMKIT_STATUS_INVALID_ARGUMENT`.
    pub struct_size: usize,
    /// An `idemkit_strategy` code (default `IDEMKIT_STRATEGY_HASH_INPUT`).
    pub strategy: i32,
    /// An `idemkit_on_cache_hit` code (default `IDEMKIT_ON_CACHE_HIT_RETURN_CACHED`).
    pub on_cache_hit: i32,
    /// Whether failed calls are remembered too (default false).
    pub cache_failures: bool,
    /// How long a record is kept after its outcome, in seconds (default 3600; 0 is refused).
    pub ttl_seconds: u64,
    /// How long an in-progress claim holds before its owner is presumed dead, in seconds
    /// (default 300; 0 is refused).
    pub lease_seconds: u64,
    /// For `HASH_INPUT`: the names of the input members that identify the effect (UTF-8,
    /// copied by `idemkit_tool_new`); NULL with `key_argument_count` 0 for the whole input.
    pub key_arguments: *const *const c_char,
    /// How many names `key_arguments` holds.
    pub key_argument_count: usize,
    // ---- Added in idemkit 1.1: a struct of the 1.0 size (up to `key_argument_count`) is
    // still accepted, and these fields then take their defaults.
    /// An `idemkit_effect` code (default `IDEMKIT_EFFECT_IDEMPOTENT`): what a failure of the
    /// body means (SPEC v1.1 rule 7).
    pub effect: i32,
    /// Error type names (as passed to `idemkit_fail`) whose failures are known to have had no
    /// effect: the claim is released and the call may run again (UTF-8, copied by
    /// `idemkit_tool_new`); NULL with `no_effect_error_count` 0 for none.
    pub no_effect_errors: *const *const c_char,
    /// How many names `no_effect_errors` holds.
    pub no_effect_error_count: usize,
    /// Error type names whose failures are permanent and whose effect is known (a declined
    /// card): recorded as failures, so repeats get `IDEMKIT_ANSWER_CACHED_FAILURE`, even without
    /// `cache_failures`; NULL with `permanent_error_count` 0 for none.
    pub permanent_errors: *const *const c_char,
    /// How many names `permanent_errors` holds.
    pub permanent_error_count: usize,
    /// Retries (SPEC v1.1 rule 8): how many runs in all a failed call may get, the first
    /// included (default 0: no retry policy, as 1). Only failures the library releases are
    /// retried (`READ_ONLY`, `IDEMPOTENT` without `cache_failures`, and failures of class
    /// `NO_EFFECT`); held and recorded ones never are. See `idemkit_call_retry`.
    pub retry_max_attempts: u32,
    /// The pause before the first retry, in milliseconds (default 100); it doubles per retry up
    /// to `retry_max_backoff_ms`, each pause drawn at random between half of it and all of it.
    pub retry_initial_backoff_ms: u64,
    /// The longest pause, in milliseconds (default 2000; not shorter than the first).
    pub retry_max_backoff_ms: u64,
    // ---- Added after the fields above: a struct that ends at `retry_max_backoff_ms` is still
    // accepted, and these fields then take their defaults.
    /// Error type names (as passed to `idemkit_fail`) that the retry policy covers: only a
    /// failure whose `error_type` is one of them is retried, and the library matches them
    /// (UTF-8, copied by `idemkit_tool_new`). NULL with `retry_on_count` 0 (the default) for
    /// every failure the rules above allow. Needs `retry_max_attempts`; a name is never a
    /// reason to retry a failure the library holds or records.
    pub retry_on: *const *const c_char,
    /// How many names `retry_on` holds.
    pub retry_on_count: usize,
    /// For `HASH_INPUT` with `key_arguments` and `EXPLICIT` (default false): refuse a repeat
    /// whose whole input differs from the recorded call's with `IDEMKIT_STATUS_PAYLOAD_MISMATCH`
    /// (SPEC v1.2 §9 rule 1), instead of answering it from the record (such a key names the
    /// fields that are the call's identity).
    pub reject_payload_mismatch: bool,
}

/// `idemkit_policy` as idemkit 1.0 knew it: the prefix of the current struct that a program
/// compiled against the 1.0 header passes.
#[repr(C)]
#[derive(Clone, Copy)]
struct PolicyV1 {
    struct_size: usize,
    strategy: i32,
    on_cache_hit: i32,
    cache_failures: bool,
    ttl_seconds: u64,
    lease_seconds: u64,
    key_arguments: *const *const c_char,
    key_argument_count: usize,
}

// The 1.0 struct is exactly the prefix of the current one.
const _: () =
    assert!(std::mem::size_of::<PolicyV1>() == std::mem::offset_of!(IdemkitPolicy, effect));

/// A tool (call site): its name, which is the scope of its keys, its validated policy and its
/// deadline. Immutable and safe to share between threads; freed with `idemkit_tool_free`.
#[derive(Debug)]
pub struct IdemkitTool {
    pub(super) tool: Tool,
    /// How its calls' failures are retried (`retry_max_attempts` > 0).
    pub(super) retry: Option<RetryPolicy>,
}

/// The size of `idemkit_policy` in idemkit 1.0.
const POLICY_V1_SIZE: usize = std::mem::size_of::<PolicyV1>();

/// The size of `idemkit_policy` with the effect, error lists and retries, before `retry_on`
/// and `reject_payload_mismatch`.
const POLICY_RETRY_SIZE: usize = std::mem::offset_of!(IdemkitPolicy, retry_on);

/// The sizes of `idemkit_policy` this library reads: 1.0's, the one before `retry_on`, and its
/// own (see `check_struct_size`).
const POLICY_SIZES: [usize; 3] = [
    POLICY_V1_SIZE,
    POLICY_RETRY_SIZE,
    std::mem::size_of::<IdemkitPolicy>(),
];

impl IdemkitPolicy {
    /// The SPEC defaults, sized as the current struct.
    fn defaults() -> IdemkitPolicy {
        let defaults = Policy::default();
        let retry = RetryPolicy::default();
        let millis = |d: Duration| u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
        IdemkitPolicy {
            struct_size: std::mem::size_of::<IdemkitPolicy>(),
            strategy: IdemkitStrategy::from_strategy(defaults.strategy) as i32,
            on_cache_hit: IdemkitOnCacheHit::from_behavior(defaults.on_cache_hit) as i32,
            cache_failures: defaults.cache_failures,
            ttl_seconds: defaults.ttl.as_secs(),
            lease_seconds: defaults.lease.as_secs(),
            key_arguments: std::ptr::null(),
            key_argument_count: 0,
            effect: IdemkitEffect::from_effect(defaults.effect) as i32,
            no_effect_errors: std::ptr::null(),
            no_effect_error_count: 0,
            permanent_errors: std::ptr::null(),
            permanent_error_count: 0,
            retry_max_attempts: 0,
            retry_initial_backoff_ms: millis(retry.initial_backoff),
            retry_max_backoff_ms: millis(retry.max_backoff),
            retry_on: std::ptr::null(),
            retry_on_count: 0,
            reject_payload_mismatch: defaults.reject_payload_mismatch,
        }
    }

    /// Reads a caller's policy of a known `size`: the fields an older struct lacks get their
    /// defaults.
    ///
    /// # Safety
    /// `policy` is readable for `size` bytes, and `size` is one of `POLICY_SIZES`.
    unsafe fn read(policy: *const IdemkitPolicy, size: usize) -> IdemkitPolicy {
        let mut read = IdemkitPolicy::defaults();
        // Every known size ends at a field boundary of this struct, so its prefix is whole
        // fields of the caller's struct.
        std::ptr::copy_nonoverlapping(
            policy.cast::<u8>(),
            std::ptr::addr_of_mut!(read).cast::<u8>(),
            size,
        );
        read
    }
}

const POLICY_INIT: &str = "idemkit_policy_default(&policy, sizeof policy)";

/// Fills `*policy` with the SPEC defaults: `HASH_INPUT`, `RETURN_CACHED`, no failure caching,
/// TTL 3600 s, lease 300 s, no key arguments, effect `IDEMPOTENT`, no error lists, no retries
/// (backoff 100 ms to 2000 ms once `retry_max_attempts` is set), no `retry_on` (every failure
/// the rules allow is retried), `reject_payload_mismatch` false; and `policy->struct_size` with
/// `struct_size`. A program compiled against an older header (1.0's, or the one before
/// `retry_on`) passes its smaller size, and only the fields that struct has are written.
///
/// Pass `sizeof` of your struct: `idemkit_policy_default(&policy, sizeof policy)`. A size the
/// library does not know (see `idemkit_policy.struct_size`) answers
/// `IDEMKIT_STATUS_INVALID_ARGUMENT` and writes nothing.
///
/// # Safety
/// `policy` is NULL or writable for `struct_size` bytes.
#[no_mangle]
pub unsafe extern "C" fn idemkit_policy_default(
    policy: *mut IdemkitPolicy,
    struct_size: usize,
) -> IdemkitStatus {
    guard(|| {
        if policy.is_null() {
            return Err(Fault::null("policy"));
        }
        check_struct_size(
            struct_size,
            &POLICY_SIZES,
            "struct_size",
            "idemkit_policy",
            POLICY_INIT,
        )?;
        let defaults = IdemkitPolicy {
            struct_size,
            ..IdemkitPolicy::defaults()
        };
        // An older program's struct is a prefix of this one: only that much is its memory.
        std::ptr::copy_nonoverlapping(
            std::ptr::addr_of!(defaults).cast::<u8>(),
            policy.cast::<u8>(),
            struct_size,
        );
        Ok(())
    })
}

/// Makes a tool: `name` is the scope of its keys; `policy` (NULL for the defaults) is validated
/// here; `timeout_ms` (0 for none) is the deadline of each call's store lookup, waiting and
/// body (a body reported after it answers `IDEMKIT_STATUS_TIMEOUT`, see `idemkit_complete`),
/// and must be shorter than the lease.
///
/// On OK, `*out` is a new tool the caller owns: free it with `idemkit_tool_free`. A policy whose
/// `struct_size` the library does not know answers `IDEMKIT_STATUS_INVALID_ARGUMENT`. A policy
/// the library refuses (TTL or lease 0, `key_arguments` with a strategy other than `HASH_INPUT`, an
/// unknown enum code, a timeout not shorter than the lease, `READ_ONLY` with `cache_failures`
/// or `permanent_errors`, an empty error type name, or one in both lists, a
/// `retry_max_backoff_ms` shorter than `retry_initial_backoff_ms`, `retry_on` names without
/// `retry_max_attempts`) answers
/// `IDEMKIT_STATUS_CONFIGURATION` with a message that says what to change, and `*out` is NULL.
///
/// # Safety
/// `name` is NULL or a NUL-terminated string; `policy` is NULL or valid, its `key_arguments`
/// as documented; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn idemkit_tool_new(
    name: *const c_char,
    policy: *const IdemkitPolicy,
    timeout_ms: u64,
    out: *mut *mut IdemkitTool,
) -> IdemkitStatus {
    guard(|| {
        let out = out.as_mut().ok_or_else(|| Fault::null("out"))?;
        *out = std::ptr::null_mut();
        let name = required_str(name, "name")?;
        let mut retry = None;
        let policy = if policy.is_null() {
            Policy::default()
        } else {
            // The size first, read on its own: the rest is read only as a struct it knows.
            let size = std::ptr::addr_of!((*policy).struct_size).read();
            check_struct_size(
                size,
                &POLICY_SIZES,
                "policy.struct_size",
                "idemkit_policy",
                POLICY_INIT,
            )?;
            let p = &IdemkitPolicy::read(policy, size);
            let strategy = IdemkitStrategy::from_code(p.strategy).ok_or_else(|| {
                    Fault::from(Error::Configuration(format!(
                        "strategy {} on `{name}` is not an idemkit_strategy; use IDEMKIT_STRATEGY_HASH_INPUT (0) to IDEMKIT_STRATEGY_NONE (3)",
                        p.strategy
                    )))
                })?;
            let on_cache_hit = IdemkitOnCacheHit::from_code(p.on_cache_hit).ok_or_else(|| {
                    Fault::from(Error::Configuration(format!(
                        "on_cache_hit {} on `{name}` is not an idemkit_on_cache_hit; use IDEMKIT_ON_CACHE_HIT_RETURN_CACHED (0) to IDEMKIT_ON_CACHE_HIT_FAIL_FAST (2)",
                        p.on_cache_hit
                    )))
                })?;
            let effect = IdemkitEffect::from_code(p.effect).ok_or_else(|| {
                    Fault::from(Error::Configuration(format!(
                        "effect {} on `{name}` is not an idemkit_effect; use IDEMKIT_EFFECT_IDEMPOTENT (0), IDEMKIT_EFFECT_READ_ONLY (1) or IDEMKIT_EFFECT_EFFECTFUL (2)",
                        p.effect
                    )))
                })?;
            let key_arguments = str_array(
                p.key_arguments,
                p.key_argument_count,
                "policy.key_arguments",
            )?;
            let no_effect_errors = str_array(
                p.no_effect_errors,
                p.no_effect_error_count,
                "policy.no_effect_errors",
            )?;
            let permanent_errors = str_array(
                p.permanent_errors,
                p.permanent_error_count,
                "policy.permanent_errors",
            )?;
            let retry_on = str_array(p.retry_on, p.retry_on_count, "policy.retry_on")?;
            if p.retry_max_attempts == 0 && !retry_on.is_empty() {
                return Err(Fault::from(Error::Configuration(format!(
                    "retry_on of `{name}` names error types to retry, but retry_max_attempts is 0 (no retry policy); set retry_max_attempts (e.g. 3), or leave retry_on NULL with retry_on_count 0"
                ))));
            }
            if p.retry_max_attempts > 0 {
                let policy = RetryPolicy::attempts(p.retry_max_attempts)
                    .with_backoff(
                        Duration::from_millis(p.retry_initial_backoff_ms),
                        Duration::from_millis(p.retry_max_backoff_ms),
                    )
                    .with_retry_on(retry_on);
                policy
                    .validate()
                    .map_err(|e| Fault::from(e).context(&format!("`{name}`")))?;
                retry = Some(policy);
            }
            Policy::new(strategy.strategy())
                .with_on_cache_hit(on_cache_hit)
                .with_cache_failures(p.cache_failures)
                .with_ttl(Duration::from_secs(p.ttl_seconds))
                .with_lease(Duration::from_secs(p.lease_seconds))
                .with_key_arguments(key_arguments)
                .with_effect(effect)
                .with_no_effect_errors(no_effect_errors)
                .with_permanent_errors(permanent_errors)
                .with_reject_payload_mismatch(p.reject_payload_mismatch)
        };
        let timeout = (timeout_ms > 0).then(|| Duration::from_millis(timeout_ms));
        let tool = Tool::with_timeout(name, policy, timeout)?;
        *out = Box::into_raw(Box::new(IdemkitTool { tool, retry }));
        Ok(())
    })
}

/// Frees a tool. NULL is accepted and ignored. Calls begun with it do not need it any more.
///
/// # Safety
/// `tool` is NULL or a tool from `idemkit_tool_new` that was not freed yet.
#[no_mangle]
pub unsafe extern "C" fn idemkit_tool_free(tool: *mut IdemkitTool) {
    guard_void(|| {
        if !tool.is_null() {
            drop(Box::from_raw(tool));
        }
    })
}
