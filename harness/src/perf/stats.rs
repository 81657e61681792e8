//! Statistics of repeated measurements: a summary of one sample for perf.json, and the
//! comparison of a baseline run with a candidate run for `report --compare`.
//!
//! Install phases of a VM are not normally distributed: they are skewed to the right and now
//! and then one run hits a slow mirror or a busy host. So the comparison is a rank test
//! (Mann-Whitney U), which assumes no distribution, is not dragged by one outlier, and gives
//! the same answer whatever strictly increasing scale the data are on (seconds or minutes,
//! durations or their logarithms): only the ranks count. Its p-value is exact when that is
//! cheap and well defined (no ties, at most [`EXACT_MAX_PAIRS`] pairs), from the normal
//! approximation otherwise.
//!
//! Samples must be finite: a NaN or an infinity is a bug upstream (a missing event, a zero
//! divisor), and neither a summary nor a verdict built on one would mean anything.

use std::f64::consts::{FRAC_2_SQRT_PI, SQRT_2};

use serde::{Deserialize, Serialize};

/// Why a sample cannot be summarised.
#[derive(Clone, Copy, Debug, PartialEq, thiserror::Error)]
pub enum SampleError {
    #[error("no samples")]
    Empty,
    #[error("sample {index} is {value}, not a finite number")]
    NotFinite { index: usize, value: f64 },
}

/// The empty sample is allowed here: whether it is an error depends on the caller.
fn check_finite(samples: &[f64]) -> Result<(), SampleError> {
    match samples.iter().position(|x| !x.is_finite()) {
        Some(index) => Err(SampleError::NotFinite {
            index,
            value: samples[index],
        }),
        None => Ok(()),
    }
}

/// Finite samples sorted by `total_cmp`, which (unlike `partial_cmp`) is a total order, so
/// sorting cannot panic or depend on the input order; on finite values it only differs from
/// numeric order in putting -0.0 before 0.0, which compare equal anyway.
fn sorted(samples: &[f64]) -> Vec<f64> {
    let mut v = samples.to_vec();
    v.sort_by(f64::total_cmp);
    v
}

/// One sample (e.g. a phase's durations over N runs) in the few numbers a perf report shows.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    pub n: usize,
    pub min: f64,
    pub max: f64,
    pub mean: f64,
    /// The 0.5 quantile, by the same method as `p90`.
    pub median: f64,
    /// The 0.9 quantile, interpolated linearly between closest ranks (R's type 7, numpy's
    /// default, Excel's PERCENTILE.INC): with the sorted sample x[0..n] and h = (n-1)·0.9, it
    /// is x[⌊h⌋] + (h-⌊h⌋)·(x[⌊h⌋+1] - x[⌊h⌋]). Chosen because it is what people check a
    /// report against, and because it stays inside the data without sticking to its ends:
    /// with 5 runs it lies between the two slowest, where nearest-rank (and R's type 6)
    /// would report the slowest run itself.
    pub p90: f64,
    /// The sample standard deviation (divisor n-1, an unbiased variance for repeated runs
    /// drawn from a larger population of possible runs); 0 for a single sample.
    pub stddev: f64,
}

impl Summary {
    /// A typed error rather than `None`, so that a report can say which sample was bad.
    pub fn of(samples: &[f64]) -> Result<Summary, SampleError> {
        check_finite(samples)?;
        let x = sorted(samples);
        let (Some(&min), Some(&max)) = (x.first(), x.last()) else {
            return Err(SampleError::Empty);
        };
        let n = x.len();
        let nf = n as f64;
        // The plain sum overflows only for values near f64::MAX; dividing first cannot
        // overflow. Rounding can put the mean an ulp outside [min, max] (three times 0.1 sum
        // to more than 0.3): the true mean is inside, so clamp.
        let sum: f64 = x.iter().sum();
        let mean = if sum.is_finite() {
            sum / nf
        } else {
            x.iter().map(|v| v / nf).sum()
        };
        let mean = mean.clamp(min, max);
        let stddev = if n < 2 {
            0.0
        } else {
            // Scaled by the largest magnitude, so that neither the differences nor their
            // squares overflow however large the values are.
            let scale = min.abs().max(max.abs());
            if scale == 0.0 {
                0.0
            } else {
                let m = mean / scale;
                let squares: f64 = x
                    .iter()
                    .map(|v| {
                        let d = v / scale - m;
                        d * d
                    })
                    .sum();
                scale * (squares / (nf - 1.0)).sqrt()
            }
        };
        Ok(Summary {
            n,
            min,
            max,
            mean,
            median: quantile_sorted(&x, 0.5),
            p90: quantile_sorted(&x, 0.9),
            stddev,
        })
    }
}

