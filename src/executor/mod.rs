//! The claim protocol of SPEC §3, in one place, used by every face.
//!
//! Two shapes over one implementation: [`Executor::call`] runs a Rust body in one go, and the
//! two-step [`Executor::prepare_raw`] → [`Executor::advance`] → (the caller runs its body) →
//! [`Executor::report`] serves the Java and C faces, whose bodies never run inside a native
//! frame. The faces only say what their body did ([`BodyReport`]); what that means — which
//! input the strategy keys on, what is recorded or released, whether the caller gets the body's
//! answer or the timeout error — is decided here, once for every face.

use std::borrow::Borrow;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::error::{Error, StoreError};
use crate::events::{Event, EventKind, Events};
use crate::key::{derive_key, CanonicalValue, Key, KeyError, KeyInput, KeyScope};
use crate::policy::{
    Effect, Exchange, ExchangeVerdict, FailureClass, FailureSettlement, KeyOrigin, KeyStrategy,
    RetryBehavior, RetryPolicy, Tool,
};
use crate::record::{Failure, Outcome, Record, RecordState, Token};
use crate::store::{
    Claim, ClaimReply, ClaimRequest, Completion, RecordId, Store, TakeOver, TakeOverRequest,
};

mod call;
mod claim;
mod guards;
mod prepare;
mod report;
mod settle;
mod trace;

use guards::{ClaimInFlight, ClaimTicket, SettlingInFlight};
use prepare::claims;
use settle::{spawn_settling, Settlement, Settler};
#[cfg(feature = "tracing")]
use trace::{call_span, record_outcome};

/// How long settling (recording an outcome, releasing a claim) may hold its caller before it
/// goes on in the background: the Java and C faces settle inside one short native call.
const INLINE_SETTLE: Duration = Duration::from_millis(100);

/// Tenant and run of a call: both are part of the key; records are tenant-scoped.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CallContext {
    /// The tenant the call acts for: keys and records are separate per tenant (after NFC).
    pub tenant: Option<String>,
    /// A new run is a new key: the same call re-asked in a new run runs again.
    pub run: Option<String>,
}

impl CallContext {
    /// No tenant, no run.
    pub fn new() -> CallContext {
        CallContext::default()
    }

    /// The same context for this tenant (at most 1,024 bytes of UTF-8 after NFC, else the
    /// call is refused as an invalid key).
    pub fn tenant(mut self, tenant: impl Into<String>) -> CallContext {
        self.tenant = Some(tenant.into());
        self
    }

    /// The same context in this run (say, one agent session): the same call in another run
    /// gets another key.
    pub fn run(mut self, run: impl Into<String>) -> CallContext {
        self.run = Some(run.into());
        self
    }
}

/// What a body may want to know about its own call, e.g. to pass the key on as an
/// `Idempotency-Key` header.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct CallInfo {
    /// The 64-hex key (`HASH_INPUT`, `EXPLICIT`), the fresh UUID (`UUID`), or `None` (`NONE`).
    pub key: Option<String>,
    /// The call's tenant, in NFC.
    pub tenant: Option<String>,
}

/// The next thing the caller of the two-step protocol does. New steps may be added, so a
/// `match` needs a wildcard arm.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Step {
    /// Run the body, then call [`Executor::succeed`] or [`Executor::fail`].
    Run,
    /// Do not run: this remembered result (JSON text) is the answer.
    Replay(String),
    /// Still waiting for another caller's claim and the step's time budget is spent: call
    /// [`Executor::advance`] again (this is how the Java face keeps native calls short).
    Pending,
}

/// What happened to a body's outcome. New cases may be added, so a `match` needs a wildcard
/// arm.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Recording {
    /// Recorded (a success, or a failure with `cache_failures`); repeats get it.
    Recorded,
    /// The claim was released (a failure without `cache_failures`, or a body that never ran):
    /// the next call runs.
    Released,
    /// Neither recorded nor released: the body was cancelled and nobody knows whether it acted,
    /// so the claim stays in progress and reads as abandoned once its lease ends
    /// (SPEC v1.1 rule 3).
    LeftInProgress,
    /// Nothing to record (`UUID`, `NONE`, or a `READ_ONLY` effect).
    Unprotected,
    /// An `EFFECTFUL` body's failure is held: recorded as an indeterminate outcome, so that this
    /// caller and every repeat get the indeterminate error until an operator resolves it
    /// (SPEC v1.1 rule 7).
    Held,
    /// Still claimed: the request is sent again under the same key (SPEC v1.1 rule 12), and its
    /// next outcome settles the claim.
    Kept,
    /// Not settled when the call returned. Either settling gave up (reported as `record_failed`,
    /// or `store_error` for a release; the claim will become abandoned), or, after a store error,
    /// it goes on in the background until the lease ends (the detail says so, and the event
    /// comes only if it finally gives up).
    Failed(String),
}

