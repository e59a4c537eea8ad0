//! Ordering Kubernetes resourceVersions.
//!
//! resourceVersions are opaque strings in the Kubernetes API; ordering them is only sound where
//! they are etcd revisions, written as decimal integers. Following Argo 4.1, a value is
//! orderable only in that canonical form: ASCII digits, no sign, no leading zero, not "0".
//! Anything else is unparseable and [`compare`] returns `None`: callers decide what an unordered
//! pair means for them.

use std::cmp::Ordering;

/// A resourceVersion in canonical decimal form. Any length is accepted, so no value overflows.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ResourceVersion(String);

impl ResourceVersion {
    /// Parses `text`, or returns `None` when it is not a canonical positive decimal integer.
    pub fn parse(text: &str) -> Option<Self> {
        let canonical =
            !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()) && !text.starts_with('0');
        canonical.then(|| Self(text.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl Ord for ResourceVersion {
    fn cmp(&self, other: &Self) -> Ordering {
        // Without leading zeros, a longer number is a larger one.
        self.0
            .len()
            .cmp(&other.0.len())
            .then_with(|| self.0.cmp(&other.0))
    }
}

impl PartialOrd for ResourceVersion {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// Orders two resourceVersions; `None` when either is unparseable.
pub fn compare(a: &str, b: &str) -> Option<Ordering> {
    Some(ResourceVersion::parse(a)?.cmp(&ResourceVersion::parse(b)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn canonical_decimals_parse() {
        assert!(ResourceVersion::parse("1").is_some());
        assert!(ResourceVersion::parse("1843921").is_some());
        assert!(ResourceVersion::parse("123456789012345678901234567890").is_some());
    }

    #[test]
    fn non_canonical_values_do_not_parse() {
        for bad in ["", "0", "007", "-5", "+5", "12a", " 12", "1.5", "１２"] {
            assert!(ResourceVersion::parse(bad).is_none(), "{bad:?} parsed");
        }
    }

    #[test]
    fn compares_numerically_not_lexically() {
        assert_eq!(compare("105", "110"), Some(Ordering::Less));
        assert_eq!(compare("99", "100"), Some(Ordering::Less));
        assert_eq!(compare("111", "110"), Some(Ordering::Greater));
        assert_eq!(compare("110", "110"), Some(Ordering::Equal));
        assert_eq!(
            compare("18446744073709551616", "18446744073709551615"),
            Some(Ordering::Greater)
        );
    }

    #[test]
    fn unparseable_side_is_unordered() {
        assert_eq!(compare("0", "1"), None);
        assert_eq!(compare("1", "x"), None);
        assert_eq!(compare("", ""), None);
    }
}
