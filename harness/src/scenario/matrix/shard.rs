//! `--shard K/N`: a deterministic slice of a matrix plan, for CI systems that run N jobs.
//!
//! Two splits (`--shard-by`):
//! - `order` (the default): the plan's permutations are dealt in plan order, permutation `i`
//!   (0-based) to shard `1 + i mod N`, so no shard holds more than one permutation more than
//!   another. A shard's content depends on the (filtered) plan and N, both recorded in
//!   summary.json, so `report --merge` can check the shards are of one plan.
//! - `hash`: a permutation belongs to shard `1 + h mod N`, `h` being the first eight bytes of
//!   the SHA-256 of its id (as nextest's hash partition, with a hash that is the same on every
//!   machine and Rust release). A shard's content depends only on the ids and N, not on the
//!   order of the plan; but a small plan splits unevenly (the install-config matrix's 15
//!   permutations in 4 shards: 2, 9, 2, 2).

use std::fmt;
use std::str::FromStr;

use sha2::{Digest, Sha256};

/// The most shards a plan is split into; more would be a typo (matrices have at most
/// `MAX_PERMUTATIONS` permutations anyway).
pub const MAX_SHARDS: u32 = 1000;

/// How a plan is split into shards.
#[derive(
    Debug,
    Clone,
    Copy,
    Default,
    PartialEq,
    Eq,
    serde::Serialize,
    serde::Deserialize,
    clap::ValueEnum,
)]
#[serde(rename_all = "lowercase")]
pub enum ShardBy {
    /// Dealt in plan order: shard sizes differ by at most one.
    #[default]
    Order,
    /// By a hash of each permutation id: independent of the plan's order.
    Hash,
}

impl ShardBy {
    pub fn name(self) -> &'static str {
        match self {
            ShardBy::Order => "order",
            ShardBy::Hash => "hash",
        }
    }

    /// The split a summary.json written before `by` was recorded used.
    fn before_it_was_recorded() -> ShardBy {
        ShardBy::Hash
    }
}

/// Shard `index` (1-based) of `count`, split `by`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Shard {
    pub index: u32,
    pub count: u32,
    #[serde(default = "ShardBy::before_it_was_recorded")]
    pub by: ShardBy,
}

impl Shard {
    /// Whether the permutation at `position` (0-based, in the filtered plan's order) with
    /// this id is in this shard.
    pub fn holds(&self, position: usize, id: &str) -> bool {
        let k = u64::from(self.index - 1);
        let n = u64::from(self.count);
        match self.by {
            ShardBy::Order => position as u64 % n == k,
            ShardBy::Hash => {
                let digest = Sha256::digest(id.as_bytes());
                let h = u64::from_be_bytes(digest[..8].try_into().expect("8 bytes"));
                h % n == k
            }
        }
    }

    /// This shard split `by`.
    pub fn split_by(self, by: ShardBy) -> Shard {
        Shard { by, ..self }
    }

