//! The operator CLI against real Redis and PostgreSQL servers: an abandoned record left by a
//! killed child process is found, inspected and resolved, and the next call sees the resolution.
//!
//! Needs IDEMKIT_REDIS_URL and IDEMKIT_POSTGRES_URL (scripts/test.sh sets both).

use std::io::Write;
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use idemkit::store::StoreOptions;
use idemkit::{CallContext, CallError, ErrorKind, Executor, KeyInput, Policy, Store, Token, Tool};

mod common;

use common::claim_and_hang;

const CHILD_ENV: &str = "IDEMKIT_CLI_TEST_CHILD";
const INPUT: &str = r#"{"card":"tok_visa","amount":1999}"#;

/// The stores to test against; PostgreSQL gets its table first (a fresh database has none).
fn urls() -> Vec<(&'static str, String)> {
    let mut found = Vec::new();
    for var in ["IDEMKIT_REDIS_URL", "IDEMKIT_POSTGRES_URL"] {
        match std::env::var(var) {
            Ok(url) => {
                if var == "IDEMKIT_POSTGRES_URL" {
                    idemkit::runtime::block_on(async {
                        idemkit::store::postgres::PostgresStore::connect(
                            &url,
                            &StoreOptions::default(),
                        )
                        .await
                        .unwrap()
                        .create_table_if_missing()
                        .await
                        .unwrap()
                    });
                }
                found.push((var, url))
            }
            Err(_) => {
                eprintln!("SKIPPED: {var} not set — run scripts/test.sh to test the CLI against it")
            }
        }
    }
    found
}

fn idemkit(args: &[&str], stdin: Option<&str>) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_idemkit"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the idemkit binary runs");
    {
        let mut pipe = child.stdin.take().unwrap();
        if let Some(text) = stdin {
            pipe.write_all(text.as_bytes()).unwrap();
        }
    }
    child.wait_with_output().unwrap()
}

/// `idemkit resolve` of `key` in `tenant`, with the settling flags in `how`.
fn resolve(url: &str, key: &str, tenant: &str, how: &[&str]) -> Output {
    let mut args = vec!["resolve", "--store", url, "--key", key, "--tenant", tenant];
    args.extend_from_slice(how);
    idemkit(&args, None)
}

/// Drops the test tenant's records.
fn forget(url: &str, tenant: &str) {
    ok(&idemkit(
        &["forget", "--store", url, "--tenant", tenant, "--yes"],
        None,
    ));
}

fn ok(o: &Output) -> String {
    assert!(
        o.status.success(),
        "idemkit failed ({:?}): {}{}",
        o.status,
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout.clone()).unwrap()
}

async fn open(url: &str) -> Arc<dyn Store> {
    idemkit::store::open(url, &StoreOptions::default())
        .await
        .unwrap()
}

fn charge_tool() -> Tool {
    Tool::new(
        "charge_card",
        Policy::default().with_lease(Duration::from_secs(1)),
    )
    .unwrap()
}

/// In the child: claims the charge and hangs in its body until killed.
#[test]
fn child_process_claims_and_hangs() {
    let Ok(url) = std::env::var(CHILD_ENV) else {
        return; // only meaningful as the child of the tests below
    };
    let tenant = std::env::var("IDEMKIT_CLI_TEST_TENANT").unwrap();
    idemkit::runtime::block_on(async {
        let store = open(&url).await;
        claim_and_hang(store, &charge_tool(), &tenant, KeyInput::Json(INPUT)).await;
    });
}

/// Starts a child that claims the charge for `tenant`, waits until it holds the claim, kills it.
fn kill_a_claim_holder(url: &str, tenant: &str) -> String {
    common::kill_a_claim_holder(&[(CHILD_ENV, url), ("IDEMKIT_CLI_TEST_TENANT", tenant)])
        .expect("the child claimed the key")
}

async fn charge(
    exec: &Executor,
    tenant: &str,
    runs: &AtomicUsize,
) -> Result<serde_json::Value, CallError<std::io::Error>> {
    exec.call(
        &charge_tool(),
        &CallContext::new().tenant(tenant),
        KeyInput::Json(INPUT),
        |_| async {
            runs.fetch_add(1, Ordering::SeqCst);
            Ok(serde_json::json!({"charge": "ch_new"}))
        },
    )
    .await
}

fn tenant() -> String {
    format!("cli-{}", &Token::random().hex()[..10])
}

