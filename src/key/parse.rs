//! A strict, single-pass JSON parser that records the value as a flat tape already in
//! canonical shape.
//!
//! Strings are unescaped and NFC-normalised (borrowed from the input when that changes
//! nothing), numbers keep their literal (read exactly when written), and every object's
//! members are sorted in UTF-16 order and checked for duplicates as soon as it closes. The
//! tape is one vector of small tokens plus one text arena, so parsing allocates a few
//! times per input rather than once per container or string.

use std::borrow::Cow;

use super::number;
use super::sink::Sink;
use super::text::{cmp_utf16, cmp_utf16_bytes, nfc, nfc_non_ascii, write_str, NEEDS_ESCAPE};
use super::{Failure, Fallible, Problem, MAX_DEPTH};

/// One token of a [`Tape`]. Values appear in document order; an object's sorted member
/// list follows its last member.
#[derive(Clone, Copy, Debug)]
pub(super) enum Token {
    Null,
    True,
    False,
    /// A number literal, `text[start..end]`, already checked against the grammar and limits.
    Number {
        start: u32,
        end: u32,
    },
    /// An integer literal that is already canonical (up to 21 digits, not `-0`).
    Integer {
        start: u32,
        end: u32,
    },
    /// A string borrowed from the input, `text[start..end]`: in NFC, and free of quotes,
    /// backslashes and controls, so it is written without escaping.
    Plain {
        start: u32,
        end: u32,
    },
    /// A string that was unescaped or normalised: `arena[start..end]`.
    Owned {
        start: u32,
        end: u32,
    },
    /// An array whose elements follow, up to token `end` (exclusive).
    Array {
        end: u32,
    },
    /// An object whose members (a name token, then the value's tokens) follow, then
    /// `count` [`Token::Member`]s from token `first` in canonical order; all up to token `end`.
    Object {
        end: u32,
        first: u32,
        count: u32,
    },
    /// In an object's sorted member list: the index of a member's name token.
    Member {
        name: u32,
    },
}

/// A parsed JSON value: its tokens, and the text they point into.
pub(super) struct Tape<'a> {
    text: &'a str,
    tokens: Vec<Token>,
    /// Strings that were unescaped or normalised, end to end.
    arena: String,
}

/// The longest text accepted: positions in the text and the arena must fit in 31 bits,
/// and NFC may triple a string's length.
const MAX_TEXT_LEN: usize = 1 << 29;

/// Parses `text` as exactly one strict JSON value (RFC 8259) within SPEC §2's limits.
pub(super) fn parse(text: &str) -> Fallible<Tape<'_>> {
    if text.len() > MAX_TEXT_LEN {
        return Err(Failure::new(Problem::syntax(
            0,
            "the text is longer than 512 MiB",
        )));
    }
    let mut parser = Parser {
        text,
        bytes: text.as_bytes(),
        pos: 0,
        tape: Tape {
            text,
            tokens: Vec::with_capacity(text.len() / 4 + 8),
            arena: String::new(),
        },
        pending: Vec::with_capacity(16),
    };
    parser.skip_ws();
    if parser.pos == parser.bytes.len() {
        return Err(Failure::new(Problem::syntax(0, "the text is empty")));
    }
    parser.value(0)?;
    parser.skip_ws();
    if parser.pos != parser.bytes.len() {
        return Err(Failure::new(Problem::syntax(
            parser.pos,
            "unexpected text after the JSON value",
        )));
    }
    Ok(parser.tape)
}

