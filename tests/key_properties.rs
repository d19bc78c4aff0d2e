//! Properties of key derivation: spelling never changes a key, meaning always does (SPEC §2).
//!
//! A random abstract value is rendered as JSON text in many spellings — member order,
//! composed or decomposed characters, `\u` escapes, number notation, whitespace — which
//! must all give one key; changing any single leaf of the value must give another.

use idemkit::key::{derive_key, CanonicalValue, Key, KeyInput, KeyScope};
use proptest::prelude::*;

/// A character of a generated string, which may have several spellings.
#[derive(Clone, Debug, PartialEq)]
enum Piece {
    /// A printable ASCII character (including `"` and `\`, which must be escaped).
    Ascii(u8),
    /// A control character below U+0020.
    Control(u8),
    /// An entry of [`VARIANTS`]: one character with canonically equivalent spellings.
    Variant(usize),
}

/// Canonically equivalent spellings; the first is the NFC form.
const VARIANTS: &[&[&str]] = &[
    &["\u{e9}", "e\u{301}"],
    &["\u{c5}", "A\u{30a}", "\u{212b}"],
    &["\u{f1}", "n\u{303}"],
    &[
        "\u{1e69}",
        "s\u{323}\u{307}",
        "s\u{307}\u{323}",
        "\u{1e63}\u{307}",
    ],
    &["\u{ac00}", "\u{1100}\u{1161}"],
    &["\u{65e5}"],
    &["\u{1f600}"],
    &["\u{fb01}"],
    &["\u{2028}"],
];

/// An abstract JSON value; numbers are `mantissa × 10^exponent`.
#[derive(Clone, Debug)]
enum Tree {
    Null,
    Bool(bool),
    Number(i128, i32),
    String(Vec<Piece>),
    Array(Vec<Tree>),
    Object(Vec<(Vec<Piece>, Tree)>),
}

fn piece() -> impl Strategy<Value = Piece> {
    prop_oneof![
        6 => (0x20u8..0x7f).prop_map(Piece::Ascii),
        1 => (0u8..0x20).prop_map(Piece::Control),
        3 => (0..VARIANTS.len()).prop_map(Piece::Variant),
    ]
}

fn text() -> impl Strategy<Value = Vec<Piece>> {
    prop::collection::vec(piece(), 0..6)
}

fn tree() -> impl Strategy<Value = Tree> {
    let leaf = prop_oneof![
        Just(Tree::Null),
        any::<bool>().prop_map(Tree::Bool),
        (-1_000_000_000_000i128..1_000_000_000_000, -20i32..20)
            .prop_map(|(m, e)| Tree::Number(m, e)),
        text().prop_map(Tree::String),
    ];
    leaf.prop_recursive(4, 40, 5, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(Tree::Array),
            prop::collection::vec((text(), inner), 0..5).prop_map(|members| {
                // Distinct abstract names are distinct after NFC.
                let mut unique: Vec<(Vec<Piece>, Tree)> = Vec::new();
                for (name, value) in members {
                    if !unique.iter().any(|(n, _)| *n == name) {
                        unique.push((name, value));
                    }
                }
                Tree::Object(unique)
            }),
        ]
    })
}

/// A small deterministic generator for the spelling choices.
struct Choices(u64);

impl Choices {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n as u64) as usize
    }

    fn coin(&mut self) -> bool {
        self.below(2) == 0
    }
}

/// Renders `tree` as JSON text, every spelling choice taken from `choices`.
fn render(tree: &Tree, choices: &mut Choices) -> String {
    let mut out = String::new();
    render_into(tree, choices, &mut out);
    out
}

fn space(choices: &mut Choices, out: &mut String) {
    for _ in 0..choices.below(3).saturating_sub(1) {
        out.push([' ', '\t', '\n', '\r'][choices.below(4)]);
    }
}

