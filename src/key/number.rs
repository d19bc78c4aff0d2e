//! Exact decimal numbers: reading JSON number literals without rounding, and writing them in ECMAScript's layout.

use std::fmt::{self, Write as _};
use std::str::FromStr;

use super::sink::Sink;
use super::{KeyError, Problem};

/// The longest number literal accepted, in characters (SPEC §2 rule 6).
pub const MAX_NUMBER_LITERAL_LEN: usize = 1000;
/// The largest magnitude of a literal's exponent part (SPEC §2 rule 6).
pub const MAX_EXPONENT: u32 = 9999;

/// An exact decimal value `± digits × 10^exp` whose digits are `hi` followed by `lo`,
/// borrowed from wherever they were read.
///
/// Invariants: the digit sequence has no leading and no trailing zero; zero has no digits
/// and is never negative (`-0` is `0`).
#[derive(Clone, Copy, Debug)]
pub(super) struct Decimal<'a> {
    pub neg: bool,
    pub hi: &'a [u8],
    pub lo: &'a [u8],
    pub exp: i32,
}

impl Decimal<'_> {
    fn digit_count(&self) -> usize {
        self.hi.len() + self.lo.len()
    }
}

/// Reads the strict JSON number literal that starts at `bytes[start]`, returning its exact
/// value and the index just past it. Whatever follows the literal is the caller's business.
pub(super) fn scan_literal(bytes: &[u8], start: usize) -> Result<(Decimal<'_>, usize), Problem> {
    let at = |i: usize| bytes.get(i).copied();
    let is_digit = |i: usize| matches!(bytes.get(i), Some(b'0'..=b'9'));
    let mut i = start;
    let neg = at(i) == Some(b'-');
    if neg {
        i += 1;
    }
    let int_start = i;
    match at(i) {
        Some(b'0') => {
            i += 1;
            if is_digit(i) {
                return Err(Problem::syntax(i, "a number may not have leading zeros"));
            }
        }
        Some(b'1'..=b'9') => {
            i += 1;
            while is_digit(i) {
                i += 1;
            }
        }
        _ => return Err(Problem::syntax(i, "expected a digit")),
    }
    let int = &bytes[int_start..i];
    let mut frac: &[u8] = &[];
    if at(i) == Some(b'.') {
        i += 1;
        let frac_start = i;
        while is_digit(i) {
            i += 1;
        }
        if i == frac_start {
            return Err(Problem::syntax(
                i,
                "expected a digit after the decimal point",
            ));
        }
        frac = &bytes[frac_start..i];
    }
    let mut exponent: i64 = 0;
    let mut exponent_text: &[u8] = &[];
    if matches!(at(i), Some(b'e' | b'E')) {
        i += 1;
        let text_start = i;
        let exp_neg = at(i) == Some(b'-');
        if matches!(at(i), Some(b'+' | b'-')) {
            i += 1;
        }
        let digits_start = i;
        while let Some(d @ b'0'..=b'9') = at(i) {
            // Saturate well above the limit: only "beyond the limit" matters then.
            exponent = (exponent * 10 + i64::from(d - b'0')).min(1_000_000);
            i += 1;
        }
        if i == digits_start {
            return Err(Problem::syntax(i, "expected a digit in the exponent"));
        }
        if exp_neg {
            exponent = -exponent;
        }
        exponent_text = &bytes[text_start..i];
    }
    let length = i - start;
    if length > MAX_NUMBER_LITERAL_LEN {
        return Err(Problem::NumberTooLong { length });
    }
    if exponent.unsigned_abs() > u64::from(MAX_EXPONENT) {
        return Err(Problem::ExponentOutOfRange {
            exponent: String::from_utf8_lossy(exponent_text).into_owned(),
        });
    }
    Ok((normalise(neg, int, frac, exponent), i))
}

/// Turns `int.frac × 10^exponent` into the unique digits-and-exponent form of [`Decimal`].
fn normalise<'a>(neg: bool, int: &'a [u8], frac: &'a [u8], exponent: i64) -> Decimal<'a> {
    // Both lengths are bounded by the literal limit and the exponent by MAX_EXPONENT.
    let mut exp = (exponent - frac.len() as i64) as i32;
    let (mut hi, mut lo) = if int == b"0" {
        let leading = frac.iter().take_while(|&&d| d == b'0').count();
        (&int[..0], &frac[leading..])
    } else {
        (int, frac)
    };
    if !lo.is_empty() {
        let trailing = lo.iter().rev().take_while(|&&d| d == b'0').count();
        lo = &lo[..lo.len() - trailing];
        exp += trailing as i32;
    }
    if lo.is_empty() {
        let trailing = hi.iter().rev().take_while(|&&d| d == b'0').count();
        hi = &hi[..hi.len() - trailing];
        exp += trailing as i32;
    }
    if hi.is_empty() && lo.is_empty() {
        return Decimal {
            neg: false,
            hi,
            lo,
            exp: 0,
        };
    }
    Decimal { neg, hi, lo, exp }
}

