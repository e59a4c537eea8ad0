//! Ordering Kubernetes resourceVersions.
//!
//! resourceVersions are opaque strings in the Kubernetes API; ordering them is only sound where
//! they are etcd revisions, written as decimal integers. Following Argo 4.1, a value is
//! orderable only in that canonical form: ASCII digits, no sign, no leading zero, not "0".
//! Anything else does not parse and [`compare`] returns `None`: callers decide what an
//! unordered pair means for them (Argo fails open).

use std::cmp::Ordering;
use std::fmt;
use std::sync::Arc;

/// A resourceVersion in canonical decimal form, ordered as the integer it writes, of any
/// length: etcd revisions fit in 64 bits, so those are kept as one word, and longer ones as
/// their digits.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum ResourceVersion {
    Word(u64),
    /// More than 64 bits: always greater than any [`ResourceVersion::Word`].
    Wide(Arc<str>),
}

impl ResourceVersion {
    /// `text` as a resourceVersion, or `None` when it is not a canonical positive decimal.
    pub fn parse(text: &str) -> Option<ResourceVersion> {
        if text.is_empty() || text.starts_with('0') || !text.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        Some(match text.parse::<u64>() {
            Ok(word) => ResourceVersion::Word(word),
            Err(_) => ResourceVersion::Wide(Arc::from(text)),
        })
    }
}

impl Ord for ResourceVersion {
    fn cmp(&self, other: &Self) -> Ordering {
        match (self, other) {
            (Self::Word(a), Self::Word(b)) => a.cmp(b),
            (Self::Word(_), Self::Wide(_)) => Ordering::Less,
            (Self::Wide(_), Self::Word(_)) => Ordering::Greater,
            // Without leading zeros, a longer number is a larger one.
            (Self::Wide(a), Self::Wide(b)) => a.len().cmp(&b.len()).then_with(|| a.cmp(b)),
        }
    }
}

impl PartialOrd for ResourceVersion {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq<u64> for ResourceVersion {
    fn eq(&self, other: &u64) -> bool {
        matches!(self, Self::Word(word) if word == other)
    }
}

impl fmt::Display for ResourceVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Word(word) => write!(f, "{word}"),
            Self::Wide(digits) => f.write_str(digits),
        }
    }
}

/// Orders two resourceVersions; `None` when either does not parse.
pub fn compare(a: &str, b: &str) -> Option<Ordering> {
    Some(ResourceVersion::parse(a)?.cmp(&ResourceVersion::parse(b)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn canonical_decimals_parse_and_others_do_not() {
        assert_eq!(
            ResourceVersion::parse("110"),
            Some(ResourceVersion::Word(110))
        );
        let wide = "123456789012345678901234567890";
        assert_eq!(
            ResourceVersion::parse(wide),
            Some(ResourceVersion::Wide(Arc::from(wide)))
        );
        for bad in ["", "0", "007", "-5", "+5", "12a", " 12", "1.5", "１２"] {
            assert_eq!(ResourceVersion::parse(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn compares_numerically_not_lexically_at_any_length() {
        assert_eq!(compare("105", "110"), Some(Ordering::Less));
        assert_eq!(compare("99", "100"), Some(Ordering::Less));
        assert_eq!(compare("110", "110"), Some(Ordering::Equal));
        assert_eq!(
            compare("18446744073709551616", "18446744073709551615"),
            Some(Ordering::Greater)
        );
        assert_eq!(
            compare("28446744073709551616", "18446744073709551616"),
            Some(Ordering::Greater)
        );
        assert_eq!(compare("abc", "1"), None);
        assert_eq!(compare("1", "0"), None);
        assert_eq!(ResourceVersion::Word(7).to_string(), "7");
    }
}