impl Recording {
    /// A short name: `recorded`, `released`, `held`, `left_in_progress`, `unprotected`, `kept`
    /// or `failed`.
    pub fn name(&self) -> &'static str {
        match self {
            Recording::Recorded => "recorded",
            Recording::Released => "released",
            Recording::Held => "held",
            Recording::LeftInProgress => "left_in_progress",
            Recording::Unprotected => "unprotected",
            Recording::Kept => "kept",
            Recording::Failed(_) => "failed",
        }
    }
}

/// What a face's body did, as the face reports it to [`Executor::report`].
#[derive(Debug, Clone, Copy)]
pub enum BodyReport<'a> {
    /// It returned this result (one JSON value, as text).
    Succeeded(&'a str),
    /// It failed with this error (classified by its type name alone).
    Failed(&'a Failure),
    /// It failed with this error, and the face knows more: every type name the error answers to
    /// (most specific first; matched against the policy's `no_effect_errors`,
    /// `permanent_errors` and a retry policy's `retry_on`), and its class when the face was told
    /// it (a Rust classifier, a C caller's report).
    FailedAs {
        /// The error's type and message, as recorded.
        failure: &'a Failure,
        /// Every type name the error answers to.
        types: &'a [String],
        /// What the face knows about the failure's effect.
        class: Option<FailureClass>,
    },
    /// It returned a result the face could not write as JSON; this failure describes it. Settled
    /// like a failure of the body (SPEC v1.1 rule 6), never left to become abandoned.
    Unencodable(&'a Failure),
    /// It never started (e.g. its arguments did not bind, or its request was never sent): the
    /// claim is released.
    NeverRan,
    /// It was cancelled while it may have been acting (a Rust future dropped, an HTTP exchange
    /// aborted): nobody knows its outcome, so the claim is left in progress.
    Cancelled,
}

/// What the face tells its caller after [`Executor::report`].
#[derive(Debug)]
pub enum Answer {
    /// The body's own answer: its result, or its error (or, for [`BodyReport::NeverRan`] and
    /// [`BodyReport::Cancelled`], the face's reason for not running it or cutting it short).
    Body,
    /// This error instead: the body was still running at the caller's deadline
    /// ([`Error::Timeout`], which says what became of its outcome), or its failure is held
    /// ([`Error::Indeterminate`]; the body's own error is its cause).
    Error(Error),
    /// Not yet: the failure may be retried (SPEC v1.1 rule 8). Pause this long, then
    /// [`Executor::advance`] the same attempt again (same key, same deadline) and run the body
    /// again if told to.
    Retry(Duration),
}

/// The result of [`Executor::report`].
#[derive(Debug)]
pub struct Reported {
    /// What the caller gets.
    pub answer: Answer,
    /// What became of the body's outcome (for a log line when it is [`Recording::Failed`]).
    pub recording: Recording,
}

/// A call's supplied key, as a face hands it over.
#[derive(Debug, Clone, Copy)]
pub enum SuppliedKey<'a> {
    /// The key itself.
    Text(&'a str),
    /// The key as a JSON string literal (non-ASCII escaped), so that a lone surrogate from a
    /// UTF-16 caller reaches the key module and is refused there.
    JsonLiteral(&'a str),
}

/// A call's input as a face hands it over, before the strategy picks what it keys on:
/// `HASH_INPUT` the JSON input, `EXPLICIT` the supplied key, `UUID` and `NONE` neither.
#[derive(Debug, Clone, Copy, Default)]
pub struct RawInput<'a> {
    /// The call's input as JSON text.
    pub json: Option<&'a str>,
    /// The key the caller supplied.
    pub supplied_key: Option<SuppliedKey<'a>>,
}

/// Where a call stands in the protocol.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Not yet claimed (or waiting for another caller).
    Claiming,
    /// Claimed: the body may run.
    Claimed,
    /// Runs without the store (`UUID`, `NONE`).
    Unprotected,
    /// An outcome was given (replayed, recorded, released or refused).
    Done,
}

/// One logical call going through the protocol: its key, owner token and deadline.
///
/// `T` is how the attempt holds its tool: [`Executor::prepare`] gives an owned `Attempt<Tool>`
/// (to keep across native calls); [`Executor::call`] borrows, so that threads sharing one tool
/// never contend on its reference count.
#[derive(Debug, Clone)]
pub struct Attempt<T: Borrow<Tool> = Tool> {
    tool: T,
    tenant: Option<Arc<str>>,
    key: Option<Key>,
    uuid: Option<String>,
    token: Token,
    deadline: Option<Instant>,
    /// When the claim's lease ends at the latest, on this process's clock (the claim was sent
    /// at or after `lease_until - lease`): settling is retried until then (SPEC v1.1 rule 4).
    lease_until: Option<Instant>,
    waited: bool,
    /// When the call began waiting for another holder (its first wait), for the `waited`
    /// event's length.
    wait_started: Option<Instant>,
    polls: u32,
    phase: Phase,
    /// How failures of this call are retried, if at all.
    retry: Option<Arc<RetryPolicy>>,
    /// Runs started so far.
    runs: u32,
    /// The payload fingerprint the record keeps (SPEC v1.1 rule 9), when the call has an input.
    fingerprint: Option<Arc<str>>,
    /// Whether a repeat is checked against the record's fingerprint: the policy's decision for
    /// where the key came from (SPEC v1.2 §9 rule 1, [`crate::Policy::checks_payload`]).
    payload_checked: bool,
    /// The call's span (feature `tracing`): `idemkit.call`, see [`Executor::call`].
    #[cfg(feature = "tracing")]
    span: tracing::Span,
}

impl<T: Borrow<Tool>> Attempt<T> {
    /// The tool being called.
    pub fn tool(&self) -> &Tool {
        self.tool.borrow()
    }

    /// The store key, for `HASH_INPUT` and `EXPLICIT`.
    pub fn key(&self) -> Option<&Key> {
        self.key.as_ref()
    }

    /// The key as the body and the upstream header see it: the 64-hex key, or the UUID.
    pub fn key_text(&self) -> Option<String> {
        match (&self.key, &self.uuid) {
            (Some(k), _) => Some(k.hex()),
            (None, Some(u)) => Some(u.clone()),
            (None, None) => None,
        }
    }

    /// The call's tenant, in NFC: the tenant of its record.
    pub fn tenant(&self) -> Option<&str> {
        self.tenant.as_deref()
    }

    /// The call's owner token (128 random bits), the same for every step of the call.
    pub fn token(&self) -> Token {
        self.token
    }

    /// The caller's deadline, if the tool has a timeout.
    pub fn deadline(&self) -> Option<Instant> {
        self.deadline
    }

    /// Retries this call's failures by `retry` (SPEC v1.1 rule 8), instead of the executor's
    /// default; `None`: no retries.
    pub fn set_retry(&mut self, retry: Option<RetryPolicy>) {
        self.retry = retry.map(Arc::new);
    }

    /// How many times the body has been started (0 before the first run).
    pub fn runs(&self) -> u32 {
        self.runs
    }

    /// The NFC tenant, owned (for an error or the body's [`CallInfo`]).
    fn tenant_owned(&self) -> Option<String> {
        self.tenant.as_deref().map(str::to_owned)
    }

    /// What the body may know of its call.
    pub fn info(&self) -> CallInfo {
        CallInfo {
            key: self.key_text(),
            tenant: self.tenant_owned(),
        }
    }
}

/// A call's error: idemkit's own, or the body's (returned unchanged the first time).
///
/// Both variants are transparent: the [`Display`](std::fmt::Display) and
/// [`source`](std::error::Error::source) of a `CallError` are those of the error inside, so
/// an error report shows the body's error and its whole chain once. Match on the variant to
/// get the error itself. New variants may be added, so a `match` needs a wildcard arm.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CallError<E> {
    /// idemkit refused or failed the call (a cached failure, fail-fast, a store error, ...);
    /// see [`Error::kind`].
    #[error(transparent)]
    Idempotency(#[from] Error),
    /// The body ran and failed with this error (it is remembered, by type name and message,
    /// when the policy caches failures).
    #[error(transparent)]
    Body(E),
    /// An `EFFECTFUL` body failed and its failure is held (SPEC v1.1 rule 7): `error` is the
    /// indeterminate error naming tool and key, `cause` the body's own error (also its
    /// [`source`](std::error::Error::source)).
    #[error("{error}")]
    Held {
        /// The indeterminate error ([`Error::Indeterminate`]).
        error: Error,
        /// The body's error.
        #[source]
        cause: E,
    },
}

impl<E> CallError<E> {
    /// idemkit's error, if it is one (for [`CallError::Held`], the indeterminate error).
    pub fn idempotency(&self) -> Option<&Error> {
        match self {
            CallError::Idempotency(e) | CallError::Held { error: e, .. } => Some(e),
            CallError::Body(_) => None,
        }
    }

    /// The body's error, if it is one (for [`CallError::Held`], the held failure's cause).
    pub fn body(&self) -> Option<&E> {
        match self {
            CallError::Body(e) | CallError::Held { cause: e, .. } => Some(e),
            CallError::Idempotency(_) => None,
        }
    }
}

/// A classifier of a Rust body's errors (see [`CallOptions::classify`]).
type Classifier<'a, E> = dyn Fn(&E) -> Option<FailureClass> + Send + Sync + 'a;

/// Options of one call through [`Executor::call_with`].
pub struct CallOptions<'a, E> {
    retry: Option<RetryPolicy>,
    classify: Option<Box<Classifier<'a, E>>>,
}

