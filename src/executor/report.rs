//! Reporting a body: what its outcome means under the policy, retries and deadlines.

use super::*;

impl Executor {
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
    pub(super) fn resend_pause<T: Borrow<Tool>>(
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

    pub(super) async fn report_in_span<T: Borrow<Tool>>(
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
    pub(super) fn retry_pause<T: Borrow<Tool>>(
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
    pub(super) fn rearm<T: Borrow<Tool>>(&self, attempt: &mut Attempt<T>) {
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
    pub(super) fn timed_out<T: Borrow<Tool>>(
        &self,
        attempt: &Attempt<T>,
        recording: &Recording,
    ) -> Error {
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
}
