//! `sno-harness matrix`: every permutation of a matrix file (filtered), in parallel under
//! admission control, then the merged reports.

use std::path::PathBuf;

use sno_harness::fleet::hosts_file;
use sno_harness::fleet::job::Job;
use sno_harness::fleet::matrix_runner::{run_matrix, MatrixOptions, Schedule};
use sno_harness::fleet::places::PlaceSpec;
use sno_harness::registry::run_dir;
use sno_harness::scenario::matrix::{self, Matrix, Permutation, Shard, Strategy};
use sno_harness::scenario::Scenario;
use sno_harness::vm::Backend;

use super::error::{bad, CliError, Outcome};
use super::flags::{
    check_dirs, claim_dirs, interrupt_channel, matrix_replay, out_dir, runtime, RunFlags,
    ShardFlags, Tally,
};
use super::preflight::preflight;

/// Run every permutation of a matrix file, in parallel as far as the host has memory,
/// CPUs and disk for; write one directory per permutation and the merged reports
/// (summary.json, summary.md, junit.xml, report.html). Exit 0 when every permutation
/// ended as expected, 1 when one did not, 2 bad input, 4 harness error.
#[derive(clap::Args)]
pub struct MatrixArgs {
    /// The matrix file (TOML: a base scenario and its axes; docs/scenario-format.md).
    matrix: PathBuf,
    /// Permutations at once [default: the host's CPUs]; admission control still applies.
    #[arg(long)]
    jobs: Option<u32>,
    /// Override the matrix file's strategy: every combination, or every pair of values.
    #[arg(long, value_parser = ["full", "pairwise"])]
    strategy: Option<String>,
    /// Only the permutations whose id matches this glob (`*`, `?`; `a,b` for either).
    #[arg(long)]
    filter: Option<String>,
    #[command(flatten)]
    shard: ShardFlags,
    /// The libvirt hosts to spread over, each with optional limits (TOML: `[[host]] uri =
    /// "qemu+ssh://...", jobs, memory, cpus`; docs/scenario-format.md), instead of
    /// `--connect`; implies `--backend libvirt`.
    #[arg(long, value_name = "FILE", conflicts_with = "connect")]
    hosts: Option<PathBuf>,
    /// With --keep: how many failed permutations leave their VM running for you to look into,
    /// the first to fail (the others keep their disks only); 0 keeps disks only. Never all: each
    /// VM left running holds its memory until `sno-harness gc`.
    #[arg(long, value_name = "N", default_value_t = 1, requires = "keep")]
    keep_running: usize,
    #[command(flatten)]
    flags: RunFlags,
}

/// A matrix file with `--set` applied to its base and `--strategy` to its expansion.
pub fn load_with_strategy(
    path: &std::path::Path,
    strategy: Option<&str>,
    sets: &[sno_harness::scenario::overrides::Override],
) -> Result<Matrix, CliError> {
    let m = matrix::load_with(path, sets).map_err(bad)?;
    let Some(st) = strategy else {
        return Ok(m);
    };
    let st: Strategy = st
        .parse()
        .map_err(|e| bad(format!("--strategy {st:?}: {e}")))?;
    m.with_strategy(st).map_err(bad)
}

/// The permutations of shard `shard` (all without one) of those `--filter` selects.
pub fn sliced<'m>(
    m: &'m Matrix,
    path: &std::path::Path,
    filter: Option<&'m str>,
    shard: Option<Shard>,
) -> Result<Vec<&'m Permutation>, CliError> {
    let perms = filtered(m, path, filter)?;
    Ok(match shard {
        Some(s) => s.slice(perms, |p| &p.id),
        None => perms,
    })
}

/// The permutations `--filter` selects (all without one); none is bad input.
pub fn filtered<'m>(
    m: &'m Matrix,
    path: &std::path::Path,
    filter: Option<&'m str>,
) -> Result<Vec<&'m Permutation>, CliError> {
    let perms: Vec<&Permutation> = match filter {
        Some(glob) => m.filter(glob).collect(),
        None => m.permutations.iter().collect(),
    };
    if perms.is_empty() {
        return Err(bad(format!(
            "no permutation of {} matches --filter {:?}; `sno-harness plan {}` lists them",
            path.display(),
            filter.unwrap_or(""),
            path.display()
        )));
    }
    Ok(perms)
}

