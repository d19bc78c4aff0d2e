//! Reading Redis answers: text and numbers, a record from its hash, the `{answer, now, ...}`
//! replies of the scripts, and the ranking fields `newest` reads.

use redis::Value;

use crate::error::StoreError;
use crate::record::{Outcome, Record, RecordState, Token, RECORD_FORMAT};

pub(super) fn config_value(value: &Value) -> Option<String> {
    match value {
        Value::Array(items) if items.len() >= 2 => text(&items[1]).ok(),
        Value::Map(pairs) => pairs.first().and_then(|(_, v)| text(v).ok()),
        _ => None,
    }
}

pub(super) fn text(value: &Value) -> Result<String, StoreError> {
    match value {
        Value::BulkString(bytes) => String::from_utf8(bytes.clone())
            .map_err(|_| StoreError::Corrupt("a Redis answer is not UTF-8".into())),
        Value::SimpleString(s) => Ok(s.clone()),
        Value::Int(i) => Ok(i.to_string()),
        Value::Okay => Ok("OK".into()),
        other => Err(StoreError::Corrupt(format!(
            "unexpected Redis answer {other:?}"
        ))),
    }
}

pub(super) fn number(value: &Value) -> Result<i64, StoreError> {
    match value {
        Value::Int(i) => Ok(*i),
        other => {
            let t = text(other)?;
            t.parse()
                .map_err(|_| StoreError::Corrupt(format!("{t:?} is not a number")))
        }
    }
}

pub(super) fn items(value: Value) -> Result<Vec<Value>, StoreError> {
    match value {
        Value::Array(items) => Ok(items),
        Value::Nil => Ok(Vec::new()),
        other => Err(StoreError::Corrupt(format!(
            "unexpected Redis answer {other:?}"
        ))),
    }
}

/// The fields of a record's hash that make a [`Record`], in the order the claim script reads
/// them with one `HMGET` (`scripts/claim.lua`; a thirteenth, `outcome_kind`, follows and is
/// only for the scripts). `fingerprint` (SPEC v1.1 rule 9) is absent from records written before
/// it existed, which read as having none.
pub const RECORD_FIELDS: [&str; 12] = [
    "v",
    "key",
    "tenant",
    "scope",
    "state",
    "token",
    "claimed_at",
    "lease_end",
    "ttl_ms",
    "expires_at",
    "outcome",
    "fingerprint",
];

/// A record from the flat `HGETALL` list of its hash.
pub(super) fn record_from_hash(flat: &[Value]) -> Result<Record, StoreError> {
    let mut fields: [Option<&Value>; 12] = [None; 12];
    for pair in flat.chunks(2) {
        let [name, value] = pair else {
            return Err(StoreError::Corrupt("odd HGETALL answer".into()));
        };
        let name = text(name)?;
        if let Some(i) = RECORD_FIELDS.iter().position(|f| *f == name) {
            fields[i] = Some(value);
        }
    }
    record_from_fields(fields)
}

/// A record from the values of `HMGET` of [`RECORD_FIELDS`] (in that order; nil where absent).
pub(super) fn record_from_values(values: &[Value]) -> Result<Record, StoreError> {
    let mut fields: [Option<&Value>; 12] = [None; 12];
    for (slot, value) in fields.iter_mut().zip(values) {
        if !matches!(value, Value::Nil) {
            *slot = Some(value);
        }
    }
    record_from_fields(fields)
}

fn record_from_fields(fields: [Option<&Value>; 12]) -> Result<Record, StoreError> {
    let [v, key, tenant, scope, state, token, claimed_at, lease_end, ttl_ms, expires_at, outcome, fingerprint] =
        fields;
    let some_text = |value: Option<&Value>| value.map(text).transpose();
    let some_number = |value: Option<&Value>| value.map(number).transpose();
    let v = some_number(v)?;
    let key = some_text(key)?;
    let tenant = some_text(tenant)?;
    let scope = some_text(scope)?;
    let state = some_text(state)?;
    let token = some_text(token)?;
    let (claimed_at, lease_end, ttl_ms, expires_at) = (
        some_number(claimed_at)?,
        some_number(lease_end)?,
        some_number(ttl_ms)?,
        some_number(expires_at)?,
    );
    let outcome = some_text(outcome)?;
    let fingerprint = some_text(fingerprint)?;
    let key_text = key.clone().unwrap_or_default();
    let missing = |field: &str| StoreError::Corrupt(format!("record {key_text} has no `{field}`"));
    let format = v.ok_or_else(|| missing("v"))?;
    if format != RECORD_FORMAT as i64 {
        return Err(StoreError::Corrupt(format!(
            "record {key_text} has format {format}, not {RECORD_FORMAT}; upgrade idemkit to read it"
        )));
    }
    let state = match state.as_deref() {
        Some("in_progress") => RecordState::InProgress,
        Some("completed") => RecordState::Completed,
        other => {
            return Err(StoreError::Corrupt(format!(
                "record {key_text} has state {other:?}"
            )))
        }
    };
    let token_text = token.ok_or_else(|| missing("token"))?;
    let token = Token::from_hex(&token_text).ok_or_else(|| {
        StoreError::Corrupt(format!("record {key_text} has token {token_text:?}"))
    })?;
    let outcome = match outcome {
        None => None,
        Some(json) => Some(serde_json::from_str::<Outcome>(&json).map_err(|e| {
            StoreError::Corrupt(format!("record {key_text} has an unreadable outcome: {e}"))
        })?),
    };
    Ok(Record {
        format: RECORD_FORMAT,
        key: key.ok_or_else(|| missing("key"))?,
        tenant,
        scope: scope.ok_or_else(|| missing("scope"))?,
        state,
        token,
        claimed_at: claimed_at.ok_or_else(|| missing("claimed_at"))?,
        lease_end: lease_end.ok_or_else(|| missing("lease_end"))?,
        ttl_ms: ttl_ms.ok_or_else(|| missing("ttl_ms"))?,
        expires_at: expires_at.ok_or_else(|| missing("expires_at"))?,
        outcome,
        fingerprint,
    })
}

