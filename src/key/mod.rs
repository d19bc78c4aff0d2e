//! Key derivation (SPEC §2, v1): the SHA-256 of the canonical JSON of
//! `["idemkit/v1", tenant, run, scope, tag, data]`.
//!
//! The canonical form is JCS-like: NFC strings, members sorted by UTF-16 code units,
//! exact decimal numbers in ECMAScript's layout, JCS string escaping. It is produced by a
//! purpose-built parser and writer, and streamed straight into the hasher.

mod number;
mod parse;
mod sink;
mod text;
mod value;

use std::borrow::Cow;
use std::fmt;
use std::str::FromStr;

pub use number::{Number, MAX_EXPONENT, MAX_NUMBER_LITERAL_LEN};
pub use value::{CanonicalObject, CanonicalValue};

use parse::{Tape, Token};
use sink::{HashSink, Sink};
use text::{cmp_utf16, write_nfc_str};

/// The deepest nesting of arrays and objects accepted (SPEC §2 rule 6).
pub const MAX_DEPTH: usize = 64;

/// The most bytes of UTF-8 a tenant, run or scope may have after NFC (SPEC v1.1 rule 2).
pub const MAX_IDENTITY_BYTES: usize = 1024;

/// The first element of every key's material: the version of this derivation.
pub const KEY_SPEC_VERSION: &str = "idemkit/v1";

/// Why a key could not be derived. Messages say where (a JSON path such as
/// `input.items[2].name`, or `explicit key`) and what to change.
///
/// New variants may be added, so a `match` needs a wildcard arm.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum KeyError {
    /// The input is not strict JSON (RFC 8259).
    #[error("{path}: not valid JSON at byte {offset}: {detail}; send strict JSON (RFC 8259)")]
    Syntax {
        /// Where in the input: a JSON path such as `input.items[2].name`.
        path: String,
        /// The byte offset of the error in the JSON text.
        offset: usize,
        /// What the parser found.
        detail: String,
    },
    /// Two members of one object have names that are equal after NFC normalisation.
    #[error("{path}: duplicate member {name:?} after NFC normalisation; send each member once")]
    DuplicateMember {
        /// The path of the object.
        path: String,
        /// The member name, as first seen.
        name: String,
    },
    /// A `\uXXXX` escape names half of a surrogate pair without the other half.
    #[error(
        "{path}: lone surrogate \\u{code:04x} at byte {offset}; \
         send whole characters (a high and a low surrogate together)"
    )]
    LoneSurrogate {
        /// Where in the input.
        path: String,
        /// The byte offset of the escape in the JSON text.
        offset: usize,
        /// The UTF-16 code unit of the lone surrogate.
        code: u16,
    },
    /// NaN or an infinity, which JSON and keys do not allow.
    #[error("{path}: {value} is not a finite number; send a finite number, or a string")]
    NonFinite {
        /// Where in the input.
        path: String,
        /// The value as given.
        value: String,
    },
    /// Arrays and objects nested deeper than [`MAX_DEPTH`].
    #[error("{path}: nested deeper than {limit} arrays/objects; flatten the input")]
    TooDeep {
        /// Where in the input the limit was passed.
        path: String,
        /// The limit, [`MAX_DEPTH`].
        limit: usize,
    },
    /// A number literal longer than [`MAX_NUMBER_LITERAL_LEN`] characters.
    #[error(
        "{path}: a number literal of {length} characters is over the limit of {limit}; \
         send it as a string"
    )]
    NumberTooLong {
        /// Where in the input.
        path: String,
        /// The literal's length, in characters.
        length: usize,
        /// The limit, [`MAX_NUMBER_LITERAL_LEN`].
        limit: usize,
    },
    /// A number literal whose exponent part is beyond ±[`MAX_EXPONENT`].
    #[error(
        "{path}: exponent {exponent} is beyond ±{limit}; \
         send the number as a string or with a smaller exponent"
    )]
    ExponentOutOfRange {
        /// Where in the input.
        path: String,
        /// The exponent as given.
        exponent: String,
        /// The limit, [`MAX_EXPONENT`].
        limit: u32,
    },
    /// An `EXPLICIT` key that is empty or only Unicode White_Space.
    #[error(
        "explicit key: it is empty or blank (only white space); \
         supply a key with at least one visible character"
    )]
    BlankExplicitKey,
    /// A member named in `key_arguments` is absent from the input.
    #[error(
        "input: member {name:?} named in key_arguments is missing; \
         send it (a null value counts as present) or remove it from key_arguments"
    )]
    MissingKeyArgument {
        /// The missing member's name.
        name: String,
    },
    /// `key_arguments` were given but the input is not an object.
    #[error(
        "input: key_arguments select members of an object, but the input is {found}; \
         send a JSON object or leave key_arguments empty"
    )]
    KeyArgumentsNeedObject {
        /// What the input is instead (`an array`, `a string`, ...).
        found: String,
    },
    /// A tenant, run or scope (tool name) longer than [`MAX_IDENTITY_BYTES`] after NFC.
    #[error(
        "{field}: {bytes} bytes of UTF-8 (after NFC normalisation) is over the limit of {limit}; \
         use a shorter {field}"
    )]
    TooLong {
        /// `tenant`, `run` or `scope`.
        field: &'static str,
        /// Its length in bytes of UTF-8, after NFC.
        bytes: usize,
        /// The limit, [`MAX_IDENTITY_BYTES`].
        limit: usize,
    },
    /// Two `key_arguments` names that are equal after NFC normalisation.
    #[error(
        "key_arguments: {name:?} is listed more than once (names are compared after NFC \
         normalisation); list each member once"
    )]
    DuplicateKeyArgument {
        /// The name listed twice.
        name: String,
    },
    /// Text that should be a key (64 hex characters) is not one.
    #[error("not a key: {detail}; a key is 64 hexadecimal characters (a SHA-256 digest)")]
    MalformedKey {
        /// What is wrong with the text (length, a character that is not hex).
        detail: String,
    },
}