pub fn matrix(a: MatrixArgs) -> Outcome {
    let m = load_with_strategy(&a.matrix, a.strategy.as_deref(), &a.flags.set)?;
    a.flags.check_hosts()?;
    let places = places_of(&a)?;
    if a.jobs == Some(0) {
        return Err(bad("--jobs must be at least 1"));
    }
    if a.jobs != Some(1) && places.iter().any(|p| p.backend.can().one_machine) {
        return Err(bad(
            "--backend redfish boots the one machine its BMC names: a matrix can run its permutations there only one at a time; give --jobs 1",
        ));
    }
    let shard = a.shard.get();
    let perms = sliced(&m, &a.matrix, a.filter.as_deref(), shard)?;
    let plan = matrix::PlanIdentity::of(&m, a.filter.as_deref(), shard);
    let out = out_dir(a.flags.out.clone());
    if perms.is_empty() {
        return empty_shard(&m, &plan, &out, &a);
    }
    let needs: Vec<&Scenario> = perms.iter().map(|p| &p.scenario).collect();
    // The matrix's reports and each permutation's run directory.
    let claimed: Vec<_> = std::iter::once((out.clone(), run_dir::MATRIX))
        .chain(perms.iter().map(|p| (out.join(&p.id), run_dir::RUN)))
        .collect();
    preflight_places(&needs, &places, || check_dirs(&claimed, a.flags.replace))?;
    // Held until the reports are written.
    let _claims = claim_dirs(&claimed, a.flags.replace)?;
    super::flags::open_log(&out);
    let jobs: Vec<Job> = perms
        .iter()
        .map(|p| Job {
            id: p.id.clone(),
            params: p.values.clone(),
            scenario: p.scenario.clone(),
            // The runner adds the flags of the host the permutation goes to.
            replay: matrix_replay(&a.matrix, m.strategy.name(), &p.id) + &a.flags.set_flags(),
        })
        .collect();
    let jobs_n = a
        .jobs
        .unwrap_or_else(sno_harness::fleet::admission::default_jobs);
    let slice = shard
        .map(|s| {
            format!(
                " (shard {s} of {} permutations, split by {})",
                plan.ids.len(),
                s.by.name()
            )
        })
        .unwrap_or_default();
    let at_once = at_once(&places, jobs_n);
    errln!(
        "sno-harness: matrix {}: {} permutations{slice} ({} strategy; {} in the full product), {at_once}, into {}",
        m.name,
        jobs.len(),
        m.strategy.name(),
        m.full_count,
        out.display()
    );
    let (results, schedule) = runtime()?.block_on(async {
        let opts = MatrixOptions {
            name: m.name.clone(),
            out: out.clone(),
            jobs: jobs_n,
            settings: a.flags.settings(interrupt_channel(), a.keep_running),
            places,
        };
        run_matrix(jobs, opts).await
    });
    let axes = axes_of(&m);
    let written = sno_harness::report::run_dir::write_reports(
        &out,
        &results,
        &axes,
        Some(&plan),
        a.flags.junit.flavour,
    );
    if let Err(e) = &written {
        errln!("sno-harness: writing the reports: {e}");
    }
    let mut tally = Tally::default();
    // The permutations that did not end as their scenario expects: GitHub's annotations.
    let mut unexpected = Vec::new();
    for (p, r) in perms.iter().zip(&results) {
        if let Err(why) = tally.count(&p.scenario, r) {
            errln!("  {}: {why}", p.id);
            unexpected.push(r.clone());
        }
    }
    summarise(&m, &results, &schedule, &tally, &out);
    if written.is_ok() {
        sno_harness::report::github::publish_from_env(
            &out.join(sno_harness::report::run_dir::SUMMARY_MD_FILE),
            &unexpected,
        );
    }
    if written.is_err() {
        return Ok(sno_harness::exit::HARNESS_ERROR);
    }
    Ok(tally.code(false))
}

/// Where the permutations go: this host, each `--connect`, or each host of `--hosts`.
/// The banner's "N at once": a single place's own `jobs` limit wins over `--jobs`, as
/// admission applies it.
fn at_once(places: &[PlaceSpec], jobs_n: u32) -> String {
    match places {
        [one] => {
            let n = one.limits.jobs.unwrap_or(jobs_n).max(1);
            // This host's memory figure, as the admission counts it (a remote host's is
            // libvirt's).
            match sno_harness::fleet::admission::memory_now() {
                Ok((mem, from)) if !one.backend.is_remote() => format!(
                    "at most {n} at once as memory ({:.1} GiB, {from}) and CPUs allow",
                    mem as f64 / (1u64 << 30) as f64
                ),
                _ => format!("{n} at once"),
            }
        }
        many => format!(
            "over {} libvirt hosts, at most {jobs_n} at once on each unless its limits say",
            many.len()
        ),
    }
}