const ZEROS: &[u8; 21] = b"000000000000000000000";

/// Writes `d` in the layout of ECMAScript's Number::toString (SPEC §2 rule 4).
pub(super) fn write_decimal<S: Sink>(d: Decimal<'_>, out: &mut S) {
    let k = d.digit_count() as i64;
    if k == 0 {
        out.put(b"0");
        return;
    }
    if d.neg {
        out.put(b"-");
    }
    // The value is 0.d1d2…dk × 10^n.
    let n = i64::from(d.exp) + k;
    if k <= n && n <= 21 {
        put_digits(&d, 0, k as usize, out);
        out.put(&ZEROS[..(n - k) as usize]);
    } else if 0 < n && n <= 21 {
        put_digits(&d, 0, n as usize, out);
        out.put(b".");
        put_digits(&d, n as usize, k as usize, out);
    } else if -6 < n && n <= 0 {
        out.put(b"0.");
        out.put(&ZEROS[..(-n) as usize]);
        put_digits(&d, 0, k as usize, out);
    } else {
        put_digits(&d, 0, 1, out);
        if k > 1 {
            out.put(b".");
            put_digits(&d, 1, k as usize, out);
        }
        let e = n - 1;
        out.put(if e < 0 { b"e-" } else { b"e+" });
        let mut text = StackText::new();
        // Infallible: an i64 always fits the buffer.
        let _ = write!(text, "{}", e.unsigned_abs());
        out.put(text.as_bytes());
    }
}

/// Writes digits `from..to` of the sequence `hi ++ lo`.
fn put_digits<S: Sink>(d: &Decimal<'_>, from: usize, to: usize, out: &mut S) {
    let split = d.hi.len();
    if from < split {
        out.put(&d.hi[from..to.min(split)]);
    }
    if to > split {
        out.put(&d.lo[from.max(split) - split..to - split]);
    }
}

/// A small fixed buffer that std's formatting machinery can write into without allocating.
pub(super) struct StackText {
    buf: [u8; 48],
    len: usize,
}

impl StackText {
    pub(super) fn new() -> Self {
        StackText {
            buf: [0; 48],
            len: 0,
        }
    }

    pub(super) fn as_bytes(&self) -> &[u8] {
        &self.buf[..self.len]
    }
}

impl fmt::Write for StackText {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        let end = self.len + s.len();
        if end > self.buf.len() {
            return Err(fmt::Error);
        }
        self.buf[self.len..end].copy_from_slice(s.as_bytes());
        self.len = end;
        Ok(())
    }
}

/// Reads back the text std printed for a native number.
fn number_from_text(text: &StackText) -> Number {
    let (d, _) = scan_literal(text.as_bytes(), 0)
        .expect("std prints finite numbers as valid JSON number literals");
    Number::from_decimal(d)
}

/// An integer's exact decimal.
fn integer(value: impl fmt::LowerExp) -> Number {
    let mut text = StackText::new();
    // Infallible: the longest text, an i128's, is 44 bytes.
    let _ = write!(text, "{value:e}");
    number_from_text(&text)
}

/// A binary floating-point format: what the shortest-decimal rule needs to know of it.
trait BinaryFloat: Copy + PartialEq + fmt::LowerExp + FromStr {
    /// `(m, e)` with the magnitude `m × 2^e`.
    fn integer_and_exponent(self) -> (u64, i32);
    fn negative(self) -> bool;
}

impl BinaryFloat for f64 {
    fn integer_and_exponent(self) -> (u64, i32) {
        let bits = self.to_bits();
        let fraction = bits & ((1 << 52) - 1);
        match ((bits >> 52) & 0x7FF) as i32 {
            0 => (fraction, -1074),
            biased => (fraction | 1 << 52, biased - 1075),
        }
    }

    fn negative(self) -> bool {
        self.is_sign_negative()
    }
}

