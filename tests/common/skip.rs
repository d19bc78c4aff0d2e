//! The one rule for a test whose server or program is missing: skipped, saying so, or failed
//! when the run guarantees it. Shared by the integration tests (tests/common) and the crate's
//! unit tests (src/lib.rs includes this file under `cfg(test)`).

use std::io::Write;

/// Skips the running test, or fails it when the run guarantees `what`.
///
/// `what` names what is missing: a variable (`IDEMKIT_REDIS_URL`) or a program (`redis-server`,
/// `initdb`, `openssl`). `IDEMKIT_REQUIRE_SERVICES` lists what the run guarantees (`1`: everything;
/// scripts/test.sh sets it): then a missing one panics, naming it. Otherwise this prints
/// `skipped: <test>: <reason>` straight to stderr (past libtest's capture, so a passing run shows
/// it) and scripts/test.sh counts the test as skipped, not passed. The caller then returns.
pub fn skip(what: &str, reason: &str) {
    let test = std::thread::current().name().unwrap_or("a test").to_owned();
    if required(what) {
        panic!(
            "{test}: {reason}, and IDEMKIT_REQUIRE_SERVICES guarantees {what}: \
             start the servers (scripts/services.sh start; eval \"$(scripts/services.sh env)\") \
             or unset IDEMKIT_REQUIRE_SERVICES"
        );
    }
    let _ = writeln!(std::io::stderr(), "skipped: {test}: {reason}");
}

/// Whether `IDEMKIT_REQUIRE_SERVICES` (`1`, or names separated by spaces or commas) names `what`.
pub fn required(what: &str) -> bool {
    let list = std::env::var("IDEMKIT_REQUIRE_SERVICES").unwrap_or_default();
    list.split([' ', ',']).any(|n| n == "1" || n == what)
}

/// The URL in environment variable `var`, or `None` when the test is skipped (see [`skip`]).
pub fn env_url(var: &str) -> Option<String> {
    match std::env::var(var) {
        Ok(url) if !url.is_empty() => Some(url),
        _ => {
            skip(
                var,
                &format!("{var} is not set (scripts/services.sh env prints it)"),
            );
            None
        }
    }
}
