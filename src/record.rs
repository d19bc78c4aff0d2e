//! What a store keeps for a key: state, owner token, timestamps and outcome — never the input.

use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

/// The version of the record format below. Stores shared by several library versions and
/// languages refuse records of a format they do not know instead of misreading them.
pub const RECORD_FORMAT: u32 = 1;

/// An owner token: 128 random bits made by the caller before it claims a key.
///
/// `complete` and `release` act only on a record holding the same token, so a stale holder can
/// never overwrite or free someone else's claim.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Token(pub u128);

impl Token {
    /// A fresh token from the thread's cryptographically secure generator (seeded and
    /// periodically reseeded from the operating system; no system call per token).
    pub fn random() -> Token {
        Token(rand::random())
    }

    /// 32 lowercase hex digits.
    pub fn hex(&self) -> String {
        format!("{:032x}", self.0)
    }

    /// Parses 32 hex digits.
    pub fn from_hex(text: &str) -> Option<Token> {
        if text.len() != 32 || !text.bytes().all(|b| b.is_ascii_hexdigit()) {
            return None;
        }
        u128::from_str_radix(text, 16).ok().map(Token)
    }
}

impl fmt::Debug for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Token({:032x})", self.0)
    }
}

impl fmt::Display for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:032x}", self.0)
    }
}

impl Serialize for Token {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.hex())
    }
}

impl<'de> Deserialize<'de> for Token {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Token, D::Error> {
        let text = String::deserialize(d)?;
        Token::from_hex(&text)
            .ok_or_else(|| serde::de::Error::custom(format!("bad owner token {text:?}")))
    }
}

/// What is stored: a call is either running (claimed) or has an outcome.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RecordState {
    /// Claimed by the owner token, no outcome yet.
    InProgress,
    /// Has an outcome (success, remembered failure or too-large marker).
    Completed,
}

/// What a reader sees, worked out from the state and the store's clock.
///
/// `Abandoned` is never stored: it is an in-progress record whose lease has ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Status {
    /// Claimed, and the lease has not ended: the owner may still be running the body.
    InProgress,
    /// Claimed, and the lease ended without an outcome: the effect may or may not have
    /// happened; an operator resolves it.
    Abandoned,
    /// Has an outcome.
    Completed,
}

impl Status {
    /// The name the CLI shows and reads: `in-progress`, `abandoned`, `completed`.
    pub fn name(self) -> &'static str {
        match self {
            Status::InProgress => "in-progress",
            Status::Abandoned => "abandoned",
            Status::Completed => "completed",
        }
    }

    /// Parses `in-progress`, `abandoned` or `completed` (underscores accepted too).
    pub fn from_name(name: &str) -> Option<Status> {
        match name.replace('_', "-").as_str() {
            "in-progress" => Some(Status::InProgress),
            "abandoned" => Some(Status::Abandoned),
            "completed" => Some(Status::Completed),
            _ => None,
        }
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The remembered outcome of a completed call.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// The body succeeded; its result as JSON text.
    Success(Box<RawValue>),
    /// The body failed (recorded only with `cacheFailures`).
    Failure(Failure),
    /// The body succeeded but its result was larger than the store keeps.
    TooLarge {
        /// The size of the result, in bytes.
        bytes: u64,
    },
    /// The body of an `EFFECTFUL` tool failed in a way that may have had an effect: its error is
    /// kept, and every repeat gets the indeterminate error until an operator resolves the record
    /// (SPEC v1.1 rule 7). Unlike a failure, it is never claimed again under
    /// `RETURN_CACHED_IF_SUCCESS`.
    Indeterminate(Failure),
}

impl Outcome {
    /// A success outcome from JSON text; refuses text that is not one JSON value.
    pub fn success(json: &str) -> Result<Outcome, serde_json::Error> {
        Ok(Outcome::Success(RawValue::from_string(json.to_owned())?))
    }

    /// The JSON text of a success.
    pub fn success_json(&self) -> Option<&str> {
        match self {
            Outcome::Success(raw) => Some(raw.get()),
            _ => None,
        }
    }

    /// The outcome as the Redis and PostgreSQL stores keep it: its JSON and its kind
    /// (`success`, `failure`, `too_large` or `indeterminate`, so a store can tell them apart
    /// without parsing).
    #[cfg(any(feature = "redis", feature = "postgres"))]
    pub(crate) fn stored(&self) -> (String, &'static str) {
        let kind = match self {
            Outcome::Success(_) => "success",
            Outcome::Failure(_) => "failure",
            Outcome::TooLarge { .. } => "too_large",
            Outcome::Indeterminate(_) => "indeterminate",
        };
        let json = serde_json::to_string(self).expect("an outcome always serialises");
        (json, kind)
    }
}

impl PartialEq for Outcome {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (Outcome::Success(a), Outcome::Success(b)) => a.get() == b.get(),
            (Outcome::Failure(a), Outcome::Failure(b)) => a == b,
            (Outcome::TooLarge { bytes: a }, Outcome::TooLarge { bytes: b }) => a == b,
            (Outcome::Indeterminate(a), Outcome::Indeterminate(b)) => a == b,
            _ => false,
        }
    }
}

impl Eq for Outcome {}

impl Record {
    /// Whether this record holds an `EFFECTFUL` body's failure (an indeterminate outcome), which
    /// waits for an operator like an abandoned claim (SPEC v1.1 rule 7).
    pub fn is_held(&self) -> bool {
        self.state == RecordState::Completed
            && matches!(self.outcome, Some(Outcome::Indeterminate(_)))
    }
}

