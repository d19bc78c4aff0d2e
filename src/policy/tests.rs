#[test]
fn failure_classification_follows_spec_order() {
    use FailureSettlement::*;
    let effectful = Policy::default().with_effect(Effect::Effectful);
    let listed = effectful
        .clone()
        .with_no_effect_errors(["Refused"])
        .with_permanent_errors(["Declined"]);
    let none: Option<FailureClass> = None;
    // What the face knows comes first.
    assert_eq!(
        listed.settle_failure(&["Declined"], Some(FailureClass::NoEffect)),
        Release
    );
    assert_eq!(
        listed.settle_failure(&["Refused"], Some(FailureClass::Permanent)),
        Record
    );
    // Then no-effect before permanent, matching any of the type names.
    assert_eq!(
        listed.settle_failure(&["Declined", "Refused"], none),
        Release
    );
    assert_eq!(listed.settle_failure(&["Sub", "Declined"], none), Record);
    // Then cache_failures, then the effect's default.
    assert_eq!(
        effectful
            .clone()
            .with_cache_failures(true)
            .settle_failure(&["X"], none),
        Record
    );
    assert_eq!(effectful.settle_failure(&["X"], none), Hold);
    assert_eq!(Policy::default().settle_failure(&["X"], none), Release);
    assert_eq!(
        Policy::default()
            .with_effect(Effect::ReadOnly)
            .settle_failure(&["X"], none),
        Release
    );
}

/// SPEC v1.1 rule 12: a request that reached the upstream is resent only when the upstream
/// honours the key and the key was sent; a request never sent always may be.
#[test]
fn exchanges_are_resent_only_when_safe() {
    use Exchange::*;
    use ExchangeVerdict::*;
    let plain = Policy::default();
    let honors = Policy::default().with_upstream_honors_key(true);
    for policy in [&plain, &honors] {
        assert_eq!(policy.judge_exchange(NotSent, true), Resend);
        assert_eq!(policy.judge_exchange(NotSent, false), Resend);
        assert_eq!(policy.judge_exchange(Answered(400), true), Final);
    }
    for exchange in [NoAnswer, Answered(500), Answered(503), Answered(409)] {
        assert_eq!(plain.judge_exchange(exchange, true), Final, "{exchange:?}");
        assert_eq!(
            honors.judge_exchange(exchange, true),
            Resend,
            "{exchange:?}"
        );
        assert_eq!(
            honors.judge_exchange(exchange, false),
            Final,
            "{exchange:?}"
        );
    }
    assert_eq!(
        honors.judge_exchange(Answered(422), true),
        PayloadMismatch(422)
    );
    assert_eq!(
        honors.judge_exchange(Answered(417), true),
        PayloadMismatch(417)
    );
    assert_eq!(plain.judge_exchange(Answered(422), true), Final);
    let read_only = Policy::default().with_effect(Effect::ReadOnly);
    assert_eq!(read_only.judge_exchange(Answered(502), false), Resend);
}

#[test]
fn effect_lists_and_read_only_are_checked_at_registration() {
    let read_only = Policy::default().with_effect(Effect::ReadOnly);
    let message = |p: Policy| p.validate("search").unwrap_err().to_string();
    assert!(message(read_only.clone().with_cache_failures(true)).contains("READ_ONLY"));
    assert!(message(read_only.with_permanent_errors(["Declined"])).contains("READ_ONLY"));
    assert!(message(Policy::default().with_no_effect_errors([" "])).contains("`no_effect_errors`"));
    let both = Policy::default()
        .with_no_effect_errors(["Timeout"])
        .with_permanent_errors(["Timeout"]);
    assert!(message(both).contains("`Timeout`"));
    for effect in ["READ_ONLY", "IDEMPOTENT", "EFFECTFUL"] {
        assert_eq!(Effect::from_name(effect).unwrap().name(), effect);
    }
    assert_eq!(Effect::default(), Effect::Idempotent);
}

#[test]
fn retry_pauses_double_up_to_the_cap_with_jitter_between_half_and_all() {
    let retry = RetryPolicy::attempts(10)
        .with_backoff(Duration::from_millis(100), Duration::from_millis(350));
    for _ in 0..200 {
        for (n, full) in [(0, 100), (1, 200), (2, 350), (9, 350), (40, 350)] {
            let pause = retry.pause(n);
            let full = Duration::from_millis(full);
            assert!(pause >= full / 2 && pause <= full, "retry {n}: {pause:?}");
        }
    }
    assert!(retry.covers(&["Anything"]));
    let only = retry.with_retry_on(["Timeout"]);
    assert!(only.covers(&["Sub", "Timeout"]));
    assert!(!only.covers(&["Refused"]));
}

use super::*;

