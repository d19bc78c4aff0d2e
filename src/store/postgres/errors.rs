//! PostgreSQL errors as store errors: the server's own words, the store's URL without secrets,
//! and a missing table named as such.

use super::PostgresStore;
use crate::error::StoreError;

/// A driver error as psql shows it: the server's own message (severity, SQLSTATE, message,
/// detail and hint) when it answered one, else the error and its causes.
pub(super) fn error_text(e: &tokio_postgres::Error) -> String {
    if let Some(db) = e.as_db_error() {
        let mut text = format!("{} {}: {}", db.severity(), db.code().code(), db.message());
        if let Some(detail) = db.detail() {
            text.push_str(&format!(" (DETAIL: {detail})"));
        }
        if let Some(hint) = db.hint() {
            text.push_str(&format!(" (HINT: {hint})"));
        }
        return text;
    }
    let mut text = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(cause) = source {
        text.push_str(&format!(": {cause}"));
        source = cause.source();
    }
    text
}

/// Whether the server refused a statement because the table has no `fingerprint` column: a
/// table made before SPEC v1.1 rule 9 that has not had `sql/postgres/005_...` applied.
pub(super) fn lacks_fingerprint(e: &tokio_postgres::Error) -> bool {
    e.code() == Some(&tokio_postgres::error::SqlState::UNDEFINED_COLUMN)
        && e.as_db_error()
            .is_some_and(|db| db.message().contains("fingerprint"))
}

/// Whether the server refused the claim because the table has no claim function: a table made
/// before `sql/postgres/006_...` that has not had it applied.
pub(super) fn lacks_claim_function(e: &tokio_postgres::Error) -> bool {
    e.code() == Some(&tokio_postgres::error::SqlState::UNDEFINED_FUNCTION)
        && e.as_db_error()
            .is_some_and(|db| db.message().contains("_claim("))
}

impl PostgresStore {
    /// The error of a table without the `fingerprint` column, naming the file that adds it.
    pub(super) fn fingerprint_missing(&self) -> StoreError {
        StoreError::Configuration(format!(
            "table {} in {} has no fingerprint column (idemkit 1.1 keeps payload fingerprints); apply {} or call {}",
            self.table,
            self.url,
            super::sql::FINGERPRINT_FILE,
            super::sql::CREATE_TABLE_CALL
        ))
    }

    pub(super) fn error(&self, e: tokio_postgres::Error) -> StoreError {
        if lacks_fingerprint(&e) {
            return self.fingerprint_missing();
        }
        if e.code() == Some(&tokio_postgres::error::SqlState::UNDEFINED_TABLE) {
            return StoreError::Configuration(format!(
                "table {} does not exist in {}; create it with sql/postgres/001_idemkit_records.sql or {}",
                self.table,
                self.url,
                super::sql::CREATE_TABLE_CALL
            ));
        }
        if e.code() == Some(&tokio_postgres::error::SqlState::CHECK_VIOLATION)
            && e.as_db_error()
                .and_then(|db| db.constraint())
                .is_some_and(|c| c.ends_with("outcome_kind_check"))
        {
            return StoreError::Configuration(format!(
                "table {} in {} does not accept held outcomes of EFFECTFUL tools yet; apply sql/postgres/003_idemkit_records_held_outcome.sql or call {}",
                self.table,
                self.url,
                super::sql::CREATE_TABLE_CALL
            ));
        }
        let message = match e.as_db_error() {
            Some(_) => format!("PostgreSQL at {} answered {}", self.url, error_text(&e)),
            None => format!("PostgreSQL at {}: {}", self.url, error_text(&e)),
        };
        StoreError::driver_message(message, e)
    }
}
