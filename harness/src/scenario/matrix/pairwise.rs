//! Pairwise covering arrays: rows such that every pair of values of two axes that some allowed
//! row can hold appears in at least one row, and no row matches an exclusion.
//!
//! Two steps, both deterministic:
//! 1. an AETG-style greedy builds a valid covering array one row at a time: start from the
//!    first uncovered pair, then give each other axis (larger axes first) the value that covers
//!    the most uncovered pairs with the cells set so far, among the values that keep the row
//!    completable under the exclusions;
//! 2. a tabu search (Nurmela's, for covering arrays) then tries to do with one row fewer, again
//!    and again: drop the row that covers the fewest pairs alone, and repeatedly pick an
//!    uncovered pair and write it into the row where that costs the fewest other pairs. It
//!    stops at the lower bound (the largest number of pairs two axes need) or when a fixed
//!    number of moves does not cover everything, keeping the last complete array.
//!
//! The random choices of step 2 come from a fixed-seed generator, so the same space always
//! yields the same rows.

use std::collections::VecDeque;

use super::space::{Row, Space};

/// Moves the tabu search may spend on each smaller size before it settles for the last array
/// that covered everything. 2,000 already reach the known optima of 3^4 (9), 4^5 (16),
/// 2^10 (6), 3^13 (15) and 4x3x2x2 (12); the margin is for exclusions.
const MOVES_PER_SIZE: usize = 5_000;

/// A cap on the whole search, in units of pair-count updates, so that a huge matrix still
/// plans in seconds (with a larger array). Counted, not timed, to stay deterministic.
const WORK_LIMIT: usize = 300_000_000;

/// How many recent (row, axis) changes may not be changed again; keeps the search from
/// undoing its last moves.
const TABU_TENURE: usize = 4;

/// The generator's fixed seed: the arrays are part of the matrix's meaning (ids, run
/// directories), so they never change from one run to the next.
const SEED: u64 = 0x5eed_5eed_5eed_5eed;

/// A covering array of strength 2 for `space`, rows in lexicographic order. With fewer than
/// two axes there are no pairs: every allowed row is returned.
pub fn covering_array(space: &Space) -> Vec<Row> {
    covering_array_within(space, usize::MAX).expect("no limit")
}

/// As `covering_array`, or `None` as soon as the greedy step has more than `limit` rows and a
/// tenth: the steps after it remove a few percent at most (2% each on nine axes of 100
/// values), and a greedy array far over a cap is not worth finishing. So refusing costs no
/// more time than building the largest array within the cap.
pub fn covering_array_within(space: &Space, limit: usize) -> Option<Vec<Row>> {
    if space.axes() < 2 {
        return space.all_rows(limit);
    }
    let pairs = Pairs::new(space);
    let rows = greedy(space, &pairs, limit.saturating_add(limit / 10))?;
    let mut rows = shrink(space, &pairs, rows, MOVES_PER_SIZE, WORK_LIMIT);
    rows.sort();
    // A row twice covers nothing more.
    rows.dedup();
    Some(rows)
}

/// Two axes with more pairs of values that allowed rows can hold than a limit: a covering
/// array has a row for each of them, so it has more rows than the limit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TooManyPairs {
    pub axes: (usize, usize),
    /// How many pairs of their values the rows can hold, when known exactly; `None` when the
    /// count stopped once past the limit.
    pub pairs: Option<usize>,
}

/// Whether every covering array of `space` has more than `limit` rows, because two axes have
/// more than `limit` pairs of values to cover. Cheap, so that it can come before the array:
/// two 3000-value axes would otherwise build a table of 9 million pairs and search it for
/// minutes. Two axes no exclusion names hold all their s_i·s_j pairs (if any row is
/// allowed); for others, pairs are tried only until more than `limit` are found.
pub fn more_rows_than(space: &Space, limit: usize) -> Option<TooManyPairs> {
    let sizes = space.sizes();
    let n = sizes.len();
    let mut candidates: Vec<(usize, usize, usize)> = (0..n)
        .flat_map(|i| (i + 1..n).map(move |j| (i, j, sizes[i].saturating_mul(sizes[j]))))
        .filter(|&(_, _, product)| product > limit)
        .collect();
    if candidates.is_empty() || !space.completable(&vec![None; n]) {
        return None;
    }
    // The largest first: the likeliest to be over the limit.
    candidates.sort_by(|x, y| y.2.cmp(&x.2).then((x.0, x.1).cmp(&(y.0, y.1))));
    candidates.into_iter().find_map(|(i, j, product)| {
        if !space.constrains(i) && !space.constrains(j) {
            return Some(TooManyPairs {
                axes: (i, j),
                pairs: Some(product),
            });
        }
        let mut held = 0usize;
        let mut partial = vec![None; n];
        for a in 0..sizes[i] {
            for b in 0..sizes[j] {
                partial[i] = Some(a);
                partial[j] = Some(b);
                if space.completable(&partial) {
                    held += 1;
                    if held > limit {
                        return Some(TooManyPairs {
                            axes: (i, j),
                            pairs: None,
                        });
                    }
                }
            }
        }
        None
    })
}

