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
use crate::policy::{KeyStrategy, RetryBehavior, Tool};
use crate::record::{Failure, Outcome, Record, Token};
use crate::store::{Claim, ClaimReply, ClaimRequest, Completion, RecordId, Store};

/// How long settling (recording an outcome, releasing a claim) may hold its caller before it
/// goes on in the background: the Java and C faces settle inside one short native call.
const INLINE_SETTLE: Duration = Duration::from_millis(100);

/// Tenant and run of a call: both are part of the key; records are tenant-scoped.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CallContext {
    pub tenant: Option<String>,
    /// A new run is a new key: the same call re-asked in a new run runs again.
    pub run: Option<String>,
}

impl CallContext {
    pub fn new() -> CallContext {
        CallContext::default()
    }

    pub fn tenant(mut self, tenant: impl Into<String>) -> CallContext {
        self.tenant = Some(tenant.into());
        self
    }

    pub fn run(mut self, run: impl Into<String>) -> CallContext {
        self.run = Some(run.into());
        self
    }
}

/// What a body may want to know about its own call, e.g. to pass the key on as an
/// `Idempotency-Key` header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallInfo {
    /// The 64-hex key (`HASH_INPUT`, `EXPLICIT`), the fresh UUID (`UUID`), or `None` (`NONE`).
    pub key: Option<String>,
    pub tenant: Option<String>,
}

/// The next thing the caller of the two-step protocol does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// Run the body, then call [`Executor::succeed`] or [`Executor::fail`].
    Run,
    /// Do not run: this remembered result (JSON text) is the answer.
    Replay(String),
    /// Still waiting for another caller's claim and the step's time budget is spent: call
    /// [`Executor::advance`] again (this is how the Java face keeps native calls short).
    Pending,
}

/// What happened to a body's outcome.
#[derive(Debug, Clone, PartialEq, Eq)]
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
    /// Nothing to record (`UUID`, `NONE`).
    Unprotected,
    /// Not settled when the call returned. Either settling gave up (reported as `record_failed`,
    /// or `store_error` for a release; the claim will become abandoned), or, after a store error,
    /// it goes on in the background until the lease ends (the detail says so, and the event
    /// comes only if it finally gives up).
    Failed(String),
}

impl Recording {
    /// A short name: `recorded`, `released`, `left_in_progress`, `unprotected` or `failed`.
    pub fn name(&self) -> &'static str {
        match self {
            Recording::Recorded => "recorded",
            Recording::Released => "released",
            Recording::LeftInProgress => "left_in_progress",
            Recording::Unprotected => "unprotected",
            Recording::Failed(_) => "failed",
        }
    }
}