/// What went wrong, before the path of where it went wrong is known.
#[derive(Debug)]
pub(crate) enum Problem {
    Syntax { offset: usize, detail: String },
    Duplicate { name: String },
    LoneSurrogate { offset: usize, code: u16 },
    NonFinite { value: &'static str },
    TooDeep,
    NumberTooLong { length: usize },
    ExponentOutOfRange { exponent: String },
}

impl Problem {
    pub(crate) fn syntax(offset: usize, detail: &str) -> Problem {
        Problem::Syntax {
            offset,
            detail: detail.to_owned(),
        }
    }

    /// The public error, with `path` saying where.
    pub(crate) fn into_error(self, path: &str) -> KeyError {
        let path = path.to_owned();
        match self {
            Problem::Syntax { offset, detail } => KeyError::Syntax {
                path,
                offset,
                detail,
            },
            Problem::Duplicate { name } => KeyError::DuplicateMember { path, name },
            Problem::LoneSurrogate { offset, code } => {
                KeyError::LoneSurrogate { path, offset, code }
            }
            Problem::NonFinite { value } => KeyError::NonFinite {
                path,
                value: value.to_owned(),
            },
            Problem::TooDeep => KeyError::TooDeep {
                path,
                limit: MAX_DEPTH,
            },
            Problem::NumberTooLong { length } => KeyError::NumberTooLong {
                path,
                length,
                limit: MAX_NUMBER_LITERAL_LEN,
            },
            Problem::ExponentOutOfRange { exponent } => KeyError::ExponentOutOfRange {
                path,
                exponent,
                limit: MAX_EXPONENT,
            },
        }
    }
}

/// One step of a JSON path.
#[derive(Debug)]
enum Step {
    Member(String),
    Index(usize),
}

/// A problem plus the path to it, collected innermost first as the error unwinds, so the
/// success path never spends anything on paths.
#[derive(Debug)]
pub(crate) struct Failure {
    problem: Problem,
    trail: Vec<Step>,
}

pub(crate) type Fallible<T> = Result<T, Box<Failure>>;

impl Failure {
    #[cold]
    pub(crate) fn new(problem: Problem) -> Box<Failure> {
        Box::new(Failure {
            problem,
            trail: Vec::new(),
        })
    }

