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

    /// Runs `body` at most once per key under `tool`'s policy (SPEC §3).
    ///
    /// `input` is the call's input (`KeyInput::Json`/`Value`/`Canonical`) for `HASH_INPUT`, the
    /// supplied key (`KeyInput::Explicit`) for `EXPLICIT`, and is ignored for `UUID` and `NONE`.
    /// A remembered result comes back deserialised as `T`; a body error comes back unchanged
    /// as [`CallError::Body`] (and is remembered, by type name and message, with `cache_failures`),
    /// or as [`CallError::Held`] when the tool is `EFFECTFUL` and its failure is held.
    ///
    /// The body runs at most once here (it is an `FnOnce`); [`Executor::call_with`] retries.
    ///
    /// Dropping the returned future before the body started releases any claim it made (one
    /// still on its way to the store is released once it lands); dropping it while the body runs
    /// is a cancellation: the claim stays in progress and reads as abandoned after its lease
    /// (SPEC v1.1 rules 3 and 5). To let the body finish whatever the caller does, spawn the call.
    ///
    /// With the cargo feature `tracing`, the call runs in an INFO span `idemkit.call` with the
    /// fields `tool`, `tenant`, `key` (the 64-hex key or the UUID), `event` (the last event:
    /// `acquired`, `deduplicated`, ...), `recording` (what became of the body's outcome:
    /// `recorded`, `released`, ...) and `outcome` (`ok`, `body_error`, or the error kind such as
    /// `in_progress`). The two-step protocol ([`Executor::prepare`] ... [`Executor::report`])
    /// runs in the same span, kept in the [`Attempt`].
    pub async fn call<T, E, F, Fut>(
        &self,
        tool: &Tool,
        context: &CallContext,
        input: KeyInput<'_>,
        body: F,
    ) -> Result<T, CallError<E>>
    where
        T: Serialize + DeserializeOwned,
        E: std::fmt::Display,
        F: FnOnce(CallInfo) -> Fut,
        Fut: Future<Output = Result<T, E>>,
    {
        let mut attempt = self.prepare_with(tool, context, input, None)?;
        attempt.retry = None;
        #[cfg(feature = "tracing")]
        {
            use tracing::Instrument;
            let span = attempt.span.clone();
            let result = self
                .call_prepared(attempt, body)
                .instrument(span.clone())
                .await;
            record_outcome(&span, &result);
            result
        }
        #[cfg(not(feature = "tracing"))]
        self.call_prepared(attempt, body).await
    }

    async fn call_prepared<T, E, F, Fut>(
        &self,
        mut attempt: Attempt<&Tool>,
        body: F,
    ) -> Result<T, CallError<E>>
    where
        T: Serialize + DeserializeOwned,
        E: std::fmt::Display,
        F: FnOnce(CallInfo) -> Fut,
        Fut: Future<Output = Result<T, E>>,
    {
        let tool = attempt.tool;
        match self.advance(&mut attempt, None).await? {
            Step::Replay(json) => replayed(tool, &json),
            Step::Pending => unreachable!("advance without a budget never answers Pending"),
            Step::Run => {
                let body = body(attempt.info());
                match self.run_body(&mut attempt, body, None).await {
                    Ran::Done(result) => result,
                    Ran::Retry(_) => unreachable!("a call without a retry policy is not retried"),
                }
            }
        }
    }

    /// Like [`Executor::call`], with options: a retry policy (else the executor's, see
    /// [`Executor::with_retry`]) and a classifier of the body's errors (SPEC v1.1 rules 7, 8).
    ///
    /// A failure the rules allow to be retried (`READ_ONLY` and `IDEMPOTENT` failures, and
    /// failures classified as having had no effect) runs the body again after a capped,
    /// jittered pause, under the same key and within the tool's one deadline; every retry is a
    /// `retried` event. The error of the last run is returned.
    pub async fn call_with<T, E, F, Fut>(
        &self,
        tool: &Tool,
        context: &CallContext,
        input: KeyInput<'_>,
        options: CallOptions<'_, E>,
        body: F,
    ) -> Result<T, CallError<E>>
    where
        T: Serialize + DeserializeOwned,
        E: std::fmt::Display,
        F: FnMut(CallInfo) -> Fut,
        Fut: Future<Output = Result<T, E>>,
    {
        let mut attempt = self.prepare_with(tool, context, input, None)?;
        if let Some(retry) = options.retry {
            retry.validate()?;
            attempt.retry = Some(Arc::new(retry));
        }
        #[cfg(feature = "tracing")]
        {
            use tracing::Instrument;
            let span = attempt.span.clone();
            let result = self
                .call_with_prepared(attempt, options.classify, body)
                .instrument(span.clone())
                .await;
            record_outcome(&span, &result);
            result
        }
        #[cfg(not(feature = "tracing"))]
        self.call_with_prepared(attempt, options.classify, body)
            .await
    }

    async fn call_with_prepared<T, E, F, Fut>(
        &self,
        mut attempt: Attempt<&Tool>,
        classify: Option<Box<Classifier<'_, E>>>,
        mut body: F,
    ) -> Result<T, CallError<E>>
    where
        T: Serialize + DeserializeOwned,
        E: std::fmt::Display,
        F: FnMut(CallInfo) -> Fut,
        Fut: Future<Output = Result<T, E>>,
    {
        let tool = attempt.tool;
        loop {
            match self.advance(&mut attempt, None).await? {
                Step::Replay(json) => return replayed(tool, &json),
                Step::Pending => unreachable!("advance without a budget never answers Pending"),
                Step::Run => {
                    let run = body(attempt.info());
                    match self.run_body(&mut attempt, run, classify.as_deref()).await {
                        Ran::Done(result) => return result,
                        Ran::Retry(pause) => tokio::time::sleep(pause).await,
                    }
                }
            }
        }
    }

    /// Runs one started body to its end (or the deadline) and reports what it did.
    async fn run_body<T, E, Fut>(
        &self,
        attempt: &mut Attempt<&Tool>,
        body: Fut,
        classify: Option<&Classifier<'_, E>>,
    ) -> Ran<T, E>
    where
        T: Serialize,
        E: std::fmt::Display,
        Fut: Future<Output = Result<T, E>>,
    {
        let tool = attempt.tool;
        let result = match attempt.deadline {
            None => body.await,
            Some(deadline) => match tokio::time::timeout_at(deadline.into(), body).await {
                Ok(result) => result,
                Err(_) => {
                    // The body future is dropped here: a cancellation (SPEC v1.1 rule 3).
                    return Ran::Done(match self.report(attempt, BodyReport::Cancelled).await {
                        Reported {
                            answer: Answer::Error(error),
                            ..
                        } => Err(CallError::Idempotency(error)),
                        Reported { .. } => Err(CallError::Idempotency(
                            self.timed_out(attempt, &Recording::LeftInProgress),
                        )),
                    });
                }
            },
        };
        match result {
            Ok(value) => Ran::Done(match serde_json::to_string(&value) {
                Ok(json) => match self
                    .report(attempt, BodyReport::Succeeded(&json))
                    .await
                    .answer
                {
                    Answer::Error(error) => Err(CallError::Idempotency(error)),
                    Answer::Body | Answer::Retry(_) => Ok(value),
                },
                Err(e) => {
                    let error = Error::Internal(format!(
                        "the result of `{}` does not serialise as JSON ({e}), so it was not recorded and the call counts as failed",
                        tool.name()
                    ));
                    let failure = Failure::new("Unencodable", error.to_string());
                    match self
                        .report(attempt, BodyReport::Unencodable(&failure))
                        .await
                        .answer
                    {
                        Answer::Error(answer) => Err(CallError::Idempotency(answer)),
                        Answer::Body | Answer::Retry(_) => Err(CallError::Idempotency(error)),
                    }
                }
            }),
            Err(error) => {
                let full = std::any::type_name::<E>();
                let short = short_type_name::<E>();
                let failure = Failure::new(short.clone(), error.to_string());
                let types = if short == full {
                    vec![short]
                } else {
                    vec![short, full.to_owned()]
                };
                let class = classify.and_then(|c| c(&error));
                let report = BodyReport::FailedAs {
                    failure: &failure,
                    types: &types,
                    class,
                };
                match self.report(attempt, report).await.answer {
                    Answer::Body => Ran::Done(Err(CallError::Body(error))),
                    Answer::Retry(pause) => Ran::Retry(pause),
                    Answer::Error(held @ Error::Indeterminate { .. }) => {
                        Ran::Done(Err(CallError::Held {
                            error: held,
                            cause: error,
                        }))
                    }
                    Answer::Error(timeout) => Ran::Done(Err(CallError::Idempotency(timeout))),
                }
            }
        }
    }

    /// Derives the call's key and makes its owner token; touches no store.
    pub fn prepare(
        &self,
        tool: &Tool,
        context: &CallContext,
        input: KeyInput<'_>,
    ) -> Result<Attempt, Error> {
        self.prepare_with(tool.clone(), context, input, None)
    }

    /// Derives the call's key from the input a face hands over, picking by the tool's strategy
    /// what it keys on (`HASH_INPUT`: the JSON input; `EXPLICIT`: the supplied key; `UUID`,
    /// `NONE`: neither); touches no store. A missing input refuses the call naming the field.
    pub fn prepare_raw(
        &self,
        tool: &Tool,
        context: &CallContext,
        raw: RawInput<'_>,
    ) -> Result<Attempt, Error> {
        self.prepare_raw_with_payload(tool, context, raw, None)
    }

    /// [`Executor::prepare_raw`] for a face that also hands over an `EXPLICIT` call's input
    /// (JSON text), whose fingerprint the record keeps and a repeat is checked against (SPEC
    /// v1.1 rule 9). `payload` is ignored for the other strategies: `HASH_INPUT` fingerprints
    /// its input, `UUID` and `NONE` keep no record. (`RawInput::json` of an `EXPLICIT` call is
    /// not taken as its payload: the faces pass the supplied key there.)
    ///
    /// The key is taken as one the application derived ([`KeyOrigin::Application`]: a key
    /// supplier); [`Executor::prepare_raw_with_payload_from`] says otherwise.
    pub fn prepare_raw_with_payload(
        &self,
        tool: &Tool,
        context: &CallContext,
        raw: RawInput<'_>,
        payload: Option<&str>,
    ) -> Result<Attempt, Error> {
        self.prepare_raw_with_payload_from(tool, context, raw, payload, KeyOrigin::Application)
    }

    /// [`Executor::prepare_raw_with_payload`] with where the supplied key came from: a key from
    /// outside the application ([`KeyOrigin::Outside`], a caller's inbound `Idempotency-Key`)
    /// is checked against the record's payload whatever the policy (SPEC v1.2 §9 rule 1).
    pub fn prepare_raw_with_payload_from(
        &self,
        tool: &Tool,
        context: &CallContext,
        raw: RawInput<'_>,
        payload: Option<&str>,
        origin: KeyOrigin,
    ) -> Result<Attempt, Error> {
        let decoded;
        let input = match tool.policy().strategy {
            KeyStrategy::HashInput => match raw.json {
                Some(json) => KeyInput::Json(json),
                None => {
                    return Err(Error::config(format!(
                        "`{}` uses strategy HASH_INPUT, which keys on the call's input, but no input was given; pass the input as JSON text",
                        tool.name()
                    )))
                }
            },
            KeyStrategy::Explicit => match raw.supplied_key {
                Some(SuppliedKey::Text(key)) => KeyInput::Explicit(key),
                Some(SuppliedKey::JsonLiteral(literal)) => {
                    decoded = explicit_key_literal(tool, literal)?;
                    KeyInput::Explicit(&decoded)
                }
                // A missing key is a blank one: refused as an invalid key.
                None => KeyInput::Explicit(""),
            },
            // UUID and NONE derive no key from the input.
            KeyStrategy::Uuid | KeyStrategy::None => KeyInput::Json("null"),
        };
        let payload = match tool.policy().strategy {
            KeyStrategy::Explicit => payload,
            _ => None,
        };
        self.prepare_from(tool.clone(), context, input, payload, origin)
    }

    /// `payload`: an `EXPLICIT` call's input as JSON text, when a face passes it apart from the
    /// key ([`Executor::prepare_raw_with_payload`]); the Rust face gives it in
    /// [`KeyInput::ExplicitWithPayload`].
    fn prepare_with<T: Borrow<Tool>>(
        &self,
        holder: T,
        context: &CallContext,
        input: KeyInput<'_>,
        payload: Option<&str>,
    ) -> Result<Attempt<T>, Error> {
        let origin = match input {
            KeyInput::OutsideKey { .. } => KeyOrigin::Outside,
            _ => KeyOrigin::Application,
        };
        self.prepare_from(holder, context, input, payload, origin)
    }

    /// [`Executor::prepare_with`] with the key's origin decided by the caller.
    fn prepare_from<T: Borrow<Tool>>(
        &self,
        holder: T,
        context: &CallContext,
        input: KeyInput<'_>,
        payload: Option<&str>,
        origin: KeyOrigin,
    ) -> Result<Attempt<T>, Error> {
        let tool: &Tool = holder.borrow();
        let policy = tool.policy();
        let scope = KeyScope {
            scope: tool.name(),
            tenant: context.tenant.as_deref(),
            run: context.run.as_deref(),
        };
        let mut fingerprint = None;
        let (key, uuid, phase) = match policy.strategy {
            KeyStrategy::HashInput | KeyStrategy::Explicit => {
                let explicit = matches!(
                    input,
                    KeyInput::Explicit(_)
                        | KeyInput::ExplicitWithPayload { .. }
                        | KeyInput::OutsideKey { .. }
                );
                if explicit != (policy.strategy == KeyStrategy::Explicit) {
                    return Err(Error::config(format!(
                        "`{}` uses strategy {} but was called with {}; pass {}",
                        tool.name(),
                        policy.strategy.name(),
                        if explicit {
                            "an explicit key"
                        } else {
                            "an input"
                        },
                        if explicit {
                            "the input (KeyInput::Json/Value/Canonical)"
                        } else {
                            "the supplied key as KeyInput::Explicit (or ExplicitWithPayload)"
                        }
                    )));
                }
                let invalid = |source| Error::InvalidKey {
                    tool: tool.name().to_owned(),
                    source,
                };
                // A READ_ONLY call still has its key (a body may send it upstream), but claims
                // nothing (SPEC v1.1 rule 7).
                let (key, phase) = if !claims(tool) {
                    let key = derive_key(&scope, input, &policy.key_arguments).map_err(invalid)?;
                    (key, Phase::Unprotected)
                } else if let Some(json) = payload {
                    // The record keeps the fingerprint of the whole input (SPEC v1.1 rule 9).
                    let key = derive_key(&scope, input, &policy.key_arguments).map_err(invalid)?;
                    fingerprint = crate::key::fingerprint_digest(KeyInput::Json(json))
                        .map_err(invalid)?
                        .map(|p| p.hex_shared());
                    (key, Phase::Claiming)
                } else {
                    // Key and fingerprint from one parse of the input.
                    let (key, print) =
                        crate::key::derive_key_and_print(&scope, input, &policy.key_arguments)
                            .map_err(invalid)?;
                    fingerprint = print.map(|p| p.hex_shared());
                    (key, Phase::Claiming)
                };
                (Some(key), None, phase)
            }
            KeyStrategy::Uuid | KeyStrategy::None => {
                crate::key::check_identity(&scope).map_err(|source| Error::InvalidKey {
                    tool: tool.name().to_owned(),
                    source,
                })?;
                let uuid = (policy.strategy == KeyStrategy::Uuid)
                    .then(|| uuid::Uuid::new_v4().to_string());
                (None, uuid, Phase::Unprotected)
            }
        };
        // Only a call with a deadline reads the clock here: a hit stays one clock read cheaper.
        let deadline = tool.timeout().map(|t| Instant::now() + t);
        // Records are identified by the NFC tenant, as the key material is (SPEC v1.1 rule 1).
        let tenant = context
            .tenant
            .as_deref()
            .map(|t| Arc::<str>::from(crate::key::nfc(t)));
        #[cfg(feature = "tracing")]
        let span = call_span(tool, tenant.as_deref(), key.as_ref(), uuid.as_deref());
        let payload_checked = policy.checks_payload(origin);
        Ok(Attempt {
            tool: holder,
            tenant,
            key,
            uuid,
            token: Token::random(),
            deadline,
            lease_until: None,
            waited: false,
            wait_started: None,
            polls: 0,
            phase,
            retry: self.retry.clone(),
            runs: 0,
            fingerprint,
            payload_checked,
            #[cfg(feature = "tracing")]
            span,
        })
    }

    /// Claims the attempt's key and decides: run, replay, or (with a `budget`) wait some more.
    ///
    /// Waiting for another caller's claim ends at the attempt's deadline or, without one, at the
    /// holder's lease end; `budget` bounds how long this one invocation may block.
    pub async fn advance<T: Borrow<Tool>>(
        &self,
        attempt: &mut Attempt<T>,
        budget: Option<Duration>,
    ) -> Result<Step, Error> {
        match attempt.phase {
            Phase::Unprotected => {
                attempt.runs += 1;
                return Ok(Step::Run);
            }
            Phase::Claimed => return Ok(Step::Run),
            Phase::Done => {
                return Err(Error::Internal(format!(
                    "advance called on a finished call of `{}`",
                    attempt.tool().name()
                )))
            }
            Phase::Claiming => {}
        }
        let step_end = budget.map(|b| Instant::now() + b);
        #[cfg(feature = "tracing")]
        let result = {
            use tracing::Instrument;
            let span = attempt.span.clone();
            self.claim_loop(attempt, step_end).instrument(span).await
        };
        #[cfg(not(feature = "tracing"))]
        let result = self.claim_loop(attempt, step_end).await;
        match &result {
            Ok(Step::Pending) => {}
            Ok(Step::Run) => {
                attempt.phase = Phase::Claimed;
                attempt.runs += 1;
            }
            _ => attempt.phase = Phase::Done,
        }
        result
    }

    async fn claim_loop<T: Borrow<Tool>>(
        &self,
        attempt: &mut Attempt<T>,
        step_end: Option<Instant>,
    ) -> Result<Step, Error> {
        let key = attempt.key.expect("claiming needs a key");
        let tenant = attempt.tenant.clone();
        let id = RecordId {
            tenant: tenant.as_deref(),
            key: &key,
        };
        loop {
            let tool = attempt.tool();
            let policy = tool.policy();
            // Only a call with a deadline reads the clock before claiming: a hit stays cheap.
            let claim_started = attempt.deadline.map(|_| Instant::now());
            // The lease ends no earlier than this (settling may retry up to then; a try after
            // the store's lease end is harmless, as it acts by owner token).
            let lease_until = || claim_started.unwrap_or_else(Instant::now) + policy.lease;
            if attempt.waited
                && attempt
                    .deadline
                    .zip(claim_started)
                    .is_some_and(|(deadline, started)| started >= deadline)
            {
                // The wait for another holder ran to the deadline: the caller's wait ends here,
                // and no claim is sent that the deadline would cut short (SPEC v1.1 rule 3).
                return Err(self.wait_timed_out(attempt));
            }
            // Should the caller go away while the claim is on its way (its deadline, or its
            // future dropped), the claim goes on without it and is released if it lands.
            let mut claim = self.send_claim(attempt, claim_started.map(|_| lease_until()));
            let claimed = match attempt.deadline {
                None => Some((&mut claim).await),
                Some(deadline) => tokio::time::timeout_at(deadline.into(), &mut claim)
                    .await
                    .ok(),
            };
            drop(claim);
            let reply = match claimed {
                Some(Ok(reply)) => reply,
                Some(Err(error)) => {
                    self.emit(attempt, EventKind::StoreError, Some(&error.to_string()));
                    // The claim may have landed with its reply lost: free it if so.
                    self.release_lost_claim(attempt, lease_until());
                    return Err(self.unavailable(attempt, &error));
                }
                None => {
                    // The caller's deadline came first. The claim goes on (see `ClaimInFlight`)
                    // and is released if it lands.
                    if attempt.waited {
                        // A caller waiting for another holder is still waiting at its deadline.
                        return Err(self.wait_timed_out(attempt));
                    }
                    let error = StoreError::unavailable(
                        "no answer from the store before the call's deadline",
                    );
                    self.emit(attempt, EventKind::StoreError, Some(&error.to_string()));
                    return Err(self.unavailable(attempt, &error));
                }
            };
            match reply.claim {
                Claim::Acquired { .. } => {
                    attempt.lease_until = Some(lease_until());
                    self.emit_waited(attempt);
                    self.emit(attempt, EventKind::Acquired, None);
                    return Ok(Step::Run);
                }
                Claim::Completed(record) => {
                    self.check_payload(attempt, &record)?;
                    return self.remembered(attempt, record);
                }
                Claim::Abandoned(record) => {
                    self.check_payload(attempt, &record)?;
                    if policy.upstream_honors_key {
                        // SPEC v1.1 rule 12: the upstream deduplicates by the key, so the
                        // request may be sent again under it; the claim moves to this caller.
                        let request = TakeOverRequest {
                            id,
                            expected: record.token,
                            token: attempt.token,
                            lease_ms: policy.lease.as_millis() as u64,
                            ttl_ms: policy.ttl.as_millis() as u64,
                        };
                        let taking = crate::store::answer_by(
                            attempt.deadline,
                            self.store.take_over(&request),
                        );
                        let taken = match attempt.deadline {
                            None => Some(taking.await),
                            Some(deadline) => {
                                tokio::time::timeout_at(deadline.into(), taking).await.ok()
                            }
                        };
                        match taken {
                            Some(Ok(TakeOver::Acquired { .. })) => {
                                attempt.lease_until = Some(lease_until());
                                self.emit(
                                    attempt,
                                    EventKind::Acquired,
                                    Some("took over an abandoned claim; the request is sent again under the same key"),
                                );
                                return Ok(Step::Run);
                            }
                            // Another caller took it over, or it was settled: claim again.
                            Some(Ok(TakeOver::Lost(_))) => continue,
                            Some(Ok(TakeOver::Unsupported)) => {}
                            Some(Err(error)) => {
                                self.emit(attempt, EventKind::StoreError, Some(&error.to_string()));
                                // The take-over may have landed with its reply lost: free it.
                                self.release_lost_claim(attempt, lease_until());
                                return Err(self.unavailable(attempt, &error));
                            }
                            None => {
                                let error = StoreError::unavailable(
                                    "no answer from the store before the call's deadline",
                                );
                                self.emit(attempt, EventKind::StoreError, Some(&error.to_string()));
                                self.release_lost_claim(attempt, lease_until());
                                return Err(self.unavailable(attempt, &error));
                            }
                        }
                    }
                    self.emit(attempt, EventKind::Indeterminate, None);
                    return Err(Error::Indeterminate {
                        tool: tool.name().to_owned(),
                        key: key.hex(),
                        tenant: attempt.tenant_owned(),
                        held: None,
                        ran: false,
                    });
                }
                Claim::InProgress(record) => {
                    self.check_payload(attempt, &record)?;
                    if policy.on_cache_hit == RetryBehavior::FailFast {
                        self.emit(attempt, EventKind::FailedFast, None);
                        return Err(Error::FailFast {
                            tool: tool.name().to_owned(),
                            key: key.hex(),
                            state: "in progress",
                        });
                    }
                    let now = Instant::now();
                    // Without a deadline the wait ends at the holder's lease end; the claim
                    // after it answers `abandoned`.
                    let lease_left =
                        Duration::from_millis((record.lease_end - reply.now_ms).max(0) as u64);
                    let mut until = now + lease_left;
                    if let Some(deadline) = attempt.deadline {
                        if now >= deadline {
                            return Err(self.wait_timed_out(attempt));
                        }
                        until = until.min(deadline);
                    }
                    if let Some(step_end) = step_end {
                        if now >= step_end {
                            return Ok(Step::Pending);
                        }
                        until = until.min(step_end);
                    }
                    attempt.waited = true;
                    attempt.wait_started.get_or_insert(now);
                    let waited = self
                        .store
                        .wait_for_change(id, record.token, until, attempt.polls)
                        .await;
                    attempt.polls = attempt.polls.saturating_add(1);
                    if let Err(error) = waited {
                        self.emit(attempt, EventKind::StoreError, Some(&error.to_string()));
                        return Err(self.unavailable(attempt, &error));
                    }
                }
            }
        }
    }

    /// Refuses a repeat whose payload fingerprint differs from the record's (SPEC v1.1 rule 9),
    /// before anything else is answered: another request under a used key learns nothing of the
    /// first one's outcome. Checked as [`crate::Policy::checks_payload`] decides for the key's origin;
    /// a record without a fingerprint (written before v1.1, or by a call without input) and a
    /// call without a payload never mismatch.
    fn check_payload<T: Borrow<Tool>>(
        &self,
        attempt: &Attempt<T>,
        record: &Record,
    ) -> Result<(), Error> {
        let checked = attempt.payload_checked;
        match (&attempt.fingerprint, &record.fingerprint) {
            (Some(ours), Some(theirs)) if checked && ours.as_ref() != theirs.as_str() => {
                self.emit_waited(attempt);
                self.emit(attempt, EventKind::PayloadMismatch, None);
                Err(Error::PayloadMismatch {
                    tool: attempt.tool().name().to_owned(),
                    key: record.key.clone(),
                    tenant: attempt.tenant_owned(),
                })
            }
            _ => Ok(()),
        }
    }

    fn remembered<T: Borrow<Tool>>(
        &self,
        attempt: &Attempt<T>,
        record: Record,
    ) -> Result<Step, Error> {
        let tool = attempt.tool().name();
        let key = || record.key.clone();
        let behavior = attempt.tool().policy().on_cache_hit;
        if let Some(Outcome::Indeterminate(failure)) = record.outcome {
            // A held failure answers every repeat, under every behaviour (SPEC v1.1 rule 7).
            self.emit_waited(attempt);
            self.emit(attempt, EventKind::Indeterminate, None);
            return Err(Error::Indeterminate {
                tool: tool.to_owned(),
                key: record.key,
                tenant: attempt.tenant_owned(),
                held: Some(Box::new(failure)),
                ran: false,
            });
        }
        if behavior == RetryBehavior::FailFast {
            self.emit(attempt, EventKind::FailedFast, None);
            return Err(Error::FailFast {
                tool: tool.to_owned(),
                key: key(),
                state: "completed",
            });
        }
        self.emit_waited(attempt);
        self.emit(attempt, EventKind::Deduplicated, None);
        match record.outcome {
            // The record is ours: hand its JSON text over without copying it.
            Some(Outcome::Success(json)) => Ok(Step::Replay(Box::<str>::from(json).into_string())),
            Some(Outcome::Failure(failure)) => Err(Error::CachedFailure {
                tool: tool.to_owned(),
                key: key(),
                error_type: failure.error_type,
                message: failure.message,
            }),
            Some(Outcome::TooLarge { bytes }) => Err(Error::OutcomeTooLarge {
                tool: tool.to_owned(),
                key: key(),
                bytes,
            }),
            Some(Outcome::Indeterminate(_)) => unreachable!("answered above"),
            None => Err(Error::Internal(format!(
                "completed record of `{tool}` under key {} has no outcome",
                record.key
            ))),
        }
    }

    /// Records a succeeded body's result (JSON text) so that repeats get it.
    ///
    /// Never fails the caller: after a store error the outcome is offered again with capped
    /// backoff until the lease ends, in the background after about 100 ms (never past the
    /// deadline); only if that gives up is it reported as `record_failed`, and the claim is left
    /// to become abandoned (never re-run).
    pub async fn succeed<T: Borrow<Tool>>(
        &self,
        attempt: &mut Attempt<T>,
        result_json: &str,
    ) -> Recording {
        if attempt.phase != Phase::Claimed {
            let unprotected = attempt.phase == Phase::Unprotected;
            attempt.phase = Phase::Done;
            return if unprotected {
                Recording::Unprotected
            } else {
                Recording::Failed("succeed called on a call that holds no claim".into())
            };
        }
        attempt.phase = Phase::Done;
        let outcome = if result_json.len() > self.store.max_outcome_bytes() {
            Outcome::TooLarge {
                bytes: result_json.len() as u64,
            }
        } else {
            match Outcome::success(result_json) {
                Ok(outcome) => outcome,
                Err(e) => {
                    let detail = format!("the result is not one JSON value ({e}); not recorded");
                    self.emit(attempt, EventKind::RecordFailed, Some(&detail));
                    return Recording::Failed(detail);
                }
            }
        };
        self.record(attempt, &outcome).await
    }

    /// Reports a failed body, classified by its type name alone (see [`Executor::fail_as`]).
    pub async fn fail<T: Borrow<Tool>>(
        &self,
        attempt: &mut Attempt<T>,
        failure: &Failure,
    ) -> Recording {
        let types = std::slice::from_ref(&failure.error_type);
        self.fail_as(attempt, failure, types, None).await
    }

    /// Reports a failed body and settles its claim as [`Policy::settle_failure`] classifies it
    /// (SPEC v1.1 rule 7): released so that a retry runs, recorded as a failure, or held as an
    /// indeterminate outcome (an `indeterminate` event). The caller rethrows the body's error,
    /// or the indeterminate error for a held one ([`Executor::report`] says which).
    ///
    /// [`Policy::settle_failure`]: crate::Policy::settle_failure
    pub async fn fail_as<T: Borrow<Tool>, S: AsRef<str>>(
        &self,
        attempt: &mut Attempt<T>,
        failure: &Failure,
        types: &[S],
        class: Option<FailureClass>,
    ) -> Recording {
        if attempt.phase != Phase::Claimed {
            attempt.phase = Phase::Done;
            return Recording::Unprotected;
        }
        attempt.phase = Phase::Done;
        match attempt.tool().policy().settle_failure(types, class) {
            FailureSettlement::Release => self.settle(attempt, Settlement::ReleaseFailed).await,
            FailureSettlement::Record => {
                self.record(attempt, &Outcome::Failure(failure.clone()))
                    .await
            }
            FailureSettlement::Hold => {
                self.emit(attempt, EventKind::Indeterminate, Some(&failure.message));
                match self
                    .record(attempt, &Outcome::Indeterminate(failure.clone()))
                    .await
                {
                    Recording::Recorded => Recording::Held,
                    other => other,
                }
            }
        }
    }

    /// Releases the claim of a call whose body never ran, so that the next call runs; nothing
    /// is recorded. A call that holds no claim (not yet claimed, replayed, finished, `UUID`,
    /// `NONE`) is only marked finished.
    pub async fn release_unrun<T: Borrow<Tool>>(&self, attempt: &mut Attempt<T>) -> Recording {
        let claimed = attempt.phase == Phase::Claimed && attempt.key.is_some();
        attempt.phase = Phase::Done;
        if claimed {
            let recording = self.settle(attempt, Settlement::ReleaseUnrun).await;
            // The claim's `acquired` is answered by a `released`: the body never ran.
            if recording == Recording::Released {
                self.emit(attempt, EventKind::Released, None);
            }
            recording
        } else {
            Recording::Unprotected
        }
    }

    /// Settles a claimed call by what its body did, and says what the face tells its caller —
    /// one rule for every face (SPEC v1.1 rules 3, 6, 7 and 8):
    ///
    /// - [`BodyReport::Succeeded`]: recorded. [`BodyReport::Failed`], [`BodyReport::FailedAs`]
    ///   and [`BodyReport::Unencodable`]: settled as the policy classifies the failure (see
    ///   [`Executor::fail_as`]): released, recorded, or held. [`BodyReport::NeverRan`]:
    ///   released. [`BodyReport::Cancelled`]: left in progress, to become abandoned at the
    ///   lease end.
    /// - A body that ran (or was cancelled) while the caller's deadline passed: the caller gets
    ///   the timeout error, naming what became of the outcome (a late complete is recorded as
    ///   usual, so a repeat replays it).
    /// - A held failure: the caller gets the indeterminate error, the body's error its cause.
    /// - A failure the attempt's retry policy may retry: [`Answer::Retry`]; the attempt is ready
    ///   to be advanced again (a `retried` event).
    /// - Otherwise the caller gets the body's own answer.
    pub async fn report<T: Borrow<Tool>>(
        &self,
        attempt: &mut Attempt<T>,
        report: BodyReport<'_>,
    ) -> Reported {
        #[cfg(feature = "tracing")]
        {
            use tracing::Instrument;
            let span = attempt.span.clone();
            self.report_in_span(attempt, report, true)
                .instrument(span)
                .await
        }
        #[cfg(not(feature = "tracing"))]
        self.report_in_span(attempt, report, true).await
    }

    /// Reports a failed exchange with an upstream and decides, by [`Policy::judge_exchange`],
    /// what it means — one rule for every face (SPEC v1.1 rules 7, 8 and 12). The face says
    /// only what it saw (`exchange`) and whether the request carried the call's key
    /// (`key_sent`); `failure` and `types` describe its error as for [`BodyReport::FailedAs`].
    ///
    /// - A request that may be sent again ([`ExchangeVerdict::Resend`]): while the call's retry
    ///   policy (for a 409, at least [`RetryPolicy::in_progress`]) and its deadline allow,
    ///   [`Answer::Retry`] with the claim kept ([`Recording::Kept`]): pause, advance, send again
    ///   under the same key. When they do not, the claim is released and the caller gets the
    ///   body's error.
    /// - A final answer ([`ExchangeVerdict::Final`]): settled as [`Executor::report`] settles
    ///   [`BodyReport::FailedAs`] (released, recorded or held), and never retried.
    /// - The upstream's payload mismatch: the claim is released and the caller gets
    ///   [`Error::UpstreamPayloadMismatch`].
    ///
    /// [`Policy::judge_exchange`]: crate::Policy::judge_exchange
    pub async fn report_exchange<T: Borrow<Tool>>(
        &self,
        attempt: &mut Attempt<T>,
        failure: &Failure,
        types: &[String],
        exchange: Exchange,
        key_sent: bool,
    ) -> Reported {
        let verdict = attempt.tool().policy().judge_exchange(exchange, key_sent);
        let failed = |class| BodyReport::FailedAs {
            failure,
            types,
            class,
        };
        match verdict {
            ExchangeVerdict::Resend => {
                if let Some(pause) = self.resend_pause(attempt, types, exchange) {
                    if attempt.phase == Phase::Claimed {
                        // The claim is kept: the next `advance` runs the body again at once.
                        attempt.runs += 1;
                    }
                    self.emit(
                        attempt,
                        EventKind::Retried,
                        Some("the request is sent again under the same key"),
                    );
                    #[cfg(feature = "tracing")]
                    attempt.span.record("recording", Recording::Kept.name());
                    return Reported {
                        answer: Answer::Retry(pause),
                        recording: Recording::Kept,
                    };
                }
                // No resend left: the next call may send it again.
                self.report_in_span(attempt, failed(Some(FailureClass::NoEffect)), false)
                    .await
            }
            ExchangeVerdict::Final => self.report_in_span(attempt, failed(None), false).await,
            ExchangeVerdict::PayloadMismatch(status) => {
                let reported = self
                    .report_in_span(attempt, failed(Some(FailureClass::NoEffect)), false)
                    .await;
                let answer = match reported.answer {
                    timeout @ Answer::Error(_) => timeout,
                    _ => Answer::Error(Error::UpstreamPayloadMismatch {
                        tool: attempt.tool().name().to_owned(),
                        key: attempt.key_text().unwrap_or_default(),
                        tenant: attempt.tenant_owned(),
                        status,
                    }),
                };
                Reported {
                    answer,
                    recording: reported.recording,
                }
            }
        }
    }

    /// The pause before sending a request again (SPEC v1.1 rule 12), if the call may: a body
    /// that holds its claim or claims nothing, runs left under its retry policy (a 409: at least
    /// [`RetryPolicy::in_progress`]), a type the policy retries, and the pause ending before the
    /// deadline.
    fn resend_pause<T: Borrow<Tool>>(
        &self,
        attempt: &Attempt<T>,
        types: &[String],
        exchange: Exchange,
    ) -> Option<Duration> {
        if !matches!(attempt.phase, Phase::Claimed | Phase::Unprotected) {
            return None;
        }
        let in_progress = RetryPolicy::in_progress();
        let retry: &RetryPolicy = match (&attempt.retry, exchange) {
            // The upstream asks to be asked again: at least the in-progress resends.
            (Some(retry), Exchange::Answered(409))
                if retry.max_attempts > in_progress.max_attempts =>
            {
                retry
            }
            (_, Exchange::Answered(409)) => &in_progress,
            (Some(retry), _) => retry,
            (None, _) => return None,
        };
        if attempt.runs >= retry.max_attempts || !retry.covers(types) {
            return None;
        }
        let pause = retry.pause(attempt.runs.saturating_sub(1));
        match attempt.deadline {
            Some(deadline) if Instant::now() + pause >= deadline => None,
            _ => Some(pause),
        }
    }

    async fn report_in_span<T: Borrow<Tool>>(
        &self,
        attempt: &mut Attempt<T>,
        report: BodyReport<'_>,
        may_retry: bool,
    ) -> Reported {
        let ran = !matches!(report, BodyReport::NeverRan);
        let claimed = attempt.phase == Phase::Claimed && attempt.key.is_some();
        let overran = ran
            && matches!(attempt.phase, Phase::Claimed | Phase::Unprotected)
            && attempt.deadline.is_some_and(|d| Instant::now() >= d);
        let mut failed: Option<(&Failure, &[String], Option<FailureClass>, bool)> = None;
        let recording = match report {
            BodyReport::Succeeded(json) => self.succeed(attempt, json).await,
            BodyReport::Failed(failure) | BodyReport::Unencodable(failure) => {
                let types = std::slice::from_ref(&failure.error_type);
                let retryable = matches!(report, BodyReport::Failed(_));
                failed = Some((failure, types, None, retryable));
                self.fail_as(attempt, failure, types, None).await
            }
            BodyReport::FailedAs {
                failure,
                types,
                class,
            } => {
                failed = Some((failure, types, class, true));
                self.fail_as(attempt, failure, types, class).await
            }
            BodyReport::NeverRan => self.release_unrun(attempt).await,
            BodyReport::Cancelled => {
                attempt.phase = Phase::Done;
                if claimed {
                    Recording::LeftInProgress
                } else {
                    Recording::Unprotected
                }
            }
        };
        #[cfg(feature = "tracing")]
        attempt.span.record("recording", recording.name());
        let answer = if overran {
            Answer::Error(self.timed_out(attempt, &recording))
        } else if let Some((failure, types, class, retryable)) = failed {
            let settlement = attempt.tool().policy().settle_failure(types, class);
            if claimed && settlement == FailureSettlement::Hold {
                Answer::Error(Error::Indeterminate {
                    tool: attempt.tool().name().to_owned(),
                    key: attempt.key_text().unwrap_or_default(),
                    tenant: attempt.tenant_owned(),
                    held: Some(Box::new(failure.clone())),
                    ran: true,
                })
            } else if let Some(pause) = (retryable && may_retry)
                .then(|| self.retry_pause(attempt, types, settlement, &recording))
                .flatten()
            {
                self.rearm(attempt);
                Answer::Retry(pause)
            } else {
                Answer::Body
            }
        } else {
            Answer::Body
        };
        Reported { answer, recording }
    }

    /// The pause before running a failed call again, if its retry policy allows it (SPEC v1.1
    /// rule 8): only a failure settled by releasing its claim (or a call that claims nothing),
    /// of a type the policy retries, with runs left and the pause ending before the deadline.
    fn retry_pause<T: Borrow<Tool>>(
        &self,
        attempt: &Attempt<T>,
        types: &[String],
        settlement: FailureSettlement,
        recording: &Recording,
    ) -> Option<Duration> {
        let retry = attempt.retry.as_ref()?;
        if settlement != FailureSettlement::Release
            || !matches!(recording, Recording::Released | Recording::Unprotected)
            || attempt.runs >= retry.max_attempts
            || !retry.covers(types)
        {
            return None;
        }
        let pause = retry.pause(attempt.runs.saturating_sub(1));
        match attempt.deadline {
            Some(deadline) if Instant::now() + pause >= deadline => None,
            _ => Some(pause),
        }
    }

    /// Makes a finished attempt ready to run again under the same key and deadline, with a new
    /// owner token (its old claim was released).
    fn rearm<T: Borrow<Tool>>(&self, attempt: &mut Attempt<T>) {
        attempt.phase = if attempt.key.is_some() && claims(attempt.tool()) {
            Phase::Claiming
        } else {
            Phase::Unprotected
        };
        attempt.token = Token::random();
        attempt.waited = false;
        attempt.wait_started = None;
        attempt.polls = 0;
        attempt.lease_until = None;
        self.emit(attempt, EventKind::Retried, None);
    }

    /// The timeout error of a body still running at the caller's deadline, saying what became
    /// of its outcome.
    fn timed_out<T: Borrow<Tool>>(&self, attempt: &Attempt<T>, recording: &Recording) -> Error {
        let tool = attempt.tool();
        let key = attempt.key_text().unwrap_or_default();
        let outcome = match recording {
            Recording::Recorded => "it finished late and its outcome was recorded, so a retry gets the remembered outcome without running it again".to_owned(),
            Recording::Released => "it finished late with a failure and its claim was released, so a retry runs it again".to_owned(),
            Recording::LeftInProgress => format!(
                "its outcome is unknown (it was cancelled while it may have been acting), so its claim stays in progress until the lease ends and then reads as abandoned until an operator releases or resolves this one key (in-process: `idemkit::store::settle_key`, Java `IdempotencyStore.releaseKey`/`resolveKey`, C `idemkit_store_release_key`; or idemkit resolve --key {key}){}",
                if tool.policy().upstream_honors_key {
                    "; as its upstream honours the key, a call of the same request after the lease ends takes the abandoned claim over and sends it again under the same key, and the upstream answers from its own record"
                } else {
                    ""
                }
            ),
            Recording::Unprotected => "nothing was recorded (its strategy does not deduplicate, or it is READ_ONLY)".to_owned(),
            Recording::Kept => "its claim is still held".to_owned(),
            Recording::Held => "it failed late and, as the tool is EFFECTFUL, its failure is held: repeats get the indeterminate error until an operator resolves the record".to_owned(),
            Recording::Failed(detail) => format!("it finished late but {detail}"),
        };
        Error::Timeout {
            tool: tool.name().to_owned(),
            key,
            timeout_ms: tool.timeout().unwrap_or_default().as_millis() as u64,
            outcome,
        }
    }

    async fn record<T: Borrow<Tool>>(&self, attempt: &Attempt<T>, outcome: &Outcome) -> Recording {
        let ttl_ms = attempt.tool().policy().ttl.as_millis() as u64;
        self.settle(
            attempt,
            Settlement::Complete {
                outcome: outcome.clone(),
                ttl_ms,
            },
        )
        .await
    }

    /// Records an outcome or releases a claim by its owner token, which is safe to repeat: after
    /// a store error it is retried with capped backoff until the lease ends (SPEC v1.1 rule 4).
    /// The caller is held for at most [`INLINE_SETTLE`] and never past its deadline; the
    /// remaining retries run as a task on the current runtime.
    async fn settle<T: Borrow<Tool>>(&self, attempt: &Attempt<T>, what: Settlement) -> Recording {
        let Some(key) = attempt.key else {
            return Recording::Unprotected;
        };
        let now = Instant::now();
        let mut inline_until = now + INLINE_SETTLE;
        if let Some(deadline) = attempt.deadline.filter(|&d| d > now) {
            // Never past the deadline of a caller still within it; a caller already past it (a
            // late complete) is held for the inline time, to be told whether it was recorded.
            inline_until = inline_until.min(deadline);
        }
        let lease_until = attempt
            .lease_until
            .unwrap_or(now + attempt.tool().policy().lease);
        let settling = self
            .settler(attempt, key, lease_until, what)
            .run(inline_until);
        SettlingInFlight(Some(Box::pin(settling))).await
    }

    /// Everything settling `attempt`'s claim needs, owned, so that it can go on in a task.
    fn settler<T: Borrow<Tool>>(
        &self,
        attempt: &Attempt<T>,
        key: Key,
        lease_until: Instant,
        what: Settlement,
    ) -> Settler {
        Settler {
            store: self.store.clone(),
            events: self.events.clone(),
            tool: attempt.tool().name().to_owned(),
            tenant: attempt.tenant.clone(),
            key,
            token: attempt.token,
            lease_until,
            what,
            bounded: attempt.deadline.is_some(),
        }
    }

    /// Sends the attempt's claim as a future that owns what it needs: dropped before it
    /// answers, it goes on in a task and releases the claim if it landed (SPEC v1.1 rules 3
    /// and 5). `lease_until`: when the lease ends at the latest, if the clock was read.
    fn send_claim<T: Borrow<Tool>>(
        &self,
        attempt: &Attempt<T>,
        lease_until: Option<Instant>,
    ) -> ClaimInFlight {
        let tool = attempt.tool();
        let policy = tool.policy();
        let ticket = ClaimTicket {
            store: self.store.clone(),
            events: self.events.clone(),
            tool: tool.clone(),
            tenant: attempt.tenant.clone(),
            key: attempt.key.expect("claiming needs a key"),
            token: attempt.token,
            lease_ms: policy.lease.as_millis() as u64,
            ttl_ms: policy.ttl.as_millis() as u64,
            retry_failure: policy.on_cache_hit == RetryBehavior::ReturnCachedIfSuccess,
            payload_checked: attempt.payload_checked,
            fingerprint: attempt.fingerprint.clone(),
            lease_until,
            deadline: attempt.deadline,
        };
        ClaimInFlight(Some(Box::pin(async move {
            let reply = {
                let request = ClaimRequest {
                    id: RecordId {
                        tenant: ticket.tenant.as_deref(),
                        key: &ticket.key,
                    },
                    scope: ticket.tool.scope(),
                    token: ticket.token,
                    lease_ms: ticket.lease_ms,
                    ttl_ms: ticket.ttl_ms,
                    retry_failure: ticket.retry_failure,
                    payload_checked: ticket.payload_checked,
                    fingerprint: ticket.fingerprint.as_deref(),
                };
                crate::store::answer_by(ticket.deadline, ticket.store.claim(&request)).await
            };
            (reply, ticket)
        })))
    }

    /// Frees, in the background, a claim that may have landed although its reply was lost.
    fn release_lost_claim<T: Borrow<Tool>>(&self, attempt: &Attempt<T>, lease_until: Instant) {
        let Some(key) = attempt.key else { return };
        let settler = self.settler(attempt, key, lease_until, Settlement::ReleaseLost);
        spawn_settling(settler.background(0));
    }

    fn wait_timed_out<T: Borrow<Tool>>(&self, attempt: &Attempt<T>) -> Error {
        self.emit(attempt, EventKind::WaitTimedOut, None);
        let tool = attempt.tool();
        Error::InProgress {
            tool: tool.name().to_owned(),
            key: attempt.key.map(|k| k.hex()).unwrap_or_default(),
            waited_ms: tool.timeout().unwrap_or_default().as_millis() as u64,
        }
    }

    fn unavailable<T: Borrow<Tool>>(&self, attempt: &Attempt<T>, error: &StoreError) -> Error {
        Error::StoreUnavailable {
            tool: attempt.tool().name().to_owned(),
            message: format!("{} ({})", error, self.store.describe()),
            source: error.driver_error().cloned(),
        }
    }

    /// Emits `waited` for a call that waited for another holder, with the wait's length (from
    /// its first wait to now) in whole milliseconds as the detail.
    fn emit_waited<T: Borrow<Tool>>(&self, attempt: &Attempt<T>) {
        if !attempt.waited {
            return;
        }
        let ms = attempt
            .wait_started
            .map_or(0, |since| since.elapsed().as_millis());
        self.emit(attempt, EventKind::Waited, Some(&ms.to_string()));
    }

    fn emit<T: Borrow<Tool>>(&self, attempt: &Attempt<T>, kind: EventKind, detail: Option<&str>) {
        #[cfg(feature = "tracing")]
        attempt.span.record("event", kind.name());
        self.events.emit(Event {
            kind,
            tool: attempt.tool().name(),
            key: attempt.key.as_ref(),
            tenant: attempt.tenant.as_deref(),
            detail,
        });
    }
}

