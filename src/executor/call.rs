//! The Rust one-shot face: [`Executor::call`] and [`Executor::call_with`] run a Rust body
//! through the same two steps the Java and C faces take.

use super::*;

impl Executor {
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

    pub(super) async fn call_prepared<T, E, F, Fut>(
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

    pub(super) async fn call_with_prepared<T, E, F, Fut>(
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
    pub(super) async fn run_body<T, E, Fut>(
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
}

/// What one run of a Rust body came to.
pub(super) enum Ran<T, E> {
    Done(Result<T, CallError<E>>),
    Retry(Duration),
}

/// A remembered result, read back as `T`.
pub(super) fn replayed<T: DeserializeOwned, E>(tool: &Tool, json: &str) -> Result<T, CallError<E>> {
    serde_json::from_str(json).map_err(|e| {
        CallError::Idempotency(Error::Internal(format!(
            "the remembered result of `{}` does not read back as {}: {e}",
            tool.name(),
            std::any::type_name::<T>()
        )))
    })
}

/// `my_crate::mail::SmtpError` → `SmtpError` (generic parameters kept).
pub(super) fn short_type_name<E>() -> String {
    let full = std::any::type_name::<E>();
    let head = full.split('<').next().unwrap_or(full);
    let start = head.rfind("::").map(|i| i + 2).unwrap_or(0);
    full[start..].to_owned()
}