    #[cold]
    pub(crate) fn at_member(mut self: Box<Self>, name: &str) -> Box<Failure> {
        self.trail.push(Step::Member(name.to_owned()));
        self
    }

    #[cold]
    pub(crate) fn at_index(mut self: Box<Self>, index: usize) -> Box<Failure> {
        self.trail.push(Step::Index(index));
        self
    }

    /// The public error, its path starting at `root` (such as `input`).
    pub(crate) fn into_error(self, root: &str) -> KeyError {
        let mut path = root.to_owned();
        for step in self.trail.iter().rev() {
            match step {
                Step::Index(i) => path.push_str(&format!("[{i}]")),
                Step::Member(name) if is_identifier(name) => {
                    path.push('.');
                    path.push_str(name);
                }
                Step::Member(name) => {
                    let mut quoted = Vec::new();
                    text::write_str(name, &mut quoted);
                    path.push('[');
                    path.push_str(&String::from_utf8_lossy(&quoted));
                    path.push(']');
                }
            }
        }
        self.problem.into_error(&path)
    }
}

fn is_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == '$')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$')
}

/// Where a key lives: tool/action name, tenant, run.
#[derive(Debug, Clone, Copy)]
pub struct KeyScope<'a> {
    /// The tool or action name, so two tools never share a key.
    pub scope: &'a str,
    /// The tenant; `None` is distinct from `Some("")`.
    pub tenant: Option<&'a str>,
    /// The run; a new run is a new key.
    pub run: Option<&'a str>,
}

impl<'a> KeyScope<'a> {
    /// A scope with no tenant and no run.
    pub fn new(scope: &'a str) -> Self {
        KeyScope {
            scope,
            tenant: None,
            run: None,
        }
    }
}

/// What the key is derived from.
#[derive(Debug, Clone, Copy)]
pub enum KeyInput<'a> {
    /// JSON text (what a model, Java or C sends); numbers are taken exactly.
    Json(&'a str),
    /// A value built by a Rust caller; an `f64` inside stands for its shortest round-trip decimal.
    Value(&'a serde_json::Value),
    /// An already parsed value.
    Canonical(&'a CanonicalValue),
    /// `EXPLICIT` strategy: the key the call site supplies (`key_arguments` do not apply).
    Explicit(&'a str),
    /// `EXPLICIT` strategy with the call's payload: the key is derived from `key` alone, as for
    /// [`KeyInput::Explicit`]; the payload gives the record's fingerprint, so that a repeat of
    /// the key with another payload is refused (SPEC v1.1 rule 9).
    ExplicitWithPayload {
        /// The key the call site supplies.
        key: &'a str,
        /// The call's whole input.
        payload: &'a serde_json::Value,
    },
    /// `EXPLICIT` strategy with a key that comes from outside the application (a caller's
    /// inbound `Idempotency-Key`, a key a client sends): as [`KeyInput::ExplicitWithPayload`]
    /// for the key and the fingerprint, but a repeat with another payload is refused whatever
    /// the policy (SPEC v1.2 §9 rule 1, see [`crate::KeyOrigin`]).
    OutsideKey {
        /// The key the caller sent.
        key: &'a str,
        /// The call's whole input.
        payload: &'a serde_json::Value,
    },
}

/// A key: the 32-byte SHA-256 of the canonical material. `Display`, `Debug` and
/// [`Key::hex`] show 64 lowercase hex characters; `FromStr` reads 64 hex characters in
/// either case.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Key([u8; 32]);

const HEX_DIGITS: &[u8; 16] = b"0123456789abcdef";

impl Key {
    /// A key from its 32 digest bytes (as a store may keep it).
    pub const fn from_bytes(bytes: [u8; 32]) -> Key {
        Key(bytes)
    }

    /// The 32 digest bytes.
    pub fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }

    /// The 64 lowercase hex characters.
    pub fn hex(&self) -> String {
        self.with_hex(str::to_owned)
    }

    /// The 64 lowercase hex characters, shared: one allocation, and clones that copy nothing.
    pub(crate) fn hex_shared(&self) -> std::sync::Arc<str> {
        self.with_hex(|hex| std::sync::Arc::from(hex))
    }

    /// `f` of the 64 hex characters, written on the stack (one copy, if `f` makes one).
    fn with_hex<R>(&self, f: impl FnOnce(&str) -> R) -> R {
        let mut out = [0u8; 64];
        self.write_hex(&mut out);
        f(std::str::from_utf8(&out).expect("hex digits are ASCII"))
    }

    /// Writes the 64 lowercase hex characters (ASCII) without allocating.
    pub fn write_hex(&self, out: &mut [u8; 64]) {
        for (pair, byte) in out.chunks_exact_mut(2).zip(self.0) {
            pair[0] = HEX_DIGITS[usize::from(byte >> 4)];
            pair[1] = HEX_DIGITS[usize::from(byte & 0xF)];
        }
    }
}

impl fmt::Display for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut out = [0u8; 64];
        self.write_hex(&mut out);
        f.pad(std::str::from_utf8(&out).map_err(|_| fmt::Error)?)
    }
}