/// A failure as remembered: the error's type and message.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Failure {
    /// The error's type name (Rust: the last path segment of the type; Java: the class name).
    #[serde(rename = "type")]
    pub error_type: String,
    /// The error's message.
    pub message: String,
}

impl Failure {
    /// A failure of this type with this message.
    pub fn new(error_type: impl Into<String>, message: impl Into<String>) -> Failure {
        Failure {
            error_type: error_type.into(),
            message: message.into(),
        }
    }
}

/// A stored record. Times are milliseconds since the Unix epoch on the store's clock.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Record {
    /// [`RECORD_FORMAT`].
    #[serde(rename = "v")]
    pub format: u32,
    /// The 64-hex key.
    pub key: String,
    /// The call's tenant, in NFC (`None`: no tenant).
    pub tenant: Option<String>,
    /// The tool or action name.
    pub scope: String,
    /// Claimed or completed.
    pub state: RecordState,
    /// The owner token of the call that claimed it.
    pub token: Token,
    /// When it was claimed.
    pub claimed_at: i64,
    /// When the claim's lease ends (a record still in progress then is abandoned).
    pub lease_end: i64,
    /// How long it is kept after its outcome, in milliseconds.
    pub ttl_ms: i64,
    /// When it expires and the key is free again.
    pub expires_at: i64,
    /// The outcome, once completed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outcome: Option<Outcome>,
    /// The payload fingerprint (SPEC v1.1 rule 9): the lowercase hex SHA-256 of the canonical
    /// JSON of the claiming call's whole input ([`crate::key::fingerprint`]); `None` when the
    /// call had no input, and in every record written before v1.1 (which never mismatches).
    ///
    /// An optional member of format 1: readers that do not know it ignore it, and records
    /// without it still read, so [`RECORD_FORMAT`] stays 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fingerprint: Option<String>,
}

impl Record {
    /// What a reader sees at store time `now`.
    pub fn status(&self, now: i64) -> Status {
        match self.state {
            RecordState::Completed => Status::Completed,
            RecordState::InProgress if now < self.lease_end => Status::InProgress,
            RecordState::InProgress => Status::Abandoned,
        }
    }

    /// Whether the record is gone for readers at store time `now`.
    pub fn is_expired(&self, now: i64) -> bool {
        now >= self.expires_at
    }

    /// The record as JSON (the CLI's `--json`; any store that keeps records as documents).
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("a record always serialises")
    }

    /// Reads a record written by [`Record::to_json`]; refuses unknown formats.
    pub fn from_json(text: &str) -> Result<Record, crate::error::StoreError> {
        let record: Record = serde_json::from_str(text)
            .map_err(|e| crate::error::StoreError::Corrupt(format!("{e}: {text:.200}")))?;
        if record.format != RECORD_FORMAT {
            return Err(crate::error::StoreError::Corrupt(format!(
                "record format {} is not {RECORD_FORMAT}; upgrade idemkit to read it",
                record.format
            )));
        }
        Ok(record)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(outcome: Option<Outcome>) -> Record {
        Record {
            format: RECORD_FORMAT,
            key: "ab".repeat(32),
            tenant: Some("acme".into()),
            scope: "send_email".into(),
            state: if outcome.is_some() {
                RecordState::Completed
            } else {
                RecordState::InProgress
            },
            token: Token(0x1234),
            claimed_at: 1_000,
            lease_end: 2_000,
            ttl_ms: 10_000,
            expires_at: 12_000,
            outcome,
            fingerprint: None,
        }
    }

    #[test]
    fn record_json_round_trips_with_exact_success_json() {
        let r = record(Some(
            Outcome::success(r#"{"id":9007199254740993}"#).unwrap(),
        ));
        let text = r.to_json();
        assert!(
            text.contains(r#""success":{"id":9007199254740993}"#),
            "{text}"
        );
        assert_eq!(Record::from_json(&text).unwrap(), r);
    }

    #[test]
    fn failure_and_too_large_round_trip() {
        for o in [
            Outcome::Failure(Failure::new("SmtpError", "mailbox full")),
            Outcome::TooLarge { bytes: 5 },
        ] {
            let r = record(Some(o));
            assert_eq!(Record::from_json(&r.to_json()).unwrap(), r);
        }
    }

    #[test]
    fn the_fingerprint_round_trips_and_a_record_without_it_still_reads() {
        let mut r = record(None);
        r.fingerprint = Some("0f".repeat(32));
        let text = r.to_json();
        assert!(
            text.contains(&format!(r#""fingerprint":"{}""#, "0f".repeat(32))),
            "{text}"
        );
        assert_eq!(Record::from_json(&text).unwrap(), r);

        // A record as v1.0 wrote it: no `fingerprint` member at all.
        let v1 = record(None);
        let text = v1.to_json();
        assert!(!text.contains("fingerprint"), "{text}");
        assert_eq!(Record::from_json(&text).unwrap().fingerprint, None);
    }

    #[test]
    fn unknown_format_is_refused() {
        let mut r = record(None);
        r.format = 2;
        assert!(Record::from_json(&r.to_json()).is_err());
    }

    #[test]
    fn status_is_worked_out_from_the_lease() {
        let r = record(None);
        assert_eq!(r.status(1_999), Status::InProgress);
        assert_eq!(r.status(2_000), Status::Abandoned);
    }

    #[test]
    fn token_hex_round_trips() {
        let t = Token::random();
        assert_eq!(Token::from_hex(&t.hex()), Some(t));
        assert_ne!(Token::random(), Token::random());
    }
}
