//! The `idemkit` CLI: key derivation and argument errors (store commands are tested against real
//! servers in tests/cli_stores.rs).

use std::process::{Command, Output};

use idemkit::store::{ClaimRequest, RecordId};
use idemkit::{
    CallContext, ErrorKind, Executor, KeyInput, MemoryStore, Policy, Store, Token, Tool,
};

fn idemkit(args: &[&str]) -> Output {
    idemkit_with_store_env(args, None)
}

/// Runs `idemkit` with IDEMKIT_STORE set to `store`, or unset (whatever the test's environment).
fn idemkit_with_store_env(args: &[&str], store: Option<&str>) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_idemkit"));
    command.args(args).env_remove("IDEMKIT_STORE");
    if let Some(url) = store {
        command.env("IDEMKIT_STORE", url);
    }
    command.output().expect("the idemkit binary runs")
}

fn stdout(o: &Output) -> String {
    String::from_utf8(o.stdout.clone()).unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8(o.stderr.clone()).unwrap()
}

#[test]
fn key_prints_the_64_hex_key_of_a_vector() {
    let o = idemkit(&["key", "--scope", "book", "--input", r#"{"flight":"BA117"}"#]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        stdout(&o),
        "16aaec1b968f0c9ed7997809bfdba63ad58b7ba07512bef2fc513f1cf96b8f63\n"
    );
}

#[test]
fn key_with_material_prints_the_canonical_text_first() {
    let o = idemkit(&[
        "key",
        "--scope",
        "book",
        "--tenant",
        "acme",
        "--run",
        "run_1",
        "--input",
        r#"{"flight":"BA117","request_id":"a"}"#,
        "--key-arguments",
        "flight",
        "--material",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(
        lines[0],
        r#"["idemkit/v1","acme","run_1","book","input",{"flight":"BA117"}]"#
    );
    assert_eq!(
        lines[1],
        "3e7eb845bf16d54f9406e469c0e3c7e4d0d4b3f49865ee18a34e1925636624e6"
    );
}

#[test]
fn key_with_an_explicit_key() {
    let o = idemkit(&[
        "key",
        "--scope",
        "create_issue",
        "--explicit",
        "fix login bug",
        "--material",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o)
        .starts_with(r#"["idemkit/v1",null,null,"create_issue","explicit","fix login bug"]"#));
}

#[test]
fn bad_input_exits_2_with_one_clear_line_on_stderr() {
    for args in [
        vec!["key", "--scope", "x", "--input", "{flight:1}"],
        vec!["key", "--scope", "x", "--explicit", "   "],
        vec![
            "key",
            "--scope",
            "book",
            "--input",
            r#"{"a":1}"#,
            "--key-arguments",
            "flight",
        ],
        vec!["key", "--input", "{}"],
        vec!["key", "--scope", "x"],
    ] {
        let o = idemkit(&args);
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        let err = stderr(&o);
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.starts_with("idemkit: "), "{err}");
        assert!(stdout(&o).is_empty());
    }
}

#[test]
fn a_bad_store_url_names_the_url_without_its_password() {
    let o = idemkit(&["list", "--store", "mysql://admin:hunter2@127.0.0.1/db"]);
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert!(err.contains("mysql://admin:***@127.0.0.1/db"), "{err}");
    assert!(!err.contains("hunter2"), "{err}");
}

#[test]
fn every_subcommand_has_help() {
    for sub in [
        "key", "inspect", "list", "resolve", "delete", "purge", "forget", "stats",
    ] {
        let o = idemkit(&[sub, "--help"]);
        assert!(o.status.success(), "{sub}");
        assert!(stdout(&o).contains("Usage: idemkit"), "{sub}");
    }
}

#[test]
fn the_readme_shows_the_current_help_of_every_command() {
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    for sub in [
        "", "key", "inspect", "list", "resolve", "delete", "purge", "forget", "stats",
    ] {
        let args: Vec<&str> = [sub, "--help"]
            .into_iter()
            .filter(|a| !a.is_empty())
            .collect();
        let help = stdout(&idemkit(&args));
        let shown = format!("$ idemkit {}\n{help}```", args.join(" "));
        assert!(
            readme.contains(&shown),
            "README.md does not show the current `idemkit {}` output; paste it:\n{help}",
            args.join(" ")
        );
    }
}

#[test]
fn the_store_url_is_read_from_idemkit_store_and_its_password_never_shown() {
    let url = "mysql://admin:hunter2@127.0.0.1/db";
    let o = idemkit_with_store_env(&["list"], Some(url));
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert!(err.contains("mysql://admin:***@127.0.0.1/db"), "{err}");
    assert!(!err.contains("hunter2"), "{err}");
    // --store wins over the environment.
    let o = idemkit_with_store_env(&["list", "--store", "nosuch://x"], Some(url));
    assert!(stderr(&o).contains("nosuch://x"), "{}", stderr(&o));
    // The help names the variable and never shows its value.
    for args in [vec!["list", "--help"], vec!["--help"], vec!["delete", "-h"]] {
        let o = idemkit_with_store_env(&args, Some(url));
        assert!(o.status.success());
        let help = stdout(&o);
        assert!(help.contains("IDEMKIT_STORE"), "{args:?}: {help}");
        assert!(!help.contains("hunter2"), "{args:?}: {help}");
    }
}

#[test]
fn a_missing_store_names_both_ways_to_give_it() {
    let key = "0".repeat(64);
    for args in [
        vec!["list"],
        vec!["inspect", "--key", &key],
        vec!["resolve", "--key", &key, "--release"],
        vec!["delete", "--key", &key, "--yes"],
        vec!["purge", "--yes"],
        vec!["forget", "--tenant", "acme", "--yes"],
        vec!["stats"],
    ] {
        let o = idemkit(&args);
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        let err = stderr(&o);
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(
            err.starts_with("idemkit: no store given")
                && err.contains("--store URL")
                && err.contains("IDEMKIT_STORE"),
            "{args:?}: {err}"
        );
    }
}

#[test]
fn inspect_of_a_missing_record_exits_1() {
    let key = "16aaec1b968f0c9ed7997809bfdba63ad58b7ba07512bef2fc513f1cf96b8f63";
    for tenant in [None, Some("acme")] {
        let mut args = vec!["inspect", "--store", "memory:", "--key", key];
        args.extend(tenant.map(|t| ["--tenant", t]).into_iter().flatten());
        let o = idemkit(&args);
        assert_eq!(o.status.code(), Some(1), "{args:?}");
        assert!(stdout(&o).is_empty());
        let err = stderr(&o);
        assert!(err.starts_with("idemkit: no record for key"), "{err}");
        assert_eq!(err.contains("pass the call's --tenant"), tenant.is_none());
        args.push("--json");
        let o = idemkit(&args);
        assert_eq!(o.status.code(), Some(1), "{args:?}");
        assert_eq!(stdout(&o), "null\n");
    }
}

#[test]
fn delete_of_a_missing_record_exits_1_and_asks_nothing() {
    let key = "16aaec1b968f0c9ed7997809bfdba63ad58b7ba07512bef2fc513f1cf96b8f63";
    let o = idemkit(&["delete", "--store", "memory:", "--key", key]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("nothing to delete"), "{}", stderr(&o));
    let o = idemkit(&["delete", "--store", "memory:", "--key", "abc"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--key"), "{}", stderr(&o));
}

/// Runs `printf %s <word>` in bash and answers what it printed, and whether a file that a
/// command substitution in `word` would create was created.
fn through_bash(word: &str) -> Vec<u8> {
    let o = Command::new("bash")
        .arg("-c")
        .arg(format!("printf %s {word}"))
        .output()
        .expect("bash runs");
    assert!(o.status.success(), "{word}: {}", stderr(&o));
    o.stdout
}

/// Text that a terminal must never get raw: control characters (but the line end), and the
/// bidirectional formatting characters.
fn raw_control(text: &str) -> Option<char> {
    text.chars().find(|&c| {
        (c.is_control() && c != '\n')
            || matches!(c, '\u{061C}' | '\u{200E}' | '\u{200F}' | '\u{2028}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
    })
}

#[test]
fn shell_words_give_back_the_exact_text_and_expand_nothing() {
    let dir = std::env::temp_dir().join(format!("idemkit-shell-{}", &Token::random().hex()[..8]));
    let marker = dir.join("expanded");
    std::fs::create_dir_all(&dir).unwrap();
    let m = marker.display();
    for text in [
        "acme".to_owned(),
        String::new(),
        "it's".to_owned(),
        format!("$(touch {m})"),
        format!("`touch {m}`; touch {m}"),
        "a\\b \"c\" $HOME !x *".to_owned(),
        format!("x\u{1b}]0;title\u{7}'$(touch {m})\r\nkey: fake"),
        "\u{9b}31m\u{202e}é\u{7f}\t".to_owned(),
    ] {
        let word = idemkit::error::shell_word(&text);
        assert_eq!(raw_control(&word), None, "{word:?}");
        assert_eq!(through_bash(&word), text.as_bytes(), "{text:?} as {word}");
        assert!(!marker.exists(), "{word} was expanded");
    }
    assert_eq!(idemkit::error::shell_word("it's"), r"'it'\''s'");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn the_indeterminate_error_suggests_a_resolve_command_with_the_tenant() {
    idemkit::runtime::block_on(async {
        let store = std::sync::Arc::new(MemoryStore::new());
        let exec = Executor::new(store.clone());
        let tool = Tool::new("charge_card", Policy::default()).unwrap();
        let input = r#"{"card":"tok_visa"}"#;
        for tenant in [Some("acme's shop"), None] {
            let key = idemkit::key::derive_key(
                &idemkit::key::KeyScope {
                    scope: "charge_card",
                    tenant,
                    run: None,
                },
                KeyInput::Json(input),
                &[],
            )
            .unwrap();
            // A claim whose lease has ended without an outcome.
            let claimed = store
                .claim(&ClaimRequest {
                    id: RecordId { tenant, key: &key },
                    scope: "charge_card",
                    token: Token::random(),
                    lease_ms: 0,
                    ttl_ms: 60_000,
                    retry_failure: false,
                    fingerprint: None,
                    payload_checked: false,
                })
                .await
                .unwrap();
            assert!(matches!(
                claimed.claim,
                idemkit::store::Claim::Acquired { .. }
            ));
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
            let mut context = CallContext::new();
            if let Some(t) = tenant {
                context = context.tenant(t);
            }
            let error = exec
                .call(&tool, &context, KeyInput::Json(input), |_| async {
                    Ok::<_, std::io::Error>(1)
                })
                .await
                .unwrap_err();
            let error = error.idempotency().unwrap();
            assert_eq!(error.kind(), ErrorKind::Indeterminate);
            let expected = match tenant {
                Some(_) => format!(
                    r"(idemkit resolve --key {} --tenant 'acme'\''s shop')",
                    key.hex()
                ),
                None => format!("(idemkit resolve --key {})", key.hex()),
            };
            assert!(error.to_string().contains(&expected), "{error}");
        }
    });
}

#[test]
fn an_error_line_never_carries_a_raw_control_character() {
    let o = idemkit(&["key", "--scope", "book\u{1b}[2J\r\nfake", "--input", "{bad"]);
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert_eq!(raw_control(&err), None, "{err:?}");
    assert!(err.contains(r"book\u{1b}[2J\r\nfake"), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
}