impl BinaryFloat for f32 {
    fn integer_and_exponent(self) -> (u64, i32) {
        let bits = self.to_bits();
        let fraction = u64::from(bits & ((1 << 23) - 1));
        match ((bits >> 23) & 0xFF) as i32 {
            0 => (fraction, -149),
            biased => (fraction | 1 << 23, biased - 150),
        }
    }

    fn negative(self) -> bool {
        self.is_sign_negative()
    }
}

/// The shortest decimal that reads back as `x` in its own binary format, chosen as
/// ECMAScript's Number::toString chooses it (SPEC §2 rule 4): fewest digits, then closest
/// to `x`, then — when two are equally close — the one whose last digit is even.
///
/// std's `{:e}` already gives the fewest digits and the closest, but breaks an exact tie
/// upwards (it prints 1658206780088562.25 as `…562.3`, ECMAScript as `…562.2`); ties are
/// rare and are detected exactly here and settled on the even digit.
fn shortest<F: BinaryFloat>(x: F) -> Number {
    let mut text = StackText::new();
    // Infallible: a float in exponent form is at most 24 bytes.
    let _ = write!(text, "{x:e}");
    let std_choice = number_from_text(&text);
    let Some((midpoint, exponent)) = exact_midpoint(x) else {
        return std_choice;
    };
    // A tie between two k-digit candidates means the exact value has k + 1 digits, the last a 5.
    let exact_digits = midpoint.ilog10() as usize + 1;
    if exact_digits != std_choice.digits.len() + 1 {
        return std_choice;
    }
    let below = midpoint / 10;
    let even = if below % 2 == 0 { below } else { below + 1 };
    let mut candidate = StackText::new();
    let sign = if x.negative() { "-" } else { "" };
    let _ = write!(candidate, "{sign}{even}e{}", exponent + 1);
    let reads_back = std::str::from_utf8(candidate.as_bytes())
        .ok()
        .and_then(|t| t.parse::<F>().ok())
        .is_some_and(|y| y == x);
    if reads_back {
        number_from_text(&candidate)
    } else {
        std_choice
    }
}

/// The exact decimal value of `x` as `(digits, exponent)` when it could be a tie between
/// two shortest candidates: at most 18 significant digits, the last one a 5.
fn exact_midpoint<F: BinaryFloat>(x: F) -> Option<(u128, i32)> {
    let (mut m, mut e) = x.integer_and_exponent();
    if m == 0 {
        return None;
    }
    let shift = m.trailing_zeros();
    m >>= shift;
    e += shift as i32;
    const MAX_DIGITS: u128 = 1_000_000_000_000_000_000; // 10^18: 19 digits and up
    if e >= 0 {
        // An integer: stripped of decimal zeros it ends in 5 only if the 2s all paired
        // with 5s from m, and m < 2^53 has fewer than 23 factors of 5.
        if e > 22 {
            return None;
        }
        let mut v = u128::from(m) << e;
        let mut exponent = 0;
        while v % 10 == 0 {
            v /= 10;
            exponent += 1;
        }
        (v % 10 == 5 && v < MAX_DIGITS).then_some((v, exponent))
    } else {
        // m / 2^j = m × 5^j / 10^j, and 5^27 alone has 19 digits.
        let j = e.unsigned_abs();
        if j > 26 {
            return None;
        }
        let v = u128::from(m) * 5u128.pow(j);
        (v < MAX_DIGITS).then_some((v, e))
    }
}

/// Names a non-finite float the way JavaScript and Java print it.
pub(super) fn non_finite_name(x: f64) -> &'static str {
    if x.is_nan() {
        "NaN"
    } else if x > 0.0 {
        "Infinity"
    } else {
        "-Infinity"
    }
}

/// An exact decimal number: what a JSON number literal says, never rounded through a double.
///
/// `2`, `2.0`, `2e0` and `20e-1` are one `Number`; `-0` is `0`. `Display` writes the
/// ECMAScript Number-to-String layout of SPEC §2 rule 4 (`100`, `0.000001`, `1e-7`, `1e+21`).
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Number {
    negative: bool,
    /// Significant decimal digits (ASCII), no leading or trailing zero; empty for zero.
    digits: Box<[u8]>,
    exponent: i32,
}

impl Number {
    pub(super) fn from_decimal(d: Decimal<'_>) -> Number {
        let mut digits = Vec::with_capacity(d.digit_count());
        digits.extend_from_slice(d.hi);
        digits.extend_from_slice(d.lo);
        Number {
            negative: d.neg,
            digits: digits.into_boxed_slice(),
            exponent: d.exp,
        }
    }

