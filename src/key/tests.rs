//! Unit tests for key derivation edge cases that the contract vectors do not cover.

use serde_json::json;

use super::*;

fn scope() -> KeyScope<'static> {
    KeyScope::new("t")
}

fn material(json: &str) -> Result<String, KeyError> {
    canonical_material(&scope(), KeyInput::Json(json), &[])
}

/// The data part of the material for JSON text.
fn data(json: &str) -> String {
    let m = material(json).unwrap();
    m.strip_prefix("[\"idemkit/v1\",null,null,\"t\",\"input\",")
        .and_then(|rest| rest.strip_suffix(']'))
        .unwrap()
        .to_owned()
}

fn args(names: &[&str]) -> Vec<String> {
    names.iter().map(|s| s.to_string()).collect()
}

fn nested(open: &str, close: &str, depth: usize) -> String {
    format!("{}{}", open.repeat(depth), close.repeat(depth))
}

#[test]
fn material_is_what_derive_key_hashes() {
    use sha2::{Digest, Sha256};
    let samples = [
        r#"{"b":[1,2.50,{"z":null,"y":"\u00e9"}],"a":"x\ny","c":1e400}"#,
        r#""plain""#,
        r#"[true,false,null,-0.0,1e-7,123456789012345678901234]"#,
        &format!(r#"{{"long":"{}"}}"#, "é∂ƒ".repeat(400)),
    ];
    for json in samples {
        let scope = KeyScope {
            scope: "tool",
            tenant: Some("acme"),
            run: Some("r1"),
        };
        let m = canonical_material(&scope, KeyInput::Json(json), &[]).unwrap();
        let key = derive_key(&scope, KeyInput::Json(json), &[]).unwrap();
        let digest: [u8; 32] = Sha256::digest(m.as_bytes()).into();
        assert_eq!(key.as_bytes(), &digest, "{json}");
    }
}

#[test]
fn numbers_use_ecmascript_layout() {
    assert_eq!(
        data("[1e-6,1e-7,0.000001,1.5e-300,-1.5e-300]"),
        "[0.000001,1e-7,0.000001,1.5e-300,-1.5e-300]"
    );
    assert_eq!(
        data("[123456789012345678901,1234567890123456789012,1e21,1e20]"),
        "[123456789012345678901,1.234567890123456789012e+21,1e+21,100000000000000000000]"
    );
    assert_eq!(data("[100,1.0e2,1E2,10000e-2]"), "[100,100,100,100]");
    assert_eq!(
        data("[-123456789012345678901,-1234567890123456789012,0,-0,7]"),
        "[-123456789012345678901,-1.234567890123456789012e+21,0,0,7]"
    );
    assert_eq!(data("[2,2.0,2e0,20e-1,-0,-0.0]"), "[2,2,2,2,0,0]");
}

#[test]
fn big_exponent_keeps_every_digit() {
    let digits = "31415926535897932384626433832795028841971";
    let json = format!("[{digits}e9999]");
    assert_eq!(data(&json), format!("[3.{}e+10039]", &digits[1..]));
}

#[test]
fn controls_escape_as_lowercase_u00xx() {
    assert_eq!(data(r#""\u0000\u001F\u007f""#), "\"\\u0000\\u001f\u{7f}\"");
    assert_eq!(data(r#""\/\b\f""#), r#""/\b\f""#);
}

#[test]
fn surrogate_pair_escapes_join() {
    assert_eq!(data(r#""\ud83d\ude00""#), "\"😀\"");
    assert_eq!(data(r#""\uD83D\uDE00""#), data("\"😀\""));
}

#[test]
fn lone_surrogates_are_refused() {
    for json in [
        r#""\ud800""#,
        r#""\udc00""#,
        r#""\ud800x""#,
        r#""\ud800\u0041""#,
        r#"{"\ud83d":1}"#,
    ] {
        assert!(
            matches!(material(json), Err(KeyError::LoneSurrogate { .. })),
            "{json}"
        );
    }
}

#[test]
fn nesting_64_is_accepted_and_65_refused() {
    assert!(material(&nested("[", "]", 64)).is_ok());
    assert!(matches!(
        material(&nested("[", "]", 65)),
        Err(KeyError::TooDeep { .. })
    ));
    let objects = |depth: usize| format!("{}1{}", r#"{"a":"#.repeat(depth), "}".repeat(depth));
    assert!(material(&objects(64)).is_ok());
    assert!(matches!(
        material(&objects(65)),
        Err(KeyError::TooDeep { .. })
    ));
    // serde_json values and hand-built values obey the same limit.
    let mut deep = json!(1);
    for _ in 0..64 {
        deep = json!([deep]);
    }
    assert!(derive_key(&scope(), KeyInput::Value(&deep), &[]).is_ok());
    let deeper = json!([deep]);
    assert!(matches!(
        derive_key(&scope(), KeyInput::Value(&deeper), &[]),
        Err(KeyError::TooDeep { .. })
    ));
    let mut value = CanonicalValue::Null;
    for _ in 0..65 {
        value = CanonicalValue::Array(vec![value]);
    }
    assert!(matches!(
        derive_key(&scope(), KeyInput::Canonical(&value), &[]),
        Err(KeyError::TooDeep { .. })
    ));
}

#[test]
fn strict_json_is_required() {
    for bad in [
        "",
        " ",
        "{",
        "[1,]",
        r#"{"a":1,}"#,
        "{a:1}",
        "[01]",
        "[1.]",
        "[.5]",
        "[+1]",
        "'a'",
        "[1] 2",
        "[1]x",
        "tru",
        "True",
        "nul",
        "\u{feff}[1]",
        "[1\u{a0}]",
        "\"a\tb\"",
        r#""\x""#,
        r#""\u12""#,
        "\"abc",
        "[1 2]",
        r#"{"a" 1}"#,
        "[-]",
    ] {
        assert!(
            matches!(material(bad), Err(KeyError::Syntax { .. })),
            "{bad:?} should be a syntax error, got {:?}",
            material(bad)
        );
    }
    assert!(material(" \t\r\n[ 1 , { \"a\" : null } ]\n").is_ok());
}

#[test]
fn non_finite_literals_are_named() {
    for (json, value) in [
        ("[NaN]", "NaN"),
        ("[Infinity]", "Infinity"),
        ("[-Infinity]", "-Infinity"),
    ] {
        match material(json) {
            Err(KeyError::NonFinite { value: v, .. }) => assert_eq!(v, value),
            other => panic!("{json}: {other:?}"),
        }
    }
}

#[test]
fn errors_say_where() {
    let err = material(r#"{"items":[{"a":1},{"b":2},{"name":{"x":1,"x":2}}]}"#).unwrap_err();
    assert_eq!(
        err.to_string(),
        "input.items[2].name: duplicate member \"x\" after NFC normalisation; send each member once"
    );
    let err = material(r#"{"odd key":[1,NaN]}"#).unwrap_err();
    assert!(
        err.to_string()
            .starts_with(r#"input["odd key"][1]: NaN is not a finite number"#),
        "{err}"
    );
    let err = material(r#"{"a":"\ud800"}"#).unwrap_err();
    assert!(
        err.to_string()
            .starts_with(r"input.a: lone surrogate \ud800 at byte 6"),
        "{err}"
    );
    let err = material("{flight:1}").unwrap_err();
    assert!(
        err.to_string()
            .starts_with("input: not valid JSON at byte 1"),
        "{err}"
    );
    let err = derive_key(&scope(), KeyInput::Explicit(" \u{3000}"), &[]).unwrap_err();
    assert!(err.to_string().starts_with("explicit key:"), "{err}");
}

#[test]
fn duplicates_after_nfc_are_refused_in_every_input_form() {
    let json = "{\"\u{e9}\":1,\"e\u{301}\":2}";
    assert!(matches!(
        material(json),
        Err(KeyError::DuplicateMember { .. })
    ));
    let value = json!({"\u{e9}": 1, "e\u{301}": 2});
    assert!(matches!(
        derive_key(&scope(), KeyInput::Value(&value), &[]),
        Err(KeyError::DuplicateMember { .. })
    ));
    assert!(matches!(
        CanonicalValue::from_json_value(&value),
        Err(KeyError::DuplicateMember { .. })
    ));
    let members = vec![
        ("\u{e9}", CanonicalValue::Null),
        ("e\u{301}", CanonicalValue::Null),
    ];
    assert!(CanonicalObject::try_from_members(members).is_err());
    // Also when key arguments select another member.
    let json = r#"{"keep":1,"x":1,"x":2}"#;
    assert!(canonical_material(&scope(), KeyInput::Json(json), &args(&["keep"])).is_err());
}

#[test]
fn key_arguments_pick_members_and_keep_null() {
    let json = r#"{"c":3,"b":null,"a":1}"#;
    let m = canonical_material(&scope(), KeyInput::Json(json), &args(&["c", "b"])).unwrap();
    assert!(m.ends_with(r#""input",{"b":null,"c":3}]"#), "{m}");
    // A name listed twice is refused, as when a tool is built.
    let err = canonical_material(&scope(), KeyInput::Json(json), &args(&["c", "b", "c"]));
    assert_eq!(
        err,
        Err(KeyError::DuplicateKeyArgument { name: "c".into() })
    );
    let err = canonical_material(&scope(), KeyInput::Json(json), &args(&["a", "d"])).unwrap_err();
    assert_eq!(err, KeyError::MissingKeyArgument { name: "d".into() });
    let err = canonical_material(&scope(), KeyInput::Json("[1]"), &args(&["a"])).unwrap_err();
    assert!(matches!(err, KeyError::KeyArgumentsNeedObject { .. }));
    // Key argument names are NFC-normalised too.
    let m = canonical_material(
        &scope(),
        KeyInput::Json("{\"caf\u{e9}\":1,\"z\":2}"),
        &args(&["cafe\u{301}"]),
    );
    assert!(m.unwrap().ends_with("{\"caf\u{e9}\":1}]"));
}

#[test]
fn every_input_form_gives_one_key() {
    let json = r#"{"when":"2024-05-01","amount":12.50,"seats":[1,2],"who":{"name":"Jose\u0301","vip":true}}"#;
    let value: serde_json::Value = serde_json::from_str(json).unwrap();
    let canonical = CanonicalValue::parse(json).unwrap();
    let from_value = CanonicalValue::from_json_value(&value).unwrap();
    assert_eq!(canonical, from_value);
    let inputs = [
        KeyInput::Json(json),
        KeyInput::Value(&value),
        KeyInput::Canonical(&canonical),
    ];
    for key_arguments in [args(&[]), args(&["who", "amount"])] {
        let keys: Vec<_> = inputs
            .iter()
            .map(|input| derive_key(&scope(), *input, &key_arguments).unwrap())
            .collect();
        assert!(keys.windows(2).all(|w| w[0] == w[1]), "{key_arguments:?}");
    }
}

#[test]
fn value_floats_stand_for_shortest_decimal() {
    let value = json!({"x": 0.1, "y": 1e23, "z": 2.0, "w": -0.0, "big": u64::MAX, "neg": i64::MIN});
    let m = canonical_material(&scope(), KeyInput::Value(&value), &[]).unwrap();
    assert!(
        m.ends_with(r#"{"big":18446744073709551615,"neg":-9223372036854775808,"w":0,"x":0.1,"y":1e+23,"z":2}]"#),
        "{m}"
    );
}

#[test]
fn value_floats_agree_with_native_f64_conversion() {
    // serde_json prints floats with its own shortest writer; the key must not depend on it.
    // Half the samples are random bits, half sit where ties between candidates happen.
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    for i in 0..40_000 {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        let bits = if i % 2 == 0 {
            state
        } else {
            let exponent = 1075 + (state % 8) - 4;
            exponent << 52 | (state >> 12) | 1
        };
        let x = f64::from_bits(bits);
        if !x.is_finite() {
            continue;
        }
        let via_value = CanonicalValue::from_json_value(&json!(x)).unwrap();
        let via_native = CanonicalValue::Number(Number::try_from(x).unwrap());
        assert_eq!(via_value, via_native, "bits {bits:#x}");
    }
}

#[test]
fn scope_tenant_run_and_explicit_keys_are_nfc() {
    let composed = KeyScope {
        scope: "caf\u{e9}",
        tenant: Some("\u{c5}"),
        run: Some("\u{f1}"),
    };
    let decomposed = KeyScope {
        scope: "cafe\u{301}",
        tenant: Some("A\u{30a}"),
        run: Some("n\u{303}"),
    };
    let explicit = |s: &KeyScope, k| derive_key(s, KeyInput::Explicit(k), &[]).unwrap();
    assert_eq!(
        explicit(&composed, "\u{e9}"),
        explicit(&decomposed, "e\u{301}")
    );
    let empty_tenant = KeyScope {
        tenant: Some(""),
        ..scope()
    };
    assert_ne!(explicit(&empty_tenant, "k"), explicit(&scope(), "k"));
}

#[test]
fn blank_is_unicode_white_space() {
    for blank in [
        "",
        " ",
        "\t\n\u{b}\u{c}\r",
        "\u{85}\u{a0}\u{1680}",
        "\u{2000}\u{200a}\u{2028}\u{2029}\u{202f}\u{205f}\u{3000}",
    ] {
        assert!(is_blank(blank), "{blank:?}");
    }
    for not_blank in ["a", "\u{1c}", "\u{200b}", "\u{feff}", " x ", "\u{180e}"] {
        assert!(!is_blank(not_blank), "{not_blank:?}");
    }
}

#[test]
fn key_hex_round_trips() {
    let key = derive_key(&scope(), KeyInput::Explicit("k"), &[]).unwrap();
    let hex = key.hex();
    assert_eq!(hex.len(), 64);
    assert!(hex
        .bytes()
        .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)));
    assert_eq!(key.to_string(), hex);
    assert_eq!(format!("{key:?}"), format!("Key({hex})"));
    assert_eq!(hex.parse::<Key>().unwrap(), key);
    assert_eq!(hex.to_uppercase().parse::<Key>().unwrap(), key);
    let mut out = [0u8; 64];
    key.write_hex(&mut out);
    assert_eq!(&out[..], hex.as_bytes());
    assert_eq!(Key::from_bytes(*key.as_bytes()), key);
    let short = "abc".parse::<Key>().unwrap_err();
    assert!(short.to_string().contains("got 3 characters"), "{short}");
    let bad = format!("{}g", &hex[..63]).parse::<Key>().unwrap_err();
    assert!(bad.to_string().contains("position 64"), "{bad}");
}

#[test]
fn canonical_object_keeps_utf16_order_and_nfc_names() {
    let mut object = CanonicalObject::new();
    assert_eq!(object.insert("\u{fb01}", 1i64.into_value()), None);
    object.insert("\u{1f600}", 2i64.into_value());
    object.insert("a", 3i64.into_value());
    object.insert("e\u{301}", CanonicalValue::Null);
    let names: Vec<&str> = object.iter().map(|(n, _)| n).collect();
    assert_eq!(names, ["a", "\u{e9}", "\u{1f600}", "\u{fb01}"]);
    assert_eq!(object.get("\u{e9}"), Some(&CanonicalValue::Null));
    assert_eq!(
        object.insert("\u{e9}", true.into()),
        Some(CanonicalValue::Null)
    );
    assert_eq!(object.len(), 4);
}

trait IntoValue {
    fn into_value(self) -> CanonicalValue;
}

impl IntoValue for i64 {
    fn into_value(self) -> CanonicalValue {
        CanonicalValue::Number(Number::from(self))
    }
}

#[test]
fn members_sort_in_utf16_order_whatever_their_length() {
    let pieces = [
        "a",
        "b",
        "aaaaaaaa",
        "\u{e9}",
        "\u{fb01}",
        "\u{1f600}",
        "\u{ffff}",
        "\u{10000}",
        "z",
        "\u{7f}",
    ];
    let mut state = 0x2545_F491_4F6C_DD1Du64;
    for _ in 0..300 {
        let mut names: Vec<String> = Vec::new();
        for _ in 0..(state % 9) {
            let mut name = String::new();
            for _ in 0..(1 + state % 5) {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                name.push_str(pieces[(state % pieces.len() as u64) as usize]);
            }
            if !names.contains(&name) {
                names.push(name);
            }
        }
        state = state.wrapping_add(1);
        let members: Vec<String> = names
            .iter()
            .map(|n| format!("{}:1", serde_json::to_string(n).unwrap()))
            .collect();
        let json = format!("{{{}}}", members.join(","));
        let parsed = CanonicalValue::parse(&json).unwrap();
        let CanonicalValue::Object(object) = parsed else {
            panic!("an object")
        };
        let order: Vec<&str> = object.iter().map(|(n, _)| n).collect();
        let mut expected: Vec<&str> = names.iter().map(String::as_str).collect();
        expected.sort_by(|a, b| a.encode_utf16().cmp(b.encode_utf16()));
        assert_eq!(order, expected, "{json}");
        // The streamed writer agrees with the parsed value.
        let streamed = canonical_material(&scope(), KeyInput::Json(&json), &[]).unwrap();
        let from_value = canonical_material(
            &scope(),
            KeyInput::Canonical(&CanonicalValue::Object(object)),
            &[],
        )
        .unwrap();
        assert_eq!(streamed, from_value);
    }
}

#[test]
fn nfc_helper_normalises_identity_strings() {
    use std::borrow::Cow;
    assert_eq!(super::nfc("e\u{301}"), "\u{e9}");
    assert_eq!(super::nfc("\u{e9}"), "\u{e9}");
    assert!(matches!(super::nfc("acme"), Cow::Borrowed("acme")));
    assert!(matches!(super::nfc("\u{e9}"), Cow::Borrowed(_)));
}