/// The span of one call (feature `tracing`); the key is written only when the span is enabled.
#[cfg(feature = "tracing")]
fn call_span(
    tool: &Tool,
    tenant: Option<&str>,
    key: Option<&Key>,
    uuid: Option<&str>,
) -> tracing::Span {
    let span = tracing::info_span!(
        "idemkit.call",
        tool = tool.name(),
        tenant = tenant,
        key = tracing::field::Empty,
        event = tracing::field::Empty,
        recording = tracing::field::Empty,
        outcome = tracing::field::Empty,
    );
    if !span.is_disabled() {
        match (key, uuid) {
            (Some(key), _) => {
                span.record("key", key.hex().as_str());
            }
            (None, Some(uuid)) => {
                span.record("key", uuid);
            }
            (None, None) => {}
        }
    }
    span
}

/// Writes a finished call's outcome into its span: `ok`, `body_error`, or the error kind.
#[cfg(feature = "tracing")]
fn record_outcome<T, E>(span: &tracing::Span, result: &Result<T, CallError<E>>) {
    let outcome = match result {
        Ok(_) => "ok",
        Err(CallError::Body(_)) => "body_error",
        Err(CallError::Idempotency(e) | CallError::Held { error: e, .. }) => e.kind().name(),
    };
    span.record("outcome", outcome);
}