    pub(super) fn decimal(&self) -> Decimal<'_> {
        Decimal {
            neg: self.negative,
            hi: &self.digits,
            lo: &[],
            exp: self.exponent,
        }
    }

    /// Whether this is zero (`0`, `-0`, `0.0`, `0e5` all are).
    pub fn is_zero(&self) -> bool {
        self.digits.is_empty()
    }

    /// Whether this is below zero (zero never is).
    pub fn is_negative(&self) -> bool {
        self.negative
    }

    fn non_finite(x: f64) -> KeyError {
        KeyError::NonFinite {
            path: "number".to_owned(),
            value: non_finite_name(x).to_owned(),
        }
    }
}

impl fmt::Display for Number {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut text = Vec::with_capacity(self.digits.len() + 8);
        write_decimal(self.decimal(), &mut text);
        f.pad(std::str::from_utf8(&text).map_err(|_| fmt::Error)?)
    }
}

impl fmt::Debug for Number {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Number({self})")
    }
}

/// A binary64 stands for its shortest round-trip decimal (`0.1` is `0.1`, `1e23` is `1e+23`).
impl TryFrom<f64> for Number {
    type Error = KeyError;

    fn try_from(x: f64) -> Result<Number, KeyError> {
        if !x.is_finite() {
            return Err(Number::non_finite(x));
        }
        Ok(shortest(x))
    }
}

/// A binary32 stands for its shortest round-trip *binary32* decimal (`0.1f32` is `0.1`).
impl TryFrom<f32> for Number {
    type Error = KeyError;

    fn try_from(x: f32) -> Result<Number, KeyError> {
        if !x.is_finite() {
            return Err(Number::non_finite(f64::from(x)));
        }
        Ok(shortest(x))
    }
}

impl From<i64> for Number {
    fn from(n: i64) -> Number {
        integer(n)
    }
}

impl From<u64> for Number {
    fn from(n: u64) -> Number {
        integer(n)
    }
}

impl From<i128> for Number {
    fn from(n: i128) -> Number {
        integer(n)
    }
}

impl From<i32> for Number {
    fn from(n: i32) -> Number {
        Number::from(i64::from(n))
    }
}

impl From<u32> for Number {
    fn from(n: u32) -> Number {
        Number::from(u64::from(n))
    }
}

/// Parses one strict JSON number literal (RFC 8259 grammar, SPEC §2 limits), exactly.
impl FromStr for Number {
    type Err = KeyError;

