//! Settling: recording an outcome or releasing a claim, inline then in the background
//! until the lease ends (SPEC v1.1 rule 4).

use super::*;

impl Executor {
    pub(super) async fn record<T: Borrow<Tool>>(
        &self,
        attempt: &Attempt<T>,
        outcome: &Outcome,
    ) -> Recording {
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
    pub(super) async fn settle<T: Borrow<Tool>>(
        &self,
        attempt: &Attempt<T>,
        what: Settlement,
    ) -> Recording {
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
    pub(super) fn settler<T: Borrow<Tool>>(
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
}

/// What settling does with a claim.
#[derive(Debug, Clone)]
pub(super) enum Settlement {
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
pub(super) struct Settler {
    pub(super) store: Arc<dyn Store>,
    pub(super) events: Arc<Events>,
    pub(super) tool: String,
    pub(super) tenant: Option<Arc<str>>,
    pub(super) key: Key,
    pub(super) token: Token,
    pub(super) lease_until: Instant,
    pub(super) what: Settlement,
    /// Whether the call has a deadline: then every try is bounded (by the lease end) even while
    /// the caller waits; without one, only the tries in the background are.
    pub(super) bounded: bool,
}

/// The answer of one settling try.
pub(super) enum Tried {
    Settled(Recording),
    /// A store error (or no answer in time), with its text: try again.
    Again(String),
    /// A lost claim ([`Settlement::ReleaseLost`]) has not landed (yet): try again later, and at
    /// the lease end stop without an error — a claim that never landed needs no release.
    NotLanded,
}

/// The least time a settler's last try before the lease end is given.
pub(super) const LAST_TRY_AT_LEAST: Duration = Duration::from_millis(20);

/// How long to wait before looking again for a lost claim that has not landed: from 100 ms,
/// doubling, at most 5 s (it may never land: the request never reached the server).
pub(super) fn not_landed_pause(looks: u32) -> Duration {
    Duration::from_millis(100u64 << looks.min(6)).min(Duration::from_secs(5))
}

impl Settler {
    /// Tries up to `inline_until`, then hands the rest to a background task.
    pub(super) async fn run(self, inline_until: Instant) -> Recording {
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
    pub(super) async fn background(self, mut tries: u32) {
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
    pub(super) async fn once(&self, until: Instant, bound: Option<Instant>) -> Tried {
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
    pub(super) fn give_up(&self, last: &str) -> Recording {
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

    pub(super) fn emit(&self, kind: EventKind, detail: Option<&str>) {
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
pub(super) fn spawn_settling(task: impl Future<Output = ()> + Send + 'static) {
    crate::runtime::spawn_detached(task);
}
