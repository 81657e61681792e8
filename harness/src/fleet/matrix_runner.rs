//! Running many permutations at once: a queue, admission control on memory, CPUs and disk,
//! and one run directory per permutation. Runs share nothing mutable: each has its own
//! directory, VM name, disks, sockets and ports (see `free_port`).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use tokio::task::JoinSet;

use super::admission::Need;
use super::board::Board;
use super::job::{Job, RunSettings};
use super::places::{choose, Choice, Place, PlaceSpec};
use crate::result::{RunResult, Verdict};
use crate::run::progress::Display;
use crate::run::run_scenario;
use crate::scenario::Scenario;

pub struct MatrixOptions {
    /// The matrix's name, on its status line.
    pub name: String,
    /// The matrix's run directory; each permutation writes `<out>/<id>/`.
    pub out: PathBuf,
    pub jobs: u32,
    /// Its progress: one live board for all runs on a terminal, or plain lines with counts.
    pub settings: RunSettings,
    /// Where the runs go: this host, or the libvirt hosts of `--connect`/`--hosts`, in order.
    pub places: Vec<PlaceSpec>,
}

/// What the matrix did, besides the results.
#[derive(Debug, Clone, Default)]
pub struct Schedule {
    pub wall: Duration,
    /// Per permutation: from the moment it could have started (a slot was free and it was
    /// next) to the moment it did. Admission waits are excluded; they are the host's limits.
    pub dispatch_delays: Vec<Duration>,
    /// Most runs at once.
    pub peak_parallel: u32,
}

/// Disk a run needs: its copy of the live ISO, its disks' written part, the logs. The disks are
/// sparse qcow2, so their nominal size is not what they take.
pub fn need_of(s: &Scenario) -> Need {
    const PER_RUN_DISK: u64 = 2 << 30;
    Need {
        memory_bytes: s.vm.memory_mib * 1024 * 1024,
        vcpus: s.vm.vcpus,
        disk_bytes: PER_RUN_DISK,
    }
}

/// Runs every job, at most `opts.jobs` at once and only as the host has room, and returns the
/// results in the jobs' order. A job the host can never hold gets an `error` result saying why.
pub async fn run_matrix(jobs: Vec<Job>, opts: MatrixOptions) -> (Vec<RunResult>, Schedule) {
    let started = Instant::now();
    let total = jobs.len();
    // Kept by index: a result is judged against its own scenario's `[expect]`.
    let scenarios: Vec<Scenario> = jobs.iter().map(|j| j.scenario.clone()).collect();
    let mut results: Vec<Option<RunResult>> = vec![None; total];
    let mut queue: std::collections::VecDeque<(usize, Job)> =
        jobs.into_iter().enumerate().collect();
    let jobs_limit = opts.jobs.max(1);
    let interrupt = opts.settings.interrupt.clone();
    let mut places: Vec<Place> = opts
        .places
        .iter()
        .map(|spec| Place::new(spec.clone(), jobs_limit, &interrupt))
        .collect();
    let several = places.len() > 1;
    let mut running: JoinSet<(usize, usize, Need, RunResult)> = JoinSet::new();
    let mut schedule = Schedule::default();
    let mut free_since = Instant::now();
    let mut interrupt = interrupt;
    let board = Arc::new(Board::new(&opts.name, total, opts.settings.progress));

    while !queue.is_empty() || !running.is_empty() {
        // Every pass, so at least every 5 s (the waits below).
        board.tick();
        // Start what fits, in order.
        while let Some((index, job)) = queue.front().cloned() {
            if *interrupt.borrow() {
                queue.pop_front();
                board.skipped(&job.id, None);
                results[index] = Some(not_run(&job, &opts, "interrupted before it started"));
                continue;
            }
            let need = need_of(&job.scenario);
            match choose(&mut places, need, &opts.out) {
                Choice::Start(p) => {
                    queue.pop_front();
                    schedule.dispatch_delays.push(free_since.elapsed());
                    let place = &mut places[p];
                    place.reserve(need);
                    let now_running: u32 = running.len() as u32 + 1;
                    schedule.peak_parallel = schedule.peak_parallel.max(now_running);
                    board.started_on(&job.id, several.then_some(place.label.as_str()));
                    let run = start_on(place, job, &opts, &board);
                    running.spawn(async move { (index, p, need, run.await) });
                    free_since = Instant::now();
                }
                Choice::Wait(why) => {
                    tracing::debug!("{}: waiting: {why}", job.id);
                    break;
                }
                Choice::Never(why) => {
                    queue.pop_front();
                    let on = if several {
                        "any of the hosts"
                    } else {
                        "this host"
                    };
                    board.skipped(&job.id, Some(&format!("cannot run on {on}: {why}")));
                    results[index] = Some(not_run(&job, &opts, &format!("not admitted: {why}")));
                }
                Choice::NoPlace(why) => {
                    queue.pop_front();
                    board.skipped(&job.id, Some(&format!("not run: {why}")));
                    results[index] = Some(not_run(&job, &opts, &format!("not run: {why}")));
                }
            }
        }
        if running.is_empty() {
            if queue.is_empty() {
                break;
            }
            // Nothing runs and the head still waits (memory taken by something else): look
            // again shortly.
            tokio::select! {
                _ = tokio::time::sleep(Duration::from_secs(5)) => {}
                _ = interrupt.changed() => {}
            }
            continue;
        }
        // Wait for a run to end (or the host to change: re-check every 5 s).
        tokio::select! {
            done = running.join_next() => {
                if let Some(Ok((index, p, need, r))) = done {
                    let place = &mut places[p];
                    place.release(need);
                    let r = judge_host(place, r, &opts).await;
                    let as_expected = crate::run::check_expectation(&scenarios[index], &r).is_ok();
                    board.ended(&r, as_expected);
                    results[index] = Some(r);
                    free_since = Instant::now();
                } else if let Some(Err(e)) = done {
                    // A run task panicked: its slot is lost to bookkeeping, but the matrix
                    // goes on; the missing result is reported below.
                    tracing::error!("a run task failed: {e}");
                    board.lost();
                }
            }
            _ = tokio::time::sleep(Duration::from_secs(5)) => {}
        }
    }
    board.close();
    schedule.wall = started.elapsed();
    let results = results
        .into_iter()
        .enumerate()
        .map(|(i, r)| {
            r.unwrap_or_else(|| {
                let mut e = RunResult::unreached_error(&format!("#{i}"), "the run's task failed");
                e.started_at = crate::result::rfc3339(SystemTime::now());
                e
            })
        })
        .collect();
    (results, schedule)
}