/// The q-quantile of a sorted sample, R's type 7 (see [`Summary::p90`]); NaN for no samples.
fn quantile_sorted(sorted: &[f64], q: f64) -> f64 {
    let Some(last) = sorted.len().checked_sub(1) else {
        return f64::NAN;
    };
    let h = last as f64 * q.clamp(0.0, 1.0);
    let lo = (h.floor() as usize).min(last);
    let hi = (lo + 1).min(last);
    let frac = h - lo as f64;
    let (a, b) = (sorted[lo], sorted[hi]);
    if frac == 0.0 || a == b {
        return a;
    }
    let v = a + frac * (b - a);
    // b - a overflows only for values of opposite sign near f64::MAX.
    let v = if v.is_finite() {
        v
    } else {
        a * (1.0 - frac) + b * frac
    };
    v.clamp(a, b)
}

/// The median of a sample, NaN for no samples.
fn median(samples: &[f64]) -> f64 {
    quantile_sorted(&sorted(samples), 0.5)
}

const MIB: f64 = 1024.0 * 1024.0;

/// `None` when there is no meaningful rate: a zero, negative or non-finite duration (a write
/// faster than the clock's resolution, a missing end event), which would otherwise become an
/// infinity or a NaN that serde_json writes as `null` and no comparison can use.
pub fn throughput_mib_s(bytes: u64, seconds: f64) -> Option<f64> {
    if !(seconds > 0.0 && seconds.is_finite()) {
        return None;
    }
    let rate = bytes as f64 / MIB / seconds;
    rate.is_finite().then_some(rate)
}

/// How a [`MannWhitney`] p-value was obtained.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Method {
    /// From the exact null distribution of U: every assignment of the ranks to the two
    /// samples is equally likely under the null hypothesis, and they are counted.
    Exact,
    /// From the normal distribution with U's mean and (tie-corrected) variance, and a
    /// continuity correction of 1/2.
    NormalApprox,
}

/// The largest n1·n2 (the number of pairs, and the largest U) for which the p-value is
/// exact: 50 runs of each, or 3 against 833. Counting the null distribution costs about
/// (n1·n2)²/4 additions (1.6 million here, a millisecond or two), and its counts stay exact
/// integers (at most C(100, 50) ≈ 1.0e29 under this bound, well within a u128). A bound on
/// the product rather than on each size, because it is the smaller sample that makes the
/// normal approximation poor: with 3 runs against hundreds it is off by up to 0.02, with 50
/// against 50 by 0.0017 at most (R's `wilcox.test` is exact below 50 each, whatever the
/// other).
pub const EXACT_MAX_PAIRS: usize = 2500;

/// A two-sided Mann-Whitney U test (Wilcoxon rank-sum test) of two independent samples,
/// with its effect sizes: a p-value alone says whether there is a difference, not how large.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct MannWhitney {
    /// U of the first sample: the number of pairs (a_i, b_j) with a_i > b_j, ties counting
    /// 1/2. R's `wilcox.test(a, b)` reports it as W. U of the second sample is n1·n2 - u.
    pub u: f64,
    /// Two-sided: min(1, 2·min(P(U ≤ u), P(U ≥ u))) under the null hypothesis that both
    /// samples come from the same distribution.
    pub p_value: f64,
    pub method: Method,
    /// P(A > B) + P(A = B)/2 for a random draw from each sample, i.e. u/(n1·n2) (the
    /// common-language effect size): 0.5 is no tendency either way, 1 is "every a is larger".
    pub prob_a_greater: f64,
    /// The Hodges-Lehmann estimate of how much larger a is than b: the median of all pairwise
    /// differences a_i - b_j. Robust like the test, and in the data's unit (seconds).
    pub hodges_lehmann_shift: f64,
}

