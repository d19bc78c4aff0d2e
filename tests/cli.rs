//! The `idemkit` CLI: key derivation and argument errors (store commands are tested against real
//! servers in tests/cli_stores.rs).

use std::process::{Command, Output};

fn idemkit(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_idemkit"))
        .args(args)
        .output()
        .expect("the idemkit binary runs")
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
        "key", "inspect", "list", "resolve", "purge", "forget", "stats",
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
        "", "key", "inspect", "list", "resolve", "purge", "forget", "stats",
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
