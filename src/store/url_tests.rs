use super::redact_url;

#[test]
fn passwords_are_redacted_from_urls() {
    assert_eq!(
        redact_url("redis://:s3cret@127.0.0.1:6379/0"),
        "redis://:***@127.0.0.1:6379/0"
    );
    assert_eq!(
        redact_url("postgres://app:pw@localhost/db?sslmode=disable"),
        "postgres://app:***@localhost/db?sslmode=disable"
    );
    assert_eq!(
        redact_url("redis://127.0.0.1:6379"),
        "redis://127.0.0.1:6379"
    );
    assert_eq!(redact_url("memory:"), "memory:");
}

/// Every form a driver accepts, each with the secret `Zq7` in it: none survives.
#[test]
fn every_form_of_password_is_redacted() {
    let cases = [
        (
            "postgres://app@h/db?password=Zq7xx",
            "postgres://app@h/db?password=***",
        ),
        (
            "postgres://app@h/db?sslmode=disable&password=Zq7%20y&application_name=a",
            "postgres://app@h/db?sslmode=disable&password=***&application_name=a",
        ),
        ("redis://h/?password=Zq7", "redis://h/?password=***"),
        (
            "redis://h:6379/0?pass=Zq7&protocol=3",
            "redis://h:6379/0?pass=***&protocol=3",
        ),
        (
            "rediss://default:Zq7tok@h:6380",
            "rediss://default:***@h:6380",
        ),
        ("postgres://app:pa/Zq7@h/db", "postgres://app:***@h/db"),
        (
            "postgres://app:p#Zq7?x@h:5432/db",
            "postgres://app:***@h:5432/db",
        ),
        ("redis://:a/b?c#Zq7@h:6379/0", "redis://:***@h:6379/0"),
        (
            "postgres://app@h/db?password=x@Zq7",
            "postgres://app@h/db?password=***",
        ),
        (
            "redis+cluster://:Zq7@h:7001,h:7002/",
            "redis+cluster://:***@h:7001,h:7002/",
        ),
        (
            "host=h user=app password=Zq7 dbname=db",
            "host=h user=app password=*** dbname=db",
        ),
        (
            "host=h password = 'Zq7 \\' x' dbname=db",
            "host=h password = *** dbname=db",
        ),
        ("host=h PASSWORD=Zq7", "host=h PASSWORD=***"),
        (
            "jdbc:postgresql://h/db?user=app&password=Zq7",
            "jdbc:postgresql://h/db?user=app&password=***",
        ),
    ];
    for (url, shown) in cases {
        assert_eq!(redact_url(url), shown, "{url}");
        assert!(!redact_url(url).contains("Zq7"), "{url}");
    }
    // Not secrets: shown as they are.
    for plain in [
        "postgres://app@h:5432/db?sslmode=disable&application_name=x",
        "host=h user=app dbname=db",
        "redis://h:6379/2?protocol=3",
    ] {
        assert_eq!(redact_url(plain), plain);
    }
    // Odd input never panics and hides what follows a secret name.
    for odd in [
        "password=",
        "password='Zq7",
        "host=h password=Zq7\\",
        "é password=Zq7é",
    ] {
        assert!(!redact_url(odd).contains("Zq7"), "{odd}");
    }
}

/// idemkit's own parameters are taken out of the URL the driver reads; the others, and the
/// userinfo, stay as they were.
#[cfg(any(feature = "redis", feature = "postgres"))]
#[test]
fn own_url_parameters_are_taken_out_for_the_driver() {
    use super::take_url_settings;
    use std::time::Duration;
    let cases = [
        (
            "postgres://u@h/db?pool_size=4&application_name=a",
            "postgres://u@h/db?application_name=a",
        ),
        (
            "postgres://u@h/db?application_name=a&pool_size=4",
            "postgres://u@h/db?application_name=a",
        ),
        ("postgres://u@h/db?pool_size=4", "postgres://u@h/db"),
        (
            "postgres://u@h/db?pool_size=4&sslmode=verify-full&application_name=a&x=1&sslrootcert=%2Ftmp%2Fca.pem",
            "postgres://u@h/db?application_name=a&x=1",
        ),
        (
            "postgres://u:p?pool_size=3@h/db?application_name=a",
            "postgres://u:p?pool_size=3@h/db?application_name=a",
        ),
    ];
    for (url, driver) in cases {
        let (kept, _) = take_url_settings(url, "PostgreSQL").unwrap();
        assert_eq!(kept, driver, "{url}");
    }
    let (kept, settings) = take_url_settings(
        "redis://h:6379/0?protocol=3&response_timeout_ms=250&connect_timeout_ms=1500",
        "Redis",
    )
    .unwrap();
    assert_eq!(kept, "redis://h:6379/0?protocol=3");
    assert_eq!(settings.response_timeout, Some(Duration::from_millis(250)));
    assert_eq!(settings.connect_timeout, Some(Duration::from_millis(1500)));
    let (_, settings) = take_url_settings(
        "postgres://u@h/db?pool_size=7&statement_timeout_ms=800",
        "PostgreSQL",
    )
    .unwrap();
    assert_eq!(settings.pool_size, Some(7));
    assert_eq!(settings.statement_timeout, Some(Duration::from_millis(800)));
    let (_, settings) = take_url_settings(
        "postgres://u@h/db?sslmode=verify-ca&sslrootcert=%2Ftmp%2Fca.pem",
        "PostgreSQL",
    )
    .unwrap();
    assert_eq!(settings.ssl_mode.as_deref(), Some("verify-ca"));
    assert_eq!(settings.ssl_root_cert.as_deref(), Some("/tmp/ca.pem"));
}

#[cfg(any(feature = "redis", feature = "postgres"))]
#[test]
fn secrets_a_driver_echoes_are_scrubbed() {
    let url = "postgres://app:p%40Zq7@h/db?password=Zq8";
    let message = "cannot parse postgres://app:p%40Zq7@h/db: password p@Zq7 or Zq8 is wrong";
    let scrubbed = super::scrub_secrets(message, url);
    assert!(
        !scrubbed.contains("Zq7") && !scrubbed.contains("Zq8"),
        "{scrubbed}"
    );
    assert!(scrubbed.contains("is wrong"), "{scrubbed}");
}

/// A store that cannot be opened names the operation in words and its URL without the
/// password, not as a tool name ("store unavailable for `opening ...`").
#[cfg(feature = "redis")]
#[tokio::test]
async fn a_store_that_cannot_be_opened_says_so_without_its_password() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("redis://:hunter2@127.0.0.1:{port}/0");
    let Err(e) = crate::store::open(&url, &crate::store::StoreOptions::default()).await else {
        panic!("{url} opened");
    };
    assert_eq!(e.kind(), crate::ErrorKind::StoreUnavailable);
    let message = e.to_string();
    assert!(
        message.starts_with(&format!("cannot open redis://:***@127.0.0.1:{port}/0: ")),
        "{message}"
    );
    assert!(!message.contains("hunter2"), "{message}");
    assert!(!message.contains('`'), "{message}");
}