/// What one run of a Rust body came to.
enum Ran<T, E> {
    Done(Result<T, CallError<E>>),
    Retry(Duration),
}

/// A remembered result, read back as `T`.
fn replayed<T: DeserializeOwned, E>(tool: &Tool, json: &str) -> Result<T, CallError<E>> {
    serde_json::from_str(json).map_err(|e| {
        CallError::Idempotency(Error::Internal(format!(
            "the remembered result of `{}` does not read back as {}: {e}",
            tool.name(),
            std::any::type_name::<T>()
        )))
    })
}

/// Whether calls of `tool` claim keys: a strategy that deduplicates, and an effect that is not
/// `READ_ONLY` (SPEC v1.1 rule 7).
fn claims(tool: &Tool) -> bool {
    let policy = tool.policy();
    policy.strategy.uses_store() && policy.effect != Effect::ReadOnly
}

/// Reads an explicit key given as a JSON string literal; a lone surrogate in it is refused as an
/// invalid explicit key.
fn explicit_key_literal(tool: &Tool, literal: &str) -> Result<String, Error> {
    let invalid = |source: KeyError| Error::InvalidKey {
        tool: tool.name().to_owned(),
        source,
    };
    match CanonicalValue::parse(literal) {
        Ok(CanonicalValue::String(key)) => Ok(key),
        Ok(_) => Err(Error::Internal(format!(
            "the explicit key of `{}` must cross as a JSON string literal; a binding bug",
            tool.name()
        ))),
        Err(KeyError::LoneSurrogate { offset, code, .. }) => {
            Err(invalid(KeyError::LoneSurrogate {
                path: "explicit key".into(),
                offset,
                code,
            }))
        }
        Err(other) => Err(invalid(other)),
    }
}

