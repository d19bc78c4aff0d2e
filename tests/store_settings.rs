//! Store connection settings, as URL query parameters and as `StoreOptions` fields: bad values
//! are refused naming the parameter and the fix (never showing a password), and each setting
//! takes effect — a Redis response timeout and connect timeout against a paused private
//! redis-server, a PostgreSQL statement timeout against a locked table, the pool size as the
//! server counts its sessions, and libpq's `connect_timeout` against a server that never
//! answers the startup.

use std::sync::Arc;
use std::time::{Duration, Instant};

use idemkit::store::{RecordId, StoreOptions};
use idemkit::testing::random_key;
use idemkit::{ErrorKind, Store, Token};

mod common;

fn redis_url() -> Option<String> {
    common::env_url("IDEMKIT_REDIS_URL")
}

fn postgres_url() -> Option<String> {
    common::env_url("IDEMKIT_POSTGRES_URL")
}

/// `url` with `query` appended (`?` or `&` as needed).
fn with_query(url: &str, query: &str) -> String {
    let sep = if url.contains('?') { '&' } else { '?' };
    format!("{url}{sep}{query}")
}

async fn refused(url: &str, options: &StoreOptions) -> String {
    match idemkit::store::open(url, options).await {
        Ok(_) => panic!("{url} opened"),
        Err(e) => {
            assert_eq!(e.kind(), ErrorKind::Configuration, "{url}: {e}");
            e.to_string()
        }
    }
}

#[tokio::test]
async fn bad_url_parameters_are_refused_naming_the_parameter_and_the_fix() {
    // Refused before any connection: no server needed (port 1 is never dialled).
    let cases = [
        (
            "redis://:hunter2@127.0.0.1:1/0?response_timeout_ms=0",
            "response_timeout_ms=0",
            "whole milliseconds from 1",
        ),
        (
            "redis://:hunter2@127.0.0.1:1/0?connect_timeout_ms=2s",
            "connect_timeout_ms=2s",
            "e.g. connect_timeout_ms=5000",
        ),
        (
            "redis://:hunter2@127.0.0.1:1/0?response_timeout_ms=100000000000",
            "response_timeout_ms=100000000000",
            "86400000",
        ),
        (
            "redis://:hunter2@127.0.0.1:1/0?response_timeout_ms=5&RESPONSE_TIMEOUT_MS=6",
            "response_timeout_ms",
            "given twice",
        ),
        (
            "redis://:hunter2@127.0.0.1:1/0?pool_size=4",
            "pool_size",
            "applies to PostgreSQL stores only",
        ),
        (
            "redis+cluster://:hunter2@127.0.0.1:1,127.0.0.1:2/?statement_timeout_ms=100",
            "statement_timeout_ms",
            "applies to PostgreSQL stores only",
        ),
        (
            "postgres://app:hunter2@127.0.0.1:1/db?connect_timeout_ms=500",
            "connect_timeout_ms",
            "connect_timeout=2",
        ),
        (
            "postgres://app:hunter2@127.0.0.1:1/db?sslmode=disable&pool_size=0",
            "pool_size=0",
            "from 1 to 1024",
        ),
        (
            "postgres://app:hunter2@127.0.0.1:1/db?pool_size=lots",
            "pool_size=lots",
            "e.g. pool_size=16",
        ),
        (
            "postgres://app:hunter2@127.0.0.1:1/db?statement_timeout_ms=-1",
            "statement_timeout_ms=-1",
            "whole milliseconds",
        ),
        (
            "postgres://app:hunter2@127.0.0.1:1/db?connect_timeout=soon",
            "connect_timeout",
            "postgres://",
        ),
    ];
    for (url, names, fix) in cases {
        let message = refused(url, &StoreOptions::default()).await;
        assert!(message.contains(names), "{url}: {message}");
        assert!(message.contains(fix), "{url}: {message}");
        assert!(!message.contains("hunter2"), "{url}: {message}");
    }
}

#[tokio::test]
async fn bad_option_fields_are_refused_naming_the_field() {
    let zero = StoreOptions {
        response_timeout: Some(Duration::ZERO),
        ..StoreOptions::default()
    };
    let message = refused("redis://:hunter2@127.0.0.1:1/0", &zero).await;
    assert!(
        message.contains("StoreOptions.response_timeout"),
        "{message}"
    );
    let too_long = StoreOptions {
        statement_timeout: Some(Duration::from_secs(2 * 86_400)),
        ..StoreOptions::default()
    };
    let message = refused("postgres://app:hunter2@127.0.0.1:1/db", &too_long).await;
    assert!(
        message.contains("StoreOptions.statement_timeout") && message.contains("one day"),
        "{message}"
    );
    let no_pool = StoreOptions {
        pool_size: Some(0),
        ..StoreOptions::default()
    };
    let message = refused("postgres://app:hunter2@127.0.0.1:1/db", &no_pool).await;
    assert!(message.contains("StoreOptions.pool_size"), "{message}");
    assert!(!message.contains("hunter2"), "{message}");
}