fn render_into(tree: &Tree, choices: &mut Choices, out: &mut String) {
    space(choices, out);
    match tree {
        Tree::Null => out.push_str("null"),
        Tree::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Tree::Number(m, e) => out.push_str(&spell_number(*m, *e, choices)),
        Tree::String(pieces) => render_string(pieces, choices, out),
        Tree::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                render_into(item, choices, out);
            }
            space(choices, out);
            out.push(']');
        }
        Tree::Object(members) => {
            let mut order: Vec<usize> = (0..members.len()).collect();
            for i in (1..order.len()).rev() {
                order.swap(i, choices.below(i + 1));
            }
            out.push('{');
            for (n, &i) in order.iter().enumerate() {
                if n > 0 {
                    out.push(',');
                }
                space(choices, out);
                render_string(&members[i].0, choices, out);
                space(choices, out);
                out.push(':');
                render_into(&members[i].1, choices, out);
            }
            space(choices, out);
            out.push('}');
        }
    }
}

fn render_string(pieces: &[Piece], choices: &mut Choices, out: &mut String) {
    out.push('"');
    for piece in pieces {
        match piece {
            Piece::Ascii(b) => {
                let c = *b as char;
                match c {
                    '"' | '\\' => {
                        out.push('\\');
                        out.push(c);
                    }
                    '/' if choices.coin() => out.push_str("\\/"),
                    _ if choices.below(4) == 0 => out.push_str(&format!("\\u{:04X}", *b)),
                    _ => out.push(c),
                }
            }
            Piece::Control(b) => match (*b, choices.coin()) {
                (b'\n', true) => out.push_str("\\n"),
                (b'\t', true) => out.push_str("\\t"),
                (0x08, true) => out.push_str("\\b"),
                _ => out.push_str(&format!("\\u{:04x}", *b)),
            },
            Piece::Variant(v) => {
                let spellings = VARIANTS[*v];
                for c in spellings[choices.below(spellings.len())].chars() {
                    if choices.coin() {
                        out.push(c);
                    } else {
                        let mut units = [0u16; 2];
                        for unit in c.encode_utf16(&mut units) {
                            out.push_str(&format!("\\u{unit:04x}"));
                        }
                    }
                }
            }
        }
    }
    out.push('"');
}

/// Spells `m × 10^e` as one of its many JSON literals.
fn spell_number(m: i128, e: i32, choices: &mut Choices) -> String {
    let sign = if m < 0 || (m == 0 && choices.coin()) {
        "-"
    } else {
        ""
    };
    if m == 0 {
        return format!(
            "{sign}{}",
            ["0", "0.0", "0e7", "0.000E-3"][choices.below(4)]
        );
    }
    // Trailing zeros moved from the exponent into the digits.
    let zeros = choices.below(3);
    let digits = format!("{}{}", m.unsigned_abs(), "0".repeat(zeros));
    let mut exponent = e as i64 - zeros as i64;
    let mut literal = match choices.below(3) {
        // Integer digits.
        0 => digits,
        // A decimal point somewhere inside.
        1 => {
            let point = 1 + choices.below(digits.len());
            exponent += (digits.len() - point) as i64;
            if point == digits.len() {
                format!("{digits}.0")
            } else {
                format!("{}.{}", &digits[..point], &digits[point..])
            }
        }
        // 0.digits
        _ => {
            exponent += digits.len() as i64;
            format!("0.{digits}")
        }
    };
    if exponent != 0 || choices.coin() {
        let mark = if choices.coin() { "e" } else { "E" };
        let plus = if exponent >= 0 && choices.coin() {
            "+"
        } else {
            ""
        };
        literal = format!("{literal}{mark}{plus}{exponent}");
    }
    format!("{sign}{literal}")
}

fn key_of(json: &str) -> Key {
    let scope = KeyScope::new("prop");
    derive_key(&scope, KeyInput::Json(json), &[]).unwrap_or_else(|e| panic!("{json}: {e}"))
}

