//! JSON text exactly as Go's `encoding/json` writes it.
//!
//! KFP stores component specs, task specs and runtime configs as JSON strings produced by
//! `json.Marshal` of a generic value: object keys sorted, every number a float64, and
//! `<`, `>`, `&`, U+2028 and U+2029 escaped. Hashes and argument values depend on those bytes.

use std::fmt::Write;

use serde_json::{Number, Value};

/// `v` as Go's `json.Marshal` of the equivalent `interface{}` value writes it.
pub fn to_string(v: &Value) -> String {
    let mut out = String::with_capacity(256);
    write_value(v, &mut out);
    out
}

pub fn write_value(v: &Value, out: &mut String) {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(true) => out.push_str("true"),
        Value::Bool(false) => out.push_str("false"),
        Value::Number(n) => write_number(n, out),
        Value::String(s) => write_str(s, out),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_value(item, out);
            }
            out.push(']');
        }
        // serde_json's map is ordered by key bytes, the order Go sorts map keys in.
        Value::Object(map) => {
            out.push('{');
            for (i, (key, item)) in map.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_str(key, out);
                out.push(':');
                write_value(item, out);
            }
            out.push('}');
        }
    }
}

/// Every JSON number decodes to a float64 in Go, so it is written back as one.
pub fn write_number(n: &Number, out: &mut String) {
    write_float(n.as_f64().unwrap_or(0.0), out);
}

/// A float64 as `encoding/json` writes it: shortest digits, exponent form only below 1e-6 or
/// from 1e21 on, a negative exponent without leading zero (`1e-7`), a positive one signed.
pub fn write_float(f: f64, out: &mut String) {
    let abs = f.abs();
    if abs != 0.0 && !(1e-6..1e21).contains(&abs) {
        let digits = Digits::of(f);
        digits.write_exponent(out, 1);
    } else {
        Digits::of(f).write_plain(out);
    }
}

/// A float64 as Go's `fmt` `%v` writes it (`strconv.FormatFloat(f, 'g', -1, 64)`): exponent
/// form when the decimal exponent is below -4 or at least 6, with a sign and two or more
/// exponent digits (`1e+06`).
pub fn format_float_v(f: f64) -> String {
    if f.is_nan() {
        return "NaN".to_owned();
    }
    if f.is_infinite() {
        return if f > 0.0 { "+Inf" } else { "-Inf" }.to_owned();
    }
    let digits = Digits::of(f);
    let mut out = String::new();
    let exponent = digits.point - 1;
    if !digits.digits.is_empty() && !(-4..6).contains(&exponent) {
        digits.write_exponent(&mut out, 2);
    } else {
        digits.write_plain(&mut out);
    }
    out
}

/// The shortest decimal digits that read back as the float: value = 0.DIGITS × 10^point.
/// The digits come from serde_json's float writer (shortest round trip, as Go's), which
/// saves pulling in a second float formatter.
struct Digits {
    negative: bool,
    digits: String,
    point: i32,
}

impl Digits {
    fn of(f: f64) -> Digits {
        let negative = f.is_sign_negative();
        let text = Number::from_f64(f.abs()).map_or_else(String::new, |n| n.to_string());
        let (mantissa, exponent) = match text.split_once(['e', 'E']) {
            Some((mantissa, exponent)) => (
                mantissa,
                exponent.trim_start_matches('+').parse().unwrap_or(0),
            ),
            None => (text.as_str(), 0),
        };
        let (whole, fraction) = mantissa.split_once('.').unwrap_or((mantissa, ""));
        let mut digits = format!("{whole}{fraction}");
        let mut point = whole.len() as i32 + exponent;
        let leading = digits.len() - digits.trim_start_matches('0').len();
        digits.drain(..leading);
        point -= leading as i32;
        digits.truncate(digits.trim_end_matches('0').len());
        Digits {
            negative,
            digits,
            point,
        }
    }

    fn write_plain(&self, out: &mut String) {
        if self.negative {
            out.push('-');
        }
        let digits = self.digits.as_str();
        let point = self.point;
        if digits.is_empty() {
            out.push('0');
        } else if point <= 0 {
            out.push_str("0.");
            out.extend(std::iter::repeat_n('0', point.unsigned_abs() as usize));
            out.push_str(digits);
        } else if point as usize >= digits.len() {
            out.push_str(digits);
            out.extend(std::iter::repeat_n('0', point as usize - digits.len()));
        } else {
            let (whole, fraction) = digits.split_at(point as usize);
            out.push_str(whole);
            out.push('.');
            out.push_str(fraction);
        }
    }

    /// `d.ddde±x`, the exponent padded to `min_exponent_digits`.
    fn write_exponent(&self, out: &mut String, min_exponent_digits: usize) {
        if self.negative {
            out.push('-');
        }
        let (first, rest) = self.digits.split_at(1);
        out.push_str(first);
        if !rest.is_empty() {
            out.push('.');
            out.push_str(rest);
        }
        let exponent = self.point - 1;
        out.push('e');
        out.push(if exponent < 0 { '-' } else { '+' });
        let _ = write!(
            out,
            "{:0width$}",
            exponent.unsigned_abs(),
            width = min_exponent_digits
        );
    }
}

/// Bytes that may need escaping: controls, `"`, `\\`, `<`, `>`, `&`, and 0xE2, the first
/// byte of U+2028 and U+2029.
const ATTENTION: [bool; 256] = {
    let mut table = [false; 256];
    let mut b = 0;
    while b < 0x20 {
        table[b] = true;
        b += 1;
    }
    table[b'"' as usize] = true;
    table[b'\\' as usize] = true;
    table[b'<' as usize] = true;
    table[b'>' as usize] = true;
    table[b'&' as usize] = true;
    table[0xE2] = true;
    table
};

