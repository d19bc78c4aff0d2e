//! The Lua scripts of the Redis store, one `.lua` file each under `scripts/`, every one run
//! after the shared helpers of `scripts/prelude.lua` (`now_ms`, `read` of a record in either
//! format, `encode2`/`decode2` of a v2 value, `write_claim`, `record_outcome`).

use once_cell::sync::Lazy;
use redis::Script;

/// Shared Lua helpers, prepended to every script.
const PRELUDE: &str = include_str!("scripts/prelude.lua");

/// Claim, its rare path (the common one is a plain `SET ... NX GET`): KEYS = [record]; ARGV = [token, lease_ms, ttl_ms, retry_failure (0/1), format, key hex,
/// scope, has_tenant (0/1), tenant, fingerprint ('' for none), payload checked (0/1)]. Answers
/// `{answer, now, lease_end | record}`, the record as the values of one `HMGET` in the order of
/// `codec::RECORD_FIELDS` (then `outcome_kind`). A failure is replaced as
/// `ClaimRequest::replaces_failure` says.
pub(super) static CLAIM: Lazy<Script> = Lazy::new(|| script(include_str!("scripts/claim.lua")));

/// Complete: KEYS = [record]; ARGV = [token, outcome JSON, outcome kind, ttl_ms].
/// Answers `{'recorded', now}` or `{'not_owner', now[, record]}`.
pub(super) static COMPLETE: Lazy<Script> =
    Lazy::new(|| script(include_str!("scripts/complete.lua")));

/// Release: KEYS = [record]; ARGV = [token]. Answers 1 when it deleted the claim, else 0.
pub(super) static RELEASE: Lazy<Script> = Lazy::new(|| script(include_str!("scripts/release.lua")));

/// Get: KEYS = [record]. Answers `{now, record}`, the record empty when absent or expired.
pub(super) static GET: Lazy<Script> = Lazy::new(|| script(include_str!("scripts/get.lua")));

/// Resolve: KEYS = [record]; ARGV = [expected token, 'release' | 'complete', outcome JSON,
/// outcome kind, ttl_ms]. Answers `{answer, now[, record]}`.
pub(super) static RESOLVE: Lazy<Script> = Lazy::new(|| script(include_str!("scripts/resolve.lua")));

/// Take over: KEYS = [record]; ARGV = [expected token, new token, lease_ms, ttl_ms]. Answers
/// `{'acquired', now, lease_end}` or `{'lost', now[, record]}` (SPEC v1.1 rule 12).
pub(super) static TAKE_OVER: Lazy<Script> =
    Lazy::new(|| script(include_str!("scripts/take_over.lua")));

/// Purge one: KEYS = [record]. Deletes the record if it is expired but still present (native
/// expiry normally gets there first); answers 1 if it did.
pub(super) static PURGE_ONE: Lazy<Script> =
    Lazy::new(|| script(include_str!("scripts/purge_one.lua")));

/// Forget one: KEYS = [record]. Deletes the key if it is a record (a hash whose `key` field is
/// the 64-hex its name ends with), never another application's key; answers 1 if it did.
pub(super) static FORGET_ONE: Lazy<Script> =
    Lazy::new(|| script(include_str!("scripts/forget_one.lua")));

/// Delete held: KEYS = [record]; ARGV = [token]. Deletes the live record if it holds that
/// token; answers 1 if it did.
pub(super) static DELETE_HELD: Lazy<Script> =
    Lazy::new(|| script(include_str!("scripts/delete_held.lua")));

/// Every script's full text (the prelude, then its body), by name: `claim`, `complete`,
/// `release`, `get`, `resolve`, `take_over`, `purge_one`, `forget_one`. One text for every client: the Java face's Jedis
/// store (`RedisIdempotencyStore(RedisClient)`) runs these very scripts.
pub fn sources() -> Vec<(&'static str, String)> {
    [
        ("claim", include_str!("scripts/claim.lua")),
        ("complete", include_str!("scripts/complete.lua")),
        ("release", include_str!("scripts/release.lua")),
        ("get", include_str!("scripts/get.lua")),
        ("resolve", include_str!("scripts/resolve.lua")),
        ("take_over", include_str!("scripts/take_over.lua")),
        ("purge_one", include_str!("scripts/purge_one.lua")),
        ("forget_one", include_str!("scripts/forget_one.lua")),
    ]
    .into_iter()
    .map(|(name, body)| (name, format!("{PRELUDE}{body}")))
    .collect()
}

fn script(body: &str) -> Script {
    Script::new(&format!("{PRELUDE}{body}"))
}