#[test]
fn zero_ttl_is_refused_naming_tool_and_field() {
    let err = Tool::new("send_email", Policy::default().with_ttl(Duration::ZERO)).unwrap_err();
    assert_eq!(err.kind(), crate::ErrorKind::Configuration);
    assert!(err
        .to_string()
        .contains("`ttl` must be > 0 on `send_email`"));
}

#[test]
fn a_ttl_or_lease_beyond_100_years_is_refused() {
    let huge = Duration::from_secs(10_000_000_000_000_000);
    let err = Tool::new("t", Policy::default().with_ttl(huge)).unwrap_err();
    assert!(err.to_string().contains("`ttl` must be at most"), "{err}");
    let err = Tool::new("t", Policy::default().with_lease(huge)).unwrap_err();
    assert!(err.to_string().contains("`lease` must be at most"), "{err}");
    assert!(Tool::new("t", Policy::default().with_ttl(MAX_SPAN)).is_ok());
}

#[test]
fn zero_lease_is_refused() {
    let err = Tool::new("t", Policy::default().with_lease(Duration::ZERO)).unwrap_err();
    assert!(err.to_string().contains("`lease` must be > 0"));
}

#[test]
fn timeout_not_shorter_than_lease_is_refused() {
    let policy = Policy::default().with_lease(Duration::from_secs(2));
    let err = Tool::with_timeout("t", policy.clone(), Some(Duration::from_secs(2))).unwrap_err();
    assert!(err.to_string().contains("must be shorter than `lease`"));
    assert!(Tool::with_timeout("t", policy, Some(Duration::from_millis(1999))).is_ok());
}

/// The Rust face names the Rust settings; a face with other names (Java: `ttlSeconds`)
/// renders the same decision with its own, and the settings are named as data.
#[test]
fn setting_errors_name_the_setting_as_each_face_does() {
    let policy = Policy::default().with_lease(Duration::from_secs(2));
    let err = Tool::with_timeout("t", policy, Some(Duration::from_secs(2))).unwrap_err();
    assert_eq!(err.kind(), crate::ErrorKind::Configuration);
    assert_eq!(
        err.to_string(),
        "`timeout` (2000 ms) must be shorter than `lease` (2 s) on `t`: raise `lease` or \
         lower `timeout`, or a live call could be reported abandoned"
    );
    let Error::InvalidSetting(message) = &err else {
        panic!("{err:?}")
    };
    assert_eq!(
        message.settings().collect::<Vec<_>>(),
        [
            Setting::Timeout,
            Setting::Lease,
            Setting::Lease,
            Setting::Timeout
        ]
    );
    let java = |s: Setting| match s {
        Setting::Ttl => "ttlSeconds",
        Setting::Lease => "leaseSeconds",
        Setting::Timeout => "timeoutMs",
        Setting::KeyArguments => "keyArguments",
        other => other.rust_name(),
    };
    assert_eq!(
        message.render(java),
        "timeoutMs (2000 ms) must be shorter than leaseSeconds (2 s) on `t`: raise \
         leaseSeconds or lower timeoutMs, or a live call could be reported abandoned"
    );
    for policy in [
        Policy::default().with_ttl(Duration::ZERO),
        Policy::default().with_lease(Duration::ZERO),
        Policy::new(KeyStrategy::Explicit).with_key_arguments(["a"]),
        Policy::default().with_key_arguments(["a", "a"]),
    ] {
        let err = Tool::new("t", policy).unwrap_err();
        let text = err.to_string();
        for java_name in ["ttlSeconds", "leaseSeconds", "timeoutMs", "keyArguments"] {
            assert!(!text.contains(java_name), "{text}");
        }
        assert!(matches!(err, Error::InvalidSetting(_)), "{err:?}");
    }
}

#[test]
fn unknown_key_argument_is_refused_at_registration() {
    let tool = Tool::new("book", Policy::default().with_key_arguments(["flight"])).unwrap();
    assert!(tool.check_parameters(&["flight", "seat"]).is_ok());
    let err = tool.check_parameters(&["flihgt"]).unwrap_err();
    assert!(err
        .to_string()
        .contains("`flight`, which is not a parameter"));
}

#[test]
fn names_round_trip() {
    for s in [
        KeyStrategy::HashInput,
        KeyStrategy::Explicit,
        KeyStrategy::Uuid,
        KeyStrategy::None,
    ] {
        assert_eq!(KeyStrategy::from_name(s.name()), Some(s));
    }
    for b in [
        RetryBehavior::ReturnCached,
        RetryBehavior::ReturnCachedIfSuccess,
        RetryBehavior::FailFast,
    ] {
        assert_eq!(RetryBehavior::from_name(b.name()), Some(b));
    }
}
