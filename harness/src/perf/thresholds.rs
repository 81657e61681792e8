//! The fixed thresholds of a comparison of single runs: a duration regressed when it got slower
//! by more than a percentage AND a number of seconds, the disk write when its MiB/s dropped by
//! more than the percentage. `report --compare` of run directories judges by them, and a perf
//! comparison with too few runs for its rank test falls back to them.

/// When a difference counts as a regression.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Thresholds {
    /// A phase regressed when it is slower by more than this percentage of the baseline...
    pub pct: f64,
    /// ...and by more than this many seconds. Both: a 2 s phase taking 3 s is noise, a
    /// 10-minute phase taking 12 s longer is too.
    pub secs: f64,
}

impl Default for Thresholds {
    fn default() -> Self {
        Thresholds {
            pct: 20.0,
            secs: 10.0,
        }
    }
}

/// Whether a phase that took `baseline_ms` and now `current_ms` regressed: slower by more than
/// both thresholds (exactly at a threshold is not a regression).
pub fn is_slowdown(baseline_ms: u64, current_ms: u64, t: Thresholds) -> bool {
    if current_ms <= baseline_ms {
        return false;
    }
    let delta = (current_ms - baseline_ms) as f64;
    // Compared as products rather than a computed percentage: integers and whole-number
    // thresholds stay exact in f64, so the boundaries are exact.
    delta * 100.0 > t.pct * baseline_ms as f64 && delta > t.secs * 1000.0
}

/// Whether disk-write throughput dropped by more than the percentage threshold.
pub fn is_throughput_drop(baseline_mib_s: f64, current_mib_s: f64, t: Thresholds) -> bool {
    baseline_mib_s > 0.0 && (baseline_mib_s - current_mib_s) * 100.0 > t.pct * baseline_mib_s
}