    /// Of `items` in plan order, those of this shard, in order.
    pub fn slice<T>(&self, items: Vec<T>, id: impl Fn(&T) -> &str) -> Vec<T> {
        items
            .into_iter()
            .enumerate()
            .filter(|(i, t)| self.holds(*i, id(t)))
            .map(|(_, t)| t)
            .collect()
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
        Ok(Shard {
            index,
            count,
            by: ShardBy::default(),
        })
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
    /// The `--set` overrides applied to the base, as given; absent without.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub overrides: Vec<String>,
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
            overrides: m.overrides.clone(),
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
        if self.overrides != other.overrides {
            let sets = |p: &PlanIdentity| match p.overrides.as_slice() {
                [] => "no --set".to_string(),
                sets => format!("--set {}", sets.join(" --set ")),
            };
            d.push(format!("{} against {}", sets(self), sets(other)));
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
        let split = |p: &PlanIdentity| p.shard.map(|s| s.by);
        if let (Some(a), Some(b)) = (split(self), split(other)) {
            if a != b {
                d.push(format!(
                    "shards split by {} against by {} (--shard-by); shards of one split are the slices of one plan",
                    a.name(),
                    b.name()
                ));
            }
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
        let order = ShardBy::Order;
        assert_eq!(
            "2/4".parse(),
            Ok(Shard {
                index: 2,
                count: 4,
                by: order
            })
        );
        assert_eq!(
            "1/1".parse(),
            Ok(Shard {
                index: 1,
                count: 1,
                by: order
            })
        );
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
    fn every_id_is_in_exactly_one_shard_of_every_count_and_split() {
        let ids: Vec<String> = (0..300).map(|i| format!("virtio.{i}.bios")).collect();
        for by in [ShardBy::Order, ShardBy::Hash] {
            for count in 1..=7 {
                for (i, id) in ids.iter().enumerate() {
                    let holders = (1..=count)
                        .filter(|&index| Shard { index, count, by }.holds(i, id))
                        .count();
                    assert_eq!(holders, 1, "{id} in {holders} of {count} shards by {by:?}");
                }
            }
        }
    }

    #[test]
    fn a_summary_written_before_the_split_was_recorded_was_split_by_hash() {
        let old: Shard = serde_json::from_str(r#"{"index":2,"count":4}"#).unwrap();
        assert_eq!(old.by, ShardBy::Hash);
        let new = serde_json::to_value(Shard {
            index: 2,
            count: 4,
            by: ShardBy::Order,
        })
        .unwrap();
        assert_eq!(new["by"], "order");
    }

    #[test]
    fn shards_of_different_splits_are_not_of_one_plan() {
        let plan = |by| PlanIdentity {
            matrix: "m".into(),
            files_sha256: "0".repeat(64),
            strategy: "full".into(),
            filter: None,
            ids: vec!["a".into(), "b".into()],
            shard: Some(Shard {
                index: 1,
                count: 2,
                by,
            }),
            overrides: Vec::new(),
        };
        assert_eq!(plan(ShardBy::Order).difference(&plan(ShardBy::Order)), None);
        let d = plan(ShardBy::Order)
            .difference(&plan(ShardBy::Hash))
            .unwrap();
        assert!(d.contains("split by order against by hash"), "{d}");
        let with = PlanIdentity {
            overrides: vec!["vm.memory=4GiB".into()],
            ..plan(ShardBy::Order)
        };
        let d = with.difference(&plan(ShardBy::Order)).unwrap();
        assert_eq!(d.matches("against").count(), 1, "{d}");
        assert!(d.contains("--set vm.memory=4GiB against no --set"), "{d}");
    }

    #[test]
    fn the_slice_is_a_fixed_function_of_the_id() {
        // Pinned values: a change of hash would move permutations between CI jobs of one plan.
        let s = |index| Shard {
            index,
            count: 4,
            by: ShardBy::Hash,
        };
        // The position does not count in a hash split.
        let of = |id: &str| (1..=4).find(|&k| s(k).holds(usize::MAX, id)).unwrap();
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

#[cfg(test)]
mod shipped {
    use super::*;
    use std::path::{Path, PathBuf};

    /// Every matrix file under scenarios/.
    fn shipped_matrices() -> Vec<PathBuf> {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios");
        let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "toml"))
            .filter(|p| crate::scenario::matrix::is_matrix_file(p))
            .collect();
        files.sort();
        files
    }

    fn sizes(ids: &[String], count: u32, by: ShardBy) -> Vec<Vec<String>> {
        (1..=count)
            .map(|index| Shard { index, count, by }.slice(ids.to_vec(), |s| s.as_str()))
            .collect()
    }

    fn plan_ids(path: &Path) -> Vec<String> {
        let m = crate::scenario::matrix::load(path).unwrap();
        m.permutations.iter().map(|p| p.id.clone()).collect()
    }

    #[test]
    fn every_shipped_matrix_deals_into_shards_that_differ_by_at_most_one() {
        let files = shipped_matrices();
        assert!(files.len() >= 4, "{files:?}");
        for file in &files {
            let ids = plan_ids(file);
            for count in 2..=6 {
                let shards = sizes(&ids, count, ShardBy::Order);
                let lens: Vec<usize> = shards.iter().map(Vec::len).collect();
                let (lo, hi) = (lens.iter().min().unwrap(), lens.iter().max().unwrap());
                assert!(
                    hi - lo <= 1,
                    "{}: {count} shards of {lens:?}",
                    file.display()
                );
                // The union is the plan, each permutation once, in plan order within a shard.
                let mut union: Vec<&String> = shards.iter().flatten().collect();
                assert_eq!(union.len(), ids.len(), "{}", file.display());
                union.sort();
                union.dedup();
                assert_eq!(union.len(), ids.len(), "{}: duplicates", file.display());
                for s in &shards {
                    let at: Vec<usize> = s
                        .iter()
                        .map(|id| ids.iter().position(|x| x == id).unwrap())
                        .collect();
                    assert!(at.windows(2).all(|w| w[0] < w[1]), "{at:?}");
                }
            }
        }
    }

    #[test]
    fn the_hash_split_keeps_its_old_uneven_assignment() {
        let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios/install-config.toml");
        let ids = plan_ids(&file);
        let lens: Vec<usize> = sizes(&ids, 4, ShardBy::Hash).iter().map(Vec::len).collect();
        // As `--shard K/4` split it before the order split was the default.
        assert_eq!(lens, [2, 9, 2, 2]);
        let lens: Vec<usize> = sizes(&ids, 4, ShardBy::Order)
            .iter()
            .map(Vec::len)
            .collect();
        assert_eq!(lens, [4, 4, 4, 3]);
    }

    /// Prints each shipped matrix's shard sizes at N = 4 by both splits (`--nocapture`).
    #[test]
    fn shard_sizes_of_the_shipped_matrices_at_four() {
        for file in shipped_matrices() {
            let ids = plan_ids(&file);
            let of = |by| -> Vec<usize> { sizes(&ids, 4, by).iter().map(Vec::len).collect() };
            let (hash, order) = (of(ShardBy::Hash), of(ShardBy::Order));
            println!("{}: hash {hash:?}, order {order:?}", file.display());
            assert_eq!(hash.iter().sum::<usize>(), order.iter().sum::<usize>());
        }
    }
}
