//! Kubernetes resource quantities: parsed and written back in canonical form, as the API
//! machinery serialises them (`1.5Gi` becomes `1536Mi`, `0.5` becomes `500m`).

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Format {
    BinarySi,
    DecimalSi,
    DecimalExponent,
}

/// A quantity's exact value, `mantissa * 10^scale`, and the notation it was written in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Quantity {
    mantissa: i128,
    scale: i32,
    format: Format,
}

const DECIMAL_SUFFIXES: [(&str, i32); 10] = [
    ("n", -9),
    ("u", -6),
    ("m", -3),
    ("", 0),
    ("k", 3),
    ("M", 6),
    ("G", 9),
    ("T", 12),
    ("P", 15),
    ("E", 18),
];
const BINARY_SUFFIXES: [&str; 7] = ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"];

impl Quantity {
    pub fn parse(text: &str) -> Result<Quantity, String> {
        let bad = || {
            format!(
                "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$' (got {text:?})"
            )
        };
        let (negative, rest) = match text.as_bytes().first() {
            Some(b'-') => (true, &text[1..]),
            Some(b'+') => (false, &text[1..]),
            Some(_) => (false, text),
            None => return Err(bad()),
        };
        let number_end = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let (number, suffix) = rest.split_at(number_end);
        let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
        if (whole.is_empty() && fraction.is_empty()) || fraction.contains('.') {
            return Err(bad());
        }
        let digits = format!("{whole}{fraction}");
        let mut mantissa: i128 = digits
            .trim_start_matches('0')
            .parse()
            .or_else(|_| {
                if digits.bytes().all(|b| b == b'0') {
                    Ok(0)
                } else {
                    Err(())
                }
            })
            .map_err(|_| bad())?;
        let mut scale = -i32::try_from(fraction.len()).map_err(|_| bad())?;
        let format = if let Some(power) = BINARY_SUFFIXES
            .iter()
            .position(|s| !s.is_empty() && *s == suffix)
        {
            mantissa = mantissa
                .checked_mul(1i128 << (10 * power))
                .ok_or_else(|| "quantity too large".to_owned())?;
            Format::BinarySi
        } else if let Some((_, exponent)) = DECIMAL_SUFFIXES.iter().find(|(s, _)| *s == suffix) {
            scale += exponent;
            Format::DecimalSi
        } else if let Some(exponent) = suffix.strip_prefix(['e', 'E']) {
            scale += exponent.parse::<i32>().map_err(|_| bad())?;
            Format::DecimalExponent
        } else {
            return Err(bad());
        };
        if negative {
            mantissa = -mantissa;
        }
        // Precision below a nano is rounded up, away from zero.
        if scale < -9 {
            let divisor = 10i128
                .checked_pow((-9 - scale) as u32)
                .ok_or_else(|| "quantity too precise".to_owned())?;
            let rounded =
                mantissa / divisor + i128::from(mantissa % divisor != 0) * mantissa.signum();
            mantissa = rounded;
            scale = -9;
        }
        Ok(Quantity {
            mantissa,
            scale,
            format,
        })
    }

    pub fn is_negative(&self) -> bool {
        self.mantissa < 0
    }

    /// The canonical text Kubernetes writes for this quantity.
    pub fn canonical(&self) -> String {
        let (mut mantissa, mut scale) = (self.mantissa, self.scale);
        if mantissa == 0 {
            return "0".to_owned();
        }
        while mantissa % 10 == 0 {
            mantissa /= 10;
            scale += 1;
        }
        if self.format == Format::BinarySi
            && let Some(text) = binary_canonical(mantissa, scale)
        {
            return text;
        }
        let exponent = scale.div_euclid(3) * 3;
        let mantissa = mantissa * 10i128.pow((scale - exponent) as u32);
        let suffix = match self.format {
            Format::DecimalExponent if exponent == 0 => String::new(),
            Format::DecimalExponent => format!("e{exponent}"),
            _ => DECIMAL_SUFFIXES
                .iter()
                .find(|(_, e)| *e == exponent)
                .map_or_else(|| format!("e{exponent}"), |(s, _)| (*s).to_owned()),
        };
        format!("{mantissa}{suffix}")
    }
}

/// Binary notation when the value is a whole number of at least 1024 in magnitude.
fn binary_canonical(mantissa: i128, scale: i32) -> Option<String> {
    if scale < 0 {
        return None;
    }
    let mut value = mantissa.checked_mul(10i128.checked_pow(scale as u32)?)?;
    if value.abs() < 1024 {
        return None;
    }
    let mut power = 0;
    while power < BINARY_SUFFIXES.len() - 1 && value % 1024 == 0 {
        value /= 1024;
        power += 1;
    }
    Some(format!("{value}{}", BINARY_SUFFIXES[power]))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn canonical(text: &str) -> String {
        Quantity::parse(text).unwrap().canonical()
    }

    #[test]
    fn canonical_forms_match_kubernetes() {
        assert_eq!(canonical("1Gi"), "1Gi");
        assert_eq!(canonical("1.5Gi"), "1536Mi");
        assert_eq!(canonical("0.5Gi"), "512Mi");
        assert_eq!(canonical("1024Mi"), "1Gi");
        assert_eq!(canonical("0.5"), "500m");
        assert_eq!(canonical("0.1"), "100m");
        assert_eq!(canonical("64Mi"), "64Mi");
        assert_eq!(canonical("1500M"), "1500M");
        assert_eq!(canonical("1.5G"), "1500M");
        assert_eq!(canonical("100Ki"), "100Ki");
        assert_eq!(canonical("512"), "512");
        assert_eq!(canonical("2048"), "2048");
        assert_eq!(canonical("1e3"), "1e3");
        assert_eq!(canonical("0"), "0");
        assert_eq!(canonical("0.0000000001"), "1n");
    }

    #[test]
    fn bad_quantities_are_rejected() {
        for text in ["", "Gi", "1.2.3", "1Gb", "abc", "."] {
            assert!(Quantity::parse(text).is_err(), "{text}");
        }
        assert!(Quantity::parse("-1Gi").unwrap().is_negative());
    }
}
