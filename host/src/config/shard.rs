//! Splitting one install among replicas: `--shard INDEX/COUNT` makes this replica handle only
//! the SWFs and Workflows whose uid hashes to INDEX (FNV-1a, 64 bits, modulo COUNT). A uid never
//! changes, and the hash is fixed here rather than taken from the standard library, so every
//! replica and every version agrees on the split. Each shard elects its own leader on a Lease
//! of its own (`<lease name>-shard-<INDEX>-of-<COUNT>`).

use std::fmt;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shard {
    pub index: u32,
    pub count: u32,
}

impl Default for Shard {
    /// One shard: everything.
    fn default() -> Self {
        Shard { index: 0, count: 1 }
    }
}

impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

impl Shard {
    /// `INDEX/COUNT`, with INDEX < COUNT.
    pub fn parse(text: &str) -> Result<Self, String> {
        let (index, count) = text
            .split_once('/')
            .ok_or_else(|| format!("{text:?} is not INDEX/COUNT, e.g. 0/2"))?;
        let number = |part: &str, what: &str| {
            part.trim()
                .parse::<u32>()
                .map_err(|_| format!("{text:?}: {what} {part:?} is not a whole number"))
        };
        let (index, count) = (number(index, "INDEX")?, number(count, "COUNT")?);
        if count == 0 || index >= count {
            return Err(format!(
                "{text:?}: INDEX must be below COUNT, and COUNT at least 1"
            ));
        }
        Ok(Shard { index, count })
    }

    pub fn is_whole(&self) -> bool {
        self.count == 1
    }

    /// Whether the object with this uid is this shard's. An object without a uid (never one
    /// the API server returned) is the first shard's.
    pub fn owns(&self, uid: &str) -> bool {
        if self.is_whole() {
            return true;
        }
        if uid.is_empty() {
            return self.index == 0;
        }
        fnv1a(uid.as_bytes()) % u64::from(self.count) == u64::from(self.index)
    }

    /// The Lease this shard elects its leader on.
    pub fn lease_name(&self, base: &str) -> String {
        if self.is_whole() {
            base.to_owned()
        } else {
            format!("{base}-shard-{}-of-{}", self.index, self.count)
        }
    }
}

fn fnv1a(bytes: &[u8]) -> u64 {
    const OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    bytes.iter().fold(OFFSET, |hash, byte| {
        (hash ^ u64::from(*byte)).wrapping_mul(PRIME)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_index_over_count_and_refuses_the_rest() {
        assert_eq!(Shard::parse("1/3"), Ok(Shard { index: 1, count: 3 }));
        for bad in ["3/3", "0/0", "1", "a/2", "1/-2", ""] {
            assert!(Shard::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn every_uid_has_exactly_one_shard() {
        let shards: Vec<Shard> = (0..3).map(|index| Shard { index, count: 3 }).collect();
        let mut per_shard = [0; 3];
        for i in 0..3000 {
            let uid = format!("6f1c2a4e-0000-4000-8000-{i:012}");
            let owners: Vec<usize> = (0..3).filter(|s| shards[*s].owns(&uid)).collect();
            assert_eq!(owners.len(), 1, "{uid}");
            per_shard[owners[0]] += 1;
        }
        // Roughly even.
        assert!(per_shard.iter().all(|n| *n > 800), "{per_shard:?}");
    }

    #[test]
    fn the_split_is_fixed_across_versions() {
        // FNV-1a 64 of "a" is 0xaf63dc4c8601ec8c (the published test vector).
        assert_eq!(fnv1a(b"a"), 0xaf63_dc4c_8601_ec8c);
        assert!(Shard::default().owns("anything"));
        assert!(Shard { index: 0, count: 2 }.owns(""));
        assert!(!Shard { index: 1, count: 2 }.owns(""));
    }

    #[test]
    fn each_shard_has_its_own_lease() {
        assert_eq!(Shard::default().lease_name("pipewarden"), "pipewarden");
        assert_eq!(
            Shard { index: 1, count: 2 }.lease_name("pipewarden"),
            "pipewarden-shard-1-of-2"
        );
    }
}
