//! The key derivation contract: every vector of `keys-v1.json` (SPEC §2) through the Rust face.

use std::path::{Path, PathBuf};

use idemkit::key::{
    canonical_material, derive_key, CanonicalObject, CanonicalValue, KeyInput, KeyScope, Number,
};
use serde_json::Value;

/// Where the vectors are: `$IDEMKIT_VECTORS`, else `../shared/vectors/keys-v1.json` beside the crate.
fn vectors_path() -> PathBuf {
    std::env::var_os("IDEMKIT_VECTORS")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/../shared/vectors/keys-v1.json"
            ))
        })
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
