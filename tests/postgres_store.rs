//! The PostgreSQL store against a real server (`IDEMKIT_POSTGRES_URL`, set by `scripts/test.sh`
//! after `scripts/services.sh start`). Outages are simulated with a TCP proxy in front of that
//! server (stopping the shared server would disturb other tests), and with a closed port.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use idemkit::store::postgres::{
    claim_function_sql, schema_sql, PostgresStore, CLAIMED_AT_INDEX_SQL, CLAIM_FUNCTION_SQL,
    FINGERPRINT_SQL, HELD_OUTCOME_SQL, HOT_UPDATES_SQL, SCHEMA_SQL,
};
use idemkit::store::{Claim, ClaimRequest, Completion, RecordId, StoreOptions};
use idemkit::testing::{random_key, random_tenant};
use idemkit::{CallContext, ErrorKind, Executor, Failure, KeyInput, Outcome, Store, Token};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

mod common;

use common::{check_a_killed_holders_claim, claim_and_hang, kill_a_claim_holder, tool};

fn postgres_url() -> Option<String> {
    common::env_url("IDEMKIT_POSTGRES_URL")
}

fn table_options(table: &str) -> StoreOptions {
    StoreOptions {
        table: Some(table.to_owned()),
        ..StoreOptions::default()
    }
}

fn request<'a>(id: RecordId<'a>, token: Token, lease_ms: u64, ttl_ms: u64) -> ClaimRequest<'a> {
    common::claim_request(id, "postgres_test", token, lease_ms, ttl_ms)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn postgres_store_passes_the_conformance_suite() {
    let Some(url) = postgres_url() else { return };
    let (table, store) = common::PgTable::new(&url, "idemkit_test").await;
    drop(store);
    let store = idemkit::store::open(&url, &table_options(&table.name))
        .await
        .unwrap();
    assert!(store.describe().starts_with("postgres://"));
    common::check_conformance(store).await;
}

/// Applying the schema to a table in use does not deadlock with the statements on it. A session
/// that holds the table's `ACCESS SHARE` lock and then asks for `ROW EXCLUSIVE` (as a claim
/// does: its `SELECT` part is analysed before its `INSERT`) against `create_table_if_missing`
/// holding `SHARE` (`CREATE INDEX IF NOT EXISTS`) while asking for `ACCESS EXCLUSIVE` (`ALTER
/// TABLE`) was a deadlock (40P01; seen when tests opened stores while others claimed).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create_table_if_missing_on_a_table_in_use_does_not_deadlock() {
    let Some(url) = postgres_url() else { return };
    let (table, store) = common::PgTable::new(&url, "idemkit_migrating").await;
    let mut session = common::pg_client(&url).await.unwrap();
    let writer = session.transaction().await.unwrap();
    writer
        .batch_execute(&format!("SELECT 1 FROM {} LIMIT 0", table.name))
        .await
        .unwrap();
    let migrating = tokio::spawn(async move { store.create_table_if_missing().await });
    // Ordering, not timing: the migration is waiting for its lock before the session writes.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let written = writer
        .batch_execute(&format!(
            "INSERT INTO {} (tenant, key, format, scope, state, token, claimed_at, lease_end, \
             ttl_ms, expires_at) VALUES (NULL, 'k', 1, 's', 'in_progress', 't', now(), now(), 1, \
             now() + interval '1 hour')",
            table.name
        ))
        .await;
    assert!(written.is_ok(), "the session's write: {written:?}");
    writer.commit().await.unwrap();
    let migrated = migrating.await.unwrap();
    assert!(migrated.is_ok(), "the migration: {migrated:?}");
}