impl<E> Default for CallOptions<'_, E> {
    fn default() -> Self {
        CallOptions {
            retry: None,
            classify: None,
        }
    }
}

impl<E> std::fmt::Debug for CallOptions<'_, E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CallOptions")
            .field("retry", &self.retry)
            .field("classify", &self.classify.is_some())
            .finish()
    }
}

impl<'a, E> CallOptions<'a, E> {
    /// No retries beyond the executor's default, no classifier.
    pub fn new() -> Self {
        CallOptions::default()
    }

    /// Retries this call's failures by `retry` (SPEC v1.1 rule 8), instead of the executor's
    /// default.
    pub fn retry(mut self, retry: RetryPolicy) -> Self {
        self.retry = Some(retry);
        self
    }

    /// Says what a body error is known to be: [`FailureClass::NoEffect`] (released, may be
    /// retried) or [`FailureClass::Permanent`] (recorded); `None` leaves it to the policy's
    /// lists and effect (SPEC v1.1 rule 7).
    pub fn classify(mut self, f: impl Fn(&E) -> Option<FailureClass> + Send + Sync + 'a) -> Self {
        self.classify = Some(Box::new(f));
        self
    }
}

/// Runs calls through the claim protocol against one store, and reports every answer as an event.
///
/// Cheap to clone; clones share the store and the event counts.
#[derive(Clone)]
pub struct Executor {
    store: Arc<dyn Store>,
    events: Arc<Events>,
    retry: Option<Arc<RetryPolicy>>,
}

impl std::fmt::Debug for Executor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Executor")
            .field("store", &self.store.describe())
            .field("events", &self.events)
            .finish()
    }
}

impl Executor {
    /// An executor over `store`, with its own event counts. Share one executor (it is cheap to
    /// clone) rather than making one per call: the counts and subscribers live in it.
    pub fn new(store: Arc<dyn Store>) -> Executor {
        Executor {
            store,
            events: Arc::new(Events::default()),
            retry: None,
        }
    }

    /// Retries failed calls by `retry` (SPEC v1.1 rule 8): every attempt this executor prepares
    /// and every [`Executor::call_with`] without a retry of its own. [`Executor::call`] runs its
    /// body once (it takes an `FnOnce`). Refused if `retry` is not valid.
    pub fn with_retry(mut self, retry: RetryPolicy) -> Result<Executor, Error> {
        retry.validate()?;
        self.retry = Some(Arc::new(retry));
        Ok(self)
    }

    /// The store the executor claims keys in (for operator work: `forget`, `list`, ...).
    pub fn store(&self) -> &Arc<dyn Store> {
        &self.store
    }

    /// Event counts and subscriptions.
    pub fn events(&self) -> &Events {
        &self.events
    }
}