/// What a face's body did, as the face reports it to [`Executor::report`].
#[derive(Debug, Clone, Copy)]
pub enum BodyReport<'a> {
    /// It returned this result (one JSON value, as text).
    Succeeded(&'a str),
    /// It failed with this error.
    Failed(&'a Failure),
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
    /// ([`Error::Timeout`], which says what became of its outcome).
    Error(Error),
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
    tenant: Option<String>,
    key: Option<Key>,
    uuid: Option<String>,
    token: Token,
    deadline: Option<Instant>,
    /// When the claim's lease ends at the latest, on this process's clock (the claim was sent
    /// at or after `lease_until - lease`): settling is retried until then (SPEC v1.1 rule 4).
    lease_until: Option<Instant>,
    waited: bool,
    polls: u32,
    phase: Phase,
    /// The call's span (feature `tracing`): `idemkit.call`, see [`Executor::call`].
    #[cfg(feature = "tracing")]
    span: tracing::Span,
}

impl<T: Borrow<Tool>> Attempt<T> {
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

    pub fn tenant(&self) -> Option<&str> {
        self.tenant.as_deref()
    }

    pub fn token(&self) -> Token {
        self.token
    }

    /// The caller's deadline, if the tool has a timeout.
    pub fn deadline(&self) -> Option<Instant> {
        self.deadline
    }

    /// What the body may know of its call.
    pub fn info(&self) -> CallInfo {
        CallInfo {
            key: self.key_text(),
            tenant: self.tenant.clone(),
        }
    }
}

/// A call's error: idemkit's own, or the body's (returned unchanged the first time).
#[derive(Debug, thiserror::Error)]
pub enum CallError<E> {
    #[error(transparent)]
    Idempotency(#[from] Error),
    #[error("{0}")]
    Body(E),
}

impl<E> CallError<E> {
    /// idemkit's error, if it is one.
    pub fn idempotency(&self) -> Option<&Error> {
        match self {
            CallError::Idempotency(e) => Some(e),
            CallError::Body(_) => None,
        }
    }
}

/// Runs calls through the claim protocol against one store, and reports every answer as an event.
///
/// Cheap to clone; clones share the store and the event counts.
#[derive(Clone)]
pub struct Executor {
    store: Arc<dyn Store>,
    events: Arc<Events>,
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
    pub fn new(store: Arc<dyn Store>) -> Executor {
        Executor {
            store,
            events: Arc::new(Events::default()),
        }
    }

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
    /// as [`CallError::Body`] (and is remembered, by type name and message, with `cache_failures`).
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
        let attempt = self.prepare_with(tool, context, input)?;
        #[cfg(feature = "tracing")]
        {
            use tracing::Instrument;
            let span = attempt.span.clone();
            let result = self
                .call_prepared(attempt, body)
                .instrument(span.clone())
                .await;
            let outcome = match &result {
                Ok(_) => "ok",
                Err(CallError::Body(_)) => "body_error",
                Err(CallError::Idempotency(e)) => e.kind().name(),
            };
            span.record("outcome", outcome);
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
            Step::Replay(json) => serde_json::from_str(&json).map_err(|e| {
                CallError::Idempotency(Error::Internal(format!(
                    "the remembered result of `{}` does not read back as {}: {e}",
                    tool.name(),
                    std::any::type_name::<T>()
                )))
            }),
            Step::Pending => unreachable!("advance without a budget never answers Pending"),
            Step::Run => {
                let body = body(attempt.info());
                let result = match attempt.deadline {
                    None => body.await,
                    Some(deadline) => match tokio::time::timeout_at(deadline.into(), body).await {
                        Ok(result) => result,
                        Err(_) => {
                            // The body future is dropped here: a cancellation (SPEC v1.1 rule 3).
                            return match self.report(&mut attempt, BodyReport::Cancelled).await {
                                Reported {
                                    answer: Answer::Error(error),
                                    ..
                                } => Err(CallError::Idempotency(error)),
                                Reported { .. } => Err(CallError::Idempotency(
                                    self.timed_out(&attempt, &Recording::LeftInProgress),
                                )),
                            };
                        }
                    },
                };
                match result {
                    Ok(value) => match serde_json::to_string(&value) {
                        Ok(json) => {
                            let reported = self.report(&mut attempt, BodyReport::Succeeded(&json));
                            match reported.await.answer {
                                Answer::Body => Ok(value),
                                Answer::Error(error) => Err(CallError::Idempotency(error)),
                            }
                        }
                        Err(e) => {
                            let error = Error::Internal(format!(
                                "the result of `{}` does not serialise as JSON ({e}), so it was not recorded and the call counts as failed",
                                tool.name()
                            ));
                            let failure = Failure::new("Unencodable", error.to_string());
                            let reported =
                                self.report(&mut attempt, BodyReport::Unencodable(&failure));
                            match reported.await.answer {
                                Answer::Body => Err(CallError::Idempotency(error)),
                                Answer::Error(timeout) => Err(CallError::Idempotency(timeout)),
                            }
                        }
                    },
                    Err(error) => {
                        let failure = Failure::new(short_type_name::<E>(), error.to_string());
                        match self
                            .report(&mut attempt, BodyReport::Failed(&failure))
                            .await
                            .answer
                        {
                            Answer::Body => Err(CallError::Body(error)),
                            Answer::Error(timeout) => Err(CallError::Idempotency(timeout)),
                        }
                    }
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
        self.prepare_with(tool.clone(), context, input)
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
        self.prepare_with(tool.clone(), context, input)
    }

    fn prepare_with<T: Borrow<Tool>>(
        &self,
        holder: T,
        context: &CallContext,
        input: KeyInput<'_>,
    ) -> Result<Attempt<T>, Error> {
        let tool: &Tool = holder.borrow();
        let policy = tool.policy();
        let scope = KeyScope {
            scope: tool.name(),
            tenant: context.tenant.as_deref(),
            run: context.run.as_deref(),
        };
        let (key, uuid, phase) = match policy.strategy {
            KeyStrategy::HashInput | KeyStrategy::Explicit => {
                let explicit = matches!(input, KeyInput::Explicit(_));
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
                            "the supplied key as KeyInput::Explicit"
                        }
                    )));
                }
                let key = derive_key(&scope, input, &policy.key_arguments).map_err(|source| {
                    Error::InvalidKey {
                        tool: tool.name().to_owned(),
                        source,
                    }
                })?;
                (Some(key), None, Phase::Claiming)
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
            .map(|t| crate::key::nfc(t).into_owned());
        #[cfg(feature = "tracing")]
        let span = call_span(tool, tenant.as_deref(), key.as_ref(), uuid.as_deref());
        Ok(Attempt {
            tool: holder,
            tenant,
            key,
            uuid,
            token: Token::random(),
            deadline,
            lease_until: None,
            waited: false,
            polls: 0,
            phase,
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
            Phase::Unprotected => return Ok(Step::Run),
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
            Ok(Step::Run) => attempt.phase = Phase::Claimed,
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
                    if attempt.waited {
                        self.emit(attempt, EventKind::Waited, None);
                    }
                    self.emit(attempt, EventKind::Acquired, None);
                    return Ok(Step::Run);
                }
                Claim::Completed(record) => return self.remembered(attempt, record),
                Claim::Abandoned(_) => {
                    self.emit(attempt, EventKind::Indeterminate, None);
                    return Err(Error::Indeterminate {
                        tool: tool.name().to_owned(),
                        key: key.hex(),
                        tenant: attempt.tenant.clone(),
                    });
                }
                Claim::InProgress(record) => {
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

    fn remembered<T: Borrow<Tool>>(
        &self,
        attempt: &Attempt<T>,
        record: Record,
    ) -> Result<Step, Error> {
        let tool = attempt.tool().name();
        let key = || record.key.clone();
        let behavior = attempt.tool().policy().on_cache_hit;
        if behavior == RetryBehavior::FailFast {
            self.emit(attempt, EventKind::FailedFast, None);
            return Err(Error::FailFast {
                tool: tool.to_owned(),
                key: key(),
                state: "completed",
            });
        }
        if attempt.waited {
            self.emit(attempt, EventKind::Waited, None);
        }
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

    /// Reports a failed body: with `cache_failures` the failure is recorded, otherwise the claim
    /// is released so that a retry runs again. The caller rethrows the body's error either way.
    pub async fn fail<T: Borrow<Tool>>(
        &self,
        attempt: &mut Attempt<T>,
        failure: &Failure,
    ) -> Recording {
        if attempt.phase != Phase::Claimed {
            attempt.phase = Phase::Done;
            return Recording::Unprotected;
        }
        attempt.phase = Phase::Done;
        if attempt.tool().policy().cache_failures {
            return self
                .record(attempt, &Outcome::Failure(failure.clone()))
                .await;
        }
        self.settle(attempt, Settlement::ReleaseFailed).await
    }

    /// Releases the claim of a call whose body never ran, so that the next call runs; nothing
    /// is recorded. A call that holds no claim (not yet claimed, replayed, finished, `UUID`,
    /// `NONE`) is only marked finished.
    pub async fn release_unrun<T: Borrow<Tool>>(&self, attempt: &mut Attempt<T>) -> Recording {
        let claimed = attempt.phase == Phase::Claimed && attempt.key.is_some();
        attempt.phase = Phase::Done;
        if claimed {
            self.settle(attempt, Settlement::ReleaseUnrun).await
        } else {
            Recording::Unprotected
        }
    }

    /// Settles a claimed call by what its body did, and says what the face tells its caller —
    /// one rule for every face (SPEC v1.1 rules 3 and 6):
    ///
    /// - [`BodyReport::Succeeded`]: recorded; [`BodyReport::Failed`] and
    ///   [`BodyReport::Unencodable`]: released, or recorded with `cache_failures`;
    ///   [`BodyReport::NeverRan`]: released; [`BodyReport::Cancelled`]: left in progress, to
    ///   become abandoned at the lease end.
    /// - A body that ran (or was cancelled) while the caller's deadline passed: the caller gets
    ///   the timeout error, naming what became of the outcome (a late complete is recorded as
    ///   usual, so a repeat replays it). Otherwise the caller gets the body's own answer.
    pub async fn report<T: Borrow<Tool>>(
        &self,
        attempt: &mut Attempt<T>,
        report: BodyReport<'_>,
    ) -> Reported {
        #[cfg(feature = "tracing")]
        {
            use tracing::Instrument;
            let span = attempt.span.clone();
            self.report_in_span(attempt, report).instrument(span).await
        }
        #[cfg(not(feature = "tracing"))]
        self.report_in_span(attempt, report).await
    }

    async fn report_in_span<T: Borrow<Tool>>(
        &self,
        attempt: &mut Attempt<T>,
        report: BodyReport<'_>,
    ) -> Reported {
        let ran = !matches!(report, BodyReport::NeverRan);
        let overran = ran
            && matches!(attempt.phase, Phase::Claimed | Phase::Unprotected)
            && attempt.deadline.is_some_and(|d| Instant::now() >= d);
        let recording = match report {
            BodyReport::Succeeded(json) => self.succeed(attempt, json).await,
            BodyReport::Failed(failure) | BodyReport::Unencodable(failure) => {
                self.fail(attempt, failure).await
            }
            BodyReport::NeverRan => self.release_unrun(attempt).await,
            BodyReport::Cancelled => {
                let claimed = attempt.phase == Phase::Claimed && attempt.key.is_some();
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
        } else {
            Answer::Body
        };
        Reported { answer, recording }
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
                "its outcome is unknown (it was cancelled while it may have been acting), so its claim stays in progress until the lease ends and then reads as abandoned until an operator resolves it (idemkit resolve --key {key})"
            ),
            Recording::Unprotected => "nothing was recorded (its strategy does not deduplicate)".to_owned(),
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
            lease_until,
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
                };
                ticket.store.claim(&request).await
            };
            (reply, ticket)
        })))
    }

    /// Frees, in the background, a claim that may have landed although its reply was lost.
    fn release_lost_claim<T: Borrow<Tool>>(&self, attempt: &Attempt<T>, lease_until: Instant) {
        let Some(key) = attempt.key else { return };
        let settler = self.settler(attempt, key, lease_until, Settlement::ReleaseUnrun);
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
        }
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
    /// Release a claim whose body never ran (a lost claim reply, a call given up).
    ReleaseUnrun,
}