/// `create_table_at` (the Java face's `createTableIfMissing()` of a store opened by URL) makes
/// a missing table that a store opened afterwards uses, and is a no-op on a table that exists.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create_table_at_makes_a_missing_table() {
    let Some(url) = postgres_url() else { return };
    let client = common::pg_client(&url).await.unwrap();
    let name = format!("idemkit_made_at_{}", &Token::random().hex()[..10]);
    let exists = |name: String| {
        let client = &client;
        async move {
            client
                .query_one("SELECT to_regclass($1)::text", &[&name])
                .await
                .unwrap()
                .get::<_, Option<String>>(0)
                .is_some()
        }
    };
    assert!(!exists(name.clone()).await);
    PostgresStore::create_table_at(&url, &table_options(&name))
        .await
        .unwrap();
    assert!(exists(name.clone()).await);
    PostgresStore::create_table_at(&url, &table_options(&name))
        .await
        .unwrap();
    let store = PostgresStore::connect(&url, &table_options(&name))
        .await
        .unwrap();
    let reply = store
        .claim(&common::untenanted_request(&random_key(), "postgres_test"))
        .await
        .unwrap();
    assert!(matches!(reply.claim, Claim::Acquired { .. }));
    client
        .batch_execute(&format!(
            "DROP TABLE {name}; DROP FUNCTION IF EXISTS {name}_claim"
        ))
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_shipped_sql_file_and_create_table_if_missing_make_the_same_table() {
    let Some(url) = postgres_url() else { return };
    let client = common::pg_client(&url).await.unwrap();
    let schema = format!("idemkit_schema_{}", &Token::random().hex()[..10]);
    client
        .batch_execute(&format!("CREATE SCHEMA {schema}"))
        .await
        .unwrap();
    // The files as shipped, run by a "migration tool" in its own schema.
    client
        .batch_execute(&format!(
            "SET search_path TO {schema}; {SCHEMA_SQL}; {CLAIMED_AT_INDEX_SQL}; {HELD_OUTCOME_SQL}; {HOT_UPDATES_SQL}; {FINGERPRINT_SQL}; {CLAIM_FUNCTION_SQL}; RESET search_path;"
        ))
        .await
        .unwrap();
    // The library's DDL, for a schema-qualified name, twice (it is idempotent).
    let qualified = format!("{schema}.records");
    let store = PostgresStore::connect(&url, &table_options(&qualified))
        .await
        .unwrap();
    store.create_table_if_missing().await.unwrap();
    store.create_table_if_missing().await.unwrap();
    let columns = |table: &'static str| {
        let (client, schema) = (&client, &schema);
        async move {
            client
                .query(
                    "SELECT column_name, data_type, is_nullable, coalesce(generation_expression, '')
                     FROM information_schema.columns WHERE table_schema = $1 AND table_name = $2
                     ORDER BY ordinal_position",
                    &[schema, &table],
                )
                .await
                .unwrap()
                .iter()
                .map(|r| format!("{} {} {} {}", r.get::<_, String>(0), r.get::<_, String>(1), r.get::<_, String>(2), r.get::<_, String>(3)))
                .collect::<Vec<_>>()
        }
    };
    let shipped = columns("idemkit_records").await;
    assert!(shipped.len() >= 12, "{shipped:?}");
    assert_eq!(shipped, columns("records").await);
    let indexes: Vec<String> = client
        .query(
            "SELECT indexname FROM pg_indexes WHERE schemaname = $1 ORDER BY 1",
            &[&schema],
        )
        .await
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    // 004: no index on a column a completion changes (so that it is a HOT update).
    assert!(
        !indexes.iter().any(|i| i.contains("expires_at")),
        "{indexes:?}"
    );
    for index in ["records_claimed_at_idx", "idemkit_records_claimed_at_idx"] {
        assert!(indexes.contains(&index.to_owned()), "{indexes:?}");
    }
    // Both allow the held outcome of 003, by one check of the same definition.
    let checks = |table: &'static str| {
        let (client, schema) = (&client, &schema);
        async move {
            client
                .query(
                    "SELECT c.conname, pg_get_constraintdef(c.oid) FROM pg_constraint c
                     JOIN pg_class t ON t.oid = c.conrelid JOIN pg_namespace n ON n.oid = t.relnamespace
                     WHERE n.nspname = $1 AND t.relname = $2 AND c.contype = 'c' ORDER BY 1",
                    &[schema, &table],
                )
                .await
                .unwrap()
                .iter()
                .map(|r| {
                    let name: String = r.get(0);
                    let def: String = r.get(1);
                    format!("{} {def}", name.trim_start_matches("idemkit_"))
                })
                .collect::<Vec<_>>()
        }
    };
    let shipped_checks = checks("idemkit_records").await;
    assert!(
        shipped_checks
            .iter()
            .any(|c| c.starts_with("records_outcome_kind_check") && c.contains("indeterminate")),
        "{shipped_checks:?}"
    );
    assert_eq!(shipped_checks, checks("records").await);
    for table in ["records", "idemkit_records"] {
        let options: Option<Vec<String>> = client
            .query_one(
                "SELECT c.reloptions FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
                 WHERE n.nspname = $1 AND c.relname = $2",
                &[&schema, &table],
            )
            .await
            .unwrap()
            .get(0);
        assert_eq!(options, Some(vec!["fillfactor=80".to_owned()]), "{table}");
    }
    // Both have the claim function of 006, in the schema, with the same definition.
    let functions: Vec<String> = client
        .query(
            "SELECT p.proname, pg_get_functiondef(p.oid) FROM pg_proc p
             JOIN pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = $1 ORDER BY 1",
            &[&schema],
        )
        .await
        .unwrap()
        .iter()
        .map(|r| {
            // The shipped file names the table as the search path finds it; the library names
            // it with its schema.
            let def: String = r.get(1);
            let def = def
                .replace(&format!("{schema}."), "")
                .replace("idemkit_records", "records");
            format!("{} {def}", r.get::<_, String>(0))
        })
        .collect();
    assert_eq!(functions.len(), 2, "{functions:?}");
    assert!(
        functions[0].starts_with("idemkit_records_claim "),
        "{functions:?}"
    );
    assert!(functions[1].starts_with("records_claim "), "{functions:?}");
    assert_eq!(
        functions[0].split_once(' ').unwrap().1,
        functions[1].split_once(' ').unwrap().1
    );
    // The store works on the schema-qualified table.
    let key = random_key();
    let reply = store
        .claim(&common::untenanted_request(&key, "postgres_test"))
        .await
        .unwrap();
    assert!(matches!(reply.claim, Claim::Acquired { .. }));
    assert!(schema_sql(&qualified)
        .unwrap()
        .contains(&format!("ALTER TABLE {qualified} SET (fillfactor = 80)")));
    client
        .batch_execute(&format!("DROP SCHEMA {schema} CASCADE"))
        .await
        .unwrap();
}

