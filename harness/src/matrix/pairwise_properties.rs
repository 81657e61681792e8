//! Property tests of the pairwise generator on random axis sets with random exclusions,
//! against the full cartesian product as the reference.

use std::collections::BTreeSet;

use proptest::prelude::*;

use super::pairwise::covering_array;
use super::space::{Row, Space, Tuple};

/// 2 to 6 axes of 1 to 5 values, and up to 4 exclusion rules of 2 or 3 cells each (cells are
/// drawn wide and folded into range, so every rule names real values).
fn spaces() -> impl Strategy<Value = Space> {
    (
        prop::collection::vec(1usize..=5, 2..=6),
        prop::collection::vec(prop::collection::vec((0usize..6, 0usize..5), 2..=3), 0..=4),
    )
        .prop_map(|(sizes, rules)| {
            let n = sizes.len();
            let forbidden: Vec<Tuple> = rules
                .into_iter()
                .map(|rule| {
                    rule.into_iter()
                        .map(|(a, v)| (a % n, v % sizes[a % n]))
                        .collect()
                })
                .collect();
            Space::new(sizes, forbidden)
        })
}

/// Every pair of cells of a row, as `(i, a, j, b)` with `i < j`.
fn pairs_of(row: &Row) -> impl Iterator<Item = (usize, usize, usize, usize)> + '_ {
    (0..row.len()).flat_map(move |i| (i + 1..row.len()).map(move |j| (i, row[i], j, row[j])))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn every_allowed_pair_is_covered_by_allowed_rows(space in spaces()) {
        let full = space.all_rows(usize::MAX).unwrap();
        let rows = covering_array(&space);
        // (a) every pair some allowed row holds is in a generated row.
        let wanted: BTreeSet<_> = full.iter().flat_map(pairs_of).collect();
        let got: BTreeSet<_> = rows.iter().flat_map(pairs_of).collect();
        prop_assert!(wanted.is_subset(&got), "missing {:?}", wanted.difference(&got).collect::<Vec<_>>());
        // (b) no generated row matches an exclusion.
        for row in &rows {
            prop_assert!(space.allows(row), "{row:?} is excluded");
            prop_assert!(row.iter().zip(space.sizes()).all(|(v, s)| v < s));
        }
        // (c) the same input gives the same rows.
        prop_assert_eq!(&rows, &covering_array(&space.clone()));
        // (d) never more rows than the full product, and no row twice.
        prop_assert!(rows.len() <= full.len());
        prop_assert_eq!(rows.iter().collect::<BTreeSet<_>>().len(), rows.len());
    }
}