/// `None` when either sample is empty or holds a non-finite value (see the module doc).
/// Values so large that a_i - b_j overflows (beyond ±8.9e307) give an infinite or NaN shift.
pub fn mann_whitney(a: &[f64], b: &[f64]) -> Option<MannWhitney> {
    if a.is_empty() || b.is_empty() || check_finite(a).is_err() || check_finite(b).is_err() {
        return None;
    }
    let (n1, n2) = (a.len(), b.len());
    let ranks = RankSums::of(a, b);
    let u = ranks.u2 as f64 / 2.0;
    let (p_value, method) = if ranks.tie_term == 0.0 && n1.saturating_mul(n2) <= EXACT_MAX_PAIRS {
        // Without ties U is an integer, so u2 is even.
        let u = usize::try_from(ranks.u2 / 2).unwrap_or(usize::MAX);
        (exact_p(u, n1, n2), Method::Exact)
    } else {
        (normal_p(u, n1, n2, ranks.tie_term), Method::NormalApprox)
    };
    Some(MannWhitney {
        u,
        p_value,
        method,
        prob_a_greater: u / (n1 as f64 * n2 as f64),
        hodges_lehmann_shift: hodges_lehmann(a, b),
    })
}

/// What the test needs from the ranks of the pooled samples.
struct RankSums {
    /// Twice U of the first sample: with ties ranks are midranks (multiples of 1/2), and
    /// doubled they stay exact integers.
    u2: u128,
    /// Σ (t³ - t) over groups of t tied values, for the variance of U; 0 without ties.
    tie_term: f64,
}

impl RankSums {
    fn of(a: &[f64], b: &[f64]) -> RankSums {
        let mut pooled: Vec<(f64, bool)> = a
            .iter()
            .map(|&x| (x, true))
            .chain(b.iter().map(|&x| (x, false)))
            .collect();
        pooled.sort_by(|x, y| x.0.total_cmp(&y.0));
        let mut rank2_sum_a: u128 = 0;
        let mut tie_term = 0.0;
        let mut start: u128 = 0;
        // -0.0 and 0.0 are adjacent in total_cmp order and equal by ==: one group.
        for group in pooled.chunk_by(|x, y| x.0 == y.0) {
            let t = group.len() as u128;
            let in_a = group.iter().filter(|e| e.1).count() as u128;
            // The group holds ranks start+1 ..= start+t; twice their mean is 2·start + t + 1.
            rank2_sum_a += in_a * (2 * start + t + 1);
            if t > 1 {
                let tf = t as f64;
                tie_term += tf * tf * tf - tf;
            }
            start += t;
        }
        let n1 = a.len() as u128;
        RankSums {
            u2: rank2_sum_a.saturating_sub(n1 * (n1 + 1)),
            tie_term,
        }
    }
}