fn places_of(a: &MatrixArgs) -> Result<Vec<PlaceSpec>, CliError> {
    let Some(file) = &a.hosts else {
        return Ok(a
            .flags
            .backends()
            .into_iter()
            .map(PlaceSpec::unlimited)
            .collect());
    };
    if a.flags.backend.as_deref() == Some("qemu") {
        return Err(bad(
            "--hosts names libvirt hosts: it cannot go with --backend qemu",
        ));
    }
    let hosts = hosts_file::load(file, sno_harness::vm::libvirt::remote::daemon).map_err(bad)?;
    hosts
        .into_iter()
        .map(|h| {
            Ok(PlaceSpec {
                backend: Backend::libvirt(h.uri).map_err(bad)?,
                limits: h.limits,
            })
        })
        .collect()
}

/// The preflight on every host, the command's own checks once; a host that is not ready
/// is named.
fn preflight_places(
    needs: &[&Scenario],
    places: &[PlaceSpec],
    input: impl FnOnce() -> Result<(), CliError>,
) -> Result<(), CliError> {
    let mut input = Some(input);
    for p in places {
        let once = || input.take().map_or(Ok(()), |f| f());
        preflight(needs, &p.backend, once).map_err(|e| match (e, places.len()) {
            (CliError::HostNotReady(why), n) if n > 1 => CliError::HostNotReady(format!(
                "{}: {why}",
                p.backend.libvirt_host().unwrap_or_default()
            )),
            (e, _) => e,
        })?;
    }
    Ok(())
}

/// A shard that holds no permutation of the plan (N larger than a filtered plan, say): its
/// CI job passes, and its summary.json still names the plan and the slice, so `report
/// --merge` counts it.
fn empty_shard(
    m: &Matrix,
    plan: &matrix::PlanIdentity,
    out: &std::path::Path,
    a: &MatrixArgs,
) -> Outcome {
    let claimed = [(out.to_path_buf(), run_dir::MATRIX)];
    check_dirs(&claimed, a.flags.replace)?;
    let _claims = claim_dirs(&claimed, a.flags.replace)?;
    let axes = axes_of(m);
    sno_harness::report::run_dir::write_reports(out, &[], &axes, Some(plan), a.flags.junit.flavour)
        .map_err(|e| super::error::harness(format!("writing the reports: {e}")))?;
    errln!(
        "sno-harness: matrix {}: shard {} of {} permutations holds none; nothing to run; {}",
        m.name,
        a.shard.get().map(|s| s.to_string()).unwrap_or_default(),
        plan.ids.len(),
        out.join("summary.json").display()
    );
    Ok(sno_harness::exit::OK)
}

fn axes_of(m: &Matrix) -> Vec<(String, Vec<String>)> {
    m.axes
        .iter()
        .map(|ax| (ax.key.clone(), ax.labels.clone()))
        .collect()
}

/// The matrix's closing line: counts, wall time against the runs' sum, parallelism, dispatch.
fn summarise(
    m: &Matrix,
    results: &[sno_harness::result::RunResult],
    schedule: &Schedule,
    tally: &Tally,
    out: &std::path::Path,
) {
    let delays = &schedule.dispatch_delays;
    let mean_delay = if delays.is_empty() {
        0.0
    } else {
        delays.iter().map(|d| d.as_secs_f64()).sum::<f64>() / delays.len() as f64
    };
    let summed: f64 = results.iter().map(|r| r.duration_ms as f64 / 1000.0).sum();
    let wall = schedule.wall.as_secs_f64();
    errln!(
        "sno-harness: matrix {}: {} as expected, {} not, {} errors; wall {:.0} s against {summed:.0} s of runs (x{:.2}); at most {} at once; dispatch {mean_delay:.3} s per permutation; {}",
        m.name,
        results.len() - tally.unexpected - tally.errors,
        tally.unexpected,
        tally.errors,
        wall,
        if wall > 0.0 { summed / wall } else { 0.0 },
        schedule.peak_parallel,
        out.join("summary.md").display()
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use sno_harness::fleet::hosts_file::HostLimits;

    fn host(jobs: Option<u32>) -> PlaceSpec {
        PlaceSpec {
            backend: Backend::Libvirt {
                uri: "qemu+ssh://lab/system".into(),
            },
            limits: HostLimits {
                jobs,
                ..HostLimits::default()
            },
        }
    }

    #[test]
    fn the_banner_counts_a_single_hosts_own_jobs_limit() {
        assert_eq!(at_once(&[host(Some(1))], 2), "1 at once");
        assert_eq!(at_once(&[host(None)], 2), "2 at once");
        assert_eq!(
            at_once(&[host(Some(1)), host(None)], 3),
            "over 2 libvirt hosts, at most 3 at once on each unless its limits say"
        );
    }
}