#[test]
fn an_abandoned_record_is_listed_resolved_with_a_success_and_the_next_call_gets_it() {
    for (_, url) in urls() {
        let tenant = tenant();
        let key = kill_a_claim_holder(&url, &tenant);
        std::thread::sleep(Duration::from_millis(1300)); // the 1 s lease ends

        let listed = ok(&idemkit(
            &[
                "list",
                "--store",
                &url,
                "--tenant",
                &tenant,
                "--state",
                "abandoned",
            ],
            None,
        ));
        assert!(
            listed.contains(&key) && listed.contains("abandoned") && listed.contains("charge_card"),
            "{listed}"
        );
        let json = ok(&idemkit(
            &[
                "inspect", "--store", &url, "--key", &key, "--tenant", &tenant, "--json",
            ],
            None,
        ));
        let record: serde_json::Value = serde_json::from_str(json.trim()).unwrap();
        assert_eq!(record["status"], "abandoned");
        assert_eq!(record["tenant"], tenant.as_str());
        // The same record found by the call's input instead of its key.
        let by_input = ok(&idemkit(
            &[
                "inspect",
                "--store",
                &url,
                "--tenant",
                &tenant,
                "--scope",
                "charge_card",
                "--input",
                INPUT,
            ],
            None,
        ));
        assert!(
            by_input.contains(&key) && by_input.contains("state:      abandoned"),
            "{by_input}"
        );

        idemkit::runtime::block_on(async {
            let exec = Executor::new(open(&url).await);
            let runs = AtomicUsize::new(0);
            let before = charge(&exec, &tenant, &runs).await.unwrap_err();
            assert_eq!(
                before.idempotency().unwrap().kind(),
                ErrorKind::Indeterminate
            );

            ok(&resolve(
                &url,
                &key,
                &tenant,
                &["--complete-success", r#"{"charge":"ch_resolved"}"#],
            ));
            let after = charge(&exec, &tenant, &runs).await.unwrap();
            assert_eq!(after, serde_json::json!({"charge": "ch_resolved"}));
            assert_eq!(runs.load(Ordering::SeqCst), 0, "the body never ran");
        });
        // A completed record is never overridden.
        let refused = resolve(&url, &key, &tenant, &["--release"]);
        assert_eq!(refused.status.code(), Some(1));
        assert!(String::from_utf8_lossy(&refused.stderr).contains("completed"));
        forget(&url, &tenant);
    }
}

#[test]
fn an_abandoned_record_released_lets_the_next_call_run_the_body() {
    for (_, url) in urls() {
        let tenant = tenant();
        let key = kill_a_claim_holder(&url, &tenant);
        // In progress (lease not over): resolve refuses without --force.
        let early = resolve(&url, &key, &tenant, &["--release"]);
        if early.status.success() {
            panic!("resolved a live claim without --force");
        }
        assert!(String::from_utf8_lossy(&early.stderr).contains("--force"));
        std::thread::sleep(Duration::from_millis(1300));
        ok(&resolve(&url, &key, &tenant, &["--release"]));
        idemkit::runtime::block_on(async {
            let exec = Executor::new(open(&url).await);
            let runs = AtomicUsize::new(0);
            assert_eq!(
                charge(&exec, &tenant, &runs).await.unwrap(),
                serde_json::json!({"charge": "ch_new"})
            );
            assert_eq!(runs.load(Ordering::SeqCst), 1);
        });
        forget(&url, &tenant);
    }
}

#[test]
fn force_settles_an_in_progress_record() {
    for (_, url) in urls() {
        let tenant = tenant();
        let key = kill_a_claim_holder(&url, &tenant);
        ok(&resolve(&url, &key, &tenant, &["--release", "--force"]));
        let gone = ok(&idemkit(
            &[
                "inspect", "--store", &url, "--key", &key, "--tenant", &tenant,
            ],
            None,
        ));
        assert!(gone.starts_with("no record"), "{gone}");
        forget(&url, &tenant);
    }
}

#[test]
fn forget_asks_for_confirmation_and_counts_what_it_removed_and_stats_count_by_state() {
    for (_, url) in urls() {
        let tenant = tenant();
        idemkit::runtime::block_on(async {
            let exec = Executor::new(open(&url).await);
            let tool = Tool::new("send_email", Policy::default()).unwrap();
            for i in 0..3 {
                let input = format!(r#"{{"n":{i}}}"#);
                let _: i32 = exec
                    .call(
                        &tool,
                        &CallContext::new().tenant(&tenant),
                        KeyInput::Json(&input),
                        |_| async { Ok::<_, std::io::Error>(1) },
                    )
                    .await
                    .unwrap();
            }
        });
        let stats = ok(&idemkit(&["stats", "--store", &url], None));
        let row = stats
            .lines()
            .find(|l| l.contains(&tenant))
            .unwrap_or_else(|| panic!("{stats}"));
        let cols: Vec<&str> = row.split_whitespace().collect();
        assert_eq!(&cols[cols.len() - 3..], ["0", "0", "3"], "{row}");

        let declined = idemkit(
            &["forget", "--store", &url, "--tenant", &tenant],
            Some("n\n"),
        );
        assert_eq!(declined.status.code(), Some(1));
        assert!(ok(&idemkit(
            &["list", "--store", &url, "--tenant", &tenant],
            None
        ))
        .contains("3 record(s)"));
        let confirmed = ok(&idemkit(
            &["forget", "--store", &url, "--tenant", &tenant],
            Some("y\n"),
        ));
        assert!(confirmed.contains("forgot 3 record(s)"), "{confirmed}");
        assert!(ok(&idemkit(
            &["list", "--store", &url, "--tenant", &tenant],
            None
        ))
        .contains("0 record(s)"));
    }
}

#[test]
fn purge_reports_a_count_and_keeps_live_records() {
    for (_, url) in urls() {
        let out = ok(&idemkit(&["purge", "--store", &url, "--yes"], None));
        assert!(
            out.starts_with("purged ") && out.contains("expired record(s)"),
            "{out}"
        );
        let declined = idemkit(&["purge", "--store", &url], Some("\n"));
        assert_eq!(declined.status.code(), Some(1));
    }
}

#[test]
fn an_unreachable_store_fails_with_a_message_naming_the_url_without_password() {
    let o = idemkit(&["list", "--store", "redis://:hunter2@127.0.0.1:1/0"], None);
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("127.0.0.1:1") && !err.contains("hunter2"),
        "{err}"
    );
}
