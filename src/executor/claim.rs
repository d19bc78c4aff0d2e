//! Claiming: [`Executor::advance`] and the claim loop (wait, replay, take over, hold).

use super::*;

impl Executor {
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

    pub(super) async fn claim_loop<T: Borrow<Tool>>(
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
    pub(super) fn check_payload<T: Borrow<Tool>>(
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

    pub(super) fn remembered<T: Borrow<Tool>>(
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

    /// Sends the attempt's claim as a future that owns what it needs: dropped before it
    /// answers, it goes on in a task and releases the claim if it landed (SPEC v1.1 rules 3
    /// and 5). `lease_until`: when the lease ends at the latest, if the clock was read.
    pub(super) fn send_claim<T: Borrow<Tool>>(
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
    pub(super) fn release_lost_claim<T: Borrow<Tool>>(
        &self,
        attempt: &Attempt<T>,
        lease_until: Instant,
    ) {
        let Some(key) = attempt.key else { return };
        let settler = self.settler(attempt, key, lease_until, Settlement::ReleaseLost);
        spawn_settling(settler.background(0));
    }

    pub(super) fn wait_timed_out<T: Borrow<Tool>>(&self, attempt: &Attempt<T>) -> Error {
        self.emit(attempt, EventKind::WaitTimedOut, None);
        let tool = attempt.tool();
        Error::InProgress {
            tool: tool.name().to_owned(),
            key: attempt.key.map(|k| k.hex()).unwrap_or_default(),
            waited_ms: tool.timeout().unwrap_or_default().as_millis() as u64,
        }
    }

    pub(super) fn unavailable<T: Borrow<Tool>>(
        &self,
        attempt: &Attempt<T>,
        error: &StoreError,
    ) -> Error {
        Error::StoreUnavailable {
            tool: attempt.tool().name().to_owned(),
            message: format!("{} ({})", error, self.store.describe()),
            source: error.driver_error().cloned(),
        }
    }
}
