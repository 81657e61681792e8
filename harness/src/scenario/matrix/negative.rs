//! Pairwise with negative rows, as PICT does with its `~` values. An `[[expect]]` rule that
//! expects the installer to refuse the config up front (a failure at `assets`) is *negative*,
//! and so are the rows it gives the expectation to. A negative row ends before any VM runs:
//! the pairs it holds besides the refused value are never really tested, and a row matching two
//! negative rules only tells which check the installer makes first. So the rows come in two
//! parts, positive rows first:
//!
//! 1. a covering array of the positive rows (the negative ones forbidden like exclusions): every
//!    pair of values that some positive row can hold is in a positive row;
//! 2. per negative rule, in rule order, rows that match that rule and no other negative rule:
//!    first so that every value of every axis that can occur with the rule appears at least
//!    once (PICT pairs a negative value with each positive one), then, for each pair that no row
//!    holds yet although a one-negative-rule row can (a pair that only negative rows can hold),
//!    a row of the first rule that can hold it.
//!
//! So a pair that the exclusions allow is in some row, except when every allowed row holding it
//! matches two or more negative rules and no earlier rule that expects anything else
//! (OpenShiftSDN with IPv6 first): such a row would fail for one reason and hide the other.
//!
//! A row's expectation is the first rule it matches, so a row whose first matching rule is not
//! negative is positive even when a later negative rule matches it too.

use std::collections::HashSet;

#[cfg(test)]
use super::pairwise::covering_array;
use super::pairwise::covering_array_within;
use super::space::{Row, Space, Tuple};

/// An `[[expect]]` rule by value index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rule {
    /// A row with every cell of one of these tuples matches the rule.
    pub when: Vec<Tuple>,
    /// Whether the rule expects a rejection before any VM runs.
    pub negative: bool,
}

// The generator works with tuples; the property tests check it against whole rows.
#[cfg(test)]
impl Rule {
    pub fn matches(&self, row: &[usize]) -> bool {
        self.when.iter().any(|t| holds(row, t))
    }
}

/// A generated row, with the negative rule (an index into the rules) whose rejection it
/// expects; `None` for a positive row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Planned {
    pub row: Row,
    pub negative: Option<usize>,
}

/// The pairwise rows of `space` under `rules` (in file order): positive rows in lexicographic
/// order, then each negative rule's rows, lexicographic within the rule. Without negative rules
/// this is exactly `covering_array(space)`.
#[cfg(test)]
pub fn pairwise(space: &Space, rules: &[Rule]) -> Vec<Planned> {
    pairwise_within(space, rules, usize::MAX).expect("no limit")
}

/// As `pairwise`, or `None` when the covering array of the positive rows gives up above
/// `limit` (see `covering_array_within`); the caller checks the total against its cap.
pub fn pairwise_within(space: &Space, rules: &[Rule], limit: usize) -> Option<Vec<Planned>> {
    let positive = positive_space(space, rules);
    let mut out: Vec<Planned> = covering_array_within(&positive, limit)?
        .into_iter()
        .map(|row| Planned {
            row,
            negative: None,
        })
        .collect();
    let mut groups: Vec<Group> = (0..rules.len())
        .filter(|&k| rules[k].negative)
        .map(|k| Group::new(space, rules, k))
        .collect();
    if groups.is_empty() {
        return Some(out);
    }
    let sizes = space.sizes();
    let singles: Vec<Tuple> = (0..sizes.len())
        .flat_map(|a| (0..sizes[a]).map(move |v| vec![(a, v)]))
        .collect();
    for g in &mut groups {
        let targets: Vec<Tuple> = singles.iter().filter(|t| g.can_hold(t)).cloned().collect();
        g.cover(&targets);
    }
    let held: HashSet<Tuple> = out
        .iter()
        .map(|p| &p.row)
        .chain(groups.iter().flat_map(|g| &g.rows))
        .flat_map(|row| pairs_of(row))
        .collect();
    let mut left: Vec<Vec<Tuple>> = vec![Vec::new(); groups.len()];
    for pair in all_pairs(sizes) {
        if held.contains(&pair) || !space.completable(&partial_of(sizes.len(), &pair)) {
            continue;
        }
        // None: every row holding it matches two negative rules; see the module comment.
        if let Some(g) = groups.iter().position(|g| g.can_hold(&pair)) {
            left[g].push(pair);
        }
    }
    for (g, pairs) in groups.iter_mut().zip(&left) {
        g.cover(pairs);
    }
    for g in groups {
        let mut rows = g.rows;
        rows.sort();
        out.extend(rows.into_iter().map(|row| Planned {
            row,
            negative: Some(g.rule),
        }));
    }
    Some(out)
}

