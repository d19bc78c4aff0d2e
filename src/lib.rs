//! idemkit makes a side-effecting call safe to retry.
//!
//! A retry repeats a call; when the call sends an email, opens an issue or charges a card, the
//! repeat must not do it again. idemkit derives a canonical key from the call's input (or takes
//! one the caller supplies), claims it atomically in a store, runs the body at most once per key
//! while its record is kept, and answers every repeat with the remembered outcome or a typed
//! error — never a second effect.
//!
//! ```
//! use std::sync::Arc;
//! use idemkit::{CallContext, Executor, KeyInput, MemoryStore, Policy, Tool};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let executor = Executor::new(Arc::new(MemoryStore::new()));
//! let send_email = Tool::new("send_email", Policy::default())?;
//! let context = CallContext::new().tenant("acme");
//! let input = r#"{"to":"ana@example.com","subject":"Your booking"}"#;
//!
//! let mut sent = 0;
//! for _retry in 0..3 {
//!     let message_id: String = executor
//!         .call(&send_email, &context, KeyInput::Json(input), |_call| async {
//!             sent += 1; // the side effect
//!             Ok::<_, std::io::Error>("msg-1".to_string())
//!         })
//!         .await?;
//!     assert_eq!(message_id, "msg-1");
//! }
//! assert_eq!(sent, 1);
//! # Ok(())
//! # }
//! ```
//!
//! See `docs/SPEC.md` in the repository for the full contract: key derivation (§2), the claim
//! protocol (§3) and the stores (§4); `docs/ARCHITECTURE.md` maps each rule of §3 to the function
//! that carries it out.
//!
//! Features: `redis` ([`store::redis`]), `postgres` ([`store::postgres`]), `testing` (the store
//! conformance suite, `testing`), `cli` (the `idemkit` operator binary), `mcp` (tools served over the Model Context Protocol,
//! [`mcp`]).

#![warn(missing_docs)]

pub mod error;
pub mod events;
pub mod executor;
pub mod key;
#[cfg(feature = "mcp")]
pub mod mcp;
pub mod policy;
pub mod record;
pub mod runtime;
pub mod store;

#[cfg(feature = "testing")]
pub mod testing;

// The unit tests that need a server skip or fail by the integration tests' one rule.
#[cfg(test)]
#[allow(dead_code)]
#[path = "../tests/common/skip.rs"]
mod test_skip;

pub use error::{Error, ErrorKind, StoreError};
pub use events::{Event, EventKind, Events, Listener};
pub use executor::{
    Answer, Attempt, BodyReport, CallContext, CallError, CallInfo, CallOptions, Executor, RawInput,
    Recording, Reported, Step, SuppliedKey,
};
pub use key::{
    canonical_material, derive_key, fingerprint, is_blank, CanonicalObject, CanonicalValue, Key,
    KeyError, KeyInput, KeyScope, Number,
};
pub use policy::{
    Effect, Exchange, ExchangeVerdict, FailureClass, FailureSettlement, KeyOrigin, KeyStrategy,
    Policy, RetryBehavior, RetryPolicy, Tool,
};
pub use record::{Failure, Outcome, Record, RecordState, Status, Token};
pub use store::{ManualClock, MemoryStore, Store, StoreOptions};

/// The library's version.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// The README's Rust examples, compiled and run as doc tests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;

/// The public enums and structs that may grow are `#[non_exhaustive]`: outside the crate, a
/// `match` without a wildcard arm, or a struct literal, does not compile. Each block below must
/// fail to compile.
///
/// ```compile_fail,E0004
/// fn name(kind: idemkit::ErrorKind) -> &'static str {
///     use idemkit::ErrorKind::*;
///     match kind {
///         InvalidKey | Configuration | CachedFailure | FailFast | InProgress | Indeterminate
///         | StoreUnavailable | OutcomeTooLarge | Timeout | Internal => "known",
///     }
/// }
/// ```
///
/// ```compile_fail,E0004
/// fn name(kind: idemkit::EventKind) -> &'static str {
///     use idemkit::EventKind::*;
///     match kind {
///         Acquired | Deduplicated | Waited | WaitTimedOut | FailedFast | Indeterminate
///         | Released | StoreError | RecordFailed => "known",
///     }
/// }
/// ```
///
/// ```compile_fail,E0004
/// fn name(error: &idemkit::Error) -> &'static str {
///     use idemkit::Error::*;
///     match error {
///         InvalidKey { .. } | Configuration(_) | InvalidSetting(_) | CachedFailure { .. }
///         | FailFast { .. } | InProgress { .. } | Indeterminate { .. }
///         | StoreUnavailable { .. } | StoreOperation { .. } | OutcomeTooLarge { .. }
///         | Timeout { .. } | Internal(_) => "known",
///     }
/// }
/// ```
///
/// ```compile_fail,E0004
/// fn name(error: &idemkit::CallError<std::io::Error>) -> &'static str {
///     match error {
///         idemkit::CallError::Idempotency(_) => "idemkit",
///         idemkit::CallError::Body(_) => "body",
///     }
/// }
/// ```
///
/// ```compile_fail,E0639
/// let policy = idemkit::Policy {
///     strategy: idemkit::KeyStrategy::HashInput,
///     ttl: std::time::Duration::from_secs(60),
///     on_cache_hit: idemkit::RetryBehavior::ReturnCached,
///     cache_failures: false,
///     key_arguments: Vec::new(),
///     lease: std::time::Duration::from_secs(30),
/// };
/// ```
///
/// The same code with a wildcard arm compiles:
///
/// ```
/// fn name(error: &idemkit::CallError<std::io::Error>) -> &'static str {
///     match error {
///         idemkit::CallError::Idempotency(_) => "idemkit",
///         idemkit::CallError::Body(_) => "body",
///         _ => "newer",
///     }
/// }
/// ```
#[cfg(doctest)]
pub struct NonExhaustiveDoctests;
