//! The combinatorial space of a matrix, by index: how many values each axis has, and which
//! partial assignments the exclusions forbid. Knows nothing of scenarios, so the generators and
//! their property tests work on plain numbers.

/// A row: one value index per axis.
pub type Row = Vec<usize>;

/// A forbidden partial assignment: `(axis, value)` pairs, sorted by axis, one per axis. A row
/// that has all of them is excluded.
pub type Tuple = Vec<(usize, usize)>;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Space {
    sizes: Vec<usize>,
    forbidden: Vec<Tuple>,
}

impl Space {
    /// `forbidden` tuples are normalised (sorted by axis, duplicates dropped); a tuple naming
    /// one axis twice with different values can never match and is dropped.
    pub fn new(sizes: Vec<usize>, forbidden: Vec<Tuple>) -> Space {
        let mut normal: Vec<Tuple> = forbidden
            .into_iter()
            .filter_map(|mut t| {
                t.sort_unstable();
                t.dedup();
                let consistent = t.windows(2).all(|w| w[0].0 != w[1].0);
                let in_range = t.iter().all(|&(a, v)| a < sizes.len() && v < sizes[a]);
                (consistent && in_range).then_some(t)
            })
            .collect();
        normal.sort();
        normal.dedup();
        Space {
            sizes,
            forbidden: normal,
        }
    }

    pub fn sizes(&self) -> &[usize] {
        &self.sizes
    }

    pub fn axes(&self) -> usize {
        self.sizes.len()
    }

    /// Whether some exclusion names `axis`: if none does, any value of it can replace another
    /// in an allowed row.
    pub fn constrains(&self, axis: usize) -> bool {
        self.forbidden.iter().any(|t| names(t, axis))
    }

    /// The same axes with `extra` forbidden as well.
    pub fn forbidding(&self, extra: impl IntoIterator<Item = Tuple>) -> Space {
        let mut forbidden = self.forbidden.clone();
        forbidden.extend(extra);
        Space::new(self.sizes.clone(), forbidden)
    }

    /// Whether a complete row survives the exclusions.
    pub fn allows(&self, row: &[usize]) -> bool {
        !self
            .forbidden
            .iter()
            .any(|t| t.iter().all(|&(a, v)| row[a] == v))
    }

    /// Whether some tuple is fully assigned in `partial` and matched.
    fn violated(&self, partial: &[Option<usize>]) -> bool {
        self.forbidden
            .iter()
            .any(|t| t.iter().all(|&(a, v)| partial[a] == Some(v)))
    }

    /// Whether `partial` can be completed into a row the exclusions allow. Only axes that some
    /// exclusion names need a value: any value completes the others.
    pub fn completable(&self, partial: &[Option<usize>]) -> bool {
        if self.violated(partial) {
            return false;
        }
        let mut work = partial.to_vec();
        let open: Vec<usize> = (0..self.sizes.len())
            .filter(|&a| work[a].is_none() && self.forbidden.iter().any(|t| names(t, a)))
            .collect();
        self.complete(&mut work, &open)
    }

    fn complete(&self, work: &mut [Option<usize>], open: &[usize]) -> bool {
        let Some((&axis, rest)) = open.split_first() else {
            return true;
        };
        for v in 0..self.sizes[axis] {
            work[axis] = Some(v);
            if !self.violated(work) && self.complete(work, rest) {
                work[axis] = None;
                return true;
            }
        }
        work[axis] = None;
        false
    }

    /// How many rows of the cartesian product survive the exclusions (saturating).
    pub fn count(&self) -> usize {
        let mut partial = vec![0; self.sizes.len()];
        self.count_from(0, &mut partial)
    }

    fn count_from(&self, depth: usize, partial: &mut [usize]) -> usize {
        // A tuple is still live when every axis of it assigned so far matches.
        let mut any_live = false;
        for t in &self.forbidden {
            let assigned_match = t.iter().all(|&(a, v)| a >= depth || partial[a] == v);
            if assigned_match {
                if t.iter().all(|&(a, _)| a < depth) {
                    return 0;
                }
                any_live = true;
            }
        }
        if !any_live {
            // Nothing can exclude a completion any more: every one counts.
            return self.sizes[depth..]
                .iter()
                .fold(1usize, |n, &s| n.saturating_mul(s));
        }
        let mut n = 0usize;
        for v in 0..self.sizes[depth] {
            partial[depth] = v;
            n = n.saturating_add(self.count_from(depth + 1, partial));
        }
        n
    }

    /// Every allowed row, in lexicographic order (the first axis varies slowest), or `None`
    /// when there are more than `limit`.
    pub fn all_rows(&self, limit: usize) -> Option<Vec<Row>> {
        if self.count() > limit {
            return None;
        }
        let mut rows = Vec::new();
        if self.sizes.contains(&0) {
            return Some(rows);
        }
        let mut row = vec![0; self.sizes.len()];
        loop {
            if self.allows(&row) {
                rows.push(row.clone());
            }
            // Odometer increment, last axis fastest.
            let mut axis = self.sizes.len();
            loop {
                if axis == 0 {
                    return Some(rows);
                }
                axis -= 1;
                row[axis] += 1;
                if row[axis] < self.sizes[axis] {
                    break;
                }
                row[axis] = 0;
            }
        }
    }
}

fn names(t: &Tuple, axis: usize) -> bool {
    t.iter().any(|&(a, _)| a == axis)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_match_the_enumeration() {
        let s = Space::new(
            vec![4, 3, 2, 3],
            vec![
                vec![(2, 0), (1, 2)],
                vec![(0, 3)],
                vec![(3, 1), (0, 0), (1, 0)],
            ],
        );
        let rows = s.all_rows(1000).unwrap();
        assert_eq!(s.count(), rows.len());
        // 72 rows; the rules drop 12, 18 and 2, and the first two share 3.
        assert_eq!(rows.len(), 72 - (12 + 18 + 2 - 3));
        assert!(rows.iter().all(|r| s.allows(r)));
        assert!(rows.windows(2).all(|w| w[0] < w[1]));
        assert_eq!(s.all_rows(10), None);
    }

    #[test]
    fn completable_looks_through_other_axes() {
        // Axis 2 value 0 needs axis 0 = 0 or 1 (the pair (0,1),(2,0) is excluded and so is
        // (0,0),(2,0)): nothing completes it.
        let s = Space::new(
            vec![2, 2, 2],
            vec![vec![(0, 0), (2, 0)], vec![(0, 1), (2, 0)]],
        );
        assert!(!s.completable(&[None, None, Some(0)]));
        assert!(s.completable(&[None, Some(1), Some(1)]));
        assert!(!s.completable(&[Some(0), None, Some(0)]));
    }

    #[test]
    fn contradictory_or_out_of_range_tuples_are_dropped() {
        let s = Space::new(vec![2, 2], vec![vec![(0, 0), (0, 1)], vec![(1, 5)]]);
        assert_eq!(s.count(), 4);
    }

    #[test]
    fn no_axes_is_one_empty_row() {
        let s = Space::new(vec![], vec![]);
        assert_eq!(s.count(), 1);
        assert_eq!(s.all_rows(1), Some(vec![vec![]]));
    }
}