/// Sorts members by name in UTF-16 order and refuses two with the same name.
pub(super) fn sort_members<T>(members: &mut [T], name: impl Fn(&T) -> &str) -> Result<(), Problem> {
    if members.len() < 2 {
        return Ok(());
    }
    members.sort_unstable_by(|a, b| cmp_utf16(name(a), name(b)));
    match members
        .windows(2)
        .find(|pair| name(&pair[0]) == name(&pair[1]))
    {
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

impl<'a> Tape<'a> {
    /// The root token.
    pub(super) fn root(&self) -> Token {
        self.tokens[0]
    }

    /// Token `at`.
    pub(super) fn token(&self, at: usize) -> Token {
        self.tokens[at]
    }

    /// The text of the string at token `at`.
    pub(super) fn string(&self, at: usize) -> &str {
        match self.tokens[at] {
            Token::Plain { start, end } => &self.text[start as usize..end as usize],
            Token::Owned { start, end } => &self.arena[start as usize..end as usize],
            _ => "",
        }
    }

    /// The exact value of the number literal `text[start..end]`.
    pub(super) fn number(&self, start: u32, end: u32) -> number::Decimal<'a> {
        let bytes = &self.text.as_bytes()[..end as usize];
        let (decimal, _) =
            number::scan_literal(bytes, start as usize).expect("the parser checked this literal");
        decimal
    }

    /// The name tokens of an object's members, in canonical order.
    pub(super) fn sorted_names(
        &self,
        first: u32,
        count: u32,
    ) -> impl ExactSizeIterator<Item = usize> + '_ {
        self.tokens[first as usize..(first + count) as usize]
            .iter()
            .map(|token| match token {
                Token::Member { name } => *name as usize,
                _ => unreachable!("an object's member list holds member tokens"),
            })
    }

    /// Writes the whole value as canonical JSON.
    pub(super) fn write<S: Sink>(&self, out: &mut S) {
        self.write_at(0, out);
    }

    /// Writes an object of the members whose name tokens are `names` (in canonical order).
    pub(super) fn write_members<S: Sink>(&self, names: impl Iterator<Item = usize>, out: &mut S) {
        out.put(b"{");
        for (n, name) in names.enumerate() {
            if n > 0 {
                out.put(b",");
            }
            self.write_string(self.tokens[name], out);
            out.put(b":");
            self.write_at(name + 1, out);
        }
        out.put(b"}");
    }

    /// Writes the value starting at token `at`, returning the index of the token after it.
    fn write_at<S: Sink>(&self, at: usize, out: &mut S) -> usize {
        let token = self.tokens[at];
        match token {
            Token::Null => out.put(b"null"),
            Token::True => out.put(b"true"),
            Token::False => out.put(b"false"),
            Token::Number { start, end } => number::write_decimal(self.number(start, end), out),
            Token::Integer { start, end } => {
                out.put(&self.text.as_bytes()[start as usize..end as usize])
            }
            Token::Plain { .. } | Token::Owned { .. } => self.write_string(token, out),
            Token::Array { end } => {
                out.put(b"[");
                let mut next = at + 1;
                while next < end as usize {
                    if next > at + 1 {
                        out.put(b",");
                    }
                    next = self.write_at(next, out);
                }
                out.put(b"]");
                return end as usize;
            }
            Token::Object { end, first, count } => {
                self.write_members(self.sorted_names(first, count), out);
                return end as usize;
            }
            Token::Member { .. } => unreachable!("member lists are not values"),
        }
        at + 1
    }

    #[inline]
    fn write_string<S: Sink>(&self, token: Token, out: &mut S) {
        match token {
            Token::Plain { start, end } => {
                out.put_quoted(&self.text.as_bytes()[start as usize..end as usize])
            }
            Token::Owned { start, end } => {
                write_str(&self.arena[start as usize..end as usize], out)
            }
            _ => unreachable!("a string token"),
        }
    }
}

/// Where a parsed string's text is: `text[start..end]`, or `arena[start..end]`.
///
/// Packed into one word (start, end, and the arena flag in the top bit) so that it moves
/// through registers and spills as a whole.
#[derive(Clone, Copy)]
struct Span(u64);

const IN_ARENA: u64 = 1 << 63;

impl Span {
    fn new(start: usize, end: usize, in_arena: bool) -> Span {
        // Positions are below MAX_TEXT_LEN × 3 < 2^31.
        let flag = if in_arena { IN_ARENA } else { 0 };
        Span(start as u64 | (end as u64) << 32 | flag)
    }

    fn start(self) -> usize {
        (self.0 & 0xFFFF_FFFF) as usize
    }

    fn end(self) -> usize {
        ((self.0 & !IN_ARENA) >> 32) as usize
    }

    fn in_arena(self) -> bool {
        self.0 & IN_ARENA != 0
    }