impl fmt::Debug for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Key({self})")
    }
}

impl FromStr for Key {
    type Err = KeyError;

    fn from_str(s: &str) -> Result<Key, KeyError> {
        if s.len() != 64 {
            return Err(KeyError::MalformedKey {
                detail: format!("got {} characters", s.chars().count()),
            });
        }
        let mut bytes = [0u8; 32];
        for (i, pair) in s.as_bytes().chunks_exact(2).enumerate() {
            let nibble = |j: usize| {
                (pair[j] as char)
                    .to_digit(16)
                    .ok_or_else(|| KeyError::MalformedKey {
                        detail: format!("position {} is not a hex digit", 2 * i + j + 1),
                    })
            };
            bytes[i] = (nibble(0)? << 4 | nibble(1)?) as u8;
        }
        Ok(Key(bytes))
    }
}

/// Derives the key of `input` in `scope` (SPEC §2): the SHA-256 of
/// [`canonical_material`], streamed into the hasher without building the text.
///
/// With a non-empty `key_arguments` the input must be an object and only those members
/// count; a named member that is absent is an error (one set to `null` is present).
pub fn derive_key(
    scope: &KeyScope<'_>,
    input: KeyInput<'_>,
    key_arguments: &[String],
) -> Result<Key, KeyError> {
    let mut sink = HashSink::new();
    write_material(scope, input, key_arguments, &mut sink)?;
    Ok(Key(sink.finish()))
}

/// The canonical material text whose SHA-256 is the key; byte for byte what
/// [`derive_key`] hashes.
pub fn canonical_material(
    scope: &KeyScope<'_>,
    input: KeyInput<'_>,
    key_arguments: &[String],
) -> Result<String, KeyError> {
    let mut out = Vec::with_capacity(128);
    write_material(scope, input, key_arguments, &mut out)?;
    // The writer only emits whole UTF-8 sequences taken from `str`s, plus ASCII.
    Ok(String::from_utf8(out).expect("canonical material is UTF-8"))
}

/// The canonical JSON (§2) of a call's whole input: what [`fingerprint`] hashes, byte for byte.
/// `key_arguments` do not apply; for [`KeyInput::ExplicitWithPayload`] it is the payload's.
/// `None` for [`KeyInput::Explicit`], which carries no payload.
pub fn canonical_input(input: KeyInput<'_>) -> Result<Option<String>, KeyError> {
    let mut out = Vec::with_capacity(64);
    if !write_input(input, &mut out)? {
        return Ok(None);
    }
    // The writer only emits whole UTF-8 sequences taken from `str`s, plus ASCII.
    Ok(Some(
        String::from_utf8(out).expect("canonical JSON is UTF-8"),
    ))
}

