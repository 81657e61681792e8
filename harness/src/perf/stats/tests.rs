//! Tests of `stats`.

use super::*;
use proptest::prelude::*;

#[track_caller]
fn assert_close(actual: f64, expected: f64, tol: f64) {
    assert!(
        (actual - expected).abs() <= tol,
        "{actual} is not within {tol} of {expected}"
    );
}

/// SplitMix64 (Steele, Lea and Flood 2014): seeded, so the noise tests are the same on
/// every run, and small enough not to need a crate.
struct SplitMix64(u64);

impl SplitMix64 {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform on [0, 1), 53 random bits.
    fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// Durations shaped like an install phase: a floor, some spread, and a long right tail
/// (exponential, mean 20 s). Standard deviation about 22 s.
fn durations(rng: &mut SplitMix64, n: usize, floor: f64) -> Vec<f64> {
    (0..n)
        .map(|_| floor + 30.0 * rng.unit() - 20.0 * (1.0 - rng.unit()).ln())
        .collect()
}

// --- Summary and quantiles ---------------------------------------------------------

#[test]
fn summary_matches_values_computed_by_hand() {
    // Sorted 2 4 4 4 5 5 7 9: mean 40/8 = 5; squared deviations 9+1+1+1+0+0+4+16 = 32,
    // so the sample variance is 32/7; median h = 7·0.5 = 3.5: (4+5)/2; p90 h = 7·0.9 =
    // 6.3: 7 + 0.3·(9-7) = 7.6.
    let s = Summary::of(&[5.0, 9.0, 4.0, 2.0, 4.0, 7.0, 4.0, 5.0]).unwrap();
    assert_eq!((s.n, s.min, s.max), (8, 2.0, 9.0));
    assert_close(s.mean, 5.0, 1e-12);
    assert_close(s.median, 4.5, 1e-12);
    assert_close(s.p90, 7.6, 1e-12);
    assert_close(s.stddev, (32.0f64 / 7.0).sqrt(), 1e-12);

    // 3 1 2 10 sorted 1 2 3 10: mean 4, deviations -3 -2 -1 6: 50/3; median 2.5;
    // p90 h = 2.7: 3 + 0.7·7 = 7.9.
    let s = Summary::of(&[3.0, 1.0, 2.0, 10.0]).unwrap();
    assert_close(s.mean, 4.0, 1e-12);
    assert_close(s.median, 2.5, 1e-12);
    assert_close(s.p90, 7.9, 1e-12);
    assert_close(s.stddev, (50.0f64 / 3.0).sqrt(), 1e-12);
}

#[test]
fn quantiles_interpolate_between_closest_ranks_like_r_type_7() {
    // 15 20 35 40 50: h = 4q. q=0.4: h=1.6, 20 + 0.6·15 = 29; q=0.9: h=3.6, 40 + 0.6·10 =
    // 46 (nearest rank, or R type 6, would say 50); q=0.25: h=1, exactly 20.
    let x = [15.0, 20.0, 35.0, 40.0, 50.0];
    for (q, want) in [
        (0.0, 15.0),
        (0.25, 20.0),
        (0.4, 29.0),
        (0.5, 35.0),
        (0.75, 40.0),
        (0.9, 46.0),
        (1.0, 50.0),
    ] {
        assert_close(quantile_sorted(&x, q), want, 1e-12);
    }
    // 1 2 3 4: numpy.percentile(.., 90) = 3.7, median 2.5.
    assert_close(quantile_sorted(&[1.0, 2.0, 3.0, 4.0], 0.9), 3.7, 1e-12);
    assert_close(quantile_sorted(&[1.0, 2.0, 3.0, 4.0], 0.5), 2.5, 1e-12);
    // 1..=11: h = 10·0.9 = 9, exactly the 10th value.
    let x: Vec<f64> = (1..=11).map(f64::from).collect();
    assert_close(quantile_sorted(&x, 0.9), 10.0, 1e-12);
    assert!(quantile_sorted(&[], 0.5).is_nan());
    // Neighbours of opposite sign near f64::MAX: b - a overflows, the result must not.
    let m = quantile_sorted(&[-f64::MAX, f64::MAX], 0.5);
    assert_eq!(m, 0.0);
}

#[test]
fn summary_of_one_sample_is_that_sample() {
    let s = Summary::of(&[42.5]).unwrap();
    assert_eq!(
        s,
        Summary {
            n: 1,
            min: 42.5,
            max: 42.5,
            mean: 42.5,
            median: 42.5,
            p90: 42.5,
            stddev: 0.0
        }
    );
    // Equal values: no spread, and the mean does not drift an ulp above them.
    let s = Summary::of(&[0.1, 0.1, 0.1]).unwrap();
    assert_eq!((s.mean, s.stddev), (0.1, 0.0));
    // Huge values: the sum overflows, the mean must not.
    let s = Summary::of(&[f64::MAX; 3]).unwrap();
    assert_eq!((s.mean, s.median, s.stddev), (f64::MAX, f64::MAX, 0.0));
    let s = Summary::of(&[f64::MAX, -f64::MAX, f64::MAX, -f64::MAX]).unwrap();
    assert_eq!((s.mean, s.median), (0.0, 0.0));
}

#[test]
fn summary_rejects_empty_and_non_finite_samples() {
    assert_eq!(Summary::of(&[]), Err(SampleError::Empty));
    assert_eq!(
        Summary::of(&[1.0, f64::INFINITY]),
        Err(SampleError::NotFinite {
            index: 1,
            value: f64::INFINITY
        })
    );
    assert!(matches!(
        Summary::of(&[f64::NAN, 1.0]),
        Err(SampleError::NotFinite { index: 0, value }) if value.is_nan()
    ));
    assert_eq!(
        SampleError::NotFinite {
            index: 3,
            value: f64::NEG_INFINITY
        }
        .to_string(),
        "sample 3 is -inf, not a finite number"
    );
}

#[test]
fn summary_round_trips_through_json() {
    let s = Summary::of(&[612.25, 598.5, 640.0, 605.75]).unwrap();
    let json = serde_json::to_string(&s).unwrap();
    assert!(
        json.contains("\"p90\":") && json.contains("\"stddev\":"),
        "{json}"
    );
    // serde_json parses floats to within an ulp unless its float_roundtrip feature is on.
    let back: Summary = serde_json::from_str(&json).unwrap();
    assert_eq!(back.n, s.n);
    for (got, want) in [
        (back.min, s.min),
        (back.max, s.max),
        (back.mean, s.mean),
        (back.median, s.median),
        (back.p90, s.p90),
        (back.stddev, s.stddev),
    ] {
        assert_close(got, want, want.abs() * 1e-15);
    }
}

#[test]
fn throughput_in_mib_per_second() {
    // report/summary.rs shows this write as 82.6 MiB/s: 256 MiB / 3.1 s = 82.58...
    assert_close(
        throughput_mib_s(268_435_456, 3.1).unwrap(),
        256.0 / 3.1,
        1e-12,
    );
    assert_eq!(throughput_mib_s(3 * 1024 * 1024, 2.0), Some(1.5));
    assert_eq!(throughput_mib_s(0, 1.0), Some(0.0));
    for seconds in [0.0, -0.0, -1.0, f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
        assert_eq!(throughput_mib_s(1 << 20, seconds), None, "{seconds}");
    }
    // Finite duration, but the rate overflows.
    assert_eq!(throughput_mib_s(u64::MAX, f64::from_bits(1)), None);
}

// --- The null distribution ---------------------------------------------------------

#[test]
fn null_counts_of_small_sizes_by_hand() {
    // (2,2): the 6 rank sets of a: {1,2}→0 {1,3}→1 {1,4}→2 {2,3}→2 {2,4}→3 {3,4}→4.
    assert_eq!(null_counts(2, 2), [1, 1, 2, 1, 1]);
    assert_eq!(null_counts(2, 3), [1, 1, 2, 2, 2, 1, 1]);
    assert_eq!(null_counts(3, 2), [1, 1, 2, 2, 2, 1, 1]);
    assert_eq!(null_counts(3, 3), [1, 1, 2, 3, 3, 3, 3, 2, 1, 1]);
    assert_eq!(null_counts(1, 4), [1; 5]);
    assert_eq!(null_counts(0, 4), [1]);
    assert_eq!(null_counts(0, 0), [1]);
}

/// The null distribution by enumerating every way to choose which n1 of the n1+n2
/// positions in the pooled order hold an a, counting for each the (a, b) pairs with the
/// a above the b: independent of the recurrence.
fn brute_force_counts(n1: usize, n2: usize) -> Vec<u128> {
    let n = n1 + n2;
    let mut counts = vec![0u128; n1 * n2 + 1];
    for mask in 0u32..1 << n {
        if mask.count_ones() as usize != n1 {
            continue;
        }
        let is_a = |pos: usize| mask & (1 << pos) != 0;
        let u: usize = (0..n)
            .filter(|&hi| is_a(hi))
            .map(|hi| (0..hi).filter(|&lo| !is_a(lo)).count())
            .sum();
        counts[u] += 1;
    }
    counts
}

#[test]
fn null_counts_match_brute_force_enumeration() {
    for n1 in 1..=13 {
        for n2 in 1..=14 - n1 {
            assert_eq!(null_counts(n1, n2), brute_force_counts(n1, n2), "{n1}×{n2}");
        }
    }
    assert_eq!(null_counts(9, 9), brute_force_counts(9, 9));
}

#[test]
fn null_counts_add_up_to_the_number_of_rank_assignments() {
    // Pascal's triangle, independent of `binomial`.
    let mut pascal = vec![vec![1u128]];
    for n in 1..=40 {
        let prev: &Vec<u128> = &pascal[n - 1];
        let row = (0..=n)
            .map(|k| {
                let left = if k > 0 { prev[k - 1] } else { 0 };
                left + prev.get(k).copied().unwrap_or(0)
            })
            .collect();
        pascal.push(row);
    }
    for n1 in 0..=20 {
        for n2 in 0..=20 {
            let total: u128 = null_counts(n1, n2).iter().sum();
            assert_eq!(total, pascal[n1 + n2][n1], "{n1}×{n2}");
            assert_eq!(binomial(n1 + n2, n1), Some(pascal[n1 + n2][n1]));
        }
    }
    // C(100, 50), from Python's math.comb: the largest count within EXACT_MAX_PAIRS.
    let c100_50: u128 = 100_891_344_545_564_193_334_812_497_256;
    assert_eq!(null_counts(50, 50).iter().sum::<u128>(), c100_50);
    assert_eq!(binomial(100, 50), Some(c100_50));
    assert_eq!(binomial(3, 4), None);
}

#[test]
fn exact_p_by_hand() {
    // (3,3): counts 1 1 2 3 3 3 3 2 1 1 over U = 0..=9; U = 3: P(U ≤ 3) = 7/20,
    // P(U ≥ 3) = 16/20, so p = 2·7/20 = 0.7. U = 0: 2/20.
    assert_close(exact_p(3, 3, 3), 0.7, 1e-15);
    assert_eq!(exact_p(0, 3, 3), 0.1);
    assert_eq!(exact_p(9, 3, 3), 0.1);
    // Centre: both tails above 1/2.
    assert_eq!(exact_p(4, 3, 3), 1.0);
    assert_eq!(exact_p(5, 3, 3), 1.0);
}

// --- Mann-Whitney ------------------------------------------------------------------

#[test]
fn mann_whitney_small_example_by_hand() {
    // Pooled order a b a b a b: a's ranks 1 3 5, U = 9 - 6 = 3 (0 + 1 + 2 b's below).
    // Differences a-b: -1 -3 -5 1 -1 -3 3 1 -1, sorted -5 -3 -3 -1 -1 -1 1 1 3: median -1.
    let t = mann_whitney(&[1.0, 3.0, 5.0], &[2.0, 4.0, 6.0]).unwrap();
    assert_eq!(t.u, 3.0);
    assert_eq!(t.method, Method::Exact);
    assert_close(t.p_value, 0.7, 1e-15);
    assert_close(t.prob_a_greater, 1.0 / 3.0, 1e-15);
    assert_eq!(t.hodges_lehmann_shift, -1.0);
    // An even number of differences: 1 and 2, median 1.5.
    let t = mann_whitney(&[1.0, 2.0], &[0.0]).unwrap();
    assert_eq!(t.hodges_lehmann_shift, 1.5);
}

#[test]
fn fully_separated_samples_of_five() {
    // Only one of the C(10,5) = 252 assignments has U = 0, one has U = 25: p = 2/252.
    let low = [1.0, 2.0, 3.0, 4.0, 5.0];
    let high = [6.0, 7.0, 8.0, 9.0, 10.0];
    let t = mann_whitney(&low, &high).unwrap();
    assert_eq!((t.u, t.method, t.prob_a_greater), (0.0, Method::Exact, 0.0));
    assert_close(t.p_value, 2.0 / 252.0, 1e-15);
    assert_close(t.p_value, 0.007_936_507_936_507_936, 1e-15);
    // Differences -9..=-1, 25 of them, symmetric about -5.
    assert_eq!(t.hodges_lehmann_shift, -5.0);
    let r = mann_whitney(&high, &low).unwrap();
    assert_eq!((r.u, r.p_value, r.prob_a_greater), (25.0, t.p_value, 1.0));
    assert_eq!(r.hodges_lehmann_shift, 5.0);
}

#[test]
fn identical_samples_give_p_one() {
    let x = [3.0, 1.0, 4.0, 1.5, 9.0];
    let t = mann_whitney(&x, &x).unwrap();
    // Every value tied once across the samples: U is its mean 12.5.
    assert_eq!(
        (t.u, t.p_value, t.method),
        (12.5, 1.0, Method::NormalApprox)
    );
    assert_eq!((t.prob_a_greater, t.hodges_lehmann_shift), (0.5, 0.0));
    // All values equal: zero variance, nothing to tell apart.
    let t = mann_whitney(&[7.0; 4], &[7.0; 6]).unwrap();
    assert_eq!((t.u, t.p_value), (12.0, 1.0));
    // Interleaved without ties, U at its mean 8: exactly p = 1.
    let t = mann_whitney(&[1.0, 4.0, 5.0, 8.0], &[2.0, 3.0, 6.0, 7.0]).unwrap();
    assert_eq!((t.u, t.p_value, t.method), (8.0, 1.0, Method::Exact));
    // One each, different: U is 0 or 1 with probability 1/2 each.
    assert_eq!(mann_whitney(&[1.0], &[2.0]).unwrap().p_value, 1.0);
}

#[test]
fn empty_or_non_finite_samples_have_no_test() {
    assert_eq!(mann_whitney(&[], &[1.0]), None);
    assert_eq!(mann_whitney(&[1.0], &[]), None);
    assert_eq!(mann_whitney(&[1.0, f64::NAN], &[1.0]), None);
    assert_eq!(mann_whitney(&[1.0], &[f64::NEG_INFINITY]), None);
}

#[test]
fn negative_and_positive_zero_are_tied() {
    let t = mann_whitney(&[-0.0], &[0.0]).unwrap();
    assert_eq!((t.u, t.method, t.p_value), (0.5, Method::NormalApprox, 1.0));
}

/// R's `wilcox.test` example data (the depression scores of its help page).
const R_X: [f64; 9] = [1.83, 0.50, 1.62, 2.48, 1.68, 1.88, 1.55, 3.06, 1.30];
#[allow(clippy::approx_constant)] // 3.14 is a score in the data, not π
const R_Y: [f64; 9] = [0.878, 0.647, 0.598, 2.05, 1.06, 1.29, 1.06, 3.14, 1.29];

/// The exact two-sided p-value conditional on the pooled values, ties included, by
/// enumerating all C(18, 9) = 48620 ways to split them (midranks computed the slow way).
fn brute_force_permutation_p(x: &[f64], y: &[f64]) -> (u32, u32) {
    let pooled: Vec<f64> = x.iter().chain(y).copied().collect();
    let midrank = |v: f64| {
        let below = pooled.iter().filter(|&&w| w < v).count() as f64;
        let equal = pooled.iter().filter(|&&w| w == v).count() as f64;
        below + (equal + 1.0) / 2.0
    };
    let ranks: Vec<f64> = pooled.iter().map(|&v| midrank(v)).collect();
    let n1 = x.len();
    let offset = (n1 * (n1 + 1) / 2) as f64;
    let observed: f64 = ranks[..n1].iter().sum::<f64>() - offset;
    let (mut at_most, mut at_least, mut total) = (0u32, 0u32, 0u32);
    for mask in 0u32..1 << pooled.len() {
        if mask.count_ones() as usize != n1 {
            continue;
        }
        let u = (0..pooled.len())
            .filter(|i| mask & (1 << i) != 0)
            .map(|i| ranks[i])
            .sum::<f64>()
            - offset;
        total += 1;
        at_most += u32::from(u <= observed);
        at_least += u32::from(u >= observed);
    }
    (2 * at_most.min(at_least), total)
}

#[test]
fn r_reference_example_with_ties_uses_the_normal_approximation() {
    // R: W = 58, and a warning that it cannot compute an exact p-value with ties.
    // By hand: U = 58 of 81 pairs; two pairs of ties in y (1.06, 1.29), Σ(t³-t) = 12;
    // variance 81/12·(19 - 12/306) = 127.985..., sd 11.3131; U - 40.5 = 17.5, so
    // p = 2·(1 - Φ(17/11.3131)) = 0.132919458185 (Python, math.erfc); R prints 0.1329.
    let t = mann_whitney(&R_X, &R_Y).unwrap();
    assert_eq!(t.u, 58.0);
    assert_eq!(t.method, Method::NormalApprox);
    assert_close(t.p_value, 0.132_919_458_185_318_86, 1e-12);
    assert_close(t.prob_a_greater, 58.0 / 81.0, 1e-15);
    // The 41st of the 81 sorted differences (Python): 1.62 - 1.06 = 0.56.
    assert_close(t.hodges_lehmann_shift, 0.56, 1e-12);
    // The exact permutation p-value with these ties: 6316/48620 (Python, the same
    // enumeration); the approximation is within 0.003 of it.
    let (count, total) = brute_force_permutation_p(&R_X, &R_Y);
    assert_eq!((count, total), (6316, 48620));
    assert_close(t.p_value, f64::from(count) / f64::from(total), 0.005);
    // U of y is 81 - 58, with the same p.
    let r = mann_whitney(&R_Y, &R_X).unwrap();
    assert_eq!((r.u, r.p_value), (23.0, t.p_value));
}

#[test]
fn r_reference_example_without_ties_is_exact() {
    // Breaking y's ties (1.06 → 1.061, 1.29 → 1.291) moves no y across an x: U stays 58,
    // now with the exact p-value 6608/48620 = 0.135911 (Python, by enumeration), which
    // is what R's wilcox.test(x, y, exact = TRUE) computes without ties.
    let mut y = R_Y;
    y[6] = 1.061;
    y[5] = 1.291;
    let t = mann_whitney(&R_X, &y).unwrap();
    assert_eq!((t.u, t.method), (58.0, Method::Exact));
    assert_eq!(brute_force_permutation_p(&R_X, &y), (6608, 48620));
    assert_eq!(t.p_value, 6608.0 / 48620.0);
    assert_close(t.p_value, 0.135_911_147_675_853_55, 1e-15);
}

/// The largest |exact - normal| p-value over every possible U for these sizes.
fn worst_normal_error(n1: usize, n2: usize) -> f64 {
    let counts = null_counts(n1, n2);
    let total: u128 = counts.iter().sum();
    let mut below: u128 = 0;
    let mut worst: f64 = 0.0;
    for (u, &c) in counts.iter().enumerate() {
        let at_least = total - below;
        below += c;
        let exact = ((2 * below.min(at_least)) as f64 / total as f64).min(1.0);
        if n1 * n2 <= 400 {
            assert_eq!(exact, exact_p(u, n1, n2));
        }
        worst = worst.max((exact - normal_p(u as f64, n1, n2, 0.0)).abs());
    }
    worst
}

#[test]
fn normal_approximation_is_close_to_exact_for_moderate_samples() {
    // p depends on the data only through U, so checking every U checks every data set
    // of these sizes without ties. Worst differences (Python, the same check): 0.0042 at
    // 20×20, 0.0017 at 50×50 (the exact bound), 0.0086 at 10×10.
    let w = worst_normal_error(20, 20);
    assert!(w <= 0.005, "20×20: {w}");
    let w = worst_normal_error(50, 50);
    assert!(w <= 0.002, "50×50: {w}");
    let w = worst_normal_error(10, 10);
    assert!(w <= 0.01, "10×10: {w}");
}

#[test]
fn exact_within_the_pair_bound_and_without_ties() {
    let range =
        |from: usize, n: usize| -> Vec<f64> { (from..from + n).map(|i| i as f64).collect() };
    let t = mann_whitney(&range(0, 50), &range(50, 50)).unwrap();
    assert_eq!(t.method, Method::Exact);
    assert_eq!(t.p_value, 2.0 / 100_891_344_545_564_193_334_812_497_256.0);
    let t = mann_whitney(&range(0, 3), &range(3, 833)).unwrap();
    assert_eq!((t.method, t.p_value), (Method::Exact, 2.0 / 97_030_340.0));
    // 51 × 50 = 2550 pairs: approximated. Fully separated: z = (-1275 + 0.5)/sd with
    // sd² = 2550·102/12, far in the tail.
    let t = mann_whitney(&range(0, 51), &range(51, 50)).unwrap();
    assert_eq!(t.method, Method::NormalApprox);
    assert!(t.p_value > 0.0 && t.p_value < 1e-15, "{}", t.p_value);
    // One tie anywhere: approximated.
    let t = mann_whitney(&[1.0, 2.0, 3.0], &[3.0, 4.0, 5.0]).unwrap();
    assert_eq!((t.u, t.method), (0.5, Method::NormalApprox));
}

#[test]
fn smallest_p_value_is_that_of_fully_separated_samples() {
    for n1 in 1..=12 {
        for n2 in 1..=12 {
            let a: Vec<f64> = (0..n1).map(|i| i as f64).collect();
            let b: Vec<f64> = (n1..n1 + n2).map(|i| i as f64).collect();
            let t = mann_whitney(&a, &b).unwrap();
            assert_eq!(smallest_p_value(n1, n2), t.p_value, "{n1}×{n2}");
        }
    }
    for (n1, n2) in [(60, 60), (1, 3000)] {
        let a: Vec<f64> = (0..n1).map(|i| i as f64).collect();
        let b: Vec<f64> = (n1..n1 + n2).map(|i| i as f64).collect();
        let t = mann_whitney(&a, &b).unwrap();
        assert_eq!(t.method, Method::NormalApprox);
        assert_eq!(smallest_p_value(n1, n2), t.p_value, "{n1}×{n2}");
    }
    assert_eq!(smallest_p_value(0, 10), 1.0);
    assert_eq!(smallest_p_value(10, 0), 1.0);
    assert_eq!(smallest_p_value(1, 1), 1.0);
    assert_eq!(smallest_p_value(3, 3), 0.1);
    assert_close(smallest_p_value(4, 4), 2.0 / 70.0, 1e-15);
}

#[test]
fn min_samples_per_group_is_computed_from_alpha() {
    // Smallest p with n of each: 2/C(2n, n): n=2 1/3, n=3 0.1, n=4 0.0286, n=5 0.0079,
    // n=6 0.0022, n=7 0.00058.
    for (alpha, n) in [
        (0.5, 2),
        (0.34, 2),
        (0.2, 3),
        (0.1, 3),
        (0.05, 4),
        (0.01, 5),
        (0.005, 6),
        (0.001, 7),
        (0.99, 2),
    ] {
        assert_eq!(min_samples_per_group(alpha), Some(n), "alpha {alpha}");
    }
    // Tiny alphas still end the search (in the approximated range beyond 50 each).
    let n = min_samples_per_group(1e-300).unwrap();
    assert!(n > 50 && smallest_p_value(n, n) <= 1e-300, "{n}");
    assert!(min_samples_per_group(f64::from_bits(1)).is_some());
    for alpha in [0.0, -0.1, 1.0, 1.5, f64::NAN, f64::INFINITY] {
        assert_eq!(min_samples_per_group(alpha), None, "alpha {alpha}");
    }
}

#[test]
fn erfc_matches_the_c_library() {
    // Python's math.erfc, which calls the C library's.
    for (x, want) in [
        (0.0, 1.0),
        (0.3, 0.671_373_240_540_872_6),
        (0.5, 0.479_500_122_186_953_5),
        (1.0, 0.157_299_207_050_285_13),
        (1.5, 0.033_894_853_524_689_274),
        (2.0, 0.004_677_734_981_047_265),
        (2.5, 0.000_406_952_017_444_958_9),
        (3.0, 2.209_049_699_858_543_8e-5),
        (3.5, 7.430_983_723_414_128e-7),
        (5.0, 1.537_459_794_428_035_1e-12),
        (8.0, 1.122_429_717_298_292_8e-29),
        (10.0, 2.088_487_583_762_545e-45),
        (26.5, 2.210_907_664_263_734_3e-307),
        (-0.5, 1.520_499_877_813_046_5),
        (-2.0, 1.995_322_265_018_952_7),
    ] {
        let got = erfc(x);
        assert!(
            ((got - want) / want).abs() < 1e-13,
            "erfc({x}) = {got}, want {want}"
        );
    }
    assert_eq!(erfc(40.0), 0.0);
    assert_eq!(erfc(-40.0), 2.0);
    assert!(erfc(f64::NAN).is_nan());
    assert_close(normal_cdf(1.959_963_984_540_054), 0.975, 1e-15);
}

// --- compare -----------------------------------------------------------------------

#[test]
fn clear_slowdown_is_detected() {
    let mut rng = SplitMix64(1);
    let baseline = durations(&mut rng, 10, 600.0);
    let candidate = durations(&mut rng, 10, 720.0);
    let c = compare(&baseline, &candidate, 0.05).unwrap();
    assert_eq!(c.verdict, ComparisonVerdict::Slower, "{c:?}");
    assert!(c.p_value.unwrap() < 0.001, "{c:?}");
    assert_close(c.hodges_lehmann_shift.unwrap(), 120.0, 40.0);
    assert_close(c.relative_median_change.unwrap(), 0.2, 0.07);
    assert_eq!(
        (c.n_baseline, c.n_candidate, c.min_samples_per_group),
        (10, 10, 4)
    );
    // And the other way round.
    let c = compare(&candidate, &baseline, 0.05).unwrap();
    assert_eq!(c.verdict, ComparisonVerdict::Faster, "{c:?}");
    assert!(c.hodges_lehmann_shift.unwrap() < 0.0);
}

#[test]
fn noise_alone_is_not_flagged() {
    let mut rng = SplitMix64(7);
    let baseline = durations(&mut rng, 10, 600.0);
    let candidate = durations(&mut rng, 10, 600.0);
    let c = compare(&baseline, &candidate, 0.05).unwrap();
    assert_eq!(
        c.verdict,
        ComparisonVerdict::NoSignificantDifference,
        "{c:?}"
    );
}

#[test]
fn false_alarm_rate_stays_at_alpha_and_real_slowdowns_are_found() {
    // Same distribution on both sides: an exact test at 0.05 rejects at most 5 % of the
    // time (4.3 % for 10×10, the largest attainable level below 0.05). The seed is fixed,
    // so the count is too; the bounds only say what it should be near.
    let mut rng = SplitMix64(2024);
    let trials = 1000;
    let flagged = (0..trials)
        .filter(|_| {
            let b = durations(&mut rng, 10, 600.0);
            let c = durations(&mut rng, 10, 600.0);
            compare(&b, &c, 0.05).unwrap().verdict != ComparisonVerdict::NoSignificantDifference
        })
        .count();
    assert!((20..=60).contains(&flagged), "{flagged} of {trials}");
    // A 10 % slowdown (60 s, about 2.7 standard deviations) with 10 runs each.
    let found = (0..200)
        .filter(|_| {
            let b = durations(&mut rng, 10, 600.0);
            let c = durations(&mut rng, 10, 660.0);
            compare(&b, &c, 0.05).unwrap().verdict == ComparisonVerdict::Slower
        })
        .count();
    assert!(found >= 180, "{found} of 200");
}

#[test]
fn too_few_samples_are_reported_as_such() {
    // 3 of each can reach p = 0.1 at best: not at 0.05, however large the slowdown...
    let c = compare(&[100.0, 101.0, 102.0], &[1000.0, 1001.0, 1002.0], 0.05).unwrap();
    assert_eq!(c.verdict, ComparisonVerdict::TooFewSamples);
    assert_eq!((c.p_value, c.min_samples_per_group), (Some(0.1), 4));
    assert_close(c.relative_median_change.unwrap(), 900.0 / 101.0, 1e-12);
    // ...but at 0.1 they can.
    let c = compare(&[100.0, 101.0, 102.0], &[1000.0, 1001.0, 1002.0], 0.1).unwrap();
    assert_eq!(c.verdict, ComparisonVerdict::Slower);
    // 4 of each can, at 0.05 (2/70).
    let c = compare(&[1.0, 2.0, 3.0, 4.0], &[5.0, 6.0, 7.0, 8.0], 0.05).unwrap();
    assert_eq!(c.verdict, ComparisonVerdict::Slower);
    // Ties make the approximation claim p = 0.047 for 3 against 3, below anything the
    // exact test can give: still too few.
    let c = compare(&[1.0; 3], &[2.0; 3], 0.05).unwrap();
    assert!(c.p_value.unwrap() < 0.05, "{c:?}");
    assert_eq!(c.verdict, ComparisonVerdict::TooFewSamples);
    // Nothing to compare.
    for (b, cand) in [
        (&[][..], &[1.0][..]),
        (&[1.0][..], &[][..]),
        (&[][..], &[][..]),
    ] {
        let c = compare(b, cand, 0.05).unwrap();
        assert_eq!(c.verdict, ComparisonVerdict::TooFewSamples);
        assert_eq!(
            (c.p_value, c.hodges_lehmann_shift, c.relative_median_change),
            (None, None, None)
        );
    }
    // Unequal sizes count as they are: one run against 50 can reach 2/51 < 0.05.
    let baseline: Vec<f64> = (0..50).map(f64::from).collect();
    let c = compare(&baseline, &[100.0], 0.05).unwrap();
    assert_eq!(c.verdict, ComparisonVerdict::Slower);
    assert_close(c.p_value.unwrap(), 2.0 / 51.0, 1e-15);
}

#[test]
fn relative_median_change() {
    let c = compare(
        &[10.0, 10.0, 11.0, 9.0, 10.0],
        &[12.0, 12.5, 11.5, 12.0, 12.0],
        0.05,
    );
    assert_close(c.unwrap().relative_median_change.unwrap(), 0.2, 1e-12);
    // Relative to nothing: undefined.
    let c = compare(&[0.0, 0.0, 0.0, 0.0], &[1.0, 1.0, 1.0, 1.0], 0.05).unwrap();
    assert_eq!(c.relative_median_change, None);
    assert_eq!(c.verdict, ComparisonVerdict::Slower);
}

#[test]
fn compare_rejects_bad_alpha_and_non_finite_samples() {
    for alpha in [0.0, 1.0, -0.05, f64::NAN] {
        assert!(
            matches!(compare(&[1.0], &[2.0], alpha), Err(CompareError::Alpha(_))),
            "{alpha}"
        );
    }
    assert_eq!(
        compare(&[1.0, f64::INFINITY], &[2.0], 0.05),
        Err(CompareError::Baseline(SampleError::NotFinite {
            index: 1,
            value: f64::INFINITY
        }))
    );
    let err = compare(&[1.0], &[f64::NEG_INFINITY], 0.05).unwrap_err();
    assert_eq!(
        err.to_string(),
        "candidate: sample 0 is -inf, not a finite number"
    );
}

#[test]
fn comparison_serializes_for_perf_json() {
    let c = compare(&[1.0, 2.0, 3.0, 4.0], &[5.0, 6.0, 7.0, 8.0], 0.05).unwrap();
    let json = serde_json::to_string(&c).unwrap();
    assert!(json.contains("\"verdict\":\"slower\""), "{json}");
    let back: Comparison = serde_json::from_str(&json).unwrap();
    assert_eq!(
        (back.verdict, back.n_baseline, back.n_candidate),
        (c.verdict, 4, 4)
    );
    assert_close(back.p_value.unwrap(), 2.0 / 70.0, 1e-16);
    let t = mann_whitney(&[1.0, 2.0], &[3.0]).unwrap();
    let json = serde_json::to_string(&t).unwrap();
    assert!(json.contains("\"method\":\"exact\""), "{json}");
    let back: MannWhitney = serde_json::from_str(&json).unwrap();
    assert_eq!((back.method, back.u), (Method::Exact, 0.0));
    assert_close(back.p_value, t.p_value, 1e-16);
}

// --- Properties --------------------------------------------------------------------

/// Finite values of every kind: normal of any magnitude, subnormal, both zeros.
fn finite() -> impl Strategy<Value = f64> {
    use prop::num::f64::{NEGATIVE, NORMAL, POSITIVE, SUBNORMAL, ZERO};
    prop_oneof![
        POSITIVE | NEGATIVE | NORMAL | SUBNORMAL | ZERO,
        (-100i32..100).prop_map(f64::from),
    ]
}

/// Integer-valued samples: arithmetic on them below is exact, so ranks and ties survive
/// shifts and transforms exactly. A narrow range makes ties common; a wide one rare.
fn integer_sample() -> impl Strategy<Value = Vec<f64>> {
    prop_oneof![
        prop::collection::vec((-20i32..20).prop_map(f64::from), 1..=20),
        prop::collection::vec((-1_000_000i32..1_000_000).prop_map(f64::from), 1..=20),
    ]
}

/// A name, a strictly increasing function, and whether it applies to this input.
type Transform = (&'static str, fn(f64) -> f64, bool);

fn shifted(x: &[f64], c: f64) -> Vec<f64> {
    x.iter().map(|v| v + c).collect()
}

proptest! {
    // A failure prints its minimal input; no regression file is written.
    #![proptest_config(ProptestConfig {
        cases: 256,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn mann_whitney_is_a_rank_test(
        a in integer_sample(),
        b in integer_sample(),
        c in -1000i32..1000,
    ) {
        let (n1, n2) = (a.len() as f64, b.len() as f64);
        let t = mann_whitney(&a, &b).unwrap();
        prop_assert!((0.0..=1.0).contains(&t.p_value), "{t:?}");
        prop_assert!((0.0..=n1 * n2).contains(&t.u), "{t:?}");
        prop_assert!((0.0..=1.0).contains(&t.prob_a_greater), "{t:?}");
        prop_assert!((t.u - t.prob_a_greater * n1 * n2).abs() <= 1e-9);
        // U counts pairs: brute force.
        let pairs: f64 = a.iter()
            .flat_map(|x| b.iter().map(move |y| match x.total_cmp(y) {
                std::cmp::Ordering::Greater => 1.0,
                std::cmp::Ordering::Equal => 0.5,
                std::cmp::Ordering::Less => 0.0,
            }))
            .sum();
        prop_assert_eq!(t.u, pairs);

        // Swapping the samples: U_a + U_b = n1·n2, the same p, the opposite shift.
        let s = mann_whitney(&b, &a).unwrap();
        prop_assert_eq!(t.u + s.u, n1 * n2);
        prop_assert_eq!(s.p_value, t.p_value);
        prop_assert_eq!(s.method, t.method);
        prop_assert_eq!(s.hodges_lehmann_shift, -t.hodges_lehmann_shift);

        // Strictly increasing transforms of both samples change nothing but the shift.
        let c = f64::from(c);
        let small = a.iter().chain(&b).all(|v| v.abs() <= 20.0);
        let transforms: [Transform; 4] = [
            ("shift", |v| v + 1000.0, true),
            ("affine", |v| 3.0 * v - 7.0, true),
            ("cubic", |v| v * v * v + v, true),
            ("exp", |v| (v / 4.0).exp(), small),
        ];
        for (name, f, applies) in transforms {
            if !applies {
                continue;
            }
            let fa: Vec<f64> = a.iter().map(|&v| f(v)).collect();
            let fb: Vec<f64> = b.iter().map(|&v| f(v)).collect();
            let ft = mann_whitney(&fa, &fb).unwrap();
            prop_assert_eq!(
                (ft.u, ft.p_value, ft.method),
                (t.u, t.p_value, t.method),
                "{}",
                name
            );
        }
        // Adding a constant to both: the shift too is unchanged; to a only: it moves by c.
        let both = mann_whitney(&shifted(&a, c), &shifted(&b, c)).unwrap();
        prop_assert_eq!(both, t);
        let one = mann_whitney(&shifted(&a, c), &b).unwrap();
        prop_assert_eq!(one.hodges_lehmann_shift, t.hodges_lehmann_shift + c);
    }

    #[test]
    fn nothing_panics_on_finite_input(
        a in prop::collection::vec(finite(), 0..=12),
        b in prop::collection::vec(finite(), 0..=12),
        alpha in 1e-6f64..0.999,
        bytes in any::<u64>(),
        seconds in any::<f64>(),
    ) {
        match Summary::of(&a) {
            Ok(s) => {
                prop_assert_eq!(s.n, a.len());
                prop_assert!(s.min <= s.median && s.median <= s.p90 && s.p90 <= s.max, "{s:?}");
                prop_assert!(s.min <= s.mean && s.mean <= s.max, "{s:?}");
                prop_assert!(s.stddev >= 0.0, "{s:?}");
            }
            Err(e) => prop_assert!(a.is_empty() && e == SampleError::Empty),
        }
        match mann_whitney(&a, &b) {
            Some(t) => {
                prop_assert!((0.0..=1.0).contains(&t.p_value), "{t:?}");
                prop_assert!((0.0..=1.0).contains(&t.prob_a_greater), "{t:?}");
            }
            None => prop_assert!(a.is_empty() || b.is_empty()),
        }
        let c = compare(&a, &b, alpha).unwrap();
        if c.verdict != ComparisonVerdict::TooFewSamples {
            prop_assert!(smallest_p_value(a.len(), b.len()) <= alpha);
        }
        if let Some(r) = throughput_mib_s(bytes, seconds) {
            prop_assert!(r.is_finite() && r >= 0.0);
        }
    }

    #[test]
    fn summary_is_ordered_and_order_free(
        mut x in prop::collection::vec(-1e9f64..1e9, 1..=40),
    ) {
        let s = Summary::of(&x).unwrap();
        prop_assert!(s.min <= s.median && s.median <= s.p90 && s.p90 <= s.max);
        prop_assert!(s.min <= s.mean && s.mean <= s.max);
        prop_assert!(s.stddev.is_finite() && s.stddev >= 0.0);
        // Against the textbook two-pass formulas.
        let n = x.len() as f64;
        let mean = x.iter().sum::<f64>() / n;
        prop_assert!((s.mean - mean).abs() <= 1e-6);
        if x.len() > 1 {
            let var = x.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / (n - 1.0);
            prop_assert!((s.stddev - var.sqrt()).abs() <= 1e-6 * (1.0 + var.sqrt()));
        }
        x.reverse();
        prop_assert_eq!(Summary::of(&x).unwrap(), s);
    }

    #[test]
    fn min_samples_per_group_is_the_first_size_that_can_reject(alpha in 1e-12f64..0.999) {
        let n = min_samples_per_group(alpha).unwrap();
        prop_assert!(smallest_p_value(n, n) <= alpha);
        prop_assert!(n == 1 || smallest_p_value(n - 1, n - 1) > alpha);
    }
}

/// The estimator as it was: every difference materialised and sorted.
fn hodges_lehmann_of_all_differences(a: &[f64], b: &[f64]) -> f64 {
    let mut diffs: Vec<f64> = a
        .iter()
        .flat_map(|x| b.iter().map(move |y| x - y))
        .collect();
    diffs.sort_by(f64::total_cmp);
    let m = diffs.len();
    if m.is_multiple_of(2) {
        diffs[m / 2 - 1] / 2.0 + diffs[m / 2] / 2.0
    } else {
        diffs[m / 2]
    }
}

proptest! {
    #[test]
    fn the_shift_is_the_median_of_all_differences_without_listing_them(
        // Few distinct values: ties between samples, within them and among the differences.
        a in prop::collection::vec((0u8..12).prop_map(|v| f64::from(v) * 0.25), 1..=60),
        b in prop::collection::vec((0u8..12).prop_map(|v| f64::from(v) * 0.25), 1..=60),
        spread_a in prop::collection::vec(0.0f64..1e4, 1..=70),
        spread_b in prop::collection::vec(-1e3f64..1e5, 1..=70),
    ) {
        prop_assert_eq!(hodges_lehmann(&a, &b), hodges_lehmann_of_all_differences(&a, &b));
        prop_assert_eq!(
            hodges_lehmann(&spread_a, &spread_b),
            hodges_lehmann_of_all_differences(&spread_a, &spread_b)
        );
        // Every rank, not only the middle ones.
        let d = PairwiseDifferences::new(&a, &b);
        let mut all: Vec<f64> = a.iter().flat_map(|x| b.iter().map(move |y| x - y)).collect();
        all.sort_by(f64::total_cmp);
        for (k, want) in all.iter().enumerate() {
            prop_assert_eq!(d.kth(k), *want, "rank {}", k);
        }
    }
}

#[test]
fn a_hundred_thousand_runs_a_side_are_compared_without_their_ten_billion_differences() {
    // The old estimator allocated n1·n2 = 10^10 differences (80 GB) and aborted.
    let a: Vec<f64> = (0..100_000).map(f64::from).collect();
    let b: Vec<f64> = a.iter().map(|x| x - 0.25).rev().collect();
    let started = std::time::Instant::now();
    let t = mann_whitney(&a, &b).unwrap();
    // a_i - b_j = i - j + 0.25: its median is 0.25.
    assert_eq!(t.hodges_lehmann_shift, 0.25);
    assert_eq!(t.method, Method::NormalApprox);
    assert!(t.p_value > 0.9, "{t:?}");
    assert!(
        started.elapsed() < std::time::Duration::from_secs(60),
        "{:?}",
        started.elapsed()
    );
    let noisy: Vec<f64> = {
        let mut r = SplitMix64(7);
        (0..100_000).map(|_| 100.0 + 10.0 * r.unit()).collect()
    };
    let slower: Vec<f64> = noisy.iter().map(|x| x + 3.0).collect();
    let t = mann_whitney(&slower, &noisy).unwrap();
    assert_eq!(t.hodges_lehmann_shift, 3.0);
}
