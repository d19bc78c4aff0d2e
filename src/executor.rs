//! The claim protocol of SPEC §3, in one place, used by every face.
//!
//! Two shapes over one implementation: [`Executor::call`] runs a Rust body in one go, and the
//! two-step [`Executor::prepare`] → [`Executor::advance`] → (the caller runs its body) →
//! [`Executor::succeed`] / [`Executor::fail`] serves the Java and C faces, whose bodies never run
//! inside a native frame.

use std::borrow::Borrow;
use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::error::{Error, StoreError};
use crate::events::{Event, EventKind, Events};
use crate::key::{derive_key, Key, KeyInput, KeyScope};
use crate::policy::{KeyStrategy, RetryBehavior, Tool};
use crate::record::{Failure, Outcome, Record, Token};
use crate::store::{Claim, ClaimRequest, Completion, RecordId, Store};

/// How many times a succeeded body's outcome is offered to the store before giving up.
const COMPLETE_TRIES: u32 = 3;

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

/// What happened to a succeeded body's outcome.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Recording {
    /// Recorded; repeats get it.
    Recorded,
    /// Nothing to record (`UUID`, `NONE`).
    Unprotected,
    /// It could not be recorded (reported as `record_failed`); the claim will become abandoned.
    Failed(String),
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
    waited: bool,
    polls: u32,
    phase: Phase,
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

    fn id(&self) -> Option<RecordId<'_>> {
        self.key.as_ref().map(|key| RecordId {
            tenant: self.tenant.as_deref(),
            key,
        })
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
        let mut attempt = self.prepare_with(tool, context, input)?;
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
                            attempt.phase = Phase::Done;
                            return Err(CallError::Idempotency(Error::Timeout {
                                tool: tool.name().to_owned(),
                                key: attempt.key_text().unwrap_or_default(),
                                timeout_ms: tool.timeout().unwrap_or_default().as_millis() as u64,
                            }));
                        }
                    },
                };
                match result {
                    Ok(value) => {
                        let json = serde_json::to_string(&value).map_err(|e| {
                            Error::Internal(format!(
                                "the result of `{}` does not serialise as JSON: {e}",
                                tool.name()
                            ))
                        });
                        match json {
                            Ok(json) => {
                                self.succeed(&mut attempt, &json).await;
                            }
                            Err(e) => {
                                // Unrecordable: leave the claim to become abandoned rather than run twice.
                                self.emit(&attempt, EventKind::RecordFailed, Some(&e.to_string()));
                            }
                        }
                        Ok(value)
                    }
                    Err(error) => {
                        let failure = Failure::new(short_type_name::<E>(), error.to_string());
                        self.fail(&mut attempt, &failure).await;
                        Err(CallError::Body(error))
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
        Ok(Attempt {
            tool: holder,
            // Records are identified by the NFC tenant, as the key material is (SPEC v1.1 rule 1).
            tenant: context
                .tenant
                .as_deref()
                .map(|t| crate::key::nfc(t).into_owned()),
            key,
            uuid,
            token: Token::random(),
            deadline,
            waited: false,
            polls: 0,
            phase,
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
            let request = ClaimRequest {
                id,
                scope: tool.scope(),
                token: attempt.token,
                lease_ms: policy.lease.as_millis() as u64,
                ttl_ms: policy.ttl.as_millis() as u64,
                retry_failure: policy.on_cache_hit == RetryBehavior::ReturnCachedIfSuccess,
            };
            let reply = match self
                .with_deadline(attempt.deadline, self.store.claim(&request))
                .await
            {
                Ok(reply) => reply,
                Err(error) => {
                    self.emit(attempt, EventKind::StoreError, Some(&error.to_string()));
                    // The claim may have landed with its reply lost: free it if so.
                    let _ = tokio::time::timeout(
                        Duration::from_millis(500),
                        self.store.release(id, attempt.token),
                    )
                    .await;
                    return Err(self.unavailable(attempt, &error));
                }
            };
            match reply.claim {
                Claim::Acquired { .. } => {
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
                            self.emit(attempt, EventKind::WaitTimedOut, None);
                            return Err(Error::InProgress {
                                tool: tool.name().to_owned(),
                                key: key.hex(),
                                waited_ms: tool.timeout().unwrap_or_default().as_millis() as u64,
                            });
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
    /// Never fails the caller: if the outcome cannot be recorded after retries, the failure is
    /// reported as `record_failed` and the claim is left to become abandoned (never re-run).
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
        let id = attempt.id().expect("a claimed call has a key");
        match self.store.release(id, attempt.token).await {
            Ok(_) => {
                self.emit(attempt, EventKind::Released, None);
                Recording::Recorded
            }
            Err(error) => {
                let detail = format!("could not release the claim after the body failed: {error}");
                self.emit(attempt, EventKind::StoreError, Some(&detail));
                Recording::Failed(detail)
            }
        }
    }

    /// Gives up a claimed call without recording anything (the body was never run).
    pub async fn abandon_unrun<T: Borrow<Tool>>(&self, attempt: &mut Attempt<T>) {
        if attempt.phase == Phase::Claimed {
            if let Some(id) = attempt.id() {
                let _ = self.store.release(id, attempt.token).await;
            }
        }
        attempt.phase = Phase::Done;
    }

    async fn record<T: Borrow<Tool>>(&self, attempt: &Attempt<T>, outcome: &Outcome) -> Recording {
        let id = attempt.id().expect("a claimed call has a key");
        let ttl_ms = attempt.tool().policy().ttl.as_millis() as u64;
        let mut last = String::new();
        for round in 0..COMPLETE_TRIES {
            if round > 0 {
                tokio::time::sleep(Duration::from_millis(20 << round)).await;
            }
            match self
                .store
                .complete(id, attempt.token, outcome, ttl_ms)
                .await
            {
                Ok(Completion::Recorded) => return Recording::Recorded,
                Ok(Completion::NotOwner(found)) => {
                    last = match found {
                        None => "the claim was gone (forgotten, released or expired)".into(),
                        Some(r) => format!(
                            "the record now belongs to another call (token {}, state {:?})",
                            r.token, r.state
                        ),
                    };
                    break;
                }
                Err(error) => last = error.to_string(),
            }
        }
        let detail = format!("outcome not recorded: {last}");
        self.emit(attempt, EventKind::RecordFailed, Some(&detail));
        Recording::Failed(detail)
    }

    async fn with_deadline<T>(
        &self,
        deadline: Option<Instant>,
        op: impl Future<Output = Result<T, StoreError>>,
    ) -> Result<T, StoreError> {
        match deadline {
            None => op.await,
            Some(d) => match tokio::time::timeout_at(d.into(), op).await {
                Ok(r) => r,
                Err(_) => Err(StoreError::unavailable(
                    "no answer from the store before the call's deadline",
                )),
            },
        }
    }

    fn unavailable<T: Borrow<Tool>>(&self, attempt: &Attempt<T>, error: &StoreError) -> Error {
        Error::StoreUnavailable {
            tool: attempt.tool().name().to_owned(),
            message: format!("{} ({})", error, self.store.describe()),
        }
    }

    fn emit<T: Borrow<Tool>>(&self, attempt: &Attempt<T>, kind: EventKind, detail: Option<&str>) {
        self.events.emit(Event {
            kind,
            tool: attempt.tool().name(),
            key: attempt.key.as_ref(),
            tenant: attempt.tenant.as_deref(),
            detail,
        });
    }
}

/// `my_crate::mail::SmtpError` → `SmtpError` (generic parameters kept).
fn short_type_name<E>() -> String {
    let full = std::any::type_name::<E>();
    let head = full.split('<').next().unwrap_or(full);
    let start = head.rfind("::").map(|i| i + 2).unwrap_or(0);
    full[start..].to_owned()
}