/// `my_crate::mail::SmtpError` → `SmtpError` (generic parameters kept).
fn short_type_name<E>() -> String {
    let full = std::any::type_name::<E>();
    let head = full.split('<').next().unwrap_or(full);
    let start = head.rfind("::").map(|i| i + 2).unwrap_or(0);
    full[start..].to_owned()
}

/// What settling does with a claim.
#[derive(Debug, Clone)]
enum Settlement {
    /// Record the body's outcome.
    Complete { outcome: Outcome, ttl_ms: u64 },
    /// Release the claim of a body that failed (without `cache_failures`).
    ReleaseFailed,
    /// Release a claim whose body never ran and which is known to have landed (a call given
    /// up after its claim was acquired).
    ReleaseUnrun,
    /// Release a claim whose reply was lost (a store error, or no answer before the deadline):
    /// the claim may still be on its way — a statement queued on a paused server runs when it
    /// resumes — and land after a release that found nothing. So "nothing released" is checked
    /// with `get`: while the record is absent, or still this claim's, the release is tried
    /// again (at a slower pace while absent) until the lease ends.
    ReleaseLost,
}

/// One claim to settle, with everything a background task needs.
struct Settler {
    store: Arc<dyn Store>,
    events: Arc<Events>,
    tool: String,
    tenant: Option<Arc<str>>,
    key: Key,
    token: Token,
    lease_until: Instant,
    what: Settlement,
    /// Whether the call has a deadline: then every try is bounded (by the lease end) even while
    /// the caller waits; without one, only the tries in the background are.
    bounded: bool,
}