/// One claim to settle, with everything a background task needs.
struct Settler {
    store: Arc<dyn Store>,
    events: Arc<Events>,
    tool: String,
    tenant: Option<String>,
    key: Key,
    token: Token,
    lease_until: Instant,
    what: Settlement,
}

/// The answer of one settling try.
enum Tried {
    Settled(Recording),
    /// A store error (or no answer in time), with its text: try again.
    Again(String),
}

impl Settler {
    /// Tries up to `inline_until`, then hands the rest to a background task.
    async fn run(self, inline_until: Instant) -> Recording {
        let mut tries = 0;
        loop {
            let last = match self.once(inline_until.min(self.lease_until)).await {
                Tried::Settled(recording) => return recording,
                Tried::Again(last) => last,
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

    /// Retries until settled or until the lease ends.
    async fn background(self, mut tries: u32) {
        loop {
            let last = match self.once(self.lease_until).await {
                Tried::Settled(_) => return,
                Tried::Again(last) => last,
            };
            let now = Instant::now();
            if now >= self.lease_until {
                self.give_up(&last);
                return;
            }
            let pause = crate::store::poll_backoff(tries).min(self.lease_until - now);
            tries = tries.saturating_add(1);
            tokio::time::sleep(pause).await;
        }
    }

    /// One try, cut off at `until` (a cut-off try may still land: every try is safe to repeat).
    async fn once(&self, until: Instant) -> Tried {
        let id = RecordId {
            tenant: self.tenant.as_deref(),
            key: &self.key,
        };
        let late = || Tried::Again("no answer from the store in time".into());
        match &self.what {
            Settlement::Complete { outcome, ttl_ms } => {
                let completing = self.store.complete(id, self.token, outcome, *ttl_ms);
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
                    Ok(Err(error)) => Tried::Again(error.to_string()),
                    Err(_) => late(),
                }
            }
            Settlement::ReleaseFailed | Settlement::ReleaseUnrun => {
                let releasing = self.store.release(id, self.token);
                match tokio::time::timeout_at(until.into(), releasing).await {
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
            Settlement::ReleaseUnrun => (
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

/// What a claim needs, owned, so that it can go on after its caller left.
struct ClaimTicket {
    store: Arc<dyn Store>,
    events: Arc<Events>,
    tool: Tool,
    tenant: Option<String>,
    key: Key,
    token: Token,
    lease_ms: u64,
    ttl_ms: u64,
    retry_failure: bool,
    /// When the lease ends at the latest, if the clock was read before claiming.
    lease_until: Option<Instant>,
}

impl ClaimTicket {
    /// The settler that releases this claim (its body never ran).
    fn release_unrun(self) -> Settler {
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
            what: Settlement::ReleaseUnrun,
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
            if matches!(
                reply,
                Ok(ClaimReply {
                    claim: Claim::Acquired { .. },
                    ..
                }) | Err(_)
            ) {
                ticket.release_unrun().background(0).await;
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

/// Runs settling on the current runtime, or on the library's runtime outside one.
fn spawn_settling(task: impl Future<Output = ()> + Send + 'static) {
    match tokio::runtime::Handle::try_current() {
        Ok(handle) => {
            handle.spawn(task);
        }
        Err(_) => {
            crate::runtime::runtime().spawn(task);
        }
    }
}