/// The payload fingerprint of a call (SPEC v1.1 rule 9): the lowercase hex SHA-256 of the
/// canonical JSON (§2) of its whole input, streamed into the hasher without building the text.
///
/// It does not depend on scope, tenant, run or `key_arguments`, and it is never the input:
/// a record keeps the fingerprint, not the arguments. `None` for [`KeyInput::Explicit`], which
/// carries no payload; an `EXPLICIT` call gives one with [`KeyInput::ExplicitWithPayload`].
pub fn fingerprint(input: KeyInput<'_>) -> Result<Option<String>, KeyError> {
    Ok(fingerprint_digest(input)?.map(|p| p.hex()))
}

/// [`fingerprint`] as its digest.
pub(crate) fn fingerprint_digest(input: KeyInput<'_>) -> Result<Option<Key>, KeyError> {
    let mut sink = HashSink::new();
    if !write_input(input, &mut sink)? {
        return Ok(None);
    }
    Ok(Some(Key(sink.finish())))
}

/// The key and the payload fingerprint of a call that keys on its input, as [`derive_key`] and
/// [`fingerprint`] give them, from one parse of the input: with no `key_arguments` the key's
/// data is the whole input, so it is written once into both hashers. `None` as the
/// fingerprint for an explicit key without a payload.
pub fn derive_key_and_fingerprint(
    scope: &KeyScope<'_>,
    input: KeyInput<'_>,
    key_arguments: &[String],
) -> Result<(Key, Option<String>), KeyError> {
    let (key, print) = derive_key_and_print(scope, input, key_arguments)?;
    Ok((key, print.map(|p| p.hex())))
}

/// [`derive_key_and_fingerprint`] with the fingerprint as its digest.
pub(crate) fn derive_key_and_print(
    scope: &KeyScope<'_>,
    input: KeyInput<'_>,
    key_arguments: &[String],
) -> Result<(Key, Option<Key>), KeyError> {
    let keyed_on_whole_input = key_arguments.is_empty()
        && matches!(
            input,
            KeyInput::Json(_) | KeyInput::Value(_) | KeyInput::Canonical(_)
        );
    if !keyed_on_whole_input {
        return Ok((
            derive_key(scope, input, key_arguments)?,
            fingerprint_digest(input)?,
        ));
    }
    let (mut material, mut data) = (HashSink::new(), HashSink::new());
    let mut tee = sink::DataTee {
        material: &mut material,
        input: &mut data,
        teeing: false,
    };
    write_material(scope, input, &[], &mut tee)?;
    Ok((Key(material.finish()), Some(Key(data.finish()))))
}

/// Writes the canonical JSON of the whole input; `false` (nothing written) for an explicit key.
fn write_input<S: Sink>(input: KeyInput<'_>, out: &mut S) -> Result<bool, KeyError> {
    match input {
        KeyInput::Explicit(_) => return Ok(false),
        KeyInput::ExplicitWithPayload { payload, .. } | KeyInput::OutsideKey { payload, .. } => {
            write_json_data(payload, &[], out)?
        }
        KeyInput::Json(json) => {
            let tape = parse::parse(json).map_err(|f| f.into_error("input"))?;
            write_tree_data(&tape, &[], out)?;
        }
        KeyInput::Value(v) => write_json_data(v, &[], out)?,
        KeyInput::Canonical(v) => write_canonical_data(v, &[], out)?,
    }
    Ok(true)
}

/// `s` in Unicode NFC, the form in which tenants, runs and scopes identify a record
/// (SPEC v1.1 rule 1): borrowed when it already is NFC, so normalising is free for ASCII.
///
/// Two spellings of one tenant (`"é"` and `"e\u{301}"`) name the same records; a store
/// keys, lists and forgets by `nfc(tenant)`.
pub fn nfc(s: &str) -> Cow<'_, str> {
    text::nfc(s)
}

