//! Canonical strings: NFC normalisation, UTF-16 code unit order and JCS escaping.

use std::borrow::Cow;
use std::cmp::Ordering;

use unicode_normalization::{is_nfc_quick, IsNormalized, UnicodeNormalization};

use super::sink::Sink;

/// `s` in Unicode NFC, borrowed when it already is (ASCII, or the quick check says yes).
#[inline]
pub(super) fn nfc(s: &str) -> Cow<'_, str> {
    if s.is_ascii() {
        Cow::Borrowed(s)
    } else {
        nfc_non_ascii(s)
    }
}

/// Like [`nfc`] for a string already known to hold non-ASCII characters.
pub(super) fn nfc_non_ascii(s: &str) -> Cow<'_, str> {
    if is_nfc_quick(s.chars()) == IsNormalized::Yes {
        Cow::Borrowed(s)
    } else {
        Cow::Owned(s.nfc().collect())
    }
}

/// Like [`nfc`] for an owned string, reusing it when it is already normalised.
pub(super) fn nfc_owned(s: String) -> String {
    match nfc(&s) {
        Cow::Borrowed(_) => s,
        Cow::Owned(normalised) => normalised,
    }
}

/// Compares two strings as sequences of UTF-16 code units, as Java's `String.compareTo` does.
///
/// UTF-8 byte order is code point order; UTF-16 order differs from it only where a
/// character in U+E000–U+FFFF meets a supplementary one (which UTF-16 writes with
/// surrogates, D800–DFFF, so it sorts first). The strings are compared byte-wise up to
/// their first difference, and only the two bytes there are weighed.
pub(super) fn cmp_utf16(a: &str, b: &str) -> Ordering {
    cmp_utf16_bytes(a.as_bytes(), b.as_bytes())
}

/// [`cmp_utf16`] over the UTF-8 bytes of two strings.
pub(super) fn cmp_utf16_bytes(x: &[u8], y: &[u8]) -> Ordering {
    let common = common_prefix(x, y);
    let (Some(&p), Some(&q)) = (x.get(common), y.get(common)) else {
        return x.len().cmp(&y.len());
    };
    // Where the first difference is inside a character, the lead bytes are equal and byte
    // order is UTF-16 order. Where it is at the lead bytes, only EE/EF (U+E000–U+FFFF)
    // against F0–F4 (supplementary) sorts the other way round.
    let high_bmp = |lead: u8| lead == 0xEE || lead == 0xEF;
    if (high_bmp(p) && q >= 0xF0) || (high_bmp(q) && p >= 0xF0) {
        q.cmp(&p)
    } else {
        p.cmp(&q)
    }
}

/// The length of the common prefix of `x` and `y`, compared eight bytes at a time.
fn common_prefix(x: &[u8], y: &[u8]) -> usize {
    let n = x.len().min(y.len());
    let mut i = 0;
    let word = |s: &[u8], at: usize| u64::from_ne_bytes(s[at..at + 8].try_into().expect("8 bytes"));
    while i + 8 <= n && word(x, i) == word(y, i) {
        i += 8;
    }
    while i < n && x[i] == y[i] {
        i += 1;
    }
    i
}

/// `true` for bytes that JCS escapes in a string: `"`, `\` and controls below U+0020.
const fn needs_escape_table() -> [bool; 256] {
    let mut table = [false; 256];
    let mut b = 0;
    while b < 0x20 {
        table[b] = true;
        b += 1;
    }
    table[b'"' as usize] = true;
    table[b'\\' as usize] = true;
    table
}

pub(super) static NEEDS_ESCAPE: [bool; 256] = needs_escape_table();

const HEX: &[u8; 16] = b"0123456789abcdef";

/// Writes `s` as a JSON string with JCS's escaping (SPEC §2 rule 3); `s` must already be NFC.
pub(super) fn write_str<S: Sink>(s: &str, out: &mut S) {
    let bytes = s.as_bytes();
    out.put(b"\"");
    let mut run_start = 0;
    for (i, &b) in bytes.iter().enumerate() {
        if !NEEDS_ESCAPE[b as usize] {
            continue;
        }
        out.put(&bytes[run_start..i]);
        run_start = i + 1;
        match b {
            b'"' => out.put(b"\\\""),
            b'\\' => out.put(b"\\\\"),
            0x08 => out.put(b"\\b"),
            b'\t' => out.put(b"\\t"),
            b'\n' => out.put(b"\\n"),
            0x0C => out.put(b"\\f"),
            b'\r' => out.put(b"\\r"),
            _ => out.put(&[
                b'\\',
                b'u',
                b'0',
                b'0',
                HEX[(b >> 4) as usize],
                HEX[(b & 0xF) as usize],
            ]),
        }
    }
    out.put(&bytes[run_start..]);
    out.put(b"\"");
}

/// Writes `s` NFC-normalised and escaped.
pub(super) fn write_nfc_str<S: Sink>(s: &str, out: &mut S) {
    write_str(&nfc(s), out);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn written(s: &str) -> String {
        let mut out = Vec::new();
        write_str(s, &mut out);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn escapes_follow_jcs() {
        assert_eq!(written("\u{0}"), r#""\u0000""#);
        assert_eq!(written("\u{1f}\u{1b}"), r#""\u001f\u001b""#);
        assert_eq!(written("\u{8}\u{c}\n\r\t"), r#""\b\f\n\r\t""#);
        assert_eq!(written("\"\\/"), r#""\"\\/""#);
        assert_eq!(written("\u{7f}\u{2028}é😀"), "\"\u{7f}\u{2028}é😀\"");
    }

    #[test]
    fn utf16_order_puts_supplementary_before_high_bmp() {
        assert_eq!(cmp_utf16("\u{FB01}", "\u{1F600}"), Ordering::Greater);
        assert_eq!(cmp_utf16("\u{D7FF}", "\u{1F600}"), Ordering::Less);
        assert_eq!(cmp_utf16("a", "\u{1F600}"), Ordering::Less);
        assert_eq!(cmp_utf16("ab", "a"), Ordering::Greater);
        assert_eq!(cmp_utf16("a\u{FFFF}", "a\u{10000}"), Ordering::Greater);
        assert_eq!(cmp_utf16("\u{10000}", "\u{10FFFF}"), Ordering::Less);
        assert_eq!(cmp_utf16("é", "é"), Ordering::Equal);
        // Same lead byte, different characters.
        assert_eq!(cmp_utf16("\u{E000}", "\u{E001}"), Ordering::Less);
    }

    #[test]
    fn utf16_order_matches_code_unit_comparison() {
        let samples = [
            "",
            "a",
            "b",
            "ab",
            "é",
            "e\u{301}",
            "\u{FB01}",
            "\u{1F600}",
            "\u{1F600}a",
            "\u{FFFD}",
            "\u{10000}",
            "日本",
            "日",
            "\u{E000}x",
            "z",
        ];
        for a in samples {
            for b in samples {
                let units = a.encode_utf16().cmp(b.encode_utf16());
                assert_eq!(cmp_utf16(a, b), units, "{a:?} vs {b:?}");
            }
        }
    }

    #[test]
    fn nfc_composes_and_borrows_when_it_can() {
        assert!(matches!(nfc("plain"), Cow::Borrowed(_)));
        assert!(matches!(nfc("José"), Cow::Borrowed(_)));
        assert_eq!(nfc("Jose\u{301}"), "José");
        assert_eq!(nfc("A\u{30A}"), "Å");
        assert_eq!(nfc_owned("n\u{303}".to_owned()), "ñ");
    }
}