/// `space` without the rows the negative rules give their expectation to: the space the
/// positive rows cover.
pub fn positive_space(space: &Space, rules: &[Rule]) -> Space {
    space.forbidding(claimed(rules, space.sizes()))
}

/// One negative rule's rows.
struct Group<'r> {
    rule: usize,
    when: &'r [Tuple],
    /// The exclusions, every other negative rule and every earlier rule: an allowed row of
    /// this space that matches `when` is a row of this rule alone.
    space: Space,
    rows: Vec<Row>,
}

impl<'r> Group<'r> {
    fn new(space: &Space, rules: &'r [Rule], k: usize) -> Group<'r> {
        let others = rules
            .iter()
            .enumerate()
            .filter(|&(j, r)| j != k && (r.negative || j < k))
            .flat_map(|(_, r)| r.when.iter().cloned());
        Group {
            rule: k,
            when: &rules[k].when,
            space: space.forbidding(others),
            rows: Vec::new(),
        }
    }

    /// A partial row with `cells` and one of the rule's tuples that a row of this rule can
    /// complete; the rule's tuples are tried in order.
    fn seed(&self, cells: &Tuple) -> Option<Vec<Option<usize>>> {
        self.when.iter().find_map(|t| {
            let mut partial = vec![None; self.space.axes()];
            for &(a, v) in t.iter().chain(cells) {
                if partial[a].is_some_and(|w| w != v) {
                    return None;
                }
                partial[a] = Some(v);
            }
            self.space.completable(&partial).then_some(partial)
        })
    }

    fn can_hold(&self, cells: &Tuple) -> bool {
        self.seed(cells).is_some()
    }

    /// Adds rows until each of `targets` is in a row: seed a row with the first target no row
    /// holds, then give each open axis the value that completes the most targets still
    /// missing, among those that keep the row completable. Greedy, so a few rows more than the
    /// fewest possible at worst, and deterministic.
    fn cover(&mut self, targets: &[Tuple]) {
        let sizes = self.space.sizes().to_vec();
        let mut done: Vec<bool> = targets
            .iter()
            .map(|t| self.rows.iter().any(|r| holds(r, t)))
            .collect();
        while let Some(i) = done.iter().position(|d| !d) {
            let Some(mut partial) = self.seed(&targets[i]) else {
                // No row of this rule can hold it; the caller should not have asked.
                done[i] = true;
                continue;
            };
            for k in 0..sizes.len() {
                if partial[k].is_some() {
                    continue;
                }
                let mut best: Option<(usize, usize)> = None;
                for v in 0..sizes[k] {
                    partial[k] = Some(v);
                    if !self.space.completable(&partial) {
                        continue;
                    }
                    let gain = targets
                        .iter()
                        .zip(&done)
                        .filter(|&(t, d)| {
                            !*d && t.contains(&(k, v))
                                && t.iter().all(|&(a, w)| partial[a] == Some(w))
                        })
                        .count();
                    if best.is_none_or(|(g, _)| gain > g) {
                        best = Some((gain, v));
                    }
                }
                // The row was completable before this axis, so a value keeps it completable.
                partial[k] = Some(
                    best.expect("a completable row has a value for every axis")
                        .1,
                );
            }
            let row: Row = partial.into_iter().flatten().collect();
            for (t, d) in targets.iter().zip(done.iter_mut()) {
                *d = *d || holds(&row, t);
            }
            self.rows.push(row);
        }
    }
}

/// Tuples that together match exactly the rows whose first matching rule is negative: each
/// negative rule's tuples, minus the rows an earlier rule that is not negative takes first.
/// (An earlier negative rule needs no subtracting: its rows are negative as well.)
fn claimed(rules: &[Rule], sizes: &[usize]) -> Vec<Tuple> {
    let mut out = Vec::new();
    for (k, rule) in rules.iter().enumerate().filter(|(_, r)| r.negative) {
        let earlier: Vec<&Tuple> = rules[..k]
            .iter()
            .filter(|r| !r.negative)
            .flat_map(|r| &r.when)
            .collect();
        for t in &rule.when {
            out.extend(unless(t, &earlier, sizes));
        }
    }
    out
}

/// Tuples whose rows are those matching `t` and none of `others`. Forbidden tuples can only
/// say "these values", so "not u" becomes "another value on one of u's axes", one tuple each.
fn unless(t: &Tuple, others: &[&Tuple], sizes: &[usize]) -> Vec<Tuple> {
    let mut first = t.clone();
    first.sort_unstable();
    let mut out = vec![first];
    for u in others {
        let mut next = Vec::new();
        for c in out {
            let value_of = |a: usize| c.iter().find(|&&(b, _)| b == a).map(|&(_, v)| v);
            if u.iter().any(|&(a, v)| value_of(a).is_some_and(|w| w != v)) {
                // No row matches both.
                next.push(c);
                continue;
            }
            // When every cell of u is in c, every row of c matches u: nothing is left.
            for &(a, v) in u.iter().filter(|&&(a, _)| value_of(a).is_none()) {
                for w in (0..sizes[a]).filter(|&w| w != v) {
                    let mut d = c.clone();
                    d.push((a, w));
                    d.sort_unstable();
                    next.push(d);
                }
            }
        }
        next.sort();
        next.dedup();
        // A tuple whose rows another tuple already has adds nothing; dropping it keeps the
        // list from growing with every rule.
        let subsumed = |c: &Tuple| {
            next.iter()
                .any(|d| d != c && d.len() < c.len() && d.iter().all(|x| c.contains(x)))
        };
        out = next.iter().filter(|c| !subsumed(c)).cloned().collect();
    }
    out
}

fn holds(row: &[usize], cells: &[(usize, usize)]) -> bool {
    cells.iter().all(|&(a, v)| row[a] == v)
}

fn partial_of(axes: usize, cells: &Tuple) -> Vec<Option<usize>> {
    let mut partial = vec![None; axes];
    for &(a, v) in cells {
        partial[a] = Some(v);
    }
    partial
}

/// The pairs of cells a row holds, as sorted tuples.
fn pairs_of(row: &[usize]) -> impl Iterator<Item = Tuple> + '_ {
    (0..row.len())
        .flat_map(move |i| (i + 1..row.len()).map(move |j| vec![(i, row[i]), (j, row[j])]))
}

