//! Property tests of the pairwise generator on random axis sets with random exclusions and
//! random `[[expect]]` rules, against the full cartesian product as the reference.

use std::collections::BTreeSet;

use proptest::prelude::*;

use super::negative::{pairwise, Rule};
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

// ---- negative rows ----------------------------------------------------------------------------

/// A space and `[[expect]]` rules over it: up to 4 rules of 1 or 2 tuples of 1 or 2 cells,
/// each negative or not, so rules overlap, shadow each other and claim whole axes.
fn spaces_with_rules() -> impl Strategy<Value = (Space, Vec<Rule>)> {
    (
        spaces(),
        prop::collection::vec(
            (
                prop::collection::vec(prop::collection::vec((0usize..6, 0usize..5), 1..=2), 1..=2),
                any::<bool>(),
            ),
            0..=4,
        ),
    )
        .prop_map(|(space, raw)| {
            let sizes = space.sizes().to_vec();
            let n = sizes.len();
            let rules = raw
                .into_iter()
                .map(|(tuples, negative)| Rule {
                    when: tuples
                        .into_iter()
                        .map(|t| {
                            let mut t: Tuple = t
                                .into_iter()
                                .map(|(a, v)| (a % n, v % sizes[a % n]))
                                .collect();
                            // One cell per axis, as a rule names an axis once.
                            t.sort_unstable();
                            t.dedup_by_key(|c| c.0);
                            t
                        })
                        .collect(),
                    negative,
                })
                .collect();
            (space, rules)
        })
}

/// The reference: the negative rule a row's expectation comes from (the first rule it
/// matches), if that rule is negative.
fn effective(rules: &[Rule], row: &[usize]) -> Option<usize> {
    let k = rules.iter().position(|r| r.matches(row))?;
    rules[k].negative.then_some(k)
}

fn negative_matches(rules: &[Rule], row: &[usize]) -> usize {
    rules
        .iter()
        .filter(|r| r.negative && r.matches(row))
        .count()
}

fn cells_of(row: &Row) -> impl Iterator<Item = (usize, usize)> + '_ {
    row.iter().copied().enumerate()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn negative_rules_get_rows_of_their_own((space, rules) in spaces_with_rules()) {
        let full = space.all_rows(usize::MAX).unwrap();
        let planned = pairwise(&space, &rules);
        let positive: Vec<&Row> =
            planned.iter().filter(|p| p.negative.is_none()).map(|p| &p.row).collect();
        for p in &planned {
            // (c) no row is excluded.
            prop_assert!(space.allows(&p.row), "{:?} is excluded", p.row);
            // Every row is tagged with the rule its expectation comes from.
            prop_assert_eq!(effective(&rules, &p.row), p.negative, "{:?}", p.row);
            // (d) a negative row matches its own negative rule and no other.
            if p.negative.is_some() {
                prop_assert_eq!(negative_matches(&rules, &p.row), 1, "{:?}", p.row);
            }
        }
        // (a) every pair a positive row can hold is in a positive row.
        let wanted: BTreeSet<_> = full
            .iter()
            .filter(|r| effective(&rules, r).is_none())
            .flat_map(pairs_of)
            .collect();
        let got: BTreeSet<_> = positive.iter().copied().flat_map(pairs_of).collect();
        prop_assert!(wanted.is_subset(&got), "positive rows miss {:?}", wanted.difference(&got).collect::<Vec<_>>());
        // (b) each negative rule meets every value that can occur with it alone.
        for (k, rule) in rules.iter().enumerate().filter(|(_, r)| r.negative) {
            let alone = |r: &&Row| effective(&rules, r) == Some(k) && negative_matches(&rules, r) == 1;
            let wanted: BTreeSet<_> = full.iter().filter(alone).flat_map(cells_of).collect();
            let got: BTreeSet<_> = planned
                .iter()
                .filter(|p| p.negative == Some(k))
                .flat_map(|p| cells_of(&p.row))
                .collect();
            prop_assert!(wanted.is_subset(&got), "rule {k} {:?} misses {:?}", rule.when, wanted.difference(&got).collect::<Vec<_>>());
        }
        // Every allowed pair is in some row, unless every allowed row holding it matches two
        // negative rules (and takes its expectation from one of them).
        let coverable: BTreeSet<_> = full
            .iter()
            .filter(|r| effective(&rules, r).is_none() || negative_matches(&rules, r) == 1)
            .flat_map(pairs_of)
            .collect();
        let all: BTreeSet<_> = planned.iter().flat_map(|p| pairs_of(&p.row)).collect();
        prop_assert!(coverable.is_subset(&all), "no row holds {:?}", coverable.difference(&all).collect::<Vec<_>>());
        // Positive rows first, then rule by rule in rule order; no row twice.
        let order: Vec<Option<usize>> = planned.iter().map(|p| p.negative).collect();
        prop_assert!(order.windows(2).all(|w| w[0] <= w[1]), "{order:?}");
        prop_assert_eq!(planned.iter().map(|p| &p.row).collect::<BTreeSet<_>>().len(), planned.len());
        // (e) the same input gives the same rows.
        prop_assert_eq!(&planned, &pairwise(&space.clone(), &rules.clone()));
    }
}
