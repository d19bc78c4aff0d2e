//! Owned canonical values, and canonical writing of those and of `serde_json::Value`s.

use std::borrow::Cow;

use serde_json::{Map, Value};

use super::number::{self, Number, StackText};
use super::parse::{self, enter, sort_members, Tape, Token};
use super::sink::Sink;
use super::text::{cmp_utf16, nfc, nfc_owned, write_nfc_str, write_str};
use super::{Failure, Fallible, KeyError, Problem};

/// A parsed JSON value with exact decimal numbers, NFC strings and duplicate-checked members.
///
/// Build one with [`CanonicalValue::parse`] (JSON text) or
/// [`CanonicalValue::from_json_value`], or directly; a `String` built by hand need not be in
/// NFC (it is normalised when the key is derived), while object member names always are,
/// because [`CanonicalObject`] normalises them on the way in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CanonicalValue {
    /// `null`.
    Null,
    /// `true` or `false`; never equal to a number.
    Bool(bool),
    /// An exact decimal number.
    Number(Number),
    /// A string (normalised to NFC when written).
    String(String),
    /// An array; order matters.
    Array(Vec<CanonicalValue>),
    /// An object; member order does not matter.
    Object(CanonicalObject),
}

/// A JSON object's members: names in NFC, unique, kept in UTF-16 code unit order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CanonicalObject {
    members: Vec<(String, CanonicalValue)>,
}

impl CanonicalObject {
    /// An object with no members.
    pub fn new() -> Self {
        CanonicalObject::default()
    }

    /// Builds an object from members, refusing two names that are equal after NFC.
    pub fn try_from_members<N, I>(members: I) -> Result<Self, KeyError>
    where
        N: Into<String>,
        I: IntoIterator<Item = (N, CanonicalValue)>,
    {
        let mut members: Vec<(String, CanonicalValue)> = members
            .into_iter()
            .map(|(name, value)| (nfc_owned(name.into()), value))
            .collect();
        sort_members(&mut members, |m| &m.0).map_err(|p| p.into_error("object"))?;
        Ok(CanonicalObject { members })
    }

    /// Sets member `name` (NFC-normalised) to `value`, returning the value it replaces.
    pub fn insert(&mut self, name: &str, value: CanonicalValue) -> Option<CanonicalValue> {
        let name = nfc(name);
        match self.position(&name) {
            Ok(i) => Some(std::mem::replace(&mut self.members[i].1, value)),
            Err(i) => {
                self.members.insert(i, (name.into_owned(), value));
                None
            }
        }
    }

    /// The value of member `name` (compared after NFC), if present.
    pub fn get(&self, name: &str) -> Option<&CanonicalValue> {
        let name = nfc(name);
        self.position(&name).ok().map(|i| &self.members[i].1)
    }

    /// The members in canonical order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &CanonicalValue)> {
        self.members.iter().map(|(n, v)| (n.as_str(), v))
    }

    /// How many members there are.
    pub fn len(&self) -> usize {
        self.members.len()
    }

    /// Whether there are no members.
    pub fn is_empty(&self) -> bool {
        self.members.is_empty()
    }

    fn position(&self, nfc_name: &str) -> Result<usize, usize> {
        self.members
            .binary_search_by(|(n, _)| cmp_utf16(n, nfc_name))
    }
}

impl CanonicalValue {
    /// Parses strict JSON text (RFC 8259) within SPEC §2's limits: exact numbers, NFC
    /// strings, no duplicate members, no lone surrogates, at most 64 levels of nesting.
    pub fn parse(json: &str) -> Result<CanonicalValue, KeyError> {
        let tape = parse::parse(json).map_err(|f| f.into_error("input"))?;
        Ok(CanonicalValue::from_tape(&tape, 0).0)
    }

    /// Converts a `serde_json::Value`; a float in it stands for its shortest round-trip
    /// decimal. Member names that collide after NFC, and nesting deeper than 64, are errors.
    pub fn from_json_value(v: &Value) -> Result<CanonicalValue, KeyError> {
        convert_json_value(v, 0).map_err(|f| f.into_error("input"))
    }