    fn token(self) -> Token {
        let (start, end) = (self.start() as u32, self.end() as u32);
        if self.in_arena() {
            Token::Owned { start, end }
        } else {
            Token::Plain { start, end }
        }
    }
}

/// A member name waiting for its object to close: where its text is, its token, and a
/// sort key that orders most names without looking at their text again.
#[derive(Clone, Copy)]
struct PendingName {
    prefix: u64,
    span: Span,
    token: u32,
}

/// The first eight bytes of `name`, zero-padded, as a big-endian number whose order is the
/// UTF-16 order of names that differ within them.
///
/// Comparing UTF-8 bytes gives code point order; UTF-16 order differs only where a lead
/// byte EE/EF (U+E000–U+FFFF) meets F0–F4 (supplementary characters, surrogates in UTF-16).
/// Moving EE/EF above F0–F4 fixes that; such bytes never appear inside a character.
/// Equal keys say nothing (one name may be a zero-padded prefix of the other).
#[inline]
fn prefix_key(name: &[u8]) -> u64 {
    let head = &name[..name.len().min(8)];
    let mut key = 0u64;
    for &b in head {
        let b = match b {
            0xEE | 0xEF => b + 5,
            0xF0..=0xF4 => b - 2,
            other => other,
        };
        key = key << 8 | u64::from(b);
    }
    // Left-align: a shorter name's missing bytes count as zeros.
    key.checked_shl(8 * (8 - head.len() as u32)).unwrap_or(0)
}