/// Whether `s` is empty or only Unicode White_Space: U+0009–000D, U+0020, U+0085, U+00A0,
/// U+1680, U+2000–200A, U+2028, U+2029, U+202F, U+205F, U+3000 (SPEC §1).
pub fn is_blank(s: &str) -> bool {
    s.chars().all(|c| {
        matches!(
            c,
            '\u{9}'..='\u{d}'
                | ' '
                | '\u{85}'
                | '\u{a0}'
                | '\u{1680}'
                | '\u{2000}'..='\u{200a}'
                | '\u{2028}'
                | '\u{2029}'
                | '\u{202f}'
                | '\u{205f}'
                | '\u{3000}'
        )
    })
}

/// `s` in NFC, refused as [`KeyError::TooLong`] beyond [`MAX_IDENTITY_BYTES`] bytes.
fn identity<'s>(field: &'static str, s: &'s str) -> Result<Cow<'s, str>, KeyError> {
    let normalised = text::nfc(s);
    if normalised.len() > MAX_IDENTITY_BYTES {
        return Err(KeyError::TooLong {
            field,
            bytes: normalised.len(),
            limit: MAX_IDENTITY_BYTES,
        });
    }
    Ok(normalised)
}

/// Checks a tenant, run and scope against the length limit of SPEC v1.1 rule 2
/// ([`MAX_IDENTITY_BYTES`] bytes of UTF-8 after NFC); the error names the field.
pub fn check_identity(scope: &KeyScope<'_>) -> Result<(), KeyError> {
    identity("tenant", scope.tenant.unwrap_or(""))?;
    identity("run", scope.run.unwrap_or(""))?;
    identity("scope", scope.scope)?;
    Ok(())
}

/// Refuses `key_arguments` that name one member twice: names equal after NFC normalisation
/// (`"é"` and `"e\u{301}"`) are the same member.
pub fn check_key_arguments(key_arguments: &[String]) -> Result<(), KeyError> {
    for (i, name) in key_arguments.iter().enumerate() {
        let name = text::nfc(name);
        if key_arguments[..i]
            .iter()
            .any(|other| text::nfc(other) == name)
        {
            return Err(KeyError::DuplicateKeyArgument {
                name: name.into_owned(),
            });
        }
    }
    Ok(())
}

fn write_optional<S: Sink>(s: Option<&Cow<'_, str>>, out: &mut S) {
    match s {
        Some(s) => text::write_str(s, out),
        None => out.put(b"null"),
    }
}

/// Writes `["idemkit/v1",tenant,run,scope,tag,data]` in canonical form.
fn write_material<S: Sink>(
    scope: &KeyScope<'_>,
    input: KeyInput<'_>,
    key_arguments: &[String],
    out: &mut S,
) -> Result<(), KeyError> {
    let tenant = scope.tenant.map(|t| identity("tenant", t)).transpose()?;
    let run = scope.run.map(|r| identity("run", r)).transpose()?;
    let scope_name = identity("scope", scope.scope)?;
    if let KeyInput::Explicit(key)
    | KeyInput::ExplicitWithPayload { key, .. }
    | KeyInput::OutsideKey { key, .. } = input
    {
        if is_blank(key) {
            return Err(KeyError::BlankExplicitKey);
        }
    } else if key_arguments.len() > 1 {
        check_key_arguments(key_arguments)?;
    }
    out.put(b"[\"");
    out.put(KEY_SPEC_VERSION.as_bytes());
    out.put(b"\",");
    write_optional(tenant.as_ref(), out);
    out.put(b",");
    write_optional(run.as_ref(), out);
    out.put(b",");
    text::write_str(&scope_name, out);
    match input {
        KeyInput::Explicit(key)
        | KeyInput::ExplicitWithPayload { key, .. }
        | KeyInput::OutsideKey { key, .. } => {
            out.put(b",\"explicit\",");
            write_nfc_str(key, out);
        }
        KeyInput::Json(json) => {
            let tape = parse::parse(json).map_err(|f| f.into_error("input"))?;
            out.put(b",\"input\",");
            out.data(true);
            write_tree_data(&tape, key_arguments, out)?;
        }
        KeyInput::Value(v) => {
            out.put(b",\"input\",");
            out.data(true);
            write_json_data(v, key_arguments, out)?;
        }
        KeyInput::Canonical(v) => {
            out.put(b",\"input\",");
            out.data(true);
            write_canonical_data(v, key_arguments, out)?;
        }
    }
    out.data(false);
    out.put(b"]");
    Ok(())
}