    /// Converts the value at token `at` of `tape`, returning it and the index after it.
    fn from_tape(tape: &Tape<'_>, at: usize) -> (CanonicalValue, usize) {
        let value = match tape.token(at) {
            Token::Null => CanonicalValue::Null,
            Token::True => CanonicalValue::Bool(true),
            Token::False => CanonicalValue::Bool(false),
            Token::Number { start, end } | Token::Integer { start, end } => {
                CanonicalValue::Number(Number::from_decimal(tape.number(start, end)))
            }
            Token::Plain { .. } | Token::Owned { .. } | Token::Member { .. } => {
                CanonicalValue::String(tape.string(at).to_owned())
            }
            Token::Array { end } => {
                let mut items = Vec::new();
                let mut next = at + 1;
                while next < end as usize {
                    let (item, after) = CanonicalValue::from_tape(tape, next);
                    items.push(item);
                    next = after;
                }
                return (CanonicalValue::Array(items), end as usize);
            }
            Token::Object { end, first, count } => {
                let members = tape
                    .sorted_names(first, count)
                    .map(|name| {
                        let (value, _) = CanonicalValue::from_tape(tape, name + 1);
                        (tape.string(name).to_owned(), value)
                    })
                    .collect();
                return (
                    CanonicalValue::Object(CanonicalObject { members }),
                    end as usize,
                );
            }
        };
        (value, at + 1)
    }

    /// The JSON type name, for messages.
    pub(super) fn kind(&self) -> &'static str {
        match self {
            CanonicalValue::Null => "null",
            CanonicalValue::Bool(_) => "a boolean",
            CanonicalValue::Number(_) => "a number",
            CanonicalValue::String(_) => "a string",
            CanonicalValue::Array(_) => "an array",
            CanonicalValue::Object(_) => "an object",
        }
    }
}

impl From<Number> for CanonicalValue {
    fn from(n: Number) -> Self {
        CanonicalValue::Number(n)
    }
}

impl From<bool> for CanonicalValue {
    fn from(b: bool) -> Self {
        CanonicalValue::Bool(b)
    }
}

impl From<String> for CanonicalValue {
    fn from(s: String) -> Self {
        CanonicalValue::String(s)
    }
}

impl From<&str> for CanonicalValue {
    fn from(s: &str) -> Self {
        CanonicalValue::String(s.to_owned())
    }
}

impl From<CanonicalObject> for CanonicalValue {
    fn from(o: CanonicalObject) -> Self {
        CanonicalValue::Object(o)
    }
}

fn convert_json_value(v: &Value, depth: usize) -> Fallible<CanonicalValue> {
    Ok(match v {
        Value::Null => CanonicalValue::Null,
        Value::Bool(b) => CanonicalValue::Bool(*b),
        Value::Number(n) => CanonicalValue::Number(with_json_number(n, Number::from_decimal)?),
        Value::String(s) => CanonicalValue::String(nfc(s).into_owned()),
        Value::Array(items) => {
            let depth = enter(depth)?;
            let items = items
                .iter()
                .enumerate()
                .map(|(i, item)| convert_json_value(item, depth).map_err(|f| f.at_index(i)))
                .collect::<Fallible<_>>()?;
            CanonicalValue::Array(items)
        }
        Value::Object(map) => {
            let depth = enter(depth)?;
            let members = sorted_json_members(map)?
                .into_iter()
                .map(|(name, value)| {
                    let value = convert_json_value(value, depth).map_err(|f| f.at_member(&name))?;
                    Ok((name.into_owned(), value))
                })
                .collect::<Fallible<_>>()?;
            CanonicalValue::Object(CanonicalObject { members })
        }
    })
}

