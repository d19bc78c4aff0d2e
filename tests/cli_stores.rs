//! The operator CLI against real Redis and PostgreSQL servers: an abandoned record left by a
//! killed child process is found, inspected and resolved, and the next call sees the resolution.
//!
//! Needs IDEMKIT_REDIS_URL and IDEMKIT_POSTGRES_URL (scripts/test.sh sets both).

use std::io::Write;
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use idemkit::key::{derive_key, Key, KeyScope};
use idemkit::store::{ClaimRequest, RecordId, StoreOptions};
use idemkit::{
    CallContext, CallError, ErrorKind, Executor, Failure, KeyInput, Outcome, Policy, Store, Token,
    Tool,
};

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
            Err(_) => common::skip(
                var,
                &format!("{var} is not set: the CLI is not tested against it"),
            ),
        }
    }
    found
}

fn idemkit(args: &[&str], stdin: Option<&str>) -> Output {
    idemkit_in(args, stdin, &[])
}

/// `idemkit` with `env` set (IDEMKIT_STORE unset unless `env` sets it).
fn idemkit_in(args: &[&str], stdin: Option<&str>, env: &[(&str, &str)]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_idemkit"))
        .args(args)
        .env_remove("IDEMKIT_STORE")
        .envs(env.iter().copied())
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
        let gone = idemkit(
            &[
                "inspect", "--store", &url, "--key", &key, "--tenant", &tenant,
            ],
            None,
        );
        assert_eq!(gone.status.code(), Some(1));
        assert!(String::from_utf8_lossy(&gone.stderr).contains("no record"));
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

/// Leaves a record of `scope` under `tenant` at a fresh key (or at `key`): completed with
/// `outcome`, or, without one, in progress with a `lease_ms` lease. Answers the key.
async fn leave_record(
    store: &Arc<dyn Store>,
    tenant: &str,
    key: Option<Key>,
    scope: &str,
    outcome: Option<Outcome>,
    lease_ms: u64,
) -> Key {
    let key = key.unwrap_or_else(|| {
        let scope = KeyScope {
            scope: "cli_test",
            tenant: None,
            run: None,
        };
        derive_key(&scope, KeyInput::Explicit(&Token::random().hex()), &[]).unwrap()
    });
    let id = RecordId {
        tenant: Some(tenant),
        key: &key,
    };
    let token = Token::random();
    let request = ClaimRequest {
        id,
        scope,
        token,
        lease_ms,
        ttl_ms: 600_000,
        retry_failure: false,
        fingerprint: None,
        payload_checked: false,
    };
    let reply = store.claim(&request).await.unwrap();
    assert!(
        matches!(reply.claim, idemkit::store::Claim::Acquired { .. }),
        "{reply:?}"
    );
    if let Some(outcome) = outcome {
        store.complete(id, token, &outcome, 600_000).await.unwrap();
    }
    key
}

/// A directory of its own and a file in it that a command substitution in a test tenant would
/// create if a shell expanded it.
fn marker() -> (std::path::PathBuf, std::path::PathBuf) {
    let dir = std::env::temp_dir().join(format!("idemkit-cli-{}", &Token::random().hex()[..8]));
    std::fs::create_dir_all(&dir).unwrap();
    let marker = dir.join("expanded");
    (dir, marker)
}

/// The first character a terminal must never get raw (control characters but the line end,
/// bidirectional formatting characters), if any.
fn raw_control(text: &str) -> Option<char> {
    text.chars().find(|&c| {
        (c.is_control() && c != '\n')
            || matches!(c, '\u{061C}' | '\u{200E}' | '\u{200F}' | '\u{2028}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
    })
}

/// Runs `command` in bash; the binary's path stands for a leading `idemkit`.
fn bash(command: &str) -> Output {
    let command = command.replacen(
        "idemkit ",
        &format!("{} ", env!("CARGO_BIN_EXE_idemkit")),
        1,
    );
    Command::new("bash")
        .arg("-c")
        .arg(&command)
        .env_remove("IDEMKIT_STORE")
        .output()
        .unwrap()
}

#[test]
fn control_characters_from_records_are_escaped_and_the_suggested_command_pastes_safely() {
    for (_, url) in urls() {
        let (dir, marker) = marker();
        let tenant = format!(
            "{}\u{1b}]0;pwned\u{7}'$(touch {})\r\nkey: fake\u{202e}",
            tenant(),
            marker.display()
        );
        let scope = "charge\u{1b}[2J\u{9b}31m\rtool:       fake";
        let (failed_key, abandoned_key) = idemkit::runtime::block_on(async {
            let store = open(&url).await;
            let failure = Outcome::Failure(Failure {
                error_type: "Declined\u{1b}[31m".into(),
                message: "no\r\nstate:      completed\u{7}".into(),
            });
            let failed = leave_record(&store, &tenant, None, scope, Some(failure), 600_000).await;
            let abandoned = leave_record(&store, &tenant, None, scope, None, 200).await;
            (failed.hex(), abandoned.hex())
        });
        std::thread::sleep(Duration::from_millis(400)); // the lease ends

        let list = idemkit(&["list", "--store", &url, "--tenant", &tenant], None);
        let inspect_failed = idemkit(
            &[
                "inspect",
                "--store",
                &url,
                "--key",
                &failed_key,
                "--tenant",
                &tenant,
            ],
            None,
        );
        let inspect_abandoned = idemkit(
            &[
                "inspect",
                "--store",
                &url,
                "--key",
                &abandoned_key,
                "--tenant",
                &tenant,
            ],
            None,
        );
        let forget_declined = idemkit(
            &["forget", "--store", &url, "--tenant", &tenant],
            Some("n\n"),
        );
        let delete_declined = idemkit(
            &[
                "delete",
                "--store",
                &url,
                "--key",
                &failed_key,
                "--tenant",
                &tenant,
            ],
            Some("n\n"),
        );
        for (what, o) in [
            ("list", &list),
            ("inspect", &inspect_failed),
            ("inspect abandoned", &inspect_abandoned),
            ("forget", &forget_declined),
            ("delete", &delete_declined),
        ] {
            for text in [
                String::from_utf8(o.stdout.clone()).unwrap(),
                String::from_utf8(o.stderr.clone()).unwrap(),
            ] {
                assert_eq!(raw_control(&text), None, "{what}: {text:?}");
            }
        }
        let listed = ok(&list);
        assert!(
            listed.contains(r"charge\u{1b}[2J\u{9b}31m\rtool:") && listed.contains("2 record(s)"),
            "{listed}"
        );
        assert!(
            listed.contains(r#"\u{1b}]0;pwned\u{7}'$(touch"#),
            "{listed}"
        );
        let shown = ok(&inspect_failed);
        assert!(
            shown.contains(r"failure Declined\u{1b}[31m: no\r\nstate:      completed\u{7}"),
            "{shown}"
        );
        assert_eq!(
            shown.lines().filter(|l| l.starts_with("state:")).count(),
            1,
            "{shown}"
        );
        // JSON keeps the exact text (JSON escapes it).
        let json = ok(&idemkit(
            &[
                "inspect",
                "--store",
                &url,
                "--key",
                &failed_key,
                "--tenant",
                &tenant,
                "--json",
            ],
            None,
        ));
        let record: serde_json::Value = serde_json::from_str(json.trim()).unwrap();
        assert_eq!(record["tenant"], tenant.as_str());
        assert_eq!(record["scope"], scope);

        // The suggested command, pasted into a shell, settles exactly this record.
        let shown = ok(&inspect_abandoned);
        let suggested = shown
            .lines()
            .map(str::trim)
            .find(|l| l.starts_with("idemkit resolve --store URL"))
            .unwrap_or_else(|| panic!("{shown}"));
        let pasted = suggested
            .replace("--store URL", &format!("--store '{url}'"))
            .replace(" --release | --complete-success JSON", " --release");
        let resolved = bash(&pasted);
        assert!(
            !marker.exists(),
            "the shell expanded the tenant: {suggested}"
        );
        assert!(
            resolved.status.success(),
            "{pasted}: {}",
            String::from_utf8_lossy(&resolved.stderr)
        );
        assert!(String::from_utf8_lossy(&resolved.stdout).contains("released"));
        ok(&idemkit(
            &["forget", "--store", &url, "--tenant", &tenant, "--yes"],
            None,
        ));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

#[test]
fn inspect_of_a_key_under_another_tenant_exits_1_and_the_store_may_come_from_the_environment() {
    for (_, url) in urls() {
        let (tenant, other) = (tenant(), tenant());
        let key = idemkit::runtime::block_on(async {
            let store = open(&url).await;
            let done = Outcome::success("1").unwrap();
            leave_record(&store, &tenant, None, "send_email", Some(done), 600_000).await
        })
        .hex();
        for args in [
            vec![
                "inspect", "--store", &url, "--key", &key, "--tenant", &other,
            ],
            vec!["inspect", "--store", &url, "--key", &key],
            vec!["inspect", "--store", &url, "--key", &key, "--json"],
        ] {
            let o = idemkit(&args, None);
            assert_eq!(o.status.code(), Some(1), "{args:?}");
            assert!(String::from_utf8_lossy(&o.stderr).contains("no record"));
        }
        // IDEMKIT_STORE instead of --store.
        let env = [("IDEMKIT_STORE", url.as_str())];
        let found = ok(&idemkit_in(
            &["inspect", "--key", &key, "--tenant", &tenant],
            None,
            &env,
        ));
        assert!(found.contains("state:      completed"), "{found}");
        let listed = ok(&idemkit_in(&["list", "--tenant", &tenant], None, &env));
        assert!(listed.contains(&key), "{listed}");
        forget(&url, &tenant);
    }
}

#[test]
fn the_indeterminate_error_names_the_tenant_and_its_resolve_command_works_when_pasted() {
    for (_, url) in urls() {
        let (dir, marker) = marker();
        let tenant = format!("{} it's $(touch {})", tenant(), marker.display());
        idemkit::runtime::block_on(async {
            let store = open(&url).await;
            let scope = KeyScope {
                scope: "charge_card",
                tenant: Some(&tenant),
                run: None,
            };
            let key = derive_key(&scope, KeyInput::Json(INPUT), &[]).unwrap();
            leave_record(&store, &tenant, Some(key), "charge_card", None, 200).await;
            tokio::time::sleep(Duration::from_millis(400)).await; // the lease ends

            let exec = Executor::new(store);
            let runs = AtomicUsize::new(0);
            let error = charge(&exec, &tenant, &runs).await.unwrap_err();
            let error = error.idempotency().unwrap().to_string();
            let start = error
                .find("(idemkit resolve ")
                .expect("a suggested command")
                + 1;
            let end = error.find(") or wait for it to expire").expect("its end");
            let suggested = &error[start..end];
            assert!(
                suggested.starts_with(&format!("idemkit resolve --key {} --tenant '", key.hex())),
                "{error}"
            );
            let pasted = suggested.replacen(
                "idemkit resolve",
                &format!("idemkit resolve --store '{url}'"),
                1,
            ) + " --release";
            let resolved = bash(&pasted);
            assert!(
                !marker.exists(),
                "the shell expanded the tenant: {suggested}"
            );
            assert!(
                resolved.status.success(),
                "{pasted}: {}",
                String::from_utf8_lossy(&resolved.stderr)
            );
            assert_eq!(
                charge(&exec, &tenant, &runs).await.unwrap(),
                serde_json::json!({"charge": "ch_new"})
            );
            assert_eq!(runs.load(Ordering::SeqCst), 1);
        });
        forget(&url, &tenant);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

/// Sends email `n` for `tenant` (counting the body's runs in `runs`).
async fn send(exec: &Executor, tenant: &str, n: u32, runs: &AtomicUsize) -> u32 {
    let tool = Tool::new("send_email", Policy::default()).unwrap();
    let input = format!(r#"{{"n":{n}}}"#);
    exec.call(
        &tool,
        &CallContext::new().tenant(tenant),
        KeyInput::Json(&input),
        |_| async {
            runs.fetch_add(1, Ordering::SeqCst);
            Ok::<_, std::io::Error>(n)
        },
    )
    .await
    .unwrap()
}

#[test]
fn delete_asks_for_confirmation_and_removes_exactly_one_record() {
    for (_, url) in urls() {
        let (tenant, other) = (tenant(), tenant());
        let runs = AtomicUsize::new(0);
        let key_of = |tenant: &str, n: u32| {
            let input = format!(r#"{{"n":{n}}}"#);
            let scope = KeyScope {
                scope: "send_email",
                tenant: Some(tenant),
                run: None,
            };
            derive_key(&scope, KeyInput::Json(&input), &[])
                .unwrap()
                .hex()
        };
        let in_progress = idemkit::runtime::block_on(async {
            let store = open(&url).await;
            let exec = Executor::new(store.clone());
            send(&exec, &tenant, 0, &runs).await;
            send(&exec, &tenant, 1, &runs).await;
            send(&exec, &other, 0, &runs).await;
            leave_record(&store, &tenant, None, "send_email", None, 600_000).await
        });
        assert_eq!(runs.load(Ordering::SeqCst), 3);
        let (k0, k1, other_k0) = (key_of(&tenant, 0), key_of(&tenant, 1), key_of(&other, 0));
        let inspect = |key: &str, tenant: &str| {
            idemkit(
                &["inspect", "--store", &url, "--key", key, "--tenant", tenant],
                None,
            )
            .status
            .code()
        };
        let delete = |key: &str, stdin: &str| {
            idemkit(
                &["delete", "--store", &url, "--key", key, "--tenant", &tenant],
                Some(stdin),
            )
        };

        let declined = delete(&k0, "n\n");
        assert_eq!(declined.status.code(), Some(1));
        let question = String::from_utf8_lossy(&declined.stderr);
        assert!(
            question.contains("delete the completed record of key")
                && question.contains("send_email")
                && question.contains("not confirmed"),
            "{question}"
        );
        assert_eq!(inspect(&k0, &tenant), Some(0), "declined, yet deleted");

        let deleted = ok(&delete(&k0, "y\n"));
        assert!(
            deleted.starts_with("deleted the record of key"),
            "{deleted}"
        );
        assert_eq!(inspect(&k0, &tenant), Some(1), "still there");
        assert_eq!(
            inspect(&k1, &tenant),
            Some(0),
            "the tenant's other record went"
        );
        assert_eq!(inspect(&other_k0, &other), Some(0), "another tenant's went");
        let again = delete(&k0, "y\n");
        assert_eq!(again.status.code(), Some(1));
        assert!(String::from_utf8_lossy(&again.stderr).contains("nothing to delete"));
        // An in-progress record too, without a question.
        ok(&idemkit(
            &[
                "delete",
                "--store",
                &url,
                "--key",
                &in_progress.hex(),
                "--tenant",
                &tenant,
                "--yes",
            ],
            None,
        ));
        assert_eq!(inspect(&in_progress.hex(), &tenant), Some(1));

        // The deleted call runs again; the others are still remembered.
        idemkit::runtime::block_on(async {
            let exec = Executor::new(open(&url).await);
            send(&exec, &tenant, 0, &runs).await;
            send(&exec, &tenant, 1, &runs).await;
            send(&exec, &other, 0, &runs).await;
        });
        assert_eq!(runs.load(Ordering::SeqCst), 4);
        forget(&url, &tenant);
        forget(&url, &other);
    }
}

#[test]
fn every_tenant_argument_is_taken_in_nfc() {
    for (_, url) in urls() {
        let base = tenant();
        let composed = format!("{base}-caf\u{e9}");
        let decomposed = format!("{base}-cafe\u{301}");
        let leave = || {
            idemkit::runtime::block_on(async {
                let store = open(&url).await;
                let done = Outcome::success("1").unwrap();
                leave_record(&store, &composed, None, "send_email", Some(done), 600_000).await
            })
            .hex()
        };
        let key = leave();
        let found = ok(&idemkit(
            &[
                "inspect",
                "--store",
                &url,
                "--key",
                &key,
                "--tenant",
                &decomposed,
            ],
            None,
        ));
        assert!(found.contains("state:      completed"), "{found}");
        let listed = ok(&idemkit(
            &["list", "--store", &url, "--tenant", &decomposed],
            None,
        ));
        assert!(listed.contains(&key), "{listed}");
        ok(&idemkit(
            &[
                "delete",
                "--store",
                &url,
                "--key",
                &key,
                "--tenant",
                &decomposed,
                "--yes",
            ],
            None,
        ));
        leave();
        let forgot = ok(&idemkit(
            &["forget", "--store", &url, "--tenant", &decomposed, "--yes"],
            None,
        ));
        assert!(forgot.contains("forgot 1 record(s)"), "{forgot}");
    }
}

/// Keys of an application sharing the Redis database, of every shape next to a record's
/// `<prefix><t>:<64 hex>`: `forget` must delete the records and none of these.
fn unrelated_redis_keys(prefix: &str, segment: &str) -> Vec<(String, &'static str)> {
    // A fresh 64-hex for every key, so that no two keys coincide.
    let hex = || Token::random().hex().repeat(2);
    vec![
        (format!("{prefix}{segment}:unrelated-app-key"), "string"),
        (format!("{prefix}{segment}:{}", hex()), "string"),
        (format!("{prefix}{segment}:{}:extra", hex()), "string"),
        (format!("{prefix}{segment}:{}", &hex()[..63]), "string"),
        (
            format!("{prefix}{segment}:{}", hex().to_uppercase()),
            "string",
        ),
        (format!("{prefix}{segment}x:{}", hex()), "string"),
        (format!("{prefix}{segment}:{}", hex()), "hash"),
        (format!("{prefix}{segment}:{}", hex()), "list"),
        (format!("{prefix}{segment}"), "string"),
    ]
}

#[test]
fn forget_deletes_only_records_never_an_applications_keys_whatever_the_prefix() {
    let Some(url) = common::env_url("IDEMKIT_REDIS_URL") else {
        return;
    };
    let tenant = tenant();
    let segment = idemkit::store::redis::tenant_segment(Some(&tenant));
    // A prefix of this test's own besides the empty one: other tests list and count the default
    // prefix's records meanwhile, and would trip over the keys planted here.
    let own = format!("cli-forget-{}:", &Token::random().hex()[..8]);
    for prefix in ["", own.as_str()] {
        idemkit::runtime::block_on(async {
            let client = redis::Client::open(url.as_str()).unwrap();
            let mut raw = client.get_multiplexed_async_connection().await.unwrap();
            let keys = unrelated_redis_keys(prefix, &segment);
            for (key, kind) in &keys {
                let _: () = redis::cmd("DEL")
                    .arg(key)
                    .query_async(&mut raw)
                    .await
                    .unwrap();
                let command = match *kind {
                    "hash" => redis::cmd("HSET").arg(key).arg("app").arg("data").clone(),
                    "list" => redis::cmd("RPUSH").arg(key).arg("data").clone(),
                    _ => redis::cmd("SET").arg(key).arg("data").clone(),
                };
                let _: () = command.query_async(&mut raw).await.unwrap();
            }
            // A hash with a record's own shape of key but not a record of this key.
            let hex = Token::random().hex().repeat(2);
            let lookalike = format!("{prefix}{segment}:{hex}");
            let _: () = redis::cmd("HSET")
                .arg(&lookalike)
                .arg("key")
                .arg("0".repeat(64))
                .query_async(&mut raw)
                .await
                .unwrap();
            let options = StoreOptions {
                key_prefix: Some(prefix.to_owned()),
                ..StoreOptions::default()
            };
            let store = idemkit::store::open(&url, &options).await.unwrap();
            leave_record(
                &store,
                &tenant,
                None,
                "cli_test",
                Some(Outcome::success("1").unwrap()),
                600_000,
            )
            .await;
            leave_record(&store, &tenant, None, "cli_test", None, 600_000).await;

            let out = ok(&idemkit(
                &[
                    "forget", "--store", &url, "--prefix", prefix, "--tenant", &tenant, "--yes",
                ],
                None,
            ));
            assert!(
                out.starts_with("forgot 2 record(s)"),
                "prefix {prefix:?}: {out}"
            );
            let mut survivors = vec![lookalike];
            survivors.extend(keys.into_iter().map(|(key, _)| key));
            for key in &survivors {
                let exists: i64 = redis::cmd("EXISTS")
                    .arg(key)
                    .query_async(&mut raw)
                    .await
                    .unwrap();
                assert_eq!(
                    exists, 1,
                    "prefix {prefix:?}: forget deleted the application's key {key:?}"
                );
                let _: () = redis::cmd("DEL")
                    .arg(key)
                    .query_async(&mut raw)
                    .await
                    .unwrap();
            }
        });
    }
}

/// Runs `idemkit delete` of `key` in `tenant`, and between its question and the answer `y`
/// runs `meanwhile`; answers the command's output.
fn delete_with_a_change_before_the_answer(
    url: &str,
    key: &str,
    tenant: &str,
    meanwhile: impl FnOnce(),
) -> (Output, String) {
    use std::io::Read;
    let mut child = Command::new(env!("CARGO_BIN_EXE_idemkit"))
        .args(["delete", "--store", url, "--key", key, "--tenant", tenant])
        .env_remove("IDEMKIT_STORE")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the idemkit binary runs");
    let mut stderr = child.stderr.take().unwrap();
    let mut question = Vec::new();
    let mut byte = [0u8; 1];
    while !question.ends_with(b"[y/N] ") {
        assert_eq!(
            stderr.read(&mut byte).unwrap(),
            1,
            "no question: {question:?}"
        );
        question.push(byte[0]);
    }
    meanwhile();
    child.stdin.take().unwrap().write_all(b"y\n").unwrap();
    let mut rest = Vec::new();
    stderr.read_to_end(&mut rest).unwrap();
    let output = child.wait_with_output().unwrap();
    (output, String::from_utf8_lossy(&rest).into_owned())
}

#[test]
fn delete_deletes_only_the_record_it_showed_not_one_claimed_again_meanwhile() {
    for (_, url) in urls() {
        let tenant = tenant();
        let (key, first) = idemkit::runtime::block_on(async {
            let store = open(&url).await;
            let key = leave_record(
                &store,
                &tenant,
                None,
                "cli_test",
                Some(Outcome::success("1").unwrap()),
                600_000,
            )
            .await;
            let id = RecordId {
                tenant: Some(&tenant),
                key: &key,
            };
            (key, store.get(id).await.unwrap().0.unwrap().token)
        });
        // Between the question and the answer the record is deleted and claimed again by a
        // new owner: the operator confirmed the old record, not this one.
        let (output, said) =
            delete_with_a_change_before_the_answer(&url, &key.hex(), &tenant, || {
                idemkit::runtime::block_on(async {
                    let store = open(&url).await;
                    let id = RecordId {
                        tenant: Some(&tenant),
                        key: &key,
                    };
                    assert!(store.delete(id).await.unwrap());
                    leave_record(&store, &tenant, Some(key), "cli_test", None, 600_000).await;
                })
            });
        assert_eq!(output.status.code(), Some(1), "{said}");
        assert!(
            said.contains("changed meanwhile") && said.contains("nothing was deleted"),
            "{said}"
        );
        let now = idemkit::runtime::block_on(async {
            let store = open(&url).await;
            store
                .get(RecordId {
                    tenant: Some(&tenant),
                    key: &key,
                })
                .await
                .unwrap()
                .0
        });
        let now = now.expect("the new owner's claim was deleted");
        assert_ne!(now.token, first);

        // Unchanged between question and answer: deleted.
        let (output, said) =
            delete_with_a_change_before_the_answer(&url, &key.hex(), &tenant, || {});
        assert!(output.status.success(), "{said}");
        assert!(String::from_utf8_lossy(&output.stdout).starts_with("deleted the record of key"));
        let gone = idemkit::runtime::block_on(async {
            open(&url)
                .await
                .get(RecordId {
                    tenant: Some(&tenant),
                    key: &key,
                })
                .await
                .unwrap()
                .0
        });
        assert!(gone.is_none());
        forget(&url, &tenant);
    }
}

/// On PostgreSQL `forget --table T` deletes the tenant's rows of T only: the same tenant's
/// records in another idemkit table, and an application's own table with a tenant column, stay.
#[test]
fn forget_on_postgres_deletes_only_the_tenants_rows_of_its_own_table() {
    let Some(url) = common::env_url("IDEMKIT_POSTGRES_URL") else {
        return;
    };
    let tenant = tenant();
    idemkit::runtime::block_on(async {
        let (ours, ours_store) = common::PgTable::new(&url, "cli_forget").await;
        let (other, other_store) = common::PgTable::new(&url, "cli_forget_other").await;
        let (ours_store, other_store): (Arc<dyn Store>, Arc<dyn Store>) =
            (Arc::new(ours_store), Arc::new(other_store));
        let app_table = format!("app_{}", &Token::random().hex()[..12]);
        let client = common::pg_client(&url).await.unwrap();
        client
            .batch_execute(&format!(
                "CREATE TABLE {app_table} (tenant text, tenant_key text, key text);
                 INSERT INTO {app_table} VALUES ('{tenant}', 't', 'app-row')"
            ))
            .await
            .unwrap();
        leave_record(&ours_store, &tenant, None, "cli_test", None, 600_000).await;
        let kept = leave_record(&other_store, &tenant, None, "cli_test", None, 600_000).await;

        let out = ok(&idemkit(
            &[
                "forget", "--store", &url, "--table", &ours.name, "--tenant", &tenant, "--yes",
            ],
            None,
        ));
        assert!(out.starts_with("forgot 1 record(s)"), "{out}");
        let id = RecordId {
            tenant: Some(&tenant),
            key: &kept,
        };
        assert!(
            other_store.get(id).await.unwrap().0.is_some(),
            "forget deleted a record of {}",
            other.name
        );
        let rows: i64 = client
            .query_one(&format!("SELECT count(*) FROM {app_table}"), &[])
            .await
            .unwrap()
            .get(0);
        assert_eq!(rows, 1, "forget deleted a row of the application's table");
        client
            .batch_execute(&format!("DROP TABLE {app_table}"))
            .await
            .unwrap();
    });
}
