//! Preparing an attempt: which input the strategy keys on, the key, the fingerprint.

use super::*;

impl Executor {
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
    pub(super) fn prepare_with<T: Borrow<Tool>>(
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
    pub(super) fn prepare_from<T: Borrow<Tool>>(
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
}

/// Whether calls of `tool` claim keys: a strategy that deduplicates, and an effect that is not
/// `READ_ONLY` (SPEC v1.1 rule 7).
pub(super) fn claims(tool: &Tool) -> bool {
    let policy = tool.policy();
    policy.strategy.uses_store() && policy.effect != Effect::ReadOnly
}

/// Reads an explicit key given as a JSON string literal; a lone surrogate in it is refused as an
/// invalid explicit key.
pub(super) fn explicit_key_literal(tool: &Tool, literal: &str) -> Result<String, Error> {
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