/// The number of ways each value of U (0 ..= n1·n2) arises among the C(n1+n2, n1) equally
/// likely assignments of ranks, by the recurrence of Mann and Whitney (1947): the largest
/// of the pooled values is either a b, leaving U unchanged, or an a, which exceeds all n2
/// b's, so f(i, j)[u] = f(i, j-1)[u] + f(i-1, j)[u-j]. `rows[i]` holds f(i, j) for the
/// current j; updating i upwards makes `rows[i-1]` already f(i-1, j).
fn null_counts(n1: usize, n2: usize) -> Vec<u128> {
    // The distribution is symmetric in the two sizes; the smaller one as rows is cheaper.
    let (m, n) = if n1 <= n2 { (n1, n2) } else { (n2, n1) };
    let mut rows: Vec<Vec<u128>> = (0..=m)
        .map(|i| {
            let mut row = vec![0u128; i * n + 1];
            row[0] = 1; // f(i, 0): with no b's, U is 0 in the one assignment there is
            row
        })
        .collect();
    for j in 1..=n {
        for i in 1..=m {
            let (done, rest) = rows.split_at_mut(i);
            let (prev, cur) = (&done[i - 1], &mut rest[0]);
            for (c, p) in cur[j..=i * j].iter_mut().zip(prev) {
                *c += p;
            }
        }
    }
    rows.pop().unwrap_or_else(|| vec![1])
}

/// Two-sided exact p-value of U = u for sizes (n1, n2) without ties.
fn exact_p(u: usize, n1: usize, n2: usize) -> f64 {
    let counts = null_counts(n1, n2);
    let u = u.min(counts.len() - 1);
    let total: u128 = counts.iter().sum();
    let at_most: u128 = counts[..=u].iter().sum();
    let at_least: u128 = counts[u..].iter().sum();
    ((2 * at_most.min(at_least)) as f64 / total as f64).min(1.0)
}

/// Two-sided p-value of U = u from the normal approximation: mean n1·n2/2, variance
/// n1·n2/12·((N+1) - Σ(t³-t)/(N(N-1))) with N = n1+n2 (ties make U vary less), and each tail
/// taken from the half-integer beyond u (P(U ≤ u) ≈ Φ((u + 1/2 - mean)/sd)), the usual
/// continuity correction for a discrete statistic. The same as R's `wilcox.test` with
/// `correct = TRUE` (R subtracts sign(z)/2 from z, which agrees because U - mean is a
/// multiple of 1/2: never strictly within 1/2 of 0 unless 0, where both give p = 1).
fn normal_p(u: f64, n1: usize, n2: usize, tie_term: f64) -> f64 {
    let (n1, n2) = (n1 as f64, n2 as f64);
    let n = n1 + n2;
    let variance = n1 * n2 / 12.0 * ((n + 1.0) - tie_term / (n * (n - 1.0)));
    // Zero when every value is tied: nothing tells the samples apart.
    if variance.is_nan() || variance <= 0.0 {
        return 1.0;
    }
    let sd = variance.sqrt();
    let d = u - n1 * n2 / 2.0;
    let at_most = normal_cdf((d + 0.5) / sd);
    let at_least = normal_cdf((0.5 - d) / sd);
    (2.0 * at_most.min(at_least)).min(1.0)
}

/// Φ, the standard normal distribution function, with full relative precision in the lower
/// tail (where p-values live) rather than 1 - (something close to 1).
fn normal_cdf(z: f64) -> f64 {
    0.5 * erfc(-z / SQRT_2)
}

/// The complementary error function to about 1e-13 relative error on the whole line, from
/// two expansions in Abramowitz & Stegun: below 2 the series 7.1.6 for erf, whose terms are
/// all positive (no cancellation), and 1 - erf costs at most two digits (erfc(2) ≈ 0.005);
/// from 2 on the continued fraction 7.1.14, which converges within 80 levels at 2 and
/// faster beyond.
fn erfc(x: f64) -> f64 {
    if x.is_nan() {
        return f64::NAN;
    }
    if x < 0.0 {
        return 2.0 - erfc(-x);
    }
    if x < 2.0 {
        // erf x = 2/√π · e^(-x²) · Σ 2ⁿ x^(2n+1) / (1·3·…·(2n+1))
        let two_x2 = 2.0 * x * x;
        let mut term = x;
        let mut sum = 0.0;
        for n in 1..200 {
            sum += term;
            term *= two_x2 / (2 * n + 1) as f64;
            if term <= sum * 1e-17 {
                break;
            }
        }
        return 1.0 - FRAC_2_SQRT_PI * (-x * x).exp() * sum;
    }
    // √π · e^(x²) · erfc x = 1/(x + (1/2)/(x + 1/(x + (3/2)/(x + 2/(x + …))))), bottom up.
    let mut t = x;
    for k in (1..=80).rev() {
        t = x + (k as f64 / 2.0) / t;
    }
    FRAC_2_SQRT_PI / 2.0 * (-x * x).exp() / t
}