struct Parser<'a> {
    text: &'a str,
    bytes: &'a [u8],
    pos: usize,
    tape: Tape<'a>,
    /// Names of the members of the objects being parsed, innermost object's last.
    pending: Vec<PendingName>,
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

    #[inline]
    fn push(&mut self, token: Token) {
        self.tape.tokens.push(token);
    }

    /// The index the next token will get (tokens are fewer than the text's bytes).
    #[inline]
    fn next_index(&self) -> u32 {
        self.tape.tokens.len() as u32
    }

    /// Parses the value at `pos` (whitespace already skipped), inside `depth` containers.
    fn value(&mut self, depth: usize) -> Fallible<()> {
        match self.peek() {
            Some(b'{') => self.object(enter(depth)?),
            Some(b'[') => self.array(enter(depth)?),
            Some(b'"') => {
                let span = self.string()?;
                self.push(span.token());
                Ok(())
            }
            Some(b't') => self.literal("true", Token::True),
            Some(b'f') => self.literal("false", Token::False),
            Some(b'n') => self.literal("null", Token::Null),
            Some(b'-' | b'0'..=b'9') => {
                if self.bytes[self.pos..].starts_with(b"-Infinity") {
                    return Err(Failure::new(Problem::NonFinite { value: "-Infinity" }));
                }
                let start = self.pos;
                let token = match plain_integer_end(self.bytes, start) {
                    Some(end) => Token::Integer {
                        start: start as u32,
                        end: end as u32,
                    },
                    None => self.general_number()?,
                };
                self.pos = match token {
                    Token::Integer { end, .. } | Token::Number { end, .. } => end as usize,
                    _ => unreachable!("number tokens"),
                };
                self.push(token);
                Ok(())
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

    /// Reads any number literal at `pos` (the general case of [`plain_integer_end`]).
    #[inline(never)]
    fn general_number(&self) -> Fallible<Token> {
        let (_, end) = number::scan_literal(self.bytes, self.pos).map_err(Failure::new)?;
        Ok(Token::Number {
            start: self.pos as u32,
            end: end as u32,
        })
    }

    fn literal(&mut self, word: &str, token: Token) -> Fallible<()> {
        if self.bytes[self.pos..].starts_with(word.as_bytes()) {
            self.pos += word.len();
            self.push(token);
            Ok(())
        } else {
            self.fail(
                self.pos,
                "expected a JSON value (true, false and null are lowercase)",
            )
        }
    }

    fn array(&mut self, depth: usize) -> Fallible<()> {
        self.pos += 1;
        let at = self.tape.tokens.len();
        self.push(Token::Array { end: 0 });
        self.skip_ws();
        if self.peek() == Some(b']') {
            self.pos += 1;
        } else {
            let mut index = 0;
            loop {
                self.skip_ws();
                self.value(depth).map_err(|f| f.at_index(index))?;
                index += 1;
                self.skip_ws();
                match self.peek() {
                    Some(b',') => self.pos += 1,
                    Some(b']') => {
                        self.pos += 1;
                        break;
                    }
                    _ => return self.fail(self.pos, "expected `,` or `]` after an array element"),
                }
            }
        }
        self.tape.tokens[at] = Token::Array {
            end: self.next_index(),
        };
        Ok(())
    }

    fn object(&mut self, depth: usize) -> Fallible<()> {
        self.pos += 1;
        let at = self.tape.tokens.len();
        self.push(Token::Object {
            end: 0,
            first: 0,
            count: 0,
        });
        let mark = self.pending.len();
        self.skip_ws();
        if self.peek() == Some(b'}') {
            self.pos += 1;
        } else {
            loop {
                self.skip_ws();
                if self.peek() != Some(b'"') {
                    return self.fail(self.pos, "expected a member name in double quotes");
                }
                let token = self.next_index();
                let span = self.string()?;
                self.push(span.token());
                let source = if span.in_arena() {
                    self.tape.arena.as_bytes()
                } else {
                    self.bytes
                };
                self.pending.push(PendingName {
                    prefix: prefix_key(&source[span.start()..span.end()]),
                    span,
                    token,
                });
                self.skip_ws();
                if self.peek() != Some(b':') {
                    return self.fail(self.pos, "expected `:` after a member name");
                }
                self.pos += 1;
                self.skip_ws();
                if let Err(f) = self.value(depth) {
                    return Err(f.at_member(self.tape.string(token as usize)));
                }
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
        }
        self.close_object(at, mark)
    }

    /// Sorts the object's members, refuses duplicates, and appends its member list.
    fn close_object(&mut self, at: usize, mark: usize) -> Fallible<()> {
        let (text, arena) = (self.text.as_bytes(), self.tape.arena.as_bytes());
        let name = |p: &PendingName| {
            let source = if p.span.in_arena() { arena } else { text };
            &source[p.span.start()..p.span.end()]
        };
        let members = &mut self.pending[mark..];
        if members.len() > 1 {
            members.sort_unstable_by(|a, b| {
                a.prefix
                    .cmp(&b.prefix)
                    .then_with(|| cmp_utf16_bytes(name(a), name(b)))
            });
            if let Some(pair) = members
                .windows(2)
                .find(|pair| name(&pair[0]) == name(&pair[1]))
            {
                let duplicate = String::from_utf8_lossy(name(&pair[0])).into_owned();
                return Err(Failure::new(Problem::Duplicate { name: duplicate }));
            }
        }
        let tokens = &mut self.tape.tokens;
        let first = tokens.len() as u32;
        let count = members.len() as u32;
        tokens.extend(members.iter().map(|p| Token::Member { name: p.token }));
        tokens[at] = Token::Object {
            end: tokens.len() as u32,
            first,
            count,
        };
        self.pending.truncate(mark);
        Ok(())
    }

    /// Reads the string whose opening quote is at `pos`, unescaped and in NFC, and returns
    /// where it is: one without escapes that NFC leaves alone is borrowed from the input.
    #[inline(always)]
    fn string(&mut self) -> Fallible<Span> {
        let start = self.pos + 1;
        let (i, non_ascii) = scan_plain(self.bytes, start);
        match self.bytes.get(i) {
            Some(b'"') => {
                self.pos = i + 1;
                if non_ascii {
                    if let Cow::Owned(normalised) = nfc_non_ascii(&self.text[start..i]) {
                        return Ok(self.store_in_arena(&normalised));
                    }
                }
                Ok(Span::new(start, i, false))
            }
            Some(b'\\') => self.escaped_string(start, i),
            Some(_) => self.fail(i, "a control character in a string must be escaped"),
            None => self.fail(start - 1, "the string is never closed"),
        }
    }

    /// Appends `s` to the arena, returning where it is.
    fn store_in_arena(&mut self, s: &str) -> Span {
        let start = self.tape.arena.len();
        self.tape.arena.push_str(s);
        Span::new(start, self.tape.arena.len(), true)
    }

    /// The slow path of [`Parser::string`], from the first backslash at `i` on: unescapes
    /// into the arena, then normalises there.
    fn escaped_string(&mut self, start: usize, mut i: usize) -> Fallible<Span> {
        let text = self.text;
        let begin = self.tape.arena.len();
        self.tape.arena.push_str(&text[start..i]);
        loop {
            let Some(&b) = self.bytes.get(i) else {
                return self.fail(start - 1, "the string is never closed");
            };
            match b {
                b'"' => {
                    self.pos = i + 1;
                    break;
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
                            self.tape.arena.push(c);
                            i = end;
                            continue;
                        }
                        _ => return self.fail(i, "unknown escape sequence"),
                    };
                    self.tape.arena.push(escaped);
                    i += 2;
                }
                0x00..=0x1F => {
                    return self.fail(i, "a control character in a string must be escaped")
                }
                _ => {
                    let (end, _) = scan_plain(self.bytes, i);
                    self.tape.arena.push_str(&text[i..end]);
                    i = end;
                }
            }
        }
        if let Cow::Owned(normalised) = nfc(&self.tape.arena[begin..]) {
            self.tape.arena.truncate(begin);
            self.tape.arena.push_str(&normalised);
        }
        Ok(Span::new(begin, self.tape.arena.len(), true))
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
                    return Err(Failure::new(Problem::LoneSurrogate {
                        offset: i,
                        code: unit,
                    }));
                }
                let code = 0x10000 + ((u32::from(unit) - 0xD800) << 10) + (u32::from(low) - 0xDC00);
                return Ok((char::from_u32(code).unwrap_or('\u{FFFD}'), i + 12));
            }
            0xDC00..=0xDFFF => {
                return Err(Failure::new(Problem::LoneSurrogate {
                    offset: i,
                    code: unit,
                }));
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

/// The end of the integer literal at `start` when it is already in canonical layout: an
/// optional `-`, then `0` or up to 21 digits without a leading zero, then no fraction or
/// exponent; `-0` does not count (it is written `0`).
#[inline(always)]
fn plain_integer_end(bytes: &[u8], start: usize) -> Option<usize> {
    let digits_start = start + usize::from(bytes.get(start) == Some(&b'-'));
    let mut end = digits_start;
    while let Some(b'0'..=b'9') = bytes.get(end) {
        end += 1;
    }
    let digits = &bytes[digits_start..end];
    let canonical = match digits {
        [] => false,
        [b'0'] => digits_start == start,
        [b'0', ..] => false,
        _ => digits.len() <= 21,
    };
    let delimited = !matches!(bytes.get(end), Some(b'.' | b'e' | b'E'));
    (canonical && delimited).then_some(end)
}

/// Skips string bytes that need no attention (anything but `"`, `\\` and controls) from
/// `i`, eight at a time where it can; returns where it stopped and whether any byte skipped
/// was non-ASCII.
#[inline]
fn scan_plain(bytes: &[u8], mut i: usize) -> (usize, bool) {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGHS: u64 = 0x8080_8080_8080_8080;
    let has_zero = |w: u64| w.wrapping_sub(ONES) & !w & HIGHS;
    let mut seen = 0u64;
    while let Some(chunk) = bytes.get(i..i + 8) {
        let w = u64::from_le_bytes(chunk.try_into().expect("eight bytes"));
        let special = has_zero(w ^ (ONES * u64::from(b'"')))
            | has_zero(w ^ (ONES * u64::from(b'\\')))
            | (w.wrapping_sub(ONES * 0x20) & !w & HIGHS);
        if special != 0 {
            // The lowest flagged byte is exact (false flags only appear above a true one).
            let ahead = special.trailing_zeros() / 8;
            seen |= w & ((1u64 << (ahead * 8)) - 1);
            return (i + ahead as usize, seen & HIGHS != 0);
        }
        seen |= w;
        i += 8;
    }
    while let Some(&b) = bytes.get(i) {
        if NEEDS_ESCAPE[b as usize] {
            break;
        }
        seen |= u64::from(b);
        i += 1;
    }
    (i, seen & HIGHS != 0)
}