// ---- Redis ------------------------------------------------------------------------------------

/// Reads a record from a paused server: the answer is the store-unavailable error, after the
/// response timeout.
async fn time_a_read_of_a_paused_server(
    store: &Arc<dyn Store>,
    server: &common::PausedRedis,
) -> Duration {
    let key = random_key();
    store
        .get(RecordId {
            tenant: None,
            key: &key,
        })
        .await
        .unwrap();
    server.signal("-STOP");
    let started = Instant::now();
    let read = tokio::time::timeout(
        Duration::from_secs(20),
        store.get(RecordId {
            tenant: None,
            key: &key,
        }),
    )
    .await
    .expect("the read never gave up");
    let took = started.elapsed();
    assert!(read.is_err(), "a paused server answered: {read:?}");
    server.signal("-CONT");
    took
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_response_timeout_from_the_url_and_from_the_options() {
    if redis_url().is_none() {
        return;
    }
    let Some(server) = common::PausedRedis::start() else {
        return;
    };
    let by_url = idemkit::store::open(
        &with_query(&server.url(), "response_timeout_ms=300"),
        &StoreOptions::default(),
    )
    .await
    .unwrap();
    let took = time_a_read_of_a_paused_server(&by_url, &server).await;
    // The default is 5 s.
    assert!(
        took >= Duration::from_millis(280) && took < Duration::from_millis(2500),
        "{took:?}"
    );
    let options = StoreOptions {
        response_timeout: Some(Duration::from_millis(1200)),
        ..StoreOptions::default()
    };
    let by_options = idemkit::store::open(&server.url(), &options).await.unwrap();
    let took = time_a_read_of_a_paused_server(&by_options, &server).await;
    assert!(
        took >= Duration::from_millis(1150) && took < Duration::from_millis(3500),
        "{took:?}"
    );
    // The URL wins over the options.
    let both = idemkit::store::open(
        &with_query(&server.url(), "response_timeout_ms=300"),
        &options,
    )
    .await
    .unwrap();
    let took = time_a_read_of_a_paused_server(&both, &server).await;
    assert!(took < Duration::from_millis(1150), "{took:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_connect_timeout_from_the_url() {
    if redis_url().is_none() {
        return;
    }
    let Some(server) = common::PausedRedis::start() else {
        return;
    };
    server.signal("-STOP");
    let url = with_query(
        &server.url(),
        "connect_timeout_ms=300&response_timeout_ms=60000",
    );
    let started = Instant::now();
    let opened = tokio::time::timeout(
        Duration::from_secs(30),
        idemkit::store::open(&url, &StoreOptions::default()),
    )
    .await
    .expect("opening never gave up");
    let took = started.elapsed();
    assert!(opened.is_err(), "a paused server was opened");
    // The default is 2 s, and the response timeout here a minute.
    assert!(
        took >= Duration::from_millis(280) && took < Duration::from_millis(1800),
        "{took:?}"
    );
}

// ---- PostgreSQL -------------------------------------------------------------------------------

fn claim_request(key: &idemkit::Key) -> idemkit::store::ClaimRequest<'_> {
    common::claim_request(
        RecordId { tenant: None, key },
        "settings",
        Token::random(),
        30_000,
        30_000,
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_statement_timeout_from_the_url_and_from_the_options() {
    let Some(url) = postgres_url() else { return };
    let (table, _) = common::PgTable::new(&url, "idemkit_settings").await;
    for (url, options, timeout_ms) in [
        (
            with_query(&url, "statement_timeout_ms=300"),
            table.options(),
            300,
        ),
        (
            url.clone(),
            StoreOptions {
                statement_timeout: Some(Duration::from_millis(900)),
                ..table.options()
            },
            900,
        ),
    ] {
        let store = idemkit::store::open(&url, &options).await.unwrap();
        let key = random_key();
        store
            .get(RecordId {
                tenant: None,
                key: &key,
            })
            .await
            .unwrap();
        let locker = table.lock().await;
        let started = Instant::now();
        let claimed = store.claim(&claim_request(&key)).await;
        let took = started.elapsed();
        locker.batch_execute("COMMIT").await.unwrap();
        let error = claimed.expect_err("a claim on a locked table answered");
        assert!(
            error.to_string().contains(&format!("{timeout_ms} ms")),
            "{error}"
        );
        // The default is 5 s.
        let timeout = Duration::from_millis(timeout_ms);
        assert!(
            took >= timeout - Duration::from_millis(20)
                && took < timeout + Duration::from_millis(1500),
            "{took:?}"
        );
    }
}

/// The sessions of one application name, as the server counts them.
async fn sessions(admin: &tokio_postgres::Client, application: &str) -> i64 {
    admin
        .query_one(
            "SELECT count(*) FROM pg_stat_activity WHERE application_name = $1",
            &[&application],
        )
        .await
        .unwrap()
        .get(0)
}

/// 12 concurrent claims wait behind a lock: the store opens `expected` connections, no more.
async fn connections_under_load(
    table: &common::PgTable,
    url: &str,
    options: StoreOptions,
    application: &str,
    expected: i64,
) {
    let store = idemkit::store::open(url, &options).await.unwrap();
    let admin = common::pg_client(&table.url).await.unwrap();
    // The session that checked the table when the store opened is closed by now.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let lock = table.lock().await;
    let claims: Vec<_> = (0..12)
        .map(|_| {
            let store = store.clone();
            tokio::spawn(async move {
                let key = random_key();
                store.claim(&claim_request(&key)).await.map(|_| ())
            })
        })
        .collect();
    let started = Instant::now();
    let mut most = 0;
    while started.elapsed() < Duration::from_millis(1500) {
        most = most.max(sessions(&admin, application).await);
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    lock.batch_execute("COMMIT").await.unwrap();
    for claim in claims {
        claim.await.unwrap().unwrap();
    }
    assert_eq!(most, expected, "sessions of {application}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_pool_size_from_the_url_and_from_the_options() {
    let Some(url) = postgres_url() else { return };
    let (table, _) = common::PgTable::new(&url, "idemkit_settings").await;
    let application = format!("idemkit_pool_{}", &Token::random().hex()[..8]);
    let by_url = with_query(&url, &format!("pool_size=3&application_name={application}"));
    connections_under_load(&table, &by_url, table.options(), &application, 3).await;

    let application = format!("idemkit_pool_{}", &Token::random().hex()[..8]);
    let named = with_query(&url, &format!("application_name={application}"));
    let options = StoreOptions {
        pool_size: Some(5),
        ..table.options()
    };
    connections_under_load(&table, &named, options, &application, 5).await;
}

/// A server that accepts connections and never answers: libpq's `connect_timeout` bounds the
/// whole connect, startup included, not only the TCP handshake.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_connect_timeout_covers_a_server_that_never_answers() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let held = tokio::spawn(async move {
        let mut sockets = Vec::new();
        while let Ok((socket, _)) = listener.accept().await {
            sockets.push(socket);
        }
    });
    let url = format!("postgres://app:hunter2@127.0.0.1:{port}/db?connect_timeout=1");
    let started = Instant::now();
    let opened = tokio::time::timeout(
        Duration::from_secs(20),
        idemkit::store::open(&url, &StoreOptions::default()),
    )
    .await
    .expect("opening never gave up");
    let took = started.elapsed();
    let Err(error) = opened else {
        panic!("a silent server was opened")
    };
    assert_eq!(error.kind(), ErrorKind::StoreUnavailable, "{error}");
    assert!(error.to_string().contains("connect timeout"), "{error}");
    assert!(!error.to_string().contains("hunter2"), "{error}");
    assert!(
        took >= Duration::from_millis(950) && took < Duration::from_millis(3000),
        "{took:?}"
    );
    // The same through the options (no URL parameter): 400 ms.
    let url = format!("postgres://app@127.0.0.1:{port}/db");
    let options = StoreOptions {
        connect_timeout: Some(Duration::from_millis(400)),
        ..StoreOptions::default()
    };
    let started = Instant::now();
    let opened = tokio::time::timeout(
        Duration::from_secs(20),
        idemkit::store::open(&url, &options),
    )
    .await
    .expect("opening never gave up");
    let took = started.elapsed();
    assert!(opened.is_err());
    assert!(
        took >= Duration::from_millis(380) && took < Duration::from_millis(1900),
        "{took:?}"
    );
    held.abort();
}
