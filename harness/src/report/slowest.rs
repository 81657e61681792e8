//! The slowest phases across the permutations of a matrix: where the time goes.

use serde::{Deserialize, Serialize};

use crate::result::{PhaseStatus, RunResult};

/// How many slowest phases the summaries list.
pub const SLOWEST_SHOWN: usize = 10;

/// One phase of one permutation, with its duration.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SlowPhase {
    /// The permutation id.
    pub id: String,
    pub phase: String,
    pub status: PhaseStatus,
    pub duration_ms: u64,
}

/// The `n` longest phases over all runs, longest first. Phases without a duration (not
/// reached) are left out; timed-out phases stay in, they are often the slowest of all. Ties
/// are ordered by permutation id, then by the phase's position, so the list is stable.
pub fn slowest_phases(runs: &[&RunResult], n: usize) -> Vec<SlowPhase> {
    let mut all: Vec<(usize, SlowPhase)> = runs
        .iter()
        .flat_map(|run| {
            run.phases.iter().enumerate().filter_map(|(pos, p)| {
                Some((
                    pos,
                    SlowPhase {
                        id: run.id.clone(),
                        phase: p.name.clone(),
                        status: p.status,
                        duration_ms: p.duration_ms?,
                    },
                ))
            })
        })
        .collect();
    all.sort_by(|(pa, a), (pb, b)| {
        b.duration_ms
            .cmp(&a.duration_ms)
            .then_with(|| a.id.cmp(&b.id))
            .then_with(|| pa.cmp(pb))
    });
    all.into_iter().take(n).map(|(_, s)| s).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::result::tests::{sample_fail, sample_pass};

    #[test]
    fn longest_first_across_runs_without_unreached_phases() {
        let mut a = sample_pass("a");
        a.phases[1].duration_ms = Some(31_000); // live-boot
        a.phases[5].duration_ms = Some(26_000); // disk-boot
        let mut b = sample_fail("b", "bootkube timed out");
        b.phases[2].duration_ms = Some(600_000); // the timed-out bootkube
        let slow = slowest_phases(&[&a, &b], 4);
        let got: Vec<(&str, &str, u64)> = slow
            .iter()
            .map(|s| (s.id.as_str(), s.phase.as_str(), s.duration_ms))
            .collect();
        assert_eq!(
            got,
            vec![
                ("b", "bootkube", 600_000),
                ("a", "live-boot", 31_000),
                ("a", "disk-boot", 26_000),
                // 1 s ties: run a before b, then contract order.
                ("a", "assets", 1000),
            ]
        );
        assert_eq!(slow[0].status, PhaseStatus::Timeout);
        // b reached 3 phases, a all 11: unreached phases never show up.
        assert_eq!(slowest_phases(&[&a, &b], 100).len(), 11 + 3);
        assert!(slowest_phases(&[], 10).is_empty());
    }
}