/// How many leaves `tree` has.
fn leaf_count(tree: &Tree) -> usize {
    match tree {
        Tree::Array(items) => items.iter().map(leaf_count).sum(),
        Tree::Object(members) => members.iter().map(|(_, v)| leaf_count(v)).sum(),
        _ => 1,
    }
}

/// Changes the `index`-th leaf's value: another character, +1, the other boolean, 0 for null.
fn change_leaf(tree: &mut Tree, index: &mut usize, pick: usize) -> bool {
    match tree {
        Tree::Array(items) => items.iter_mut().any(|t| change_leaf(t, index, pick)),
        Tree::Object(members) => members.iter_mut().any(|(_, t)| change_leaf(t, index, pick)),
        leaf => {
            if *index > 0 {
                *index -= 1;
                return false;
            }
            match leaf {
                Tree::Null => *leaf = Tree::Number(0, 0),
                Tree::Bool(b) => *b = !*b,
                Tree::Number(m, e) => {
                    // m × 10^e + 1, exactly.
                    *leaf = if *e >= 0 {
                        Tree::Number(*m * 10i128.pow(*e as u32) + 1, 0)
                    } else {
                        Tree::Number(*m + 10i128.pow(e.unsigned_abs()), *e)
                    };
                }
                Tree::String(pieces) if pieces.is_empty() => pieces.push(Piece::Ascii(b'x')),
                Tree::String(pieces) => {
                    let at = pick % pieces.len();
                    pieces[at] = match &pieces[at] {
                        Piece::Ascii(b'a') => Piece::Ascii(b'b'),
                        Piece::Ascii(_) => Piece::Ascii(b'a'),
                        Piece::Control(c) => Piece::Control((c + 1) % 0x20),
                        Piece::Variant(v) => Piece::Variant((v + 1) % VARIANTS.len()),
                    };
                }
                Tree::Array(_) | Tree::Object(_) => unreachable!("containers are not leaves"),
            }
            true
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn spelling_never_changes_the_key(tree in tree(), first in any::<u64>(), second in any::<u64>()) {
        let a = render(&tree, &mut Choices(first | 1));
        let b = render(&tree, &mut Choices(second | 1));
        prop_assert_eq!(key_of(&a), key_of(&b), "{} vs {}", a, b);
        // The parsed value derives the same key as its text.
        let parsed = CanonicalValue::parse(&b).unwrap();
        let scope = KeyScope::new("prop");
        prop_assert_eq!(derive_key(&scope, KeyInput::Canonical(&parsed), &[]).unwrap(), key_of(&a));
    }

    #[test]
    fn changing_any_leaf_changes_the_key(
        tree in tree(),
        which in any::<usize>(),
        pick in any::<usize>(),
        first in any::<u64>(),
        second in any::<u64>(),
    ) {
        let mut changed = tree.clone();
        let mut index = which % leaf_count(&tree).max(1);
        prop_assume!(change_leaf(&mut changed, &mut index, pick));
        let a = render(&tree, &mut Choices(first | 1));
        let b = render(&changed, &mut Choices(second | 1));
        prop_assert_ne!(key_of(&a), key_of(&b), "{} vs {}", a, b);
    }

    #[test]
    fn number_spellings_agree(m in -1_000_000_000_000i128..1_000_000_000_000, e in -30i32..30, seed in any::<u64>()) {
        let mut choices = Choices(seed | 1);
        let plain = format!("[{m}e{e}]");
        let other = format!("[{}]", spell_number(m, e, &mut choices));
        prop_assert_eq!(key_of(&plain), key_of(&other), "{} vs {}", plain, other);
    }
}

#[test]
fn composed_and_decomposed_names_and_values_agree() {
    let composed = r#"{"caf\u00e9":"\u00c5ngstr\u00f6m","ni\u00f1o":1}"#;
    let decomposed = "{\"nin\u{303}o\":1.0,\"cafe\u{301}\":\"\u{212b}ngstro\u{308}m\"}";
    assert_eq!(key_of(composed), key_of(decomposed));
}