/// The answer of one settling try.
enum Tried {
    Settled(Recording),
    /// A store error (or no answer in time), with its text: try again.
    Again(String),
    /// A lost claim ([`Settlement::ReleaseLost`]) has not landed (yet): try again later, and at
    /// the lease end stop without an error — a claim that never landed needs no release.
    NotLanded,
}

/// The least time a settler's last try before the lease end is given.
const LAST_TRY_AT_LEAST: Duration = Duration::from_millis(20);

/// How long to wait before looking again for a lost claim that has not landed: from 100 ms,
/// doubling, at most 5 s (it may never land: the request never reached the server).
fn not_landed_pause(looks: u32) -> Duration {
    Duration::from_millis(100u64 << looks.min(6)).min(Duration::from_secs(5))
}

impl Settler {
    /// Tries up to `inline_until`, then hands the rest to a background task.
    async fn run(self, inline_until: Instant) -> Recording {
        let mut tries = 0;
        loop {
            let bound = self.bounded.then_some(self.lease_until);
            let last = match self.once(inline_until.min(self.lease_until), bound).await {
                Tried::Settled(recording) => return recording,
                Tried::Again(last) => last,
                Tried::NotLanded => "the claim has not landed yet".to_owned(),
            };
            let now = Instant::now();
            if now >= self.lease_until {
                return self.give_up(&last);
            }
            let pause = crate::store::poll_backoff(tries);
            tries += 1;
            if now + pause >= inline_until {
                let detail = format!(
                    "{} yet ({last}); retrying in the background until the lease ends",
                    match self.what {
                        Settlement::Complete { .. } => "outcome not recorded",
                        _ => "claim not released",
                    }
                );
                spawn_settling(self.background(tries));
                return Recording::Failed(detail);
            }
            tokio::time::sleep(pause).await;
        }
    }