/// The run of `job` on `place`: its backend, its stop signal (the matrix's interrupt, or the
/// host's loss), and a replay command that goes to the same host.
fn start_on(
    place: &Place,
    mut job: Job,
    opts: &MatrixOptions,
    board: &Arc<Board>,
) -> impl std::future::Future<Output = RunResult> {
    job.replay.push_str(&place.spec.backend.replay_flags());
    let mut run_opts = opts.settings.run_options(
        &job,
        opts.out.join(&job.id),
        Display::InMatrix(board.clone()),
        Default::default(),
    );
    run_opts.backend = place.spec.backend.clone();
    // OUT/junit.xml has its cases: its own file must not match a collector's junit*.xml.
    run_opts.junit.in_matrix = true;
    run_opts.interrupt = place.stop_signal();
    async move {
        match std::fs::create_dir_all(&run_opts.dir) {
            Ok(()) => run_scenario(&job.scenario, run_opts).await,
            Err(e) => job.not_started(&format!("creating {}: {e}", run_opts.dir.display())),
        }
    }
}

/// A run that did not pass on a remote host may have lost its host: asked once more, a host
/// that does not answer is gone, and the run's verdict is an error naming it (its directory's
/// record says so too).
async fn judge_host(place: &mut Place, mut r: RunResult, opts: &MatrixOptions) -> RunResult {
    if r.verdict == Verdict::Pass || !place.is_remote() {
        return r;
    }
    place.confirm_alive().await;
    let Some(why) = place.lost() else {
        return r;
    };
    let own = match r.reason.is_empty() {
        true => String::new(),
        false => format!("; the run's own reason: {}", r.reason),
    };
    r.verdict = Verdict::Error;
    r.reason = format!(
        "the libvirt host {} went away during the run ({why}){own}",
        place.label
    );
    let dir = opts.out.join(&r.id);
    let junit = crate::report::junit::JunitOut {
        flavour: opts.settings.junit,
        in_matrix: true,
    };
    for failure in crate::run::artifacts::rewrite(&dir, junit, &r) {
        errln!("sno-harness: {failure}");
    }
    r
}

/// The result of a permutation that never started.
fn not_run(job: &Job, opts: &MatrixOptions, why: &str) -> RunResult {
    let r = job.not_started(why);
    let dir = opts.out.join(&job.id);
    if std::fs::create_dir_all(&dir).is_ok() {
        let _ = r.write(&dir);
    }
    r
}