/// The median of all pairwise differences a_i - b_j, both samples non-empty and finite, in
/// O(n1 + n2) memory: the n1·n2 differences are never materialised (10^5 runs a side would be
/// 80 GB). The middle differences are selected from the implicit matrix they form once both
/// samples are sorted (see `PairwiseDifferences`).
fn hodges_lehmann(a: &[f64], b: &[f64]) -> f64 {
    let d = PairwiseDifferences::new(a, b);
    let m = d.len();
    match m {
        0 => f64::NAN,
        // Halves first: the midpoint of two huge differences must not overflow.
        _ if m.is_multiple_of(2) => d.kth(m / 2 - 1) / 2.0 + d.kth(m / 2) / 2.0,
        _ => d.kth(m / 2),
    }
}

/// The differences a_i - b_j as a matrix whose rows and columns are sorted: row i is a's i-th
/// smallest value, column j b's j-th largest, so a row grows to the right and a column
/// downwards (floating-point subtraction is monotonic in each operand). The k-th smallest
/// element is found by randomised selection over that matrix (as Monahan's 1984 algorithm
/// for the Hodges-Lehmann estimator): each row keeps the range of columns still in play, a
/// pivot drawn from those splits every row by binary search, and the side that holds rank k
/// stays. Expected O(log(n1·n2)) rounds of O(n1 log n2); memory O(n1 + n2).
///
/// Differences are ordered as numbers (the inputs are finite, so no difference is NaN): the
/// value selected is the one a sort of all differences gives, except that 0.0 and -0.0 count
/// as equal, and the sign of a zero shift may differ.
struct PairwiseDifferences {
    a_ascending: Vec<f64>,
    b_descending: Vec<f64>,
}

impl PairwiseDifferences {
    fn new(a: &[f64], b: &[f64]) -> PairwiseDifferences {
        let mut a_ascending = a.to_vec();
        a_ascending.sort_by(f64::total_cmp);
        let mut b_descending = b.to_vec();
        b_descending.sort_by(|x, y| y.total_cmp(x));
        PairwiseDifferences {
            a_ascending,
            b_descending,
        }
    }

    fn len(&self) -> usize {
        self.a_ascending.len() * self.b_descending.len()
    }

    fn at(&self, row: usize, col: usize) -> f64 {
        self.a_ascending[row] - self.b_descending[col]
    }

    /// The first column of `row` within `from..to` whose difference is not `below` the pivot.
    fn split(&self, row: usize, from: usize, to: usize, below: impl Fn(f64) -> bool) -> usize {
        from + self.b_descending[from..to].partition_point(|&y| below(self.a_ascending[row] - y))
    }