/// SPEC v1.1 rule 9 on a table made by idemkit 1.0's files (001-004): the store keeps working
/// without fingerprints (records read as having none, so nothing mismatches); once `005` is
/// applied, the 1.0 rows still read (fingerprint NULL) and new claims keep theirs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_table_without_the_fingerprint_column_keeps_working_and_old_rows_still_read() {
    let Some(url) = postgres_url() else { return };
    let client = common::pg_client(&url).await.unwrap();
    let name = format!("idemkit_v10_{}", &Token::random().hex()[..10]);
    let v10 =
        format!("{SCHEMA_SQL}\n{CLAIMED_AT_INDEX_SQL}\n{HELD_OUTCOME_SQL}\n{HOT_UPDATES_SQL}")
            .replace("idemkit_records_", &format!("{name}_"))
            .replace("idemkit_records", &name);
    client.batch_execute(&v10).await.unwrap();
    // A record as idemkit 1.0 wrote it (its claim statement has no fingerprint).
    let old_key = random_key();
    client
        .execute(
            &format!(
                "INSERT INTO {name} (tenant, key, format, scope, state, token, claimed_at, lease_end, ttl_ms, expires_at, outcome_kind, outcome)
                 VALUES (NULL, $1, 1, 'book', 'completed', $2, now(), now(), 600000, now() + interval '10 minutes', 'success', '{{\"success\":1}}'::json)"
            ),
            &[&old_key.hex(), &Token::random().hex()],
        )
        .await
        .unwrap();

    let store = PostgresStore::connect(&url, &table_options(&name))
        .await
        .unwrap();
    let fingerprint = "ab".repeat(32);
    let unkept = random_key();
    let request = ClaimRequest {
        fingerprint: Some(&fingerprint),
        ..common::untenanted_request(&unkept, "postgres_test")
    };
    assert!(matches!(
        store.claim(&request).await.unwrap().claim,
        Claim::Acquired { .. }
    ));
    let unkept_id = RecordId {
        tenant: None,
        key: &unkept,
    };
    let record = store.get(unkept_id).await.unwrap().0.expect("the claim");
    assert_eq!(record.fingerprint, None, "no column, no fingerprint");
    let key = random_key();

    // The shipped file (for another table name, as its header says), then the store works.
    client
        .batch_execute(&FINGERPRINT_SQL.replace("idemkit_records", &name))
        .await
        .unwrap();
    let store = PostgresStore::connect(&url, &table_options(&name))
        .await
        .unwrap();
    let old_id = RecordId {
        tenant: None,
        key: &old_key,
    };
    let old = store
        .get(old_id)
        .await
        .unwrap()
        .0
        .expect("the 1.0 record reads");
    assert_eq!(old.fingerprint, None);
    assert_eq!(old.outcome, Some(Outcome::success("1").unwrap()));
    let request = ClaimRequest {
        fingerprint: Some(&fingerprint),
        ..common::untenanted_request(&key, "postgres_test")
    };
    assert!(matches!(
        store.claim(&request).await.unwrap().claim,
        Claim::Acquired { .. }
    ));
    let id = RecordId {
        tenant: None,
        key: &key,
    };
    let new = store.get(id).await.unwrap().0.expect("the new record");
    assert_eq!(new.fingerprint.as_deref(), Some(fingerprint.as_str()));
    client
        .batch_execute(&format!(
            "DROP TABLE {name}; DROP FUNCTION IF EXISTS {name}_claim"
        ))
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_table_name_that_is_not_an_identifier_is_refused() {
    let Some(url) = postgres_url() else { return };
    for bad in ["records; DROP TABLE x", "1records", "a.b.c", "my-table", ""] {
        let error = idemkit::store::open(&url, &table_options(bad))
            .await
            .err()
            .expect("refused");
        assert_eq!(error.kind(), ErrorKind::Configuration, "{bad}: {error}");
        assert!(
            error.to_string().contains("not an SQL identifier"),
            "{error}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_table_says_how_to_create_it() {
    let Some(url) = postgres_url() else { return };
    let name = format!("idemkit_missing_{}", &Token::random().hex()[..8]);
    let store = PostgresStore::connect(&url, &table_options(&name))
        .await
        .unwrap();
    let key = random_key();
    let error = store
        .claim(&common::untenanted_request(&key, "postgres_test"))
        .await
        .unwrap_err();
    let text = error.to_string();
    assert!(
        text.contains(&name) && text.contains("create_table_if_missing"),
        "{text}"
    );
    store.create_table_if_missing().await.unwrap();
    let reply = store
        .claim(&common::untenanted_request(&key, "postgres_test"))
        .await
        .unwrap();
    assert!(
        matches!(reply.claim, Claim::Acquired { .. }),
        "works once the table exists"
    );
    common::pg_client(&url)
        .await
        .unwrap()
        .batch_execute(&format!(
            "DROP TABLE {name}; DROP FUNCTION IF EXISTS {name}_claim"
        ))
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sslmode_is_accepted_where_it_can_be_honoured_and_passwords_stay_hidden() {
    let Some(url) = postgres_url() else { return };
    let (table, _store) = common::PgTable::new(&url, "idemkit_test").await;
    let sep = if url.contains('?') { '&' } else { '?' };
    for mode in ["disable", "prefer"] {
        let store = idemkit::store::open(
            &format!("{url}{sep}sslmode={mode}"),
            &table_options(&table.name),
        )
        .await
        .unwrap();
        let key = random_key();
        store
            .claim(&common::untenanted_request(&key, "postgres_test"))
            .await
            .unwrap();
    }
    let error = idemkit::store::open(
        &format!("{url}{sep}sslmode=require"),
        &table_options(&table.name),
    )
    .await
    .err()
    .expect("refused");
    assert_eq!(error.kind(), ErrorKind::Configuration);
    assert!(error.to_string().contains("sslmode"), "{error}");
    // The local server trusts 127.0.0.1, so any password is accepted: it must never be shown.
    let with_password = url.replacen("postgres@", "postgres:hunter2-secret@", 1);
    let store = idemkit::store::open(&with_password, &table_options(&table.name))
        .await
        .unwrap();
    assert!(
        !store.describe().contains("hunter2"),
        "{}",
        store.describe()
    );
    let closed = idemkit::store::open(
        "postgres://app:hunter2-secret@127.0.0.1:1/db",
        &StoreOptions::default(),
    )
    .await
    .err()
    .unwrap();
    assert!(!closed.to_string().contains("hunter2"), "{closed}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_tenant_and_the_empty_tenant_are_different_rows() {
    let Some(url) = postgres_url() else { return };
    let (table, store) = common::PgTable::new(&url, "idemkit_test").await;
    let key = random_key();
    for tenant in [None, Some(""), Some("acme")] {
        let id = RecordId { tenant, key: &key };
        let reply = store
            .claim(&request(id, Token::random(), 60_000, 60_000))
            .await
            .unwrap();
        assert!(matches!(reply.claim, Claim::Acquired { .. }), "{tenant:?}");
    }
    let client = common::pg_client(&url).await.unwrap();
    let rows: Vec<(Option<String>, String)> = client
        .query(
            &format!(
                "SELECT tenant, tenant_key FROM {} ORDER BY tenant_key",
                table.name
            ),
            &[],
        )
        .await
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect();
    assert_eq!(
        rows,
        vec![
            (None, "_".to_owned()),
            (Some(String::new()), "t".to_owned()),
            (Some("acme".to_owned()), "tacme".to_owned())
        ]
    );
}

/// Many rounds of 64 concurrent claimers on fresh keys, expired records and failures being
/// retried: always exactly one winner, and everyone else sees the winner's claim.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn claims_have_exactly_one_winner_under_heavy_contention() {
    let Some(url) = postgres_url() else { return };
    let (_table, store) = common::PgTable::new(&url, "idemkit_test").await;
    let store: Arc<dyn Store> = Arc::new(store);
    let tenant = random_tenant();
    for round in 0..12 {
        let key = random_key();
        let id = RecordId {
            tenant: Some(&tenant),
            key: &key,
        };
        let retry_failure = round % 3 == 2;
        match round % 3 {
            0 => {} // a fresh key
            1 => {
                // an expired record to take over
                store
                    .claim(&request(id, Token::random(), 10, 10))
                    .await
                    .unwrap();
                tokio::time::sleep(Duration::from_millis(30)).await;
            }
            _ => {
                // a failure to replace
                let first = Token::random();
                store
                    .claim(&request(id, first, 60_000, 60_000))
                    .await
                    .unwrap();
                let failure = Outcome::Failure(Failure::new("Boom", "no"));
                store.complete(id, first, &failure, 60_000).await.unwrap();
            }
        }
        let (_, holders) =
            common::race_64_claimers(&store, "postgres_test", &tenant, &key, retry_failure, round)
                .await;
        assert_eq!(holders.len(), 63);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn purge_and_forget_delete_in_batches() {
    let Some(url) = postgres_url() else { return };
    let (table, store) = common::PgTable::new(&url, "idemkit_test").await;
    let client = common::pg_client(&url).await.unwrap();
    let tenant = random_tenant();
    let insert = |expired: bool, tenant: &str, n: i32| {
        format!(
            "INSERT INTO {} (tenant, key, format, scope, state, token, claimed_at, lease_end, ttl_ms, expires_at)
             SELECT '{tenant}', md5(g::text || '{}') || md5(g::text), 1, 'bulk', 'in_progress', md5(g::text),
               now() - interval '1 hour', now() - interval '1 hour', 1000,
               now() + interval '{}'
             FROM generate_series(1, {n}) g",
            table.name,
            Token::random().hex(),
            if expired { "-1 minute" } else { "1 hour" },
        )
    };
    client
        .batch_execute(&insert(true, &tenant, 2500))
        .await
        .unwrap();
    client
        .batch_execute(&insert(false, &tenant, 2300))
        .await
        .unwrap();
    let started = Instant::now();
    assert_eq!(store.purge_expired().await.unwrap(), 2500);
    assert_eq!(store.purge_expired().await.unwrap(), 0);
    assert_eq!(store.forget(Some(&tenant)).await.unwrap(), 2300);
    assert!(started.elapsed() < Duration::from_secs(20));
    let left: i64 = client
        .query_one(&format!("SELECT count(*) FROM {}", table.name), &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(left, 0);
}

// ---------------------------------------------------------------------------------------------
// Outages: a TCP proxy in front of the shared server that can be stopped and started again.

struct Proxy {
    listen: SocketAddr,
    target: SocketAddr,
    tasks: Arc<Mutex<Vec<JoinHandle<()>>>>,
}

impl Proxy {
    async fn start(target: SocketAddr) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let proxy = Proxy {
            listen: listener.local_addr().unwrap(),
            target,
            tasks: Arc::default(),
        };
        proxy.serve(listener);
        proxy
    }

    fn serve(&self, listener: TcpListener) {
        let (target, tasks) = (self.target, self.tasks.clone());
        let accept = tokio::spawn(async move {
            while let Ok((mut inbound, _)) = listener.accept().await {
                let tasks2 = tasks.clone();
                let pipe = tokio::spawn(async move {
                    if let Ok(mut outbound) = TcpStream::connect(target).await {
                        let _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
                    }
                });
                tasks2.lock().unwrap().push(pipe);
            }
        });
        self.tasks.lock().unwrap().push(accept);
    }

    /// Closes the port and cuts every connection through it.
    fn stop(&self) {
        for task in self.tasks.lock().unwrap().drain(..) {
            task.abort();
        }
    }

    async fn restart(&self) {
        let mut tries = 0;
        let listener = loop {
            match TcpListener::bind(self.listen).await {
                Ok(l) => break l,
                Err(e) if tries < 50 => {
                    tries += 1;
                    let _ = e;
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
                Err(e) => panic!("cannot listen on {} again: {e}", self.listen),
            }
        };
        self.serve(listener);
    }
}

fn server_address(url: &str) -> SocketAddr {
    let config: tokio_postgres::Config = url.parse().unwrap();
    let host = match &config.get_hosts()[0] {
        tokio_postgres::config::Host::Tcp(h) => h.clone(),
        #[allow(unreachable_patterns)]
        _ => panic!("IDEMKIT_POSTGRES_URL must name a TCP host"),
    };
    let port = config.get_ports().first().copied().unwrap_or(5432);
    let host = if host == "localhost" {
        "127.0.0.1".to_owned()
    } else {
        host
    };
    format!("{host}:{port}").parse().unwrap()
}

fn via(url: &str, proxy: SocketAddr) -> String {
    let target = server_address(url);
    let original = url.replacen(
        &format!("{}:{}", target.ip(), target.port()),
        &proxy.to_string(),
        1,
    );
    assert_ne!(
        original, url,
        "IDEMKIT_POSTGRES_URL must spell host:port as {target}"
    );
    original
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_outage_fails_calls_unrun_and_the_same_store_recovers() {
    let Some(url) = postgres_url() else { return };
    let (table, _) = common::PgTable::new(&url, "idemkit_test").await;
    let proxy = Proxy::start(server_address(&url)).await;
    let store = idemkit::store::open(&via(&url, proxy.listen), &table_options(&table.name))
        .await
        .unwrap();
    let executor = Executor::new(store);
    let send = tool("send_during_outage", Duration::from_secs(30));
    let context = CallContext::new().tenant(random_tenant());
    let runs = Arc::new(AtomicUsize::new(0));
    let call = |key: String| {
        let (runs, executor, send, context) = (
            runs.clone(),
            executor.clone(),
            send.clone(),
            context.clone(),
        );
        async move {
            executor
                .call(&send, &context, KeyInput::Explicit(&key), |_| async {
                    runs.fetch_add(1, Ordering::SeqCst);
                    Ok::<_, std::io::Error>(key.len())
                })
                .await
        }
    };
    // Use every pooled connection before the outage.
    for i in 0..8 {
        call(format!("before-{i}")).await.unwrap();
    }
    assert_eq!(call("before-0".into()).await.unwrap(), 8);
    assert_eq!(runs.load(Ordering::SeqCst), 8);

    proxy.stop();
    for i in 0..6 {
        common::assert_unavailable_within(call(format!("during-{i}")), Duration::from_secs(8))
            .await;
    }
    assert_eq!(
        runs.load(Ordering::SeqCst),
        8,
        "no body runs while the store is down"
    );

    proxy.restart().await;
    assert_eq!(
        call("after".into()).await.unwrap(),
        5,
        "the first call after the outage works"
    );
    assert_eq!(call("after".into()).await.unwrap(), 5);
    for i in 0..8 {
        call(format!("after-{i}")).await.unwrap();
    }
    assert_eq!(
        call("before-3".into()).await.unwrap(),
        8,
        "records from before the outage are kept"
    );
    assert_eq!(runs.load(Ordering::SeqCst), 17);
    proxy.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_closed_port_fails_fast_as_store_unavailable() {
    if postgres_url().is_none() {
        return;
    }
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let started = Instant::now();
    let error = idemkit::store::open(
        &format!("postgres://postgres@127.0.0.1:{port}/idemkit_test"),
        &StoreOptions::default(),
    )
    .await
    .err()
    .expect("nothing listens there");
    assert_eq!(error.kind(), ErrorKind::StoreUnavailable, "{error}");
    assert!(started.elapsed() < Duration::from_secs(5));
}

// ---------------------------------------------------------------------------------------------
// A claim holder killed mid-call.

const CHILD_ENV: &str = "IDEMKIT_POSTGRES_HANG_CHILD";

/// Not a test of its own: the body of the child process that `a_holder_killed_mid_call_...`
/// starts (it claims a key, says so, and hangs until it is killed). Does nothing otherwise.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn child_process_claims_and_hangs() {
    let Ok(spec) = std::env::var(CHILD_ENV) else {
        return;
    };
    let parts: Vec<&str> = spec.split(' ').collect();
    let [url, table, key, tenant] = parts[..] else {
        panic!("url, table, key and tenant expected")
    };
    let store = idemkit::store::open(url, &table_options(table))
        .await
        .unwrap();
    let charge = tool("charge_card", Duration::from_secs(2));
    claim_and_hang(store, &charge, tenant, KeyInput::Explicit(key)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_holder_killed_mid_call_leaves_an_in_progress_claim_that_becomes_indeterminate() {
    let Some(url) = postgres_url() else { return };
    let (table, _) = common::PgTable::new(&url, "idemkit_test").await;
    let key = format!("order-{}", Token::random().hex());
    let tenant = random_tenant();
    let spec = format!("{url} {} {key} {tenant}", table.name);
    let claimed = kill_a_claim_holder(&[(CHILD_ENV, &spec)]);
    assert!(claimed.is_some(), "the child never claimed the key");

    let store = idemkit::store::open(&url, &table_options(&table.name))
        .await
        .unwrap();
    check_a_killed_holders_claim(store, &tenant, &key).await;
}

// ---------------------------------------------------------------------------------------------
// Tenants in NFC form; the newest records first; every operation after the server ends its
// connections; the server's own messages; secrets.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forget_and_list_take_the_tenant_in_nfc_form() {
    let Some(url) = postgres_url() else { return };
    let (_table, store) = common::PgTable::new(&url, "idemkit_test").await;
    common::check_tenants_are_taken_in_nfc_form(Arc::new(store)).await;
}

/// Inserts `count` completed records for `tenant` claimed an hour or more ago, in one statement.
async fn write_old_records(url: &str, table: &str, tenant: &str, count: i64) {
    let client = common::pg_client(url).await.unwrap();
    let seed = Token::random().hex();
    client
        .execute(
            &format!(
                "INSERT INTO {table} (tenant, key, format, scope, state, token, claimed_at, lease_end,
                   ttl_ms, expires_at, outcome_kind, outcome)
                 SELECT $1::text, encode(sha256(convert_to($2::text || i::text, 'UTF8')), 'hex'), 1,
                   'old_test', 'completed', md5(i::text),
                   now() - interval '1 hour' - i * interval '1 millisecond', now() - interval '1 hour',
                   7200000, now() + interval '1 hour', 'success', '{{\"success\":1}}'::json
                 FROM generate_series(1, $3::bigint) AS i"
            ),
            &[&tenant, &seed, &count],
        )
        .await
        .unwrap();
    client
        .batch_execute(&format!("ANALYZE {table}"))
        .await
        .unwrap();
}

/// Above the CLI's old sampling cut-off (10,000 records read in key order, then sorted), the
/// newest records were missing from `idemkit list`; with 30,000 records the five newest all
/// fell in the sample by luck less than once in 200 runs. Also on a table made before the
/// claimed_at index existed (001 only): correct there too, and `create_table_if_missing` adds
/// the index.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn list_shows_the_newest_records_first_among_30k() {
    let Some(url) = postgres_url() else { return };
    let name = format!("idemkit_test_{}", &Token::random().hex()[..12]);
    // Dropped at the end, like every test's table.
    let table = common::PgTable {
        url: url.clone(),
        name: name.clone(),
    };
    // The table as 001 made it, without the claimed_at index.
    let client = common::pg_client(&url).await.unwrap();
    client
        .batch_execute(&SCHEMA_SQL.replace("idemkit_records", &name))
        .await
        .unwrap();
    let store: Arc<dyn Store> = Arc::new(
        PostgresStore::connect(&url, &table_options(&name))
            .await
            .unwrap(),
    );
    let tenant = random_tenant();
    write_old_records(&url, &name, &tenant, 30_000).await;
    let newest = common::claim_five_newest(&store, &tenant).await;
    let cli_store = ["--store", url.as_str(), "--table", name.as_str()];
    common::check_newest_first(&store, &tenant, &newest, &cli_store).await;
    // Now with the index (the same store: its statements do not change).
    PostgresStore::connect(&url, &table_options(&name))
        .await
        .unwrap()
        .create_table_if_missing()
        .await
        .unwrap();
    let plan: Vec<String> = client
        .query(
            &format!("EXPLAIN SELECT * FROM {name} ORDER BY claimed_at DESC, key LIMIT 20"),
            &[],
        )
        .await
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert!(
        plan.iter().any(|l| l.contains("claimed_at_idx")),
        "{plan:?}"
    );
    common::check_newest_first(&store, &tenant, &newest, &cli_store).await;
    assert_eq!(store.forget(Some(&tenant)).await.unwrap(), 30_005);
    drop(table);
}

/// What a restart of the server does to the store's connections: the server ends every
/// session (FATAL 57P01) and closes it. Right after, the first call of every operation works.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn every_operation_works_at_once_after_the_server_ends_its_sessions() {
    let Some(url) = postgres_url() else { return };
    let (table, _) = common::PgTable::new(&url, "idemkit_test").await;
    let app = format!("idemkit_restart_{}", &Token::random().hex()[..10]);
    let separator = if url.contains('?') { '&' } else { '?' };
    let store_url = format!("{url}{separator}application_name={app}");
    let store = PostgresStore::connect(&store_url, &table_options(&table.name))
        .await
        .unwrap();
    let admin = common::pg_client(&url).await.unwrap();
    let tenant = random_tenant();
    // Several connections, as concurrent callers open them.
    common::claim_many(
        Arc::new(
            PostgresStore::connect(&store_url, &table_options(&table.name))
                .await
                .unwrap(),
        ),
        "postgres_test",
        &tenant,
        4,
        5,
        (60_000, 60_000),
    )
    .await;
    let keys: Vec<_> = (0..8).map(|_| random_key()).collect();
    let tokens: Vec<Token> = (0..8).map(|_| Token::random()).collect();
    let mut running = Vec::new();
    let store = Arc::new(store);
    for (key, token) in keys.iter().zip(&tokens) {
        let (store, tenant, key, token) = (store.clone(), tenant.clone(), *key, *token);
        running.push(tokio::spawn(async move {
            let id = RecordId {
                tenant: Some(&tenant),
                key: &key,
            };
            store
                .claim(&request(id, token, 60_000, 60_000))
                .await
                .unwrap();
        }));
    }
    for task in running {
        task.await.unwrap();
    }
    let end_sessions = || {
        let (admin, app) = (&admin, &app);
        async move {
            let ended: i64 = admin
                .query_one(
                    "SELECT count(*) FROM (SELECT pg_terminate_backend(pid) FROM pg_stat_activity
                     WHERE application_name = $1) AS t",
                    &[app],
                )
                .await
                .unwrap()
                .get(0);
            assert!(ended > 0, "no session to end");
        }
    };
    let id = |i: usize| RecordId {
        tenant: Some(&tenant),
        key: &keys[i],
    };
    let filter = idemkit::store::ListFilter {
        tenant: Some(Some(tenant.clone())),
        ..Default::default()
    };
    let outcome = Outcome::success(r#""settled""#).unwrap();

    end_sessions().await;
    store.get(id(0)).await.expect("get");
    end_sessions().await;
    let fresh = random_key();
    store
        .claim(&common::untenanted_request(&fresh, "postgres_test"))
        .await
        .expect("claim");
    end_sessions().await;
    store
        .complete(id(1), tokens[1], &outcome, 60_000)
        .await
        .expect("complete");
    end_sessions().await;
    assert!(store.release(id(2), tokens[2]).await.expect("release"));
    end_sessions().await;
    let resolved = store
        .resolve(
            id(3),
            tokens[3],
            &idemkit::store::Resolution::Complete {
                outcome: outcome.clone(),
                ttl_ms: 60_000,
            },
        )
        .await
        .expect("resolve");
    assert_eq!(resolved, idemkit::store::Resolved::Done);
    end_sessions().await;
    assert_eq!(
        store.list(&filter, None).await.expect("list").records.len(),
        27
    );
    end_sessions().await;
    assert_eq!(
        store.newest(&filter).await.expect("newest").records.len(),
        27
    );
    end_sessions().await;
    store.purge_expired().await.expect("purge");
    end_sessions().await;
    assert_eq!(store.forget(Some(&tenant)).await.expect("forget"), 27);
}

/// A connection the server refuses says why, as psql does: the database or the role is
/// missing (not only "db error").
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connection_errors_show_the_servers_message() {
    let Some(url) = postgres_url() else { return };
    let (rest, _) = url.split_once('@').unwrap();
    let host = url.rsplit_once('@').unwrap().1.split('/').next().unwrap();
    let missing_db = format!("{rest}@{host}/idemkit_no_such_db");
    let error = idemkit::store::open(&missing_db, &StoreOptions::default())
        .await
        .err()
        .expect("a missing database is refused");
    let text = error.to_string();
    assert!(
        text.contains(r#"database "idemkit_no_such_db" does not exist"#) && text.contains("3D000"),
        "{text}"
    );
    let missing_role = format!("postgres://idemkit_no_such_role:Zq7pw@{host}/idemkit_test");
    let error = idemkit::store::open(&missing_role, &StoreOptions::default())
        .await
        .err()
        .expect("a missing role is refused");
    let text = error.to_string();
    assert!(
        text.contains(r#"role "idemkit_no_such_role" does not exist"#),
        "{text}"
    );
    assert!(!text.contains("Zq7"), "{text}");
}

/// SPEC v1.1 rule 11: no form of password reaches `describe()` or an error from `store::open`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_form_of_password_shows_in_errors_or_descriptions() {
    let Some(url) = postgres_url() else { return };
    let (user, rest) = url
        .trim_start_matches("postgres://")
        .split_once('@')
        .unwrap();
    let (host, db) = rest.split_once('/').unwrap();
    let db = db.split('?').next().unwrap();
    let forms = [
        format!("postgres://{user}@{host}/{db}?password=Zq7secret"),
        format!(
            "postgres://{user}@{host}/{db}?sslmode=disable&password=Zq7%20x&application_name=t"
        ),
        format!("postgres://{user}:pa/Zq7@{host}/{db}"),
        format!("postgres://{user}:p?Zq7#x@{host}/{db}"),
        format!("postgresql://{user}:Zq7pw@{host}/{db}"),
        format!("postgres://{user}:Zq7pw@{host}/idemkit_no_such_db"),
        format!("postgres://{user}:Zq7pw@{host}/{db}?sslmode=require"),
        format!("postgres://{user}:Zq7pw@{host}/{db}?port=notaport"),
        format!("postgres://{user}:Zq7pw@127.0.0.1:1/{db}"),
        format!("host=127.0.0.1 user={user} password=Zq7pw dbname={db}"),
        format!("host=127.0.0.1 password='Zq7 pw' dbname={db}"),
    ];
    for form in forms {
        match idemkit::store::open(&form, &StoreOptions::default()).await {
            Ok(store) => assert!(!store.describe().contains("Zq7"), "{}", store.describe()),
            Err(e) => {
                // The message and every error of its source chain (the driver's error included).
                let text = common::whole_chain(&e);
                assert!(!text.contains("Zq7"), "{form}: {text}");
            }
        }
    }
}

/// A store error keeps the driver's error as its source: a database that does not exist and a
/// closed port each give an `Error` whose `source()` is tokio-postgres's error, readable by
/// downcasting (with the server's SQLSTATE), while its text shows no password.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn store_errors_keep_the_drivers_error_as_their_source() {
    let Some(url) = postgres_url() else { return };
    let (user, rest) = url
        .trim_start_matches("postgres://")
        .split_once('@')
        .unwrap();
    let (host, _db) = rest.split_once('/').unwrap();
    let user = user.split(':').next().unwrap();
    let missing_db = format!("postgres://{user}:Zq7pw@{host}/idemkit_no_such_db");
    let closed_port = format!(
        "postgres://{user}:Zq7pw@127.0.0.1:{}/db",
        common::free_port()
    );
    for form in [&missing_db, &closed_port] {
        let Err(e) = idemkit::store::open(form, &StoreOptions::default()).await else {
            panic!("{form} opened");
        };
        let driver = e
            .driver_error()
            .unwrap_or_else(|| panic!("{form}: {e} has no driver error"));
        let source = std::error::Error::source(&e).expect("a source");
        assert_eq!(source.to_string(), driver.to_string());
        let original = driver
            .get_ref()
            .and_then(|o| o.downcast_ref::<tokio_postgres::Error>())
            .unwrap_or_else(|| {
                panic!("{form}: the source is not a tokio_postgres::Error: {driver:?}")
            });
        if form == &missing_db {
            assert_eq!(
                original.code(),
                Some(&tokio_postgres::error::SqlState::INVALID_CATALOG_NAME),
                "{original}"
            );
        }
        assert!(!common::whole_chain(&e).contains("Zq7"), "{e:?}");
    }
}

/// A real restart (`pg_ctl restart -m fast`): the first call of every operation afterwards works
/// on the same store, whose connections the restart ended. (A restart takes long enough for the
/// client to see its connections close; the race where a statement goes out on a session the
/// server is ending is `every_operation_works_at_once_after_the_server_ends_its_sessions`.)
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn every_operation_works_at_once_after_a_server_restart() {
    if postgres_url().is_none() {
        return;
    }
    let Some(server) = common::PrivatePostgres::start() else {
        return;
    };
    let store = Arc::new(
        PostgresStore::connect(&server.url(), &StoreOptions::default())
            .await
            .unwrap(),
    );
    store.create_table_if_missing().await.unwrap();
    let tenant = random_tenant();
    let keys: Vec<_> = (0..4).map(|_| random_key()).collect();
    let tokens: Vec<Token> = (0..4).map(|_| Token::random()).collect();
    // Concurrent claims open several connections.
    let mut running = Vec::new();
    for (key, token) in keys.iter().zip(&tokens) {
        let (store, tenant, key, token) = (store.clone(), tenant.clone(), *key, *token);
        running.push(tokio::spawn(async move {
            let id = RecordId {
                tenant: Some(&tenant),
                key: &key,
            };
            store
                .claim(&request(id, token, 60_000, 60_000))
                .await
                .unwrap();
        }));
    }
    for task in running {
        task.await.unwrap();
    }
    let id = |i: usize| RecordId {
        tenant: Some(&tenant),
        key: &keys[i],
    };
    let filter = idemkit::store::ListFilter {
        tenant: Some(Some(tenant.clone())),
        ..Default::default()
    };
    let outcome = Outcome::success(r#""settled""#).unwrap();
    let restart = || {
        assert!(
            server.pg_ctl("restart"),
            "pg_ctl restart; the server's log ends with:\n{}",
            server.log_tail()
        )
    };

    restart();
    store.get(id(0)).await.expect("get");
    restart();
    store
        .complete(id(1), tokens[1], &outcome, 60_000)
        .await
        .expect("complete");
    restart();
    assert!(store.release(id(2), tokens[2]).await.expect("release"));
    restart();
    let resolved = store
        .resolve(
            id(3),
            tokens[3],
            &idemkit::store::Resolution::Complete {
                outcome: outcome.clone(),
                ttl_ms: 60_000,
            },
        )
        .await
        .expect("resolve");
    assert_eq!(resolved, idemkit::store::Resolved::Done);
    restart();
    assert_eq!(
        store.list(&filter, None).await.expect("list").records.len(),
        3
    );
    restart();
    assert_eq!(
        store.newest(&filter).await.expect("newest").records.len(),
        3
    );
    restart();
    store.purge_expired().await.expect("purge");
    restart();
    let fresh = random_key();
    store
        .claim(&common::untenanted_request(&fresh, "postgres_test"))
        .await
        .expect("claim");
    restart();
    assert_eq!(store.forget(Some(&tenant)).await.expect("forget"), 3);
}

/// Migration 004 (issue 16): completing a claim changes no indexed column, so PostgreSQL
/// rewrites the row as a HOT update (no new index entries: half the WAL of an executed call).
/// With 001's expires_at index every completion was a full update.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn completions_are_hot_updates() {
    let Some(url) = postgres_url() else { return };
    let (table, store) = common::PgTable::new(&url, "idemkit_test").await;
    let client = common::pg_client(&url).await.unwrap();
    const CALLS: i64 = 40;
    for _ in 0..CALLS {
        let key = random_key();
        let token = Token::random();
        let id = RecordId {
            tenant: Some("hot"),
            key: &key,
        };
        let reply = store
            .claim(&common::claim_request(
                id,
                "postgres_test",
                token,
                60_000,
                60_000,
            ))
            .await
            .unwrap();
        assert!(matches!(reply.claim, Claim::Acquired { .. }));
        let done = store
            .complete(
                id,
                token,
                &Outcome::success(r#""msg-1""#).unwrap(),
                3_600_000,
            )
            .await
            .unwrap();
        assert_eq!(done, Completion::Recorded);
    }
    // The store's backends report their counts when idle (PostgreSQL 15: within ~10 s).
    let started = Instant::now();
    let (updates, hot) = loop {
        let row = client
            .query_one(
                "SELECT n_tup_upd, n_tup_hot_upd FROM pg_stat_user_tables WHERE relname = $1",
                &[&table.name],
            )
            .await
            .unwrap();
        let counts: (i64, i64) = (row.get(0), row.get(1));
        if counts.0 >= CALLS || started.elapsed() > Duration::from_secs(30) {
            break counts;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    };
    assert_eq!(updates, CALLS, "completions counted");
    assert_eq!(hot, CALLS, "every completion a HOT update");
}

/// Migration 006 (issue 16): the store claims through the table's claim function, and a repeat
/// of a remembered call is answered by it. On a table without the function (001 to 005) the
/// store sends the claim statement itself and answers the same; `create_table_if_missing()`
/// brings the function back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claims_go_through_the_claim_function_and_work_without_it() {
    let Some(url) = postgres_url() else { return };
    let (table, store) = common::PgTable::new(&url, "idemkit_fn").await;
    let client = common::pg_client(&url).await.unwrap();
    let name = table.name.clone();
    let outcome = Outcome::success(r#""msg-1""#).unwrap();
    // Claims, completes and replays a fresh key on `store`; a repeat of `remembered` replays.
    let works = |store: PostgresStore, remembered: Option<idemkit::Key>| {
        let outcome = outcome.clone();
        async move {
            let key = random_key();
            let id = RecordId {
                tenant: Some("fn"),
                key: &key,
            };
            let token = Token::random();
            let reply = store
                .claim(&request(id, token, 60_000, 60_000))
                .await
                .unwrap();
            assert!(matches!(reply.claim, Claim::Acquired { .. }), "{reply:?}");
            let done = store.complete(id, token, &outcome, 600_000).await.unwrap();
            assert_eq!(done, Completion::Recorded);
            for key in [Some(key), remembered].into_iter().flatten() {
                let id = RecordId {
                    tenant: Some("fn"),
                    key: &key,
                };
                let reply = store
                    .claim(&request(id, Token::random(), 60_000, 60_000))
                    .await
                    .unwrap();
                match reply.claim {
                    Claim::Completed(record) => assert_eq!(record.outcome, Some(outcome.clone())),
                    other => panic!("a repeat answers the remembered outcome: {other:?}"),
                }
            }
            key
        }
    };
    let first = works(store, None).await;

    // The claim is the function's: made to refuse, it refuses every claim, repeats included.
    let refusing = claim_function_sql(&name).replacen(
        "BEGIN\n",
        "BEGIN\n  RAISE EXCEPTION 'the claim function ran';\n",
        1,
    );
    client.batch_execute(&refusing).await.unwrap();
    let store = PostgresStore::connect(&url, &table.options())
        .await
        .unwrap();
    for key in [random_key(), first] {
        let id = RecordId {
            tenant: Some("fn"),
            key: &key,
        };
        let e = store
            .claim(&request(id, Token::random(), 60_000, 60_000))
            .await
            .unwrap_err();
        assert!(e.to_string().contains("the claim function ran"), "{e}");
    }

    // Without the function, a new store sends the statement: the same answers.
    client
        .batch_execute(&format!("DROP FUNCTION {name}_claim"))
        .await
        .unwrap();
    let store = PostgresStore::connect(&url, &table.options())
        .await
        .unwrap();
    works(store, Some(first)).await;

    // create_table_if_missing() makes the function again, as the shipped file has it.
    let store = PostgresStore::connect(&url, &table.options())
        .await
        .unwrap();
    store.create_table_if_missing().await.unwrap();
    let made: Option<String> = client
        .query_one(
            "SELECT pg_get_functiondef(to_regproc($1))",
            &[&format!("{name}_claim")],
        )
        .await
        .unwrap()
        .get(0);
    assert!(
        made.is_some_and(|def| def.contains("IF FOUND THEN")),
        "the function is back"
    );
    works(store, Some(first)).await;
}