    /// Retries until settled or until the lease ends. A try needs time to be answered, so none
    /// starts at the lease end: when the next pause would reach it, one last try is made halfway
    /// through the time left, then the settler stops (reporting the last store error, if the
    /// last try ended in one; a lost claim that never landed needs no release and no report).
    async fn background(self, mut tries: u32) {
        let mut looks = 0;
        let mut last_try = false;
        loop {
            let (last, pause) = match self.once(self.lease_until, Some(self.lease_until)).await {
                Tried::Settled(_) => return,
                Tried::Again(last) => {
                    let pause = crate::store::poll_backoff(tries);
                    tries = tries.saturating_add(1);
                    (Some(last), pause)
                }
                Tried::NotLanded => {
                    let pause = not_landed_pause(looks);
                    looks += 1;
                    (None, pause)
                }
            };
            let left = self.lease_until.saturating_duration_since(Instant::now());
            let wait = if pause < left {
                pause
            } else if !last_try && left >= 2 * LAST_TRY_AT_LEAST {
                last_try = true;
                left / 2
            } else {
                if let Some(last) = last {
                    self.give_up(&last);
                }
                return;
            };
            tokio::time::sleep(wait).await;
        }
    }

    /// One try, cut off at `until` (a cut-off try may still land: every try is safe to repeat).
    /// `bound`: the instant the store operation is told it has (`store::operation_deadline`),
    /// which may be later than `until`: the operation may go on after the wait for it ends.
    async fn once(&self, until: Instant, bound: Option<Instant>) -> Tried {
        let id = RecordId {
            tenant: self.tenant.as_deref(),
            key: &self.key,
        };
        let late = || Tried::Again("no answer from the store in time".into());
        match &self.what {
            Settlement::Complete { outcome, ttl_ms } => {
                let completing = crate::store::answer_by(
                    bound,
                    self.store.complete(id, self.token, outcome, *ttl_ms),
                );
                match tokio::time::timeout_at(until.into(), completing).await {
                    Ok(Ok(Completion::Recorded)) => Tried::Settled(Recording::Recorded),
                    Ok(Ok(Completion::NotOwner(found))) => {
                        let why = match found {
                            None => "the claim was gone (forgotten, released or expired)".into(),
                            Some(r) => format!(
                                "the record now belongs to another call (token {}, state {:?})",
                                r.token, r.state
                            ),
                        };
                        Tried::Settled(self.give_up(&why))
                    }
                    // A misconfigured store (a table that refuses the outcome) answers the same
                    // on every try.
                    Ok(Err(error @ StoreError::Configuration(_))) => {
                        Tried::Settled(self.give_up(&error.to_string()))
                    }
                    Ok(Err(error)) => Tried::Again(error.to_string()),
                    Err(_) => late(),
                }
            }
            Settlement::ReleaseFailed | Settlement::ReleaseUnrun | Settlement::ReleaseLost => {
                let releasing = crate::store::answer_by(bound, self.store.release(id, self.token));
                match tokio::time::timeout_at(until.into(), releasing).await {
                    Ok(Ok(false)) if matches!(self.what, Settlement::ReleaseLost) => {
                        // Nothing released: gone, someone else's, or not landed yet.
                        let getting = crate::store::answer_by(bound, self.store.get(id));
                        match tokio::time::timeout_at(until.into(), getting).await {
                            Ok(Ok((None, _))) => Tried::NotLanded,
                            Ok(Ok((Some(record), _)))
                                if record.token == self.token
                                    && record.state == RecordState::InProgress =>
                            {
                                Tried::Again("the claim landed while it was released".into())
                            }
                            Ok(Ok(_)) => Tried::Settled(Recording::Released),
                            Ok(Err(error)) => Tried::Again(error.to_string()),
                            Err(_) => late(),
                        }
                    }
                    Ok(Ok(_)) => {
                        if matches!(self.what, Settlement::ReleaseFailed) {
                            self.emit(EventKind::Released, None);
                        }
                        Tried::Settled(Recording::Released)
                    }
                    Ok(Err(error)) => Tried::Again(error.to_string()),
                    Err(_) => late(),
                }
            }
        }
    }