const fn splat(byte: u8) -> u64 {
    0x0101_0101_0101_0101 * byte as u64
}

const HIGH_BITS: u64 = splat(0x80);

/// Whether any byte of `word` is below `limit` (at most 0x80).
fn has_byte_below(word: u64, limit: u8) -> bool {
    word.wrapping_sub(splat(limit)) & !word & HIGH_BITS != 0
}

fn has_byte(word: u64, byte: u8) -> bool {
    has_byte_below(word ^ splat(byte), 1)
}

/// Whether any of eight bytes is one [`ATTENTION`] marks.
fn word_needs_attention(word: u64) -> bool {
    has_byte_below(word, 0x20)
        || has_byte(word, b'"')
        || has_byte(word, b'\\')
        || has_byte(word, b'<')
        || has_byte(word, b'>')
        || has_byte(word, b'&')
        || has_byte(word, 0xE2)
}

/// A JSON string literal with Go's escaping (HTML-safe, `\b` and `\f` short forms).
pub fn write_str(s: &str, out: &mut String) {
    out.reserve(s.len() + 2);
    out.push('"');
    let bytes = s.as_bytes();
    let mut start = 0;
    let mut i = 0;
    while i < bytes.len() {
        // Skip eight plain bytes at a time; strings here are mostly long and plain.
        if let Some(word) = bytes.get(i..i + 8)
            && !word_needs_attention(u64::from_le_bytes(word.try_into().expect("eight bytes")))
        {
            i += 8;
            continue;
        }
        let b = bytes[i];
        if !ATTENTION[b as usize] {
            i += 1;
            continue;
        }
        let (escape, width): (&str, usize) = match b {
            b'"' => ("\\\"", 1),
            b'\\' => ("\\\\", 1),
            b'\n' => ("\\n", 1),
            b'\r' => ("\\r", 1),
            b'\t' => ("\\t", 1),
            0x08 => ("\\b", 1),
            0x0c => ("\\f", 1),
            b'<' => ("\\u003c", 1),
            b'>' => ("\\u003e", 1),
            b'&' => ("\\u0026", 1),
            0xE2 if bytes.get(i + 1) == Some(&0x80) && bytes.get(i + 2) == Some(&0xA8) => {
                ("\\u2028", 3)
            }
            0xE2 if bytes.get(i + 1) == Some(&0x80) && bytes.get(i + 2) == Some(&0xA9) => {
                ("\\u2029", 3)
            }
            0xE2 => {
                i += 1;
                continue;
            }
            _ => ("", 1),
        };
        out.push_str(&s[start..i]);
        if escape.is_empty() {
            let _ = write!(out, "\\u{:04x}", b);
        } else {
            out.push_str(escape);
        }
        i += width;
        start = i;
    }
    out.push_str(&s[start..]);
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn float(f: f64) -> String {
        let mut out = String::new();
        write_float(f, &mut out);
        out
    }

    #[test]
    fn floats_follow_encoding_json() {
        assert_eq!(float(1.0), "1");
        assert_eq!(float(0.5), "0.5");
        assert_eq!(float(-0.25), "-0.25");
        assert_eq!(float(1e20), "100000000000000000000");
        assert_eq!(float(1e21), "1e+21");
        assert_eq!(float(1.5e-7), "1.5e-7");
        assert_eq!(float(0.000001), "0.000001");
        assert_eq!(float(1e-10), "1e-10");
        assert_eq!(float(12345678901234567890.0), "12345678901234567000");
    }

    #[test]
    fn percent_v_follows_fmt() {
        assert_eq!(format_float_v(1.0), "1");
        assert_eq!(format_float_v(2.5), "2.5");
        assert_eq!(format_float_v(123456.0), "123456");
        assert_eq!(format_float_v(1e6), "1e+06");
        assert_eq!(format_float_v(1234567.0), "1.234567e+06");
        assert_eq!(format_float_v(0.0001), "0.0001");
        assert_eq!(format_float_v(0.00001), "1e-05");
    }

    /// The word-at-a-time scan agrees with a byte-by-byte reference on every position.
    #[test]
    fn fast_scan_escapes_like_a_plain_loop() {
        let specials = [
            "\"", "\\", "\n", "<", ">", "&", "\u{1}", "\u{2028}", "\u{2029}", "\u{2030}", "é", "a",
        ];
        for (n, special) in specials.iter().enumerate() {
            for position in 0..20 {
                let text = format!("{}{special}{}", "x".repeat(position), "y".repeat(n));
                let mut fast = String::new();
                write_str(&text, &mut fast);
                let mut slow = String::from("\"");
                for c in text.chars() {
                    match c {
                        '"' => slow.push_str("\\\""),
                        '\\' => slow.push_str("\\\\"),
                        '\n' => slow.push_str("\\n"),
                        '<' => slow.push_str("\\u003c"),
                        '>' => slow.push_str("\\u003e"),
                        '&' => slow.push_str("\\u0026"),
                        '\u{1}' => slow.push_str("\\u0001"),
                        '\u{2028}' => slow.push_str("\\u2028"),
                        '\u{2029}' => slow.push_str("\\u2029"),
                        c => slow.push(c),
                    }
                }
                slow.push('"');
                assert_eq!(fast, slow, "{text:?}");
            }
        }
    }

    #[test]
    fn strings_are_html_escaped_like_go() {
        let v = json!({"b": "<a&b>\u{2028}", "a": "\"q\"\\\n\t\u{1}\u{8}\u{7f}é"});
        assert_eq!(
            to_string(&v),
            r#"{"a":"\"q\"\\\n\t\u0001\b"#.to_owned()
                + "\u{7f}é\",\"b\":\"\\u003ca\\u0026b\\u003e\\u2028\"}"
        );
    }
}