    fn from_str(s: &str) -> Result<Number, KeyError> {
        let bytes = s.as_bytes();
        let problem = match scan_literal(bytes, 0) {
            Ok((d, end)) if end == bytes.len() => return Ok(Number::from_decimal(d)),
            Ok((_, end)) => Problem::syntax(end, "unexpected character after the number"),
            Err(problem) => problem,
        };
        Err(problem.into_error("number"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layout(literal: &str) -> String {
        literal.parse::<Number>().unwrap().to_string()
    }

    #[test]
    fn plain_layout_up_to_21_integer_digits() {
        assert_eq!(layout("100"), "100");
        assert_eq!(layout("1.0e2"), "100");
        assert_eq!(layout("123456789012345678901"), "123456789012345678901");
        assert_eq!(layout("1e20"), "100000000000000000000");
    }

    #[test]
    fn exponent_layout_from_22_integer_digits() {
        assert_eq!(
            layout("1234567890123456789012"),
            "1.234567890123456789012e+21"
        );
        assert_eq!(layout("1e21"), "1e+21");
        assert_eq!(layout("1000000000000000000000"), "1e+21");
    }

    #[test]
    fn small_numbers_switch_to_exponent_below_1e_minus_6() {
        assert_eq!(layout("0.000001"), "0.000001");
        assert_eq!(layout("1e-6"), "0.000001");
        assert_eq!(layout("1e-7"), "1e-7");
        assert_eq!(layout("0.0000001"), "1e-7");
        assert_eq!(layout("0.0000015"), "0.0000015");
        assert_eq!(layout("-1.5e-300"), "-1.5e-300");
        assert_eq!(layout("1.5e300"), "1.5e+300");
    }

    #[test]
    fn spellings_of_one_value_agree() {
        for literal in ["2", "2.0", "2e0", "20e-1", "0.2e1", "2.000E+0", "200e-2"] {
            assert_eq!(layout(literal), "2", "{literal}");
        }
        assert_eq!("2".parse::<Number>(), "20e-1".parse::<Number>());
    }

    #[test]
    fn negative_zero_is_zero() {
        for literal in ["-0", "-0.0", "0e5", "-0e-5", "0.000"] {
            let n: Number = literal.parse().unwrap();
            assert!(n.is_zero() && !n.is_negative(), "{literal}");
            assert_eq!(n.to_string(), "0");
        }
        assert_eq!(Number::try_from(-0.0f64).unwrap().to_string(), "0");
    }

    #[test]
    fn fractions_keep_every_digit() {
        assert_eq!(layout("3.14159"), "3.14159");
        assert_eq!(layout("-0.5"), "-0.5");
        assert_eq!(layout("1234.5678e2"), "123456.78");
        assert_eq!(layout("9007199254740993"), "9007199254740993");
        assert_eq!(
            layout("0.1000000000000000055511151231257827"),
            "0.1000000000000000055511151231257827"
        );
    }

    #[test]
    fn big_exponent_with_many_digits() {
        let literal = format!("{}e9999", "123456789".repeat(20));
        let expected = format!("1.{}{}e+10178", "23456789", "123456789".repeat(19));
        assert_eq!(layout(&literal), expected);
        assert_eq!(layout("1e9999"), "1e+9999");
        assert_eq!(layout("1e-9999"), "1e-9999");
        assert_eq!(layout("0.001e-9999"), "1e-10002");
    }

    #[test]
    fn limits_are_errors() {
        assert!(matches!(
            "1e10000".parse::<Number>(),
            Err(KeyError::ExponentOutOfRange { .. })
        ));
        assert!(matches!(
            "1E-10000".parse::<Number>(),
            Err(KeyError::ExponentOutOfRange { .. })
        ));
        assert!("1e0009999".parse::<Number>().is_ok());
        let at_limit = format!("1{}", "0".repeat(MAX_NUMBER_LITERAL_LEN - 1));
        assert!(at_limit.parse::<Number>().is_ok());
        let over = format!("1{}", "0".repeat(MAX_NUMBER_LITERAL_LEN));
        assert!(matches!(
            over.parse::<Number>(),
            Err(KeyError::NumberTooLong { length: 1001, .. })
        ));
    }

    #[test]
    fn strict_literal_grammar() {
        for bad in [
            "", "-", "+1", "01", "1.", ".5", "1e", "1e+", "0x10", "1 ", "NaN", "1.5.2", "--1",
        ] {
            assert!(bad.parse::<Number>().is_err(), "{bad:?} should be refused");
        }
    }

    #[test]
    fn native_floats_are_shortest_round_trip() {
        assert_eq!(Number::try_from(0.1f64).unwrap().to_string(), "0.1");
        assert_eq!(Number::try_from(1e23f64).unwrap().to_string(), "1e+23");
        assert_eq!(Number::try_from(0.1f32).unwrap().to_string(), "0.1");
        assert_eq!(
            Number::try_from(f32::MAX).unwrap().to_string(),
            "3.4028235e+38"
        );
        assert_eq!(Number::try_from(5e-324f64).unwrap().to_string(), "5e-324");
        assert_eq!(Number::try_from(2.0f64).unwrap(), Number::from(2i64));
        assert_eq!(Number::try_from(-0.1f64).unwrap().to_string(), "-0.1");
        assert!(Number::try_from(f64::NAN).is_err());
        assert!(Number::try_from(f32::NEG_INFINITY).is_err());
    }

    #[test]
    fn native_float_ties_go_to_the_even_digit() {
        // 1658206780088562.25 lies exactly between two shortest candidates.
        let x = f64::from_bits(0x4317_9085_685d_83c9);
        assert_eq!(
            Number::try_from(x).unwrap().to_string(),
            "1658206780088562.2"
        );
        assert_eq!(
            Number::try_from(-x).unwrap().to_string(),
            "-1658206780088562.2"
        );
        // 4079545.25 as a binary32.
        let y = f32::from_bits(0x4a78_fee5);
        assert_eq!(Number::try_from(y).unwrap().to_string(), "4079545.2");
    }

    #[test]
    fn native_integers_are_exact() {
        assert_eq!(Number::from(i64::MIN).to_string(), "-9223372036854775808");
        assert_eq!(Number::from(u64::MAX).to_string(), "18446744073709551615");
        assert_eq!(
            Number::from(i128::MIN).to_string(),
            "-1.70141183460469231731687303715884105728e+38"
        );
        assert_eq!(Number::from(1000i64), "1e3".parse().unwrap());
    }
}