    /// Reports that settling stopped without success: `record_failed` for an outcome (the claim
    /// becomes abandoned), `store_error` for a claim left unreleased.
    fn give_up(&self, last: &str) -> Recording {
        let (kind, detail) = match self.what {
            Settlement::Complete { .. } => (
                EventKind::RecordFailed,
                format!("outcome not recorded: {last}"),
            ),
            Settlement::ReleaseFailed => (
                EventKind::StoreError,
                format!("could not release the claim after the body failed: {last}"),
            ),
            Settlement::ReleaseUnrun | Settlement::ReleaseLost => (
                EventKind::StoreError,
                format!("could not release a claim whose body never ran: {last}"),
            ),
        };
        self.emit(kind, Some(&detail));
        Recording::Failed(detail)
    }

    fn emit(&self, kind: EventKind, detail: Option<&str>) {
        self.events.emit(Event {
            kind,
            tool: &self.tool,
            key: Some(&self.key),
            tenant: self.tenant.as_deref(),
            detail,
        });
    }
}

/// Runs settling to its end whatever becomes of the caller: on the caller lane of a C or Java
/// caller (whose connections it may hold, see `runtime::spawn_detached`), on the current
/// runtime, or on the library's runtime outside one.
fn spawn_settling(task: impl Future<Output = ()> + Send + 'static) {
    crate::runtime::spawn_detached(task);
}

