//! The key derivation contract: every vector of `keys-v1.json` (SPEC §2) through the Rust face.

use std::path::{Path, PathBuf};

use idemkit::key::{
    canonical_input, canonical_material, derive_key, derive_key_and_fingerprint, fingerprint,
    CanonicalObject, CanonicalValue, KeyInput, KeyScope, Number,
};
use serde_json::Value;

/// The vectors kept in the repository (a byte-for-byte copy of the contract's file).
const VECTORS_IN_REPO: &str = "tests/vectors/keys-v1.json";

/// Where the vectors are: `$IDEMKIT_VECTORS`, else the repository's own copy.
fn vectors_path() -> PathBuf {
    std::env::var_os("IDEMKIT_VECTORS")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join(VECTORS_IN_REPO))
}

/// Reads the vectors, failing (never skipping) with the path it looked at.
fn read_vectors(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| {
        panic!(
            "cannot read the key vectors at {} ({e}); set IDEMKIT_VECTORS to the path of keys-v1.json",
            path.display()
        )
    });
    serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("{} is not valid JSON: {e}", path.display()))
}

fn load_vectors() -> Value {
    read_vectors(&vectors_path())
}

fn group<'v>(vectors: &'v Value, name: &str) -> &'v [Value] {
    let entries = vectors[name]
        .as_array()
        .unwrap_or_else(|| panic!("the vectors file has no `{name}` array"));
    assert!(
        !entries.is_empty(),
        "the vectors file's `{name}` array is empty"
    );
    entries
}

fn text<'v>(entry: &'v Value, field: &str) -> Option<&'v str> {
    entry.get(field).and_then(Value::as_str)
}

fn required<'v>(entry: &'v Value, field: &str) -> &'v str {
    text(entry, field).unwrap_or_else(|| panic!("vector {entry} has no string `{field}`"))
}

fn expects_error(entry: &Value) -> bool {
    entry.get("error").and_then(Value::as_bool) == Some(true)
}

fn report(failures: Vec<String>, total: usize) {
    assert!(
        failures.is_empty(),
        "{} of {total} vectors failed:\n  {}",
        failures.len(),
        failures.join("\n  ")
    );
}

#[test]
fn every_text_vector_gives_its_material_and_key() {
    let vectors = load_vectors();
    let entries = group(&vectors, "vectors");
    let mut failures = Vec::new();
    for entry in entries {
        let name = required(entry, "name");
        let scope = KeyScope {
            scope: required(entry, "scope"),
            tenant: text(entry, "tenant"),
            run: text(entry, "run"),
        };
        let key_arguments: Vec<String> = entry
            .get("key_arguments")
            .and_then(Value::as_array)
            .map(|names| {
                names
                    .iter()
                    .map(|n| n.as_str().expect("key_arguments are strings").to_owned())
                    .collect()
            })
            .unwrap_or_default();
        let input = match required(entry, "strategy") {
            "HASH_INPUT" => KeyInput::Json(required(entry, "input")),
            "EXPLICIT" => KeyInput::Explicit(required(entry, "explicit_key")),
            other => panic!("vector {name:?}: unknown strategy {other:?}"),
        };
        let material = canonical_material(&scope, input, &key_arguments);
        let key = derive_key(&scope, input, &key_arguments);
        if expects_error(entry) {
            if material.is_ok() || key.is_ok() {
                failures.push(format!(
                    "{name:?}: must be refused, got material {material:?} and key {key:?}"
                ));
            }
            continue;
        }
        match (material, key) {
            (Ok(material), Ok(key)) => {
                if material != required(entry, "material") {
                    failures.push(format!(
                        "{name:?}: material {material} instead of {}",
                        required(entry, "material")
                    ));
                }
                if key.hex() != required(entry, "key") {
                    failures.push(format!(
                        "{name:?}: key {key} instead of {}",
                        required(entry, "key")
                    ));
                }
            }
            (material, key) => failures.push(format!(
                "{name:?}: refused: material {material:?}, key {key:?}"
            )),
        }
    }
    report(failures, entries.len());
}

/// Derives the key of `{member: number}` in `scope` from a hand-built canonical value.
fn canonical_key(scope: &KeyScope<'_>, member: &str, number: Number) -> String {
    let object =
        CanonicalObject::try_from_members([(member, CanonicalValue::Number(number))]).unwrap();
    let value = CanonicalValue::Object(object);
    derive_key(scope, KeyInput::Canonical(&value), &[])
        .unwrap()
        .hex()
}