/// `{answer, now, rest...}` from a script.
pub(super) fn reply(value: Value) -> Result<(String, i64, Vec<Value>), StoreError> {
    let mut items = items(value)?.into_iter();
    let answer = text(&items.next().unwrap_or(Value::Nil))?;
    let now = number(&items.next().unwrap_or(Value::Nil))?;
    Ok((answer, now, items.collect()))
}

pub(super) fn record_in(rest: Vec<Value>) -> Result<Record, StoreError> {
    let flat = items(rest.into_iter().next().unwrap_or(Value::Nil))?;
    record_from_hash(&flat)
}

/// The record a claim answers with: the values of its `HMGET` (see [`record_from_values`]).
pub(super) fn claimed_record_in(rest: Vec<Value>) -> Result<Record, StoreError> {
    let values = items(rest.into_iter().next().unwrap_or(Value::Nil))?;
    record_from_values(&values)
}

/// The sum of the integer answers of a pipeline (deleted counts).
pub(super) fn sum(values: &[Value]) -> Result<u64, StoreError> {
    let mut total = 0u64;
    for value in values {
        if let Value::ServerError(e) = value {
            return Err(StoreError::unavailable(format!("Redis: {e:?}")));
        }
        total += number(value)?.max(0) as u64;
    }
    Ok(total)
}

/// Record v2 (`scripts/prelude.lua`): one string `2<s>|token|claimed_at|lease_ms|ttl_ms|
/// expires_at|fingerprint|<n>|` then `n` bytes of scope, then the outcome JSON; `<s>` is `p` for
/// a claim in progress (its times come from the key's PEXPIRETIME, read by a script) or the outcome kind
/// of a completed record (`s`, `f`, `t`, `i`).
///
/// The value of a fresh claim, written by one plain `SET ... NX GET PX (lease + ttl)`.
pub(super) fn claim_value(
    token: &str,
    lease_ms: u64,
    ttl_ms: u64,
    fingerprint: Option<&str>,
    scope: &str,
) -> String {
    format!(
        "2p|{token}||{lease_ms}|{ttl_ms}||{}|{}|{scope}",
        fingerprint.unwrap_or(""),
        scope.len()
    )
}

/// Reads a v2 value found by a plain command: `Some(Some(record))` for a completed record (its
/// times are in the value), `Some(None)` for a claim in progress (only a script judges its lease,
/// on the server's clock), `None` when it is not a v2 record (the claim script decides).
pub(super) fn found_v2(value: &[u8], key: &str, tenant: Option<&str>) -> Option<Option<Record>> {
    let rest = value.strip_prefix(b"2")?;
    let (&state, rest) = rest.split_first()?;
    let mut parts = rest.strip_prefix(b"|")?.splitn(8, |b| *b == b'|');
    let mut next = || parts.next().and_then(|p| std::str::from_utf8(p).ok());
    let (token, claimed_at, lease_ms, ttl_ms, expires_at, fingerprint, n) = (
        next()?,
        next()?,
        next()?,
        next()?,
        next()?,
        next()?,
        next()?,
    );
    let n: usize = n.parse().ok()?;
    let tail = parts.next()?;
    if state == b'p' {
        return Some(None);
    }
    if tail.len() < n {
        return None;
    }
    let (scope, outcome) = tail.split_at(n);
    if !matches!(state, b's' | b'f' | b't' | b'i') {
        return None;
    }
    let claimed_at: i64 = claimed_at.parse().ok()?;
    let outcome: Outcome = serde_json::from_str(std::str::from_utf8(outcome).ok()?).ok()?;
    Some(Some(Record {
        format: RECORD_FORMAT,
        key: key.to_owned(),
        tenant: tenant.map(str::to_owned),
        scope: String::from_utf8(scope.to_vec()).ok()?,
        state: RecordState::Completed,
        token: Token::from_hex(token)?,
        claimed_at,
        lease_end: claimed_at + lease_ms.parse::<i64>().ok()?,
        ttl_ms: ttl_ms.parse().ok()?,
        expires_at: expires_at.parse().ok()?,
        outcome: Some(outcome),
        fingerprint: (!fingerprint.is_empty()).then(|| fingerprint.to_owned()),
    }))
}