/// The positions, among `count` members sorted by NFC name, of those `key_arguments` name.
fn select<'n>(
    count: usize,
    name_at: impl Fn(usize) -> &'n str,
    key_arguments: &[String],
) -> Result<Vec<usize>, KeyError> {
    let mut picked = Vec::with_capacity(key_arguments.len());
    for argument in key_arguments {
        let wanted = text::nfc(argument);
        let (mut low, mut high) = (0, count);
        let found = loop {
            if low >= high {
                break None;
            }
            let middle = low + (high - low) / 2;
            match cmp_utf16(name_at(middle), &wanted) {
                std::cmp::Ordering::Less => low = middle + 1,
                std::cmp::Ordering::Greater => high = middle,
                std::cmp::Ordering::Equal => break Some(middle),
            }
        };
        match found {
            Some(i) => picked.push(i),
            None => {
                return Err(KeyError::MissingKeyArgument {
                    name: wanted.into_owned(),
                })
            }
        }
    }
    picked.sort_unstable();
    picked.dedup();
    Ok(picked)
}

fn write_tree_data<S: Sink>(
    tape: &Tape<'_>,
    key_arguments: &[String],
    out: &mut S,
) -> Result<(), KeyError> {
    if key_arguments.is_empty() {
        tape.write(out);
        return Ok(());
    }
    let (first, count) = match tape.root() {
        Token::Object { first, count, .. } => (first, count),
        other => {
            let found = match other {
                Token::Null => "null",
                Token::True | Token::False => "a boolean",
                Token::Number { .. } | Token::Integer { .. } => "a number",
                Token::Array { .. } => "an array",
                _ => "a string",
            };
            return Err(KeyError::KeyArgumentsNeedObject {
                found: found.to_owned(),
            });
        }
    };
    let names: Vec<usize> = tape.sorted_names(first, count).collect();
    let picked = select(names.len(), |i| tape.string(names[i]), key_arguments)?;
    tape.write_members(picked.into_iter().map(|i| names[i]), out);
    Ok(())
}

fn write_json_data<S: Sink>(
    v: &serde_json::Value,
    key_arguments: &[String],
    out: &mut S,
) -> Result<(), KeyError> {
    use serde_json::Value;
    let at_input = |f: Box<Failure>| f.into_error("input");
    if key_arguments.is_empty() {
        return value::write_json_value(v, 0, out).map_err(at_input);
    }
    let Value::Object(map) = v else {
        let found = match v {
            Value::Null => "null",
            Value::Bool(_) => "a boolean",
            Value::Number(_) => "a number",
            Value::String(_) => "a string",
            _ => "an array",
        };
        return Err(KeyError::KeyArgumentsNeedObject {
            found: found.to_owned(),
        });
    };
    let members = value::sorted_json_members(map).map_err(at_input)?;
    let picked = select(members.len(), |i| &members[i].0, key_arguments)?;
    let chosen = picked
        .into_iter()
        .map(|i| (members[i].0.as_ref(), members[i].1));
    value::write_json_members(chosen, 1, out).map_err(at_input)
}

fn write_canonical_data<S: Sink>(
    v: &CanonicalValue,
    key_arguments: &[String],
    out: &mut S,
) -> Result<(), KeyError> {
    let written = if key_arguments.is_empty() {
        value::write_canonical(v, 0, out)
    } else {
        let CanonicalValue::Object(object) = v else {
            return Err(KeyError::KeyArgumentsNeedObject {
                found: v.kind().to_owned(),
            });
        };
        let members: Vec<(&str, &CanonicalValue)> = object.iter().collect();
        let picked = select(members.len(), |i| members[i].0, key_arguments)?;
        value::write_canonical_members(picked.into_iter().map(|i| members[i]), 1, out)
    };
    written.map_err(|f| f.into_error("input"))
}

#[cfg(test)]
mod tests;