#[test]
fn every_native_number_vector_gives_its_decimal_and_key() {
    let vectors = load_vectors();
    let entries = group(&vectors, "native_numbers");
    let mut failures = Vec::new();
    for entry in entries {
        let name = required(entry, "name");
        let scope = KeyScope::new(required(entry, "scope"));
        let member = required(entry, "member");
        let bits_text = required(entry, "bits");
        let bits = u64::from_str_radix(bits_text.trim_start_matches("0x"), 16)
            .unwrap_or_else(|e| panic!("vector {name:?}: bits {bits_text:?}: {e}"));
        let (number, json_value) = match required(entry, "type") {
            "f64" => {
                let x = f64::from_bits(bits);
                let json_value = serde_json::Number::from_f64(x).map(Value::Number);
                (Number::try_from(x), Some(json_value))
            }
            "f32" => (Number::try_from(f32::from_bits(bits as u32)), None),
            other => panic!("vector {name:?}: unknown type {other:?}"),
        };
        if expects_error(entry) {
            if let Ok(n) = number {
                failures.push(format!("{name:?}: must be refused, got {n}"));
            }
            // serde_json cannot even hold a non-finite number.
            if let Some(Some(v)) = json_value {
                failures.push(format!("{name:?}: serde_json holds non-finite {v}"));
            }
            continue;
        }
        let number = match number {
            Ok(n) => n,
            Err(e) => {
                failures.push(format!("{name:?}: refused: {e}"));
                continue;
            }
        };
        let expected_key = required(entry, "key");
        let decimal = number.to_string();
        if decimal != required(entry, "decimal") {
            failures.push(format!(
                "{name:?}: decimal {decimal} instead of {}",
                required(entry, "decimal")
            ));
        }
        let key = canonical_key(&scope, member, number);
        if key != expected_key {
            failures.push(format!(
                "{name:?}: key (CanonicalValue) {key} instead of {expected_key}"
            ));
        }
        if let Some(json_value) = json_value {
            let Some(number) = json_value else {
                failures.push(format!("{name:?}: serde_json refused a finite f64"));
                continue;
            };
            let mut object = serde_json::Map::new();
            object.insert(member.to_owned(), number);
            let value = Value::Object(object);
            match derive_key(&scope, KeyInput::Value(&value), &[]) {
                Ok(key) if key.hex() == expected_key => {}
                other => failures.push(format!(
                    "{name:?}: key (serde_json::Value) {other:?} instead of {expected_key}"
                )),
            }
        }
    }
    report(failures, entries.len());
}

#[test]
fn a_missing_vectors_file_fails_naming_where_it_looked() {
    let missing = std::env::temp_dir().join("idemkit-no-such-dir/keys-v1.json");
    let outcome = std::panic::catch_unwind(|| read_vectors(&missing));
    let message = outcome.expect_err("a missing vectors file must fail the test");
    let message = message
        .downcast_ref::<String>()
        .expect("the failure carries a message");
    assert!(
        message.contains(&missing.display().to_string()),
        "{message}"
    );
}

/// SPEC v1.1 rule 9: every `fingerprints` vector gives its canonical JSON and its fingerprint,
/// from JSON text and from a parsed `serde_json::Value` alike.
#[test]
fn every_fingerprint_vector_gives_its_canonical_form_and_fingerprint() {
    let vectors = load_vectors();
    let entries = group(&vectors, "fingerprints");
    let mut failures = Vec::new();
    for entry in entries {
        let name = required(entry, "name");
        let input = required(entry, "input");
        let canonical = required(entry, "canonical");
        let expected = required(entry, "fingerprint");
        match canonical_input(KeyInput::Json(input)) {
            Ok(Some(got)) if got == canonical => {}
            other => failures.push(format!("{name}: canonical {other:?}, want {canonical}")),
        }
        match fingerprint(KeyInput::Json(input)) {
            Ok(Some(got)) if got == expected => {}
            other => failures.push(format!("{name}: fingerprint {other:?}, want {expected}")),
        }
        // A value built by a Rust caller: serde_json keeps integers exact but reads 2.0 as a
        // float, which is the same number (§2), so the fingerprint must agree.
        let value: Value = serde_json::from_str(input).expect("vector input is JSON");
        match fingerprint(KeyInput::Value(&value)) {
            Ok(Some(got)) if got == expected => {}
            other => failures.push(format!("{name}: fingerprint of the value {other:?}")),
        }
        // The executor's one-pass derivation gives the same key and fingerprint.
        let scope = KeyScope {
            scope: "book",
            tenant: Some("acme"),
            run: None,
        };
        for key_arguments in [vec![], vec!["flight".to_owned()]] {
            let input = KeyInput::Json(input);
            let apart = derive_key(&scope, input, &key_arguments).map(|k| (k, expected.to_owned()));
            match (
                derive_key_and_fingerprint(&scope, input, &key_arguments),
                apart,
            ) {
                (Ok((key, Some(print))), Ok(apart)) if (key, print.clone()) == apart => {}
                (Err(_), Err(_)) => {}
                (one, apart) => failures.push(format!(
                    "{name}: one pass {one:?}, apart {apart:?} (key_arguments {key_arguments:?})"
                )),
            }
        }
    }
    report(failures, entries.len());
}

#[test]
fn an_explicit_key_has_no_fingerprint_and_key_arguments_do_not_change_it() {
    assert_eq!(fingerprint(KeyInput::Explicit("abc-123")).unwrap(), None);
    let whole = fingerprint(KeyInput::Json(r#"{"flight":"BA117","request_id":"r1"}"#)).unwrap();
    let reordered = fingerprint(KeyInput::Json(r#"{"request_id":"r1","flight":"BA117"}"#)).unwrap();
    let other = fingerprint(KeyInput::Json(r#"{"flight":"BA117","request_id":"r2"}"#)).unwrap();
    assert_eq!(whole, reordered);
    assert_ne!(whole, other);
    assert_eq!(whole.as_ref().map(String::len), Some(64));
}