/// Every pair of cells `(axis i, value a)`, `(axis j, value b)` with `i < j`, numbered block by
/// block, and whether an allowed row can hold it.
struct Pairs {
    sizes: Vec<usize>,
    /// `offsets[i][j]`: the number of the pair `(i, 0), (j, 0)`, for `i < j`.
    offsets: Vec<Vec<usize>>,
    /// By number: `(i, a, j, b)`.
    cells: Vec<(usize, usize, usize, usize)>,
    required: Vec<bool>,
}

impl Pairs {
    fn new(space: &Space) -> Pairs {
        let sizes = space.sizes().to_vec();
        let n = sizes.len();
        let mut offsets = vec![vec![0; n]; n];
        let mut cells = Vec::new();
        for i in 0..n {
            for j in i + 1..n {
                offsets[i][j] = cells.len();
                for a in 0..sizes[i] {
                    for b in 0..sizes[j] {
                        cells.push((i, a, j, b));
                    }
                }
            }
        }
        let required = cells
            .iter()
            .map(|&(i, a, j, b)| {
                let mut partial = vec![None; n];
                partial[i] = Some(a);
                partial[j] = Some(b);
                space.completable(&partial)
            })
            .collect();
        Pairs {
            sizes,
            offsets,
            cells,
            required,
        }
    }

    fn index(&self, i: usize, a: usize, j: usize, b: usize) -> usize {
        let ((i, a), (j, b)) = if i < j {
            ((i, a), (j, b))
        } else {
            ((j, b), (i, a))
        };
        self.offsets[i][j] + a * self.sizes[j] + b
    }

    /// The pairs a row holds.
    fn of_row(&self, row: &[usize]) -> Vec<usize> {
        let n = row.len();
        let mut out = Vec::with_capacity(n * n.saturating_sub(1) / 2);
        for i in 0..n {
            for j in i + 1..n {
                out.push(self.index(i, row[i], j, row[j]));
            }
        }
        out
    }

    /// No array can have fewer rows than the pairs two axes need between them.
    fn lower_bound(&self) -> usize {
        let n = self.sizes.len();
        let mut best = 1;
        for i in 0..n {
            for j in i + 1..n {
                let start = self.offsets[i][j];
                let end = start + self.sizes[i] * self.sizes[j];
                best = best.max(self.required[start..end].iter().filter(|r| **r).count());
            }
        }
        best
    }
}

/// How often each pair is covered by a set of rows.
struct Coverage<'p> {
    pairs: &'p Pairs,
    count: Vec<u32>,
    uncovered: usize,
}

