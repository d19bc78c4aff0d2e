//! The tool (call site) that carries a validated policy and its deadline.

use super::*;

/// A call site: a named tool or action with its policy and optional deadline.
///
/// The name is the key's scope, so two tools never share a key.
///
/// Cheap to clone: clones share one validated definition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tool {
    inner: std::sync::Arc<ToolDefinition>,
}

#[derive(Debug, PartialEq, Eq)]
struct ToolDefinition {
    name: String,
    /// The name in NFC: the scope that identifies the tool's records (SPEC v1.1 rule 1).
    scope: String,
    policy: Policy,
    timeout: Option<Duration>,
}

impl Tool {
    /// A tool with this name and policy and no deadline; validated here.
    ///
    /// # Errors
    ///
    /// [`Error::Configuration`] for an empty name or one over 1,024 bytes after NFC;
    /// [`Error::InvalidSetting`] for a policy that [`Policy::validate`](super::Policy::validate) refuses.
    pub fn new(name: impl Into<String>, policy: Policy) -> Result<Tool, Error> {
        Tool::with_timeout(name, policy, None)
    }

    /// A tool whose calls (store lookup, waiting and body together) must finish within `timeout`
    /// (`None`: no deadline). A caller still waiting at the deadline gets
    /// [`InProgress`](crate::ErrorKind::InProgress), a body still running
    /// [`Timeout`](crate::ErrorKind::Timeout).
    ///
    /// # Errors
    ///
    /// As [`Tool::new`], and [`Error::InvalidSetting`] for a zero timeout or, when the strategy
    /// uses the store, one not shorter than the lease (a live call could be reported
    /// abandoned).
    pub fn with_timeout(
        name: impl Into<String>,
        policy: Policy,
        timeout: Option<Duration>,
    ) -> Result<Tool, Error> {
        let name = name.into();
        if name.trim().is_empty() {
            return Err(Error::config(
                "a tool name must not be empty: it is the scope of every key the tool makes",
            ));
        }
        let scope = crate::key::nfc(&name).into_owned();
        if scope.len() > crate::key::MAX_IDENTITY_BYTES {
            let start: String = name.chars().take(40).collect();
            return Err(Error::config(format!(
                "the tool name `{start}…` is {} bytes of UTF-8 (after NFC normalisation), over \
                 the limit of {}: it is the scope of every key the tool makes; use a shorter name",
                scope.len(),
                crate::key::MAX_IDENTITY_BYTES
            )));
        }
        policy.validate(&name)?;
        if let Some(t) = timeout {
            if t.is_zero() {
                return Err(SettingMessage::new()
                    .setting(Setting::Timeout)
                    .text(format!(
                        " must be > 0 on `{name}`; leave it unset for no deadline"
                    ))
                    .into());
            }
            if policy.strategy.uses_store() && t >= policy.lease {
                return Err(SettingMessage::new()
                    .setting(Setting::Timeout)
                    .text(format!(" ({} ms) must be shorter than ", t.as_millis()))
                    .setting(Setting::Lease)
                    .text(format!(
                        " ({} s) on `{name}`: raise ",
                        policy.lease.as_secs_f64()
                    ))
                    .setting(Setting::Lease)
                    .text(" or lower ")
                    .setting(Setting::Timeout)
                    .text(", or a live call could be reported abandoned")
                    .into());
            }
        }
        Ok(Tool {
            inner: std::sync::Arc::new(ToolDefinition {
                name,
                scope,
                policy,
                timeout,
            }),
        })
    }

    /// Checks that every `key_arguments` name is one of `parameters` (done when a tool is
    /// registered by a face that knows the parameter names, such as Java).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidSetting`] naming the first name that is not a parameter, and listing the
    /// parameters.
    pub fn check_parameters<S: AsRef<str>>(&self, parameters: &[S]) -> Result<(), Error> {
        for name in &self.inner.policy.key_arguments {
            if !parameters.iter().any(|p| p.as_ref() == name) {
                let known: Vec<&str> = parameters.iter().map(|p| p.as_ref()).collect();
                return Err(SettingMessage::new()
                    .setting(Setting::KeyArguments)
                    .text(format!(
                        " on `{}` names `{name}`, which is not a parameter of the tool; its parameters are [{}]",
                        self.inner.name,
                        known.join(", ")
                    ))
                    .into());
            }
        }
        Ok(())
    }

    /// The tool's name, as given.
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// The name in NFC, as records keep it (SPEC v1.1 rule 1).
    pub fn scope(&self) -> &str {
        &self.inner.scope
    }

    /// The tool's (validated) policy.
    pub fn policy(&self) -> &Policy {
        &self.inner.policy
    }

    /// The tool's deadline for a whole call, if it has one.
    pub fn timeout(&self) -> Option<Duration> {
        self.inner.timeout
    }
}
