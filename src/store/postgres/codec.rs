//! Rows and cursors: a record from the columns of `sql::record_columns`, the
//! `tenant_key` of a list filter, and the `list` cursor.

use tokio_postgres::Row;

use crate::error::StoreError;
use crate::record::{Outcome, Record, RecordState, Token, RECORD_FORMAT};
use crate::store::{nfc, ListFilter};

/// Columns 0..=11 of a row made by `sql::record_columns`; `None` when the record part is NULL.
pub(super) fn record_from_row(row: &Row, offset: usize) -> Result<Option<Record>, StoreError> {
    let key: Option<String> = row.try_get(offset + 1).map_err(corrupt)?;
    let Some(key) = key else { return Ok(None) };
    let format: i32 = row.try_get(offset + 2).map_err(corrupt)?;
    if format != RECORD_FORMAT as i32 {
        return Err(StoreError::Corrupt(format!(
            "record {key} has format {format}, not {RECORD_FORMAT}; upgrade idemkit to read it"
        )));
    }
    let state: String = row.try_get(offset + 4).map_err(corrupt)?;
    let state = match state.as_str() {
        "in_progress" => RecordState::InProgress,
        "completed" => RecordState::Completed,
        other => {
            return Err(StoreError::Corrupt(format!(
                "record {key} has state {other:?}"
            )))
        }
    };
    let token: String = row.try_get(offset + 5).map_err(corrupt)?;
    let token = Token::from_hex(&token)
        .ok_or_else(|| StoreError::Corrupt(format!("record {key} has token {token:?}")))?;
    let outcome: Option<String> = row.try_get(offset + 10).map_err(corrupt)?;
    let outcome = match outcome {
        None => None,
        Some(json) => Some(serde_json::from_str::<Outcome>(&json).map_err(|e| {
            StoreError::Corrupt(format!("record {key} has an unreadable outcome: {e}"))
        })?),
    };
    Ok(Some(Record {
        format: RECORD_FORMAT,
        tenant: row.try_get(offset).map_err(corrupt)?,
        scope: row.try_get(offset + 3).map_err(corrupt)?,
        state,
        token,
        claimed_at: row.try_get(offset + 6).map_err(corrupt)?,
        lease_end: row.try_get(offset + 7).map_err(corrupt)?,
        ttl_ms: row.try_get(offset + 8).map_err(corrupt)?,
        expires_at: row.try_get(offset + 9).map_err(corrupt)?,
        outcome,
        fingerprint: row.try_get(offset + 11).map_err(corrupt)?,
        key,
    }))
}

pub(super) fn corrupt(e: tokio_postgres::Error) -> StoreError {
    StoreError::Corrupt(format!("unexpected row shape: {e}"))
}

/// The `tenant_key` a filter asks for (the NFC form of its tenant), or `None` for every tenant.
pub(super) fn filter_tenant_key(filter: &ListFilter) -> Option<String> {
    filter.tenant.as_ref().map(|t| match t {
        None => "_".to_owned(),
        Some(t) => format!("t{}", nfc(t)),
    })
}

/// A list cursor: the hex of the last row's tenant_key, a dot, its key.
pub(super) fn render_cursor(tenant_key: &str, key: &str) -> String {
    let mut out = String::from("p1.");
    for b in tenant_key.bytes() {
        out.push_str(&format!("{b:02x}"));
    }
    out.push('.');
    out.push_str(key);
    out
}

pub(super) fn parse_cursor(text: &str) -> Option<(String, String)> {
    let rest = text.strip_prefix("p1.")?;
    let (hex, key) = rest.split_once('.')?;
    if hex.len() % 2 != 0 || !key.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    let bytes: Option<Vec<u8>> = (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(hex.get(i..i + 2)?, 16).ok())
        .collect();
    let tenant_key = String::from_utf8(bytes?).ok()?;
    Some((tenant_key, key.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn list_cursors_round_trip() {
        let key = "ab".repeat(32);
        for tenant_key in ["_", "t", "tacme", "tJosé.x"] {
            let c = render_cursor(tenant_key, &key);
            assert_eq!(parse_cursor(&c), Some((tenant_key.to_owned(), key.clone())));
        }
        assert_eq!(parse_cursor("junk"), None);
    }
}