impl<'p> Coverage<'p> {
    fn new(pairs: &'p Pairs, rows: &[Row]) -> Coverage<'p> {
        let mut c = Coverage {
            pairs,
            count: vec![0; pairs.cells.len()],
            uncovered: pairs.required.iter().filter(|r| **r).count(),
        };
        for row in rows {
            c.add(row);
        }
        c
    }

    fn add(&mut self, row: &[usize]) {
        for p in self.pairs.of_row(row) {
            if self.pairs.required[p] && self.count[p] == 0 {
                self.uncovered -= 1;
            }
            self.count[p] += 1;
        }
    }

    fn remove(&mut self, row: &[usize]) {
        for p in self.pairs.of_row(row) {
            self.count[p] -= 1;
            if self.pairs.required[p] && self.count[p] == 0 {
                self.uncovered += 1;
            }
        }
    }

    /// Required pairs only this row covers.
    fn unique(&self, row: &[usize]) -> usize {
        self.pairs
            .of_row(row)
            .into_iter()
            .filter(|&p| self.pairs.required[p] && self.count[p] == 1)
            .count()
    }

    /// How the number of uncovered pairs changes when a row goes from `old` to `new`.
    fn delta(&self, old: &[usize], new: &[usize]) -> i64 {
        let n = old.len();
        let changed: Vec<bool> = (0..n).map(|k| old[k] != new[k]).collect();
        let mut d = 0i64;
        for c in (0..n).filter(|&c| changed[c]) {
            for k in 0..n {
                // A pair of two changed cells is counted once, from its smaller axis.
                if k == c || (changed[k] && k < c) {
                    continue;
                }
                let was = self.pairs.index(c, old[c], k, old[k]);
                let now = self.pairs.index(c, new[c], k, new[k]);
                if self.pairs.required[was] && self.count[was] == 1 {
                    d += 1;
                }
                if self.pairs.required[now] && self.count[now] == 0 {
                    d -= 1;
                }
            }
        }
        d
    }

    fn first_uncovered(&self) -> Option<usize> {
        (0..self.count.len()).find(|&p| self.pairs.required[p] && self.count[p] == 0)
    }
}

/// The greedy array, or `None` once it has more than `give_up_above` rows.
fn greedy(space: &Space, pairs: &Pairs, give_up_above: usize) -> Option<Vec<Row>> {
    let n = space.axes();
    // Larger axes first: their pairs are the hardest to fit late in a row.
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by_key(|&a| std::cmp::Reverse(space.sizes()[a]));
    let mut cov = Coverage::new(pairs, &[]);
    let mut rows = Vec::new();
    while let Some(p) = cov.first_uncovered() {
        let (i, a, j, b) = pairs.cells[p];
        let mut partial = vec![None; n];
        partial[i] = Some(a);
        partial[j] = Some(b);
        for &k in &order {
            if partial[k].is_some() {
                continue;
            }
            let mut best: Option<(usize, usize)> = None;
            for v in 0..space.sizes()[k] {
                partial[k] = Some(v);
                if !space.completable(&partial) {
                    continue;
                }
                let gain = (0..n)
                    .filter_map(|q| Some((q, partial[q]?)))
                    .filter(|&(q, w)| {
                        q != k && {
                            let idx = pairs.index(k, v, q, w);
                            pairs.required[idx] && cov.count[idx] == 0
                        }
                    })
                    .count();
                if best.is_none_or(|(g, _)| gain > g) {
                    best = Some((gain, v));
                }
            }
            // The pair is required, so the row was completable before this axis, so some
            // value of this axis keeps it completable.
            partial[k] = Some(
                best.expect("a completable row has a value for every axis")
                    .1,
            );
        }
        let row: Row = partial.into_iter().flatten().collect();
        cov.add(&row);
        rows.push(row);
        if rows.len() > give_up_above {
            return None;
        }
    }
    // Later rows may cover everything an early row covered.
    for r in (0..rows.len()).rev() {
        if cov.unique(&rows[r]) == 0 {
            let row = rows.remove(r);
            cov.remove(&row);
        }
    }
    Some(rows)
}

/// Tries ever smaller arrays; returns the smallest complete one found.
fn shrink(space: &Space, pairs: &Pairs, rows: Vec<Row>, moves: usize, work: usize) -> Vec<Row> {
    let lower = pairs.lower_bound();
    let mut rng = SplitMix64(SEED);
    let mut work_left = work;
    let mut best = rows;
    while best.len() > lower {
        let cov = Coverage::new(pairs, &best);
        // Drop the row that covers the fewest pairs alone (the last of equals).
        let victim = (0..best.len())
            .rev()
            .min_by_key(|&r| cov.unique(&best[r]))
            .unwrap_or(0);
        let mut trial = best.clone();
        trial.remove(victim);
        match tabu_search(space, pairs, trial, &mut rng, moves, &mut work_left) {
            Some(rows) => best = rows,
            None => break,
        }
    }
    best
}

/// Moves cells of `rows` until every required pair is covered, or gives up after `moves`.
fn tabu_search(
    space: &Space,
    pairs: &Pairs,
    mut rows: Vec<Row>,
    rng: &mut SplitMix64,
    moves: usize,
    work_left: &mut usize,
) -> Option<Vec<Row>> {
    let mut cov = Coverage::new(pairs, &rows);
    let mut tabu: VecDeque<(usize, usize)> = VecDeque::with_capacity(TABU_TENURE + 1);
    // A move scans the pairs for uncovered ones and tries the pair in every row.
    let move_cost = pairs.cells.len() + rows.len() * space.axes();
    for _ in 0..moves {
        if cov.uncovered == 0 {
            return Some(rows);
        }
        let Some(left) = work_left.checked_sub(move_cost) else {
            break;
        };
        *work_left = left;
        let uncovered: Vec<usize> = (0..pairs.cells.len())
            .filter(|&p| pairs.required[p] && cov.count[p] == 0)
            .collect();
        let (i, a, j, b) = pairs.cells[uncovered[rng.below(uncovered.len())]];
        let mut best: Option<(i64, usize, Row)> = None;
        let mut ties = 0usize;
        for (r, old) in rows.iter().enumerate() {
            for new in candidates(space, old, (i, a), (j, b)) {
                let d = cov.delta(old, &new);
                let is_tabu = (0..new.len()).any(|k| new[k] != old[k] && tabu.contains(&(r, k)));
                // A move that finishes the array is always allowed.
                if is_tabu && cov.uncovered as i64 + d > 0 {
                    continue;
                }
                match &best {
                    Some((bd, _, _)) if d > *bd => {}
                    Some((bd, _, _)) if d == *bd => {
                        // Reservoir choice among equally good moves.
                        ties += 1;
                        if rng.below(ties + 1) == 0 {
                            best = Some((d, r, new));
                        }
                    }
                    _ => {
                        ties = 0;
                        best = Some((d, r, new));
                    }
                }
            }
        }
        let Some((_, r, new)) = best else {
            continue;
        };
        for k in (0..new.len()).filter(|&k| new[k] != rows[r][k]) {
            tabu.push_back((r, k));
            if tabu.len() > TABU_TENURE {
                tabu.pop_front();
            }
        }
        cov.remove(&rows[r]);
        cov.add(&new);
        rows[r] = new;
    }
    (cov.uncovered == 0).then_some(rows)
}

/// The rows `old` can become to hold the pair: the pair written in, and when that row is
/// excluded, each way of changing one more cell that makes it allowed again.
fn candidates(
    space: &Space,
    old: &[usize],
    (i, a): (usize, usize),
    (j, b): (usize, usize),
) -> Vec<Row> {
    let mut new = old.to_vec();
    new[i] = a;
    new[j] = b;
    if new == old {
        return vec![];
    }
    if space.allows(&new) {
        return vec![new];
    }
    let mut repaired = Vec::new();
    for k in (0..new.len()).filter(|&k| k != i && k != j) {
        for v in (0..space.sizes()[k]).filter(|&v| v != new[k]) {
            let mut r = new.clone();
            r[k] = v;
            if space.allows(&r) {
                repaired.push(r);
            }
        }
    }
    repaired
}

/// A small, fixed-seed generator (SplitMix64): reproducible, no dependency.
struct SplitMix64(u64);

impl SplitMix64 {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform enough in `0..n` for `n` far below 2^64; `n` must be at least 1.
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn uniform(values: usize, axes: usize) -> Space {
        Space::new(vec![values; axes], vec![])
    }