    /// The k-th smallest difference (0-based), for k < len().
    fn kth(&self, k: usize) -> f64 {
        let rows = self.a_ascending.len();
        let cols = self.b_descending.len();
        // Columns lo[i]..hi[i] of row i are in play; `skipped` elements below them all.
        let mut lo = vec![0usize; rows];
        let mut hi = vec![cols; rows];
        let mut skipped = 0usize;
        let mut rng = SplitMix64(0x4c48_5348_4946_5453);
        loop {
            let left: usize = (0..rows).map(|i| hi[i] - lo[i]).sum();
            let want = k - skipped;
            // Few enough to sort: no more than the samples themselves hold.
            if left <= (rows + cols).max(64) {
                let mut rest: Vec<f64> = (0..rows)
                    .flat_map(|i| (lo[i]..hi[i]).map(move |j| (i, j)))
                    .map(|(i, j)| self.at(i, j))
                    .collect();
                rest.sort_by(|x, y| x.partial_cmp(y).expect("differences of finite values"));
                return rest[want];
            }
            let pivot = self.nth_in_play(&lo, &hi, (rng.next() % left as u64) as usize);
            let less: Vec<usize> = (0..rows)
                .map(|i| self.split(i, lo[i], hi[i], |d| d < pivot))
                .collect();
            let not_more: Vec<usize> = (0..rows)
                .map(|i| self.split(i, less[i], hi[i], |d| d <= pivot))
                .collect();
            let n_less: usize = (0..rows).map(|i| less[i] - lo[i]).sum();
            let n_equal: usize = (0..rows).map(|i| not_more[i] - less[i]).sum();
            if want < n_less {
                hi = less;
            } else if want < n_less + n_equal {
                return pivot;
            } else {
                // The pivot is in play and not kept: every round leaves fewer in play.
                skipped += n_less + n_equal;
                lo = not_more;
            }
        }
    }

    /// The element in play numbered `n`, counting row by row.
    fn nth_in_play(&self, lo: &[usize], hi: &[usize], mut n: usize) -> f64 {
        for i in 0..lo.len() {
            let width = hi[i] - lo[i];
            if n < width {
                return self.at(i, lo[i] + n);
            }
            n -= width;
        }
        unreachable!("n is below the number in play")
    }
}

/// SplitMix64 (Steele, Lea and Flood 2014), for the selection's pivots: seeded, so that the
/// work done is the same on every run (the result does not depend on the pivots).
struct SplitMix64(u64);

impl SplitMix64 {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

/// C(n, k), or `None` if it does not fit a u128 (never within [`EXACT_MAX_PAIRS`]).
fn binomial(n: usize, k: usize) -> Option<u128> {
    let k = k.min(n.checked_sub(k)?);
    let mut c: u128 = 1;
    for i in 0..k {
        // c is C(n, i) here, and C(n, i)·(n-i) is divisible by i+1.
        c = c.checked_mul((n - i) as u128)? / (i + 1) as u128;
    }
    Some(c)
}

/// The smallest two-sided p-value the test can give for these sample sizes: the one of
/// fully separated samples (every a below every b), 1 if either is empty. A test that cannot
/// reach alpha cannot reject, whatever the data, and its "no difference" would be vacuous.
/// Exactly, only one assignment of ranks gives U = 0, so it is 2/C(n1+n2, n1).
pub fn smallest_p_value(n1: usize, n2: usize) -> f64 {
    if n1 == 0 || n2 == 0 {
        return 1.0;
    }
    if n1.saturating_mul(n2) <= EXACT_MAX_PAIRS {
        if let Some(c) = binomial(n1 + n2, n1) {
            return (2.0 / c as f64).min(1.0);
        }
    }
    normal_p(0.0, n1, n2, 0.0)
}

/// How many runs of each (baseline and candidate) a comparison at significance `alpha` needs
/// before it can reject at all: the smallest n with `smallest_p_value(n, n) ≤ alpha`, e.g. 4
/// at 0.05 (2/C(8,4) = 0.029, whereas 3 give at best 2/C(6,3) = 0.1), 5 at 0.01. `None`
/// unless 0 < alpha < 1.
pub fn min_samples_per_group(alpha: f64) -> Option<usize> {
    if !(alpha > 0.0 && alpha < 1.0) {
        return None;
    }
    // The smallest p-value falls like e^(-3n/4) and is 0 (underflow) from n ≈ 1000 on, so
    // the search ends for every positive alpha.
    (1..=10_000).find(|&n| smallest_p_value(n, n) <= alpha)
}

/// What a comparison means for CI. The samples are durations: larger is slower.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ComparisonVerdict {
    /// The candidate's durations are significantly larger than the baseline's.
    Slower,
    Faster,
    /// The test could have rejected at alpha but did not: the runs are compatible with no
    /// change (not proof of none; see the shift and the median change for its size).
    NoSignificantDifference,
    /// The test could not reject at alpha whatever the data, so it says nothing either way.
    TooFewSamples,
}

