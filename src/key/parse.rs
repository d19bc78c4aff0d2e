//! A strict, single-pass JSON parser that builds a borrowed tree already in canonical shape.
//!
//! Strings are unescaped and NFC-normalised (borrowed from the input when that changes
//! nothing), numbers keep their exact decimal value, and every object's members are sorted
//! in UTF-16 order and checked for duplicates as soon as the object closes.

use std::borrow::Cow;

use super::number::{self, Decimal};
use super::sink::Sink;
use super::text::{cmp_utf16, nfc_non_ascii, nfc_owned, write_str, NEEDS_ESCAPE};
use super::{Fallible, Failure, Problem, MAX_DEPTH};

/// A JSON value in canonical shape, borrowing from the text it was read from.
pub(super) enum Node<'a> {
    Null,
    Bool(bool),
    Number(Decimal<'a>),
    String(Cow<'a, str>),
    Array(Vec<Node<'a>>),
    /// Sorted by name in UTF-16 order, names unique.
    Object(Vec<Member<'a>>),
}

pub(super) struct Member<'a> {
    pub name: Cow<'a, str>,
    pub value: Node<'a>,
}

/// Parses `text` as exactly one strict JSON value (RFC 8259) within SPEC §2's limits.
pub(super) fn parse(text: &str) -> Fallible<Node<'_>> {
    let mut parser = Parser {
        text,
        bytes: text.as_bytes(),
        pos: 0,
    };
    parser.skip_ws();
    if parser.pos == parser.bytes.len() {
        return Err(Failure::new(Problem::syntax(0, "the text is empty")));
    }
    let node = parser.value(0)?;
    parser.skip_ws();
    if parser.pos != parser.bytes.len() {
        return Err(Failure::new(Problem::syntax(
            parser.pos,
            "unexpected text after the JSON value",
        )));
    }
    Ok(node)
}

/// Sorts members by name in UTF-16 order and refuses two with the same name.
pub(super) fn sort_members<T>(members: &mut [T], name: impl Fn(&T) -> &str) -> Result<(), Problem> {
    if members.len() < 2 {
        return Ok(());
    }
    members.sort_unstable_by(|a, b| cmp_utf16(name(a), name(b)));
    match members.windows(2).find(|pair| name(&pair[0]) == name(&pair[1])) {
        Some(pair) => Err(Problem::Duplicate {
            name: name(&pair[0]).to_owned(),
        }),
        None => Ok(()),
    }
}

/// Opens one more level of nesting, refusing more than [`MAX_DEPTH`].
pub(super) fn enter(depth: usize) -> Fallible<usize> {
    if depth >= MAX_DEPTH {
        Err(Failure::new(Problem::TooDeep))
    } else {
        Ok(depth + 1)
    }
}

struct Parser<'a> {
    text: &'a str,
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Parser<'a> {
    #[inline]
    fn skip_ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.bytes.get(self.pos) {
            self.pos += 1;
        }
    }

    #[inline]
    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.pos).copied()
    }

    fn fail<T>(&self, at: usize, detail: &str) -> Fallible<T> {
        Err(Failure::new(Problem::syntax(at, detail)))
    }

    /// Parses the value at `pos` (whitespace already skipped), inside `depth` containers.
    fn value(&mut self, depth: usize) -> Fallible<Node<'a>> {
        match self.peek() {
            Some(b'{') => self.object(enter(depth)?),
            Some(b'[') => self.array(enter(depth)?),
            Some(b'"') => Ok(Node::String(self.string()?)),
            Some(b't') => self.literal("true", Node::Bool(true)),
            Some(b'f') => self.literal("false", Node::Bool(false)),
            Some(b'n') => self.literal("null", Node::Null),
            Some(b'-' | b'0'..=b'9') => {
                if self.bytes[self.pos..].starts_with(b"-Infinity") {
                    return Err(Failure::new(Problem::NonFinite { value: "-Infinity" }));
                }
                let (decimal, end) =
                    number::scan_literal(self.bytes, self.pos).map_err(Failure::new)?;
                self.pos = end;
                Ok(Node::Number(decimal))
            }
            Some(b'N') if self.bytes[self.pos..].starts_with(b"NaN") => {
                Err(Failure::new(Problem::NonFinite { value: "NaN" }))
            }
            Some(b'I') if self.bytes[self.pos..].starts_with(b"Infinity") => {
                Err(Failure::new(Problem::NonFinite { value: "Infinity" }))
            }
            Some(_) => self.fail(self.pos, "expected a JSON value"),
            None => self.fail(self.pos, "the text ends where a value was expected"),
        }
    }

    fn literal(&mut self, word: &str, node: Node<'a>) -> Fallible<Node<'a>> {
        if self.bytes[self.pos..].starts_with(word.as_bytes()) {
            self.pos += word.len();
            Ok(node)
        } else {
            self.fail(self.pos, "expected a JSON value (true, false and null are lowercase)")
        }
    }

    fn array(&mut self, depth: usize) -> Fallible<Node<'a>> {
        self.pos += 1;
        let mut items = Vec::new();
        self.skip_ws();
        if self.peek() == Some(b']') {
            self.pos += 1;
            return Ok(Node::Array(items));
        }
        loop {
            self.skip_ws();
            let item = self
                .value(depth)
                .map_err(|f| f.at_index(items.len()))?;
            items.push(item);
            self.skip_ws();
            match self.peek() {
                Some(b',') => self.pos += 1,
                Some(b']') => {
                    self.pos += 1;
                    return Ok(Node::Array(items));
                }
                _ => return self.fail(self.pos, "expected `,` or `]` after an array element"),
            }
        }
    }

    fn object(&mut self, depth: usize) -> Fallible<Node<'a>> {
        self.pos += 1;
        let mut members: Vec<Member<'a>> = Vec::new();
        self.skip_ws();
        if self.peek() == Some(b'}') {
            self.pos += 1;
            return Ok(Node::Object(members));
        }
        loop {
            self.skip_ws();
            if self.peek() != Some(b'"') {
                return self.fail(self.pos, "expected a member name in double quotes");
            }
            let name = self.string()?;
            self.skip_ws();
            if self.peek() != Some(b':') {
                return self.fail(self.pos, "expected `:` after a member name");
            }
            self.pos += 1;
            self.skip_ws();
            let value = match self.value(depth) {
                Ok(value) => value,
                Err(f) => return Err(f.at_member(&name)),
            };
            members.push(Member { name, value });
            self.skip_ws();
            match self.peek() {
                Some(b',') => self.pos += 1,
                Some(b'}') => {
                    self.pos += 1;
                    break;
                }
                _ => return self.fail(self.pos, "expected `,` or `}` after an object member"),
            }
        }
        sort_members(&mut members, |m| &m.name).map_err(Failure::new)?;
        Ok(Node::Object(members))
    }

    /// Reads the string whose opening quote is at `pos`, unescaped and in NFC.
    fn string(&mut self) -> Fallible<Cow<'a, str>> {
        let start = self.pos + 1;
        let mut i = start;
        let mut seen = 0u8;
        loop {
            let Some(&b) = self.bytes.get(i) else {
                return self.fail(start - 1, "the string is never closed");
            };
            if !NEEDS_ESCAPE[b as usize] {
                seen |= b;
                i += 1;
                continue;
            }
            match b {
                b'"' => {
                    self.pos = i + 1;
                    let s = &self.text[start..i];
                    return Ok(if seen < 0x80 {
                        Cow::Borrowed(s)
                    } else {
                        nfc_non_ascii(s)
                    });
                }
                b'\\' => return self.escaped_string(start, i).map(Cow::Owned),
                _ => return self.fail(i, "a control character in a string must be escaped"),
            }
        }
    }

    /// The slow path of [`Parser::string`]: from the first backslash at `i` on.
    fn escaped_string(&mut self, start: usize, mut i: usize) -> Fallible<String> {
        let mut out = String::with_capacity(i - start + 16);
        out.push_str(&self.text[start..i]);
        loop {
            let Some(&b) = self.bytes.get(i) else {
                return self.fail(start - 1, "the string is never closed");
            };
            match b {
                b'"' => {
                    self.pos = i + 1;
                    return Ok(nfc_owned(out));
                }
                b'\\' => {
                    let escaped = match self.bytes.get(i + 1) {
                        Some(b'"') => '"',
                        Some(b'\\') => '\\',
                        Some(b'/') => '/',
                        Some(b'b') => '\u{8}',
                        Some(b'f') => '\u{c}',
                        Some(b'n') => '\n',
                        Some(b'r') => '\r',
                        Some(b't') => '\t',
                        Some(b'u') => {
                            let (c, end) = self.unicode_escape(i)?;
                            out.push(c);
                            i = end;
                            continue;
                        }
                        _ => return self.fail(i, "unknown escape sequence"),
                    };
                    out.push(escaped);
                    i += 2;
                }
                0x00..=0x1F => {
                    return self.fail(i, "a control character in a string must be escaped")
                }
                _ => {
                    let run_start = i;
                    while i < self.bytes.len() && !NEEDS_ESCAPE[self.bytes[i] as usize] {
                        i += 1;
                    }
                    out.push_str(&self.text[run_start..i]);
                }
            }
        }
    }

    /// Reads `\uXXXX` at `i` (joined with a following low surrogate escape when it is a
    /// high one), returning the character and the index after the escape(s).
    fn unicode_escape(&self, i: usize) -> Fallible<(char, usize)> {
        let unit = self.hex4(i)?;
        let code = match unit {
            0xD800..=0xDBFF => {
                let low = if self.bytes[i + 6..].starts_with(b"\\u") {
                    self.hex4(i + 6)?
                } else {
                    0
                };
                if !(0xDC00..=0xDFFF).contains(&low) {
                    return Err(Failure::new(Problem::LoneSurrogate { offset: i, code: unit }));
                }
                let code = 0x10000 + ((u32::from(unit) - 0xD800) << 10) + (u32::from(low) - 0xDC00);
                return Ok((char::from_u32(code).unwrap_or('\u{FFFD}'), i + 12));
            }
            0xDC00..=0xDFFF => {
                return Err(Failure::new(Problem::LoneSurrogate { offset: i, code: unit }));
            }
            _ => u32::from(unit),
        };
        // Every code unit outside the surrogate range is a scalar value.
        Ok((char::from_u32(code).unwrap_or('\u{FFFD}'), i + 6))
    }

    /// The four hex digits after the `\u` at `i`.
    fn hex4(&self, i: usize) -> Fallible<u16> {
        let digits = self.bytes.get(i + 2..i + 6);
        let value = digits.and_then(|d| {
            d.iter().try_fold(0u16, |acc, &h| {
                let v = (h as char).to_digit(16)?;
                Some(acc << 4 | v as u16)
            })
        });
        match value {
            Some(v) => Ok(v),
            None => self.fail(i, "`\\u` must be followed by four hex digits"),
        }
    }
}

/// Writes a parsed tree as canonical JSON.
pub(super) fn write_node<S: Sink>(node: &Node<'_>, out: &mut S) {
    match node {
        Node::Null => out.put(b"null"),
        Node::Bool(true) => out.put(b"true"),
        Node::Bool(false) => out.put(b"false"),
        Node::Number(d) => number::write_decimal(*d, out),
        Node::String(s) => write_str(s, out),
        Node::Array(items) => {
            out.put(b"[");
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.put(b",");
                }
                write_node(item, out);
            }
            out.put(b"]");
        }
        Node::Object(members) => write_members(members.iter(), out),
    }
}

/// Writes already sorted members as a canonical JSON object.
pub(super) fn write_members<'m, 'a: 'm, S: Sink>(
    members: impl Iterator<Item = &'m Member<'a>>,
    out: &mut S,
) {
    out.put(b"{");
    for (i, member) in members.enumerate() {
        if i > 0 {
            out.put(b",");
        }
        write_str(&member.name, out);
        out.put(b":");
        write_node(&member.value, out);
    }
    out.put(b"}");
}