/// Runs `f` on the exact decimal of a `serde_json::Number`.
///
/// The number's own `Display` is read back as a literal: integers print exactly, floats
/// print their shortest round-trip digits, and with serde_json's `arbitrary_precision`
/// feature the original literal comes back, so the value is exact in every build.
pub(super) fn with_json_number<R>(
    n: &serde_json::Number,
    f: impl FnOnce(number::Decimal<'_>) -> R,
) -> Fallible<R> {
    use std::fmt::Write as _;
    if let Some(x) = n.as_f64().filter(|x| !x.is_finite()) {
        return Err(Failure::new(Problem::NonFinite {
            value: number::non_finite_name(x),
        }));
    }
    let mut text = StackText::new();
    let long;
    let bytes = if write!(text, "{n}").is_ok() {
        text.as_bytes()
    } else {
        long = n.to_string();
        long.as_bytes()
    };
    match number::scan_literal(bytes, 0) {
        Ok((d, end)) if end == bytes.len() => Ok(f(d)),
        Ok((_, end)) => Err(Failure::new(Problem::syntax(end, "not a JSON number"))),
        Err(problem) => Err(Failure::new(problem)),
    }
}

/// Writes a `serde_json::Number`: integers directly (they are already canonical), other
/// numbers through their exact decimal.
fn write_json_number<S: Sink>(n: &serde_json::Number, out: &mut S) -> Fallible<()> {
    if let Some(u) = n.as_u64() {
        write_integer(false, u, out);
    } else if let Some(i) = n.as_i64() {
        write_integer(i < 0, i.unsigned_abs(), out);
    } else {
        with_json_number(n, |d| number::write_decimal(d, out))?;
    }
    Ok(())
}

/// Writes an integer of at most 20 digits, which ECMAScript writes plainly.
fn write_integer<S: Sink>(negative: bool, mut magnitude: u64, out: &mut S) {
    let mut digits = [0u8; 21];
    let mut at = digits.len();
    loop {
        at -= 1;
        digits[at] = b'0' + (magnitude % 10) as u8;
        magnitude /= 10;
        if magnitude == 0 {
            break;
        }
    }
    if negative {
        at -= 1;
        digits[at] = b'-';
    }
    out.put(&digits[at..]);
}

/// An object's members with NFC names, sorted in UTF-16 order, duplicates refused.
pub(super) fn sorted_json_members(
    map: &Map<String, Value>,
) -> Fallible<Vec<(Cow<'_, str>, &Value)>> {
    let mut members: Vec<(Cow<'_, str>, &Value)> =
        map.iter().map(|(name, value)| (nfc(name), value)).collect();
    sort_members(&mut members, |m| &m.0).map_err(Failure::new)?;
    Ok(members)
}

/// Writes a `serde_json::Value` as canonical JSON, `depth` containers deep.
pub(super) fn write_json_value<S: Sink>(v: &Value, depth: usize, out: &mut S) -> Fallible<()> {
    match v {
        Value::Null => out.put(b"null"),
        Value::Bool(true) => out.put(b"true"),
        Value::Bool(false) => out.put(b"false"),
        Value::Number(n) => write_json_number(n, out)?,
        Value::String(s) => write_nfc_str(s, out),
        Value::Array(items) => {
            let depth = enter(depth)?;
            out.put(b"[");
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.put(b",");
                }
                write_json_value(item, depth, out).map_err(|f| f.at_index(i))?;
            }
            out.put(b"]");
        }
        Value::Object(map) => {
            let depth = enter(depth)?;
            let members = sorted_json_members(map)?;
            write_json_members(members.iter().map(|(n, v)| (n.as_ref(), *v)), depth, out)?;
        }
    }
    Ok(())
}

/// Writes sorted `serde_json` members as a canonical object whose members are `depth` deep.
pub(super) fn write_json_members<'v, S: Sink>(
    members: impl Iterator<Item = (&'v str, &'v Value)>,
    depth: usize,
    out: &mut S,
) -> Fallible<()> {
    out.put(b"{");
    for (i, (name, value)) in members.enumerate() {
        if i > 0 {
            out.put(b",");
        }
        write_str(name, out);
        out.put(b":");
        write_json_value(value, depth, out).map_err(|f| f.at_member(name))?;
    }
    out.put(b"}");
    Ok(())
}

/// Writes a [`CanonicalValue`] as canonical JSON, `depth` containers deep.
pub(super) fn write_canonical<S: Sink>(
    v: &CanonicalValue,
    depth: usize,
    out: &mut S,
) -> Fallible<()> {
    match v {
        CanonicalValue::Null => out.put(b"null"),
        CanonicalValue::Bool(true) => out.put(b"true"),
        CanonicalValue::Bool(false) => out.put(b"false"),
        CanonicalValue::Number(n) => number::write_decimal(n.decimal(), out),
        CanonicalValue::String(s) => write_nfc_str(s, out),
        CanonicalValue::Array(items) => {
            let depth = enter(depth)?;
            out.put(b"[");
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.put(b",");
                }
                write_canonical(item, depth, out).map_err(|f| f.at_index(i))?;
            }
            out.put(b"]");
        }
        CanonicalValue::Object(object) => {
            let depth = enter(depth)?;
            write_canonical_members(object.iter(), depth, out)?;
        }
    }
    Ok(())
}

/// Writes sorted canonical members as an object whose members are `depth` deep.
pub(super) fn write_canonical_members<'v, S: Sink>(
    members: impl Iterator<Item = (&'v str, &'v CanonicalValue)>,
    depth: usize,
    out: &mut S,
) -> Fallible<()> {
    out.put(b"{");
    for (i, (name, value)) in members.enumerate() {
        if i > 0 {
            out.put(b",");
        }
        write_str(name, out);
        out.put(b":");
        write_canonical(value, depth, out).map_err(|f| f.at_member(name))?;
    }
    out.put(b"}");
    Ok(())
}