    fn size(space: &Space) -> usize {
        let rows = covering_array(space);
        assert_covers(space, &rows);
        rows.len()
    }

    fn assert_covers(space: &Space, rows: &[Row]) {
        let pairs = Pairs::new(space);
        let cov = Coverage::new(&pairs, rows);
        assert_eq!(cov.uncovered, 0, "{rows:?}");
        assert!(rows.iter().all(|r| space.allows(r)));
    }

    // The known optima: CA(9; 2, 3^4), CA(16; 2, 4^5), CA(6; 2, 2^10), CA(15; 2, 3^13),
    // and 12 = 4 x 3 for the disks matrix (bus x naming x sector x firmware).
    #[test]
    fn pairwise_sizes_are_near_the_known_optima() {
        assert_eq!(size(&uniform(3, 4)), 9);
        assert_eq!(size(&uniform(4, 5)), 16);
        assert!(size(&uniform(2, 10)) <= 7);
        assert!(size(&uniform(3, 13)) <= 17);
        assert_eq!(size(&Space::new(vec![4, 2, 2, 3], vec![])), 12);
        assert_eq!(size(&uniform(2, 3)), 4);
    }

    #[test]
    fn exclusions_are_honoured_and_uncoverable_pairs_are_not_required() {
        // bus x sector x firmware: no sata with 4k, no bios with 4k.
        let s = Space::new(
            vec![4, 3, 2, 3],
            vec![vec![(0, 3), (1, 2)], vec![(1, 2), (2, 0)]],
        );
        let rows = covering_array(&s);
        assert_covers(&s, &rows);
        assert!(rows.len() <= 13, "{}", rows.len());
    }

    #[test]
    fn the_same_space_gives_the_same_rows() {
        let s = Space::new(vec![3, 3, 2, 4, 2], vec![vec![(0, 1), (3, 2)]]);
        assert_eq!(covering_array(&s), covering_array(&s));
    }

    #[test]
    fn one_axis_is_every_allowed_value() {
        let s = Space::new(vec![3], vec![vec![(0, 1)]]);
        assert_eq!(covering_array(&s), vec![vec![0], vec![2]]);
    }
}
