//! `--shard K/N`: a deterministic slice of a matrix plan, for CI systems that run N jobs.
//!
//! A permutation belongs to shard `1 + h mod N`, `h` being the first eight bytes of the
//! SHA-256 of its id (as nextest's hash partition, with a hash that is the same on every
//! machine and Rust release). So a shard's content depends only on the ids and N: not on the
//! machine, the order of the plan, or what the other shards did.

use std::fmt;
use std::str::FromStr;

use sha2::{Digest, Sha256};

/// The most shards a plan is split into; more would be a typo (matrices have at most
/// `MAX_PERMUTATIONS` permutations anyway).
pub const MAX_SHARDS: u32 = 1000;

/// Shard `index` (1-based) of `count`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Shard {
    pub index: u32,
    pub count: u32,
}

impl Shard {
    /// Whether the permutation with this id is in this shard.
    pub fn holds(&self, id: &str) -> bool {
        let digest = Sha256::digest(id.as_bytes());
        let h = u64::from_be_bytes(digest[..8].try_into().expect("8 bytes"));
        h % u64::from(self.count) == u64::from(self.index - 1)
    }
}

impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

/// A `--shard` that is not K/N within the bounds, as given; says how one is written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "{0:?} is not a shard: write K/N, shard K of N, with 1 <= K <= N <= {MAX_SHARDS} (e.g. 2/4)"
)]
pub struct NotAShard(pub String);

impl FromStr for Shard {
    type Err = NotAShard;

    fn from_str(s: &str) -> Result<Shard, NotAShard> {
        let not_a_shard = || NotAShard(s.to_string());
        let (k, n) = s.split_once('/').ok_or_else(not_a_shard)?;
        // Digits only: u32's parser would take "+1".
        let number = |t: &str| {
            t.bytes()
                .all(|b| b.is_ascii_digit())
                .then(|| t.parse::<u32>().ok())
                .flatten()
        };
        let (Some(index), Some(count)) = (number(k), number(n)) else {
            return Err(not_a_shard());
        };
        if index == 0 || count == 0 || index > count || count > MAX_SHARDS {
            return Err(not_a_shard());
        }
        Ok(Shard { index, count })
    }
}

/// What a matrix run was a part of, in its summary.json: the plan (the matrix file and base
/// by digest, the strategy, the filter and every permutation id it selects) and the slice of
/// it this run took. `report --merge` combines only runs of one plan.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct PlanIdentity {
    pub matrix: String,
    pub files_sha256: String,
    pub strategy: String,
    pub filter: Option<String>,
    /// Every permutation of the plan, in its order (not only this shard's).
    pub ids: Vec<String>,
    /// The slice this run took; none for the whole plan.
    pub shard: Option<Shard>,
}

impl PlanIdentity {
    /// The plan of `m` (expanded with the strategy in use) with `--filter`, and its slice.
    pub fn of(m: &super::Matrix, filter: Option<&str>, shard: Option<Shard>) -> PlanIdentity {
        PlanIdentity {
            matrix: m.name.clone(),
            files_sha256: m.files_sha256.clone(),
            strategy: m.strategy.name().to_string(),
            filter: filter.map(str::to_string),
            ids: match filter {
                Some(glob) => m.filter(glob).map(|p| p.id.clone()).collect(),
                None => m.permutations.iter().map(|p| p.id.clone()).collect(),
            },
            shard,
        }
    }

    /// How this plan differs from `other`, as words; none when they are one plan (their
    /// slices may differ).
    pub fn difference(&self, other: &PlanIdentity) -> Option<String> {
        let mut d = Vec::new();
        if self.matrix != other.matrix {
            d.push(format!("matrix {} against {}", self.matrix, other.matrix));
        }
        if self.files_sha256 != other.files_sha256 {
            d.push(format!(
                "the matrix file or its base differ (sha256 {} against {})",
                short(&self.files_sha256),
                short(&other.files_sha256)
            ));
        }
        if self.strategy != other.strategy {
            d.push(format!(
                "strategy {} against {}",
                self.strategy, other.strategy
            ));
        }
        if self.filter != other.filter {
            d.push(format!(
                "--filter {:?} against {:?}",
                self.filter, other.filter
            ));
        }
        if self.ids != other.ids && d.is_empty() {
            d.push(format!(
                "the permutation ids differ ({} against {})",
                self.ids.len(),
                other.ids.len()
            ));
        }
        (!d.is_empty()).then(|| d.join("; "))
    }
}

fn short(digest: &str) -> &str {
    digest.get(..12).unwrap_or(digest)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_parse_as_k_of_n_and_nothing_else() {
        assert_eq!("2/4".parse(), Ok(Shard { index: 2, count: 4 }));
        assert_eq!("1/1".parse(), Ok(Shard { index: 1, count: 1 }));
        for wrong in [
            "",
            "2",
            "0/4",
            "5/4",
            "1/0",
            "-1/4",
            "+1/4",
            "1/4/2",
            " 1/4",
            "1/1001",
            "a/b",
            "99999999999/1",
        ] {
            let e = wrong.parse::<Shard>().expect_err(wrong);
            assert_eq!(e, NotAShard(wrong.to_string()));
            let e = e.to_string();
            assert!(e.contains("K/N") && e.contains("1000"), "{e}");
        }
    }

    #[test]
    fn every_id_is_in_exactly_one_shard_of_every_count() {
        let ids: Vec<String> = (0..300).map(|i| format!("virtio.{i}.bios")).collect();
        for count in 1..=7 {
            for id in &ids {
                let holders = (1..=count)
                    .filter(|&index| Shard { index, count }.holds(id))
                    .count();
                assert_eq!(holders, 1, "{id} in {holders} of {count} shards");
            }
        }
    }

    #[test]
    fn the_slice_is_a_fixed_function_of_the_id() {
        // Pinned values: a change of hash would move permutations between CI jobs of one plan.
        let s = |index| Shard { index, count: 4 };
        let of = |id: &str| (1..=4).find(|&k| s(k).holds(id)).unwrap();
        assert_eq!(
            [
                of("virtio.512.bios.by-id"),
                of("nvme.4096.uefi.by-path"),
                of("smoke")
            ],
            // Computed apart from this code: 1 + (first 8 bytes of sha256(id), big-endian) mod 4.
            [4, 3, 2]
        );
    }
}
