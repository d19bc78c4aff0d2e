//! Checking a policy at registration (SPEC §3: TTL, lease, `key_arguments`, effect lists).

use super::*;

impl Policy {
    /// Checks the policy for the tool `tool`.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidSetting`] naming the tool, the setting and the fix: a zero TTL or
    /// lease, one over [`MAX_SPAN`], `key_arguments` with a strategy other than `HASH_INPUT`,
    /// or an empty or repeated name in `key_arguments`; an effect that contradicts
    /// `cache_failures` or the error lists, or an empty or twice-listed error type.
    pub fn validate(&self, tool: &str) -> Result<(), Error> {
        let say = SettingMessage::new;
        if self.ttl.is_zero() {
            return Err(say()
                .setting(Setting::Ttl)
                .text(format!(
                    " must be > 0 on `{tool}`; it was 0. Use strategy NONE for no protection"
                ))
                .into());
        }
        for (setting, value) in [(Setting::Ttl, self.ttl), (Setting::Lease, self.lease)] {
            if value > MAX_SPAN {
                return Err(say()
                    .setting(setting)
                    .text(format!(
                        " must be at most {} s (100 years) on `{tool}`; it was {} s",
                        MAX_SPAN.as_secs(),
                        value.as_secs()
                    ))
                    .into());
            }
        }
        if self.lease.is_zero() {
            return Err(say()
                .setting(Setting::Lease)
                .text(format!(
                    " must be > 0 on `{tool}`; it was 0. Set it longer than the body can run"
                ))
                .into());
        }
        if !self.key_arguments.is_empty() && self.strategy != KeyStrategy::HashInput {
            return Err(say()
                .setting(Setting::KeyArguments)
                .text(format!(
                    " is set on `{tool}` but its strategy is {}; ",
                    self.strategy.name()
                ))
                .setting(Setting::KeyArguments)
                .text(" only applies to HASH_INPUT")
                .into());
        }
        if self.effect == Effect::ReadOnly && self.cache_failures {
            return Err(say()
                .setting(Setting::CacheFailures)
                .text(format!(" is set on `{tool}` but its "))
                .setting(Setting::Effect)
                .text(
                    " is READ_ONLY, which claims and records nothing; drop it or choose IDEMPOTENT or EFFECTFUL",
                )
                .into());
        }
        if self.effect == Effect::ReadOnly && !self.permanent_errors.is_empty() {
            return Err(say()
                .setting(Setting::PermanentErrors)
                .text(format!(" lists error types on `{tool}` but its "))
                .setting(Setting::Effect)
                .text(
                    " is READ_ONLY, which records nothing; drop them or choose IDEMPOTENT or EFFECTFUL",
                )
                .into());
        }
        for (setting, list) in [
            (Setting::NoEffectErrors, &self.no_effect_errors),
            (Setting::PermanentErrors, &self.permanent_errors),
        ] {
            if list.iter().any(|t| t.trim().is_empty()) {
                return Err(say()
                    .setting(setting)
                    .text(format!(
                        " on `{tool}` contains an empty error type name; list error type names"
                    ))
                    .into());
            }
        }
        if let Some(both) = self
            .no_effect_errors
            .iter()
            .find(|t| self.permanent_errors.contains(t))
        {
            return Err(say()
                .text(format!("`{both}` is listed on `{tool}` both in "))
                .setting(Setting::NoEffectErrors)
                .text(" and in ")
                .setting(Setting::PermanentErrors)
                .text("; list it once")
                .into());
        }
        let mut seen = std::collections::HashSet::new();
        for name in &self.key_arguments {
            if name.is_empty() {
                return Err(say()
                    .setting(Setting::KeyArguments)
                    .text(format!(
                        " on `{tool}` contains an empty name; list parameter names"
                    ))
                    .into());
            }
            // Names equal after NFC select the same member of the input.
            if !seen.insert(crate::key::nfc(name)) {
                return Err(say()
                    .setting(Setting::KeyArguments)
                    .text(format!(
                        " on `{tool}` names `{name}` twice (names are compared after \
                         NFC normalisation); list each parameter once"
                    ))
                    .into());
            }
        }
        Ok(())
    }
}