/// A baseline run compared with a candidate run of the same phase.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    pub verdict: ComparisonVerdict,
    pub n_baseline: usize,
    pub n_candidate: usize,
    pub alpha: f64,
    /// Runs of each that make a verdict possible at this alpha, for "run at least N times".
    pub min_samples_per_group: usize,
    /// The test's two-sided p-value; `None` when a sample is empty. Computed even for
    /// `TooFewSamples`, where it cannot be below alpha (see [`compare`] for the one exception).
    pub p_value: Option<f64>,
    /// The Hodges-Lehmann estimate of candidate - baseline, in the samples' unit: positive
    /// is slower.
    pub hodges_lehmann_shift: Option<f64>,
    /// (median(candidate) - median(baseline)) / |median(baseline)|: +0.25 is 25 % slower.
    /// `None` when a sample is empty or the baseline median is 0.
    pub relative_median_change: Option<f64>,
}

/// Why two samples cannot be compared.
#[derive(Clone, Copy, Debug, PartialEq, thiserror::Error)]
pub enum CompareError {
    #[error("the significance level must be between 0 and 1, not {0}")]
    Alpha(f64),
    #[error("baseline: {0}")]
    Baseline(SampleError),
    #[error("candidate: {0}")]
    Candidate(SampleError),
}

/// A verdict for CI gating at significance `alpha` (typically 0.05): the two-sided
/// Mann-Whitney test of candidate against baseline, and its direction from U. A verdict needs
/// no fixed threshold: noisy phases need a larger change to be flagged, steady ones less.
///
/// `TooFewSamples` when `smallest_p_value(n_baseline, n_candidate) > alpha`, i.e. the test
/// cannot reject with these sample sizes (for equal sizes: fewer than
/// [`min_samples_per_group`]). This is decided from the sizes alone, before the data: with
/// ties, the normal approximation can produce a p-value below the exact test's minimum
/// (three runs of 1 s against three of 2 s give p = 0.047, and exactly they could give no
/// less than 0.1), an artefact of approximating a coarse discrete distribution that must
/// not flip a gate.
///
/// Errors on an alpha outside (0, 1) or a non-finite sample; an empty sample is
/// `TooFewSamples`.
pub fn compare(
    baseline: &[f64],
    candidate: &[f64],
    alpha: f64,
) -> Result<Comparison, CompareError> {
    let min_samples = min_samples_per_group(alpha).ok_or(CompareError::Alpha(alpha))?;
    check_finite(baseline).map_err(CompareError::Baseline)?;
    check_finite(candidate).map_err(CompareError::Candidate)?;
    let test = mann_whitney(candidate, baseline);
    let relative_median_change = (!baseline.is_empty() && !candidate.is_empty())
        .then(|| {
            let (b, c) = (median(baseline), median(candidate));
            (c - b) / b.abs()
        })
        .filter(|r| r.is_finite());
    let verdict = match test {
        _ if smallest_p_value(baseline.len(), candidate.len()) > alpha => {
            ComparisonVerdict::TooFewSamples
        }
        None => ComparisonVerdict::TooFewSamples,
        Some(t) if t.p_value <= alpha && t.prob_a_greater > 0.5 => ComparisonVerdict::Slower,
        Some(t) if t.p_value <= alpha && t.prob_a_greater < 0.5 => ComparisonVerdict::Faster,
        Some(_) => ComparisonVerdict::NoSignificantDifference,
    };
    Ok(Comparison {
        verdict,
        n_baseline: baseline.len(),
        n_candidate: candidate.len(),
        alpha,
        min_samples_per_group: min_samples,
        p_value: test.map(|t| t.p_value),
        hodges_lehmann_shift: test.map(|t| t.hodges_lehmann_shift),
        relative_median_change,
    })
}

#[cfg(test)]
mod tests;