/// What a claim needs, owned, so that it can go on after its caller left.
struct ClaimTicket {
    store: Arc<dyn Store>,
    events: Arc<Events>,
    tool: Tool,
    tenant: Option<Arc<str>>,
    key: Key,
    token: Token,
    lease_ms: u64,
    ttl_ms: u64,
    retry_failure: bool,
    payload_checked: bool,
    fingerprint: Option<Arc<str>>,
    /// When the lease ends at the latest, if the clock was read before claiming.
    lease_until: Option<Instant>,
    /// The caller's deadline: what the claim is bounded by.
    deadline: Option<Instant>,
}

impl ClaimTicket {
    /// The settler that releases this claim (its body never ran): `what` is
    /// [`Settlement::ReleaseUnrun`] for a claim that landed, [`Settlement::ReleaseLost`] for one
    /// whose reply was lost.
    fn release_unrun(self, what: Settlement) -> Settler {
        let lease_until = self
            .lease_until
            .unwrap_or_else(|| Instant::now() + self.tool.policy().lease);
        Settler {
            store: self.store,
            events: self.events,
            tool: self.tool.name().to_owned(),
            tenant: self.tenant,
            key: self.key,
            token: self.token,
            lease_until,
            what,
            bounded: true,
        }
    }
}

type Claiming = Pin<Box<dyn Future<Output = (Result<ClaimReply, StoreError>, ClaimTicket)> + Send>>;

/// A claim on its way to the store. Awaited to the end it answers the store's reply. Dropped
/// before that — the caller's deadline came, or the caller's own future was dropped (SPEC v1.1
/// rules 3 and 5) — the claim may still land, so it is seen to the end in a task of its own and
/// released if it landed (or if the store failed and it may have): its body never ran.
struct ClaimInFlight(Option<Claiming>);

impl Future for ClaimInFlight {
    type Output = Result<ClaimReply, StoreError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let Some(claiming) = self.0.as_mut() else {
            return Poll::Ready(Err(StoreError::unavailable(
                "a claim was awaited again after it answered",
            )));
        };
        match claiming.as_mut().poll(cx) {
            Poll::Ready((reply, _)) => {
                self.0 = None;
                Poll::Ready(reply)
            }
            Poll::Pending => Poll::Pending,
        }
    }
}

impl Drop for ClaimInFlight {
    fn drop(&mut self) {
        let Some(claiming) = self.0.take() else {
            return;
        };
        spawn_settling(async move {
            let (reply, ticket) = claiming.await;
            match reply {
                Ok(ClaimReply {
                    claim: Claim::Acquired { .. },
                    ..
                }) => {
                    ticket
                        .release_unrun(Settlement::ReleaseUnrun)
                        .background(0)
                        .await
                }
                // The store failed: the claim may have landed, or may land yet.
                Err(_) => {
                    ticket
                        .release_unrun(Settlement::ReleaseLost)
                        .background(0)
                        .await
                }
                Ok(_) => {}
            }
        });
    }
}

/// Settling under way. Dropped before it finished (the caller's future was dropped after its
/// body ran), it goes on in a task of its own: the body's outcome is still recorded, or its
/// claim released, as if the caller had stayed (SPEC v1.1 rule 3: a body that finished in
/// this process has its outcome recorded).
struct SettlingInFlight(Option<Pin<Box<dyn Future<Output = Recording> + Send>>>);

impl Future for SettlingInFlight {
    type Output = Recording;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Recording> {
        let Some(settling) = self.0.as_mut() else {
            return Poll::Ready(Recording::Failed("settling was awaited again".into()));
        };
        match settling.as_mut().poll(cx) {
            Poll::Ready(recording) => {
                self.0 = None;
                Poll::Ready(recording)
            }
            Poll::Pending => Poll::Pending,
        }
    }
}

impl Drop for SettlingInFlight {
    fn drop(&mut self) {
        if let Some(settling) = self.0.take() {
            spawn_settling(async move {
                settling.await;
            });
        }
    }
}