/// Every pair of cells of two axes, as sorted tuples, axis by axis.
fn all_pairs(sizes: &[usize]) -> impl Iterator<Item = Tuple> + '_ {
    let n = sizes.len();
    (0..n).flat_map(move |i| {
        (i + 1..n).flat_map(move |j| {
            (0..sizes[i]).flat_map(move |a| (0..sizes[j]).map(move |b| vec![(i, a), (j, b)]))
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(when: Vec<Tuple>, negative: bool) -> Rule {
        Rule { when, negative }
    }

    #[test]
    fn without_negative_rules_it_is_the_covering_array() {
        let s = Space::new(vec![3, 2, 2, 3], vec![vec![(0, 1), (3, 2)]]);
        let rules = [rule(vec![vec![(1, 0)]], false)];
        let rows: Vec<Row> = pairwise(&s, &rules).into_iter().map(|p| p.row).collect();
        assert_eq!(rows, covering_array(&s));
    }

    #[test]
    fn an_earlier_rule_that_is_not_negative_takes_its_rows_back() {
        // Rows with axis 0 = 1 are negative unless axis 1 = 0, which an earlier rule takes.
        let t = unless(&vec![(0, 1)], &[&vec![(1, 0), (2, 1)]], &[2, 3, 2]);
        assert_eq!(
            t,
            vec![
                vec![(0, 1), (1, 1)],
                vec![(0, 1), (1, 2)],
                vec![(0, 1), (2, 0)]
            ]
        );
        assert!(unless(&vec![(0, 1), (1, 0)], &[&vec![(1, 0)]], &[2, 2]).is_empty());
        assert_eq!(
            unless(&vec![(0, 1)], &[&vec![(0, 0)]], &[2, 2]),
            vec![vec![(0, 1)]]
        );
    }

    #[test]
    fn each_negative_rule_meets_each_value_of_the_other_axes_alone() {
        // The install-config shape: stack(4) x type(2) x 4 two-valued axes; type 1 and stack 3
        // are refused.
        let s = Space::new(vec![4, 2, 2, 2, 2, 2], vec![]);
        let rules = [
            rule(vec![vec![(1, 1)]], true),
            rule(vec![vec![(0, 3)]], true),
        ];
        let planned = pairwise(&s, &rules);
        let positive: Vec<&Row> = planned
            .iter()
            .filter(|p| p.negative.is_none())
            .map(|p| &p.row)
            .collect();
        assert!(positive.iter().all(|r| r[1] == 0 && r[0] != 3));
        // Three stacks against 2^4: six rows is the fewest.
        assert_eq!(positive.len(), 6);
        let of = |k: usize| -> Vec<&Row> {
            planned
                .iter()
                .filter(|p| p.negative == Some(k))
                .map(|p| &p.row)
                .collect()
        };
        // ipv4, ipv6, dual-stack with OpenShiftSDN; both values of each other axis.
        assert_eq!(of(0).len(), 3);
        assert_eq!(of(1).len(), 2);
        assert!(of(1).iter().all(|r| r[1] == 0));
        // Positive rows first, then rule by rule.
        let order: Vec<Option<usize>> = planned.iter().map(|p| p.negative).collect();
        assert!(order.windows(2).all(|w| w[0] <= w[1]), "{order:?}");
    }
}
