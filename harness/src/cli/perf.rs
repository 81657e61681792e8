//! `sno-harness perf`: each permutation (or the one scenario) `--warmup` times unmeasured, then
//! `--repeat` times measured, one run at a time; then perf.json, perf.md, report.html and the
//! table on stdout.

use std::path::{Path, PathBuf};

use sno_harness::fleet::job::Job;
use sno_harness::fleet::perf_runner::{run_perf, PerfOptions, PerfRuns};
use sno_harness::perf::model::{
    self as perf_model, PerfInput, PerfReport, PermutationRuns, RunKind, PERF_JSON, PERF_MD,
};
use sno_harness::registry::run_dir;
use sno_harness::report::html::{render_perf_html, REPORT_HTML_FILE};
use sno_harness::result::rfc3339;
use sno_harness::scenario::{self, matrix::is_matrix_file, Scenario};

use super::error::{bad, CliError, Outcome};
use super::flags::{
    check_dirs, claim_dirs, interrupt_channel, matrix_replay, out_dir, runtime, write_atomically,
    RunFlags, Tally,
};
use super::matrix::{load_with_strategy, sliced};
use super::preflight::preflight;

/// Measure: run each permutation of a scenario or matrix --repeat times (after --warmup
/// runs that are not counted) and report per phase, the whole run and the disk write:
/// median, p90, min, max, standard deviation, MiB/s, with the host context next to the
/// numbers (OUT/perf.json, OUT/perf.md, the table on stdout). Runs go strictly one at a
/// time, never in parallel: measurements must not share the host with each other (nor with
/// anything else: other VMs are named in a warning). Each run writes OUT/<id>/warmup-<k>/
/// or OUT/<id>/run-<i>/ (a scenario's id is its name). Exit 0 when every measured run
/// passed (or ended as the scenario's [expect] says), 1 when one did not, 2 bad input,
/// 3 host not ready, 4 harness error (an interrupt too).
#[derive(clap::Args)]
pub struct PerfArgs {
    /// A scenario or a matrix file.
    file: PathBuf,
    /// Measured runs per permutation (at least 1; `report --compare` needs 4 to tell a
    /// difference at alpha 0.05).
    // Negative numbers reach the parser, which names the flag in its refusal.
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    repeat: u32,
    /// Runs per permutation before the measured ones, recorded but not in the statistics
    /// (caches, page cache, the fixture build).
    #[arg(
        long,
        value_name = "K",
        default_value_t = 0,
        allow_negative_numbers = true
    )]
    warmup: u32,
    /// Matrix only: override the matrix file's strategy: every combination, or every pair of
    /// values.
    #[arg(long, value_parser = ["full", "pairwise"])]
    strategy: Option<String>,
    /// Matrix only: the permutations whose id matches this glob (`*`, `?`; `a,b` for
    /// either).
    #[arg(long)]
    filter: Option<String>,
    /// As `matrix --shard` and `--shard-by`.
    #[command(flatten)]
    shard: super::flags::ShardFlags,
    /// Measure install-to-disk alone: bootstrap each permutation once, save the VM (QEMU
    /// migration to a file, disks kept as qcow2 bases) once bootkube is done, and make
    /// every warmup and measured run resume it. perf.json reports the time this saved.
    /// QEMU backend only.
    #[arg(long)]
    disk_write_only: bool,
    #[command(flatten)]
    flags: RunFlags,
}

pub fn perf(a: PerfArgs) -> Outcome {
    if a.repeat == 0 {
        return Err(bad(
            "--repeat must be at least 1 (measured runs per permutation)",
        ));
    }
    a.flags.check()?;
    let (jobs, strategy) = jobs_of(&a)?;
    if jobs.is_empty() {
        // A shard of a small plan may hold nothing; its CI job has nothing to measure.
        errln!(
            "sno-harness: perf: shard {} of {} holds no permutation; nothing to run",
            a.shard.get().map(|s| s.to_string()).unwrap_or_default(),
            a.file.display()
        );
        return Ok(sno_harness::exit::OK);
    }
    let needs: Vec<&Scenario> = jobs.iter().map(|j| &j.scenario).collect();
    let out = out_dir(a.flags.out.clone());
    // The perf run's reports and each permutation's directory of runs.
    let claimed: Vec<_> = std::iter::once((out.clone(), run_dir::PERF))
        .chain(
            jobs.iter()
                .map(|j| (out.join(&j.id), run_dir::PERF_PERMUTATION)),
        )
        .collect();
    preflight(&needs, &a.flags.backend(), || {
        check_dirs(&claimed, a.flags.replace)?;
        if a.disk_write_only {
            sno_harness::run::state::can_save(&needs, &a.flags.backend())
                .map_err(|e| bad(format!("--disk-write-only: {e}")))?;
        }
        warn_if_too_few(a.repeat);
        Ok(())
    })?;
    // Held until the reports are written.
    let _claims = claim_dirs(&claimed, a.flags.replace)?;
    super::flags::open_log(&out);
    // The disks go into the runs' private directories: their filesystem is the one measured.
    let private_root = sno_harness::registry::private_dir::root();
    let _ = sno_harness::registry::private_dir::ensure_root(&private_root);
    let backing = sno_harness::fleet::backing::backing_for(&a.flags.backend(), &private_root);
    let started_at = rfc3339(std::time::SystemTime::now());
    let input =
        |permutations: &[PermutationRuns], interrupted: bool, finished_at: String| PerfInput {
            source: a.file.display().to_string(),
            strategy: strategy.clone(),
            filter: a.filter.clone(),
            repeat: a.repeat,
            warmup: a.warmup,
            started_at: started_at.clone(),
            finished_at,
            interrupted,
            backend: a.flags.backend().name().to_string(),
            backing_store: backing.clone(),
            permutations: permutations.to_vec(),
        };
    errln!(
        "sno-harness: perf {}: {} permutation(s) x ({} warmup + {} measured) runs, one at a time, into {}",
        a.file.display(),
        jobs.len(),
        a.warmup,
        a.repeat,
        out.display()
    );
    let ran = runtime()?.block_on(async {
        let opts = PerfOptions {
            out: out.clone(),
            repeat: a.repeat,
            warmup: a.warmup,
            // A perf run's VMs are measured, not looked into: none is left running.
            settings: a.flags.settings(interrupt_channel(), 0),
            disk_write_only: a.disk_write_only,
        };
        // Kept current after every run: a killed harness leaves what it measured, and the
        // page shows the distributions so far.
        run_perf(&jobs, opts, |so_far| {
            let partial = perf_model::build(&input(so_far, false, String::new()));
            for e in write_pages(&out, &partial, None) {
                tracing::warn!("writing {e}");
            }
        })
        .await
    });
    let finished_at = rfc3339(std::time::SystemTime::now());
    let report = perf_model::build(&input(&ran.permutations, ran.interrupted, finished_at));
    let markdown = sno_harness::report::perf_md::render_markdown(&report);
    let failed_writes = write_pages(&out, &report, Some(&markdown));
    for e in &failed_writes {
        errln!("sno-harness: writing {e}");
    }
    for p in &report.permutations {
        if let Some(c) = p.disk_write.as_ref().and_then(|d| d.caveat.as_ref()) {
            errln!(
                "sno-harness: warning: {}: the disk write figure is {c}",
                p.id
            );
        }
    }
    out!("{markdown}");
    let code = tally_runs(&a.file, &jobs, &ran, &out.join(PERF_JSON));
    Ok(if failed_writes.is_empty() {
        code
    } else {
        sno_harness::exit::HARNESS_ERROR
    })
}

/// The jobs of a matrix (with `--strategy` and `--filter`) or of the one scenario, and the
/// strategy.
fn jobs_of(a: &PerfArgs) -> Result<(Vec<Job>, Option<String>), CliError> {
    if is_matrix_file(&a.file) {
        let m = load_with_strategy(&a.file, a.strategy.as_deref(), &a.flags.set)?;
        let jobs = sliced(&m, &a.file, a.filter.as_deref(), a.shard.get())?
            .into_iter()
            .map(|p| Job {
                id: p.id.clone(),
                params: p.values.clone(),
                scenario: p.scenario.clone(),
                replay: matrix_replay(&a.file, m.strategy.name(), &p.id) + &a.flags.replay_suffix(),
            })
            .collect();
        return Ok((jobs, Some(m.strategy.name().to_string())));
    }
    if a.strategy.is_some() || a.filter.is_some() || a.shard.get().is_some() {
        return Err(bad(format!(
            "--strategy, --filter and --shard select permutations of a matrix; {} is a scenario",
            a.file.display()
        )));
    }
    let s = scenario::overrides::load_with(&a.file, &a.flags.set).map_err(bad)?;
    let job = Job {
        id: s.name.clone(),
        params: Default::default(),
        replay: format!(
            "sno-harness run {} --keep{}",
            a.file.display(),
            a.flags.replay_suffix()
        ),
        scenario: s,
    };
    Ok((vec![job], None))
}

fn warn_if_too_few(repeat: u32) {
    let min = perf_model::min_samples_for_compare();
    if (repeat as usize) < min {
        errln!(
            "sno-harness: warning: --repeat {repeat}: `report --compare` needs at least {min} runs per permutation to tell a difference at alpha {}",
            perf_model::COMPARE_ALPHA
        );
    }
}

/// perf.json, report.html (the distributions, next to the run directories the page links
/// to) and, at the end, perf.md; returns what could not be written.
fn write_pages(
    out: &Path,
    report: &PerfReport,
    markdown: Option<&str>,
) -> Vec<sno_harness::util::replace_file::WriteError> {
    let mut pages = vec![
        (out.join(PERF_JSON), report.to_json()),
        (out.join(REPORT_HTML_FILE), render_perf_html(report, ".")),
    ];
    if let Some(md) = markdown {
        pages.insert(1, (out.join(PERF_MD), md.to_string()));
    }
    pages
        .into_iter()
        .filter_map(|(path, text)| write_atomically(&path, &text).err())
        .collect()
}

/// Counts the measured runs against their scenarios' expectations, says so, and returns the
/// exit code.
fn tally_runs(file: &Path, jobs: &[Job], ran: &PerfRuns, json_path: &Path) -> i32 {
    let mut tally = Tally::default();
    let mut measured = 0;
    for perm in &ran.permutations {
        let Some(job) = jobs.iter().find(|j| j.id == perm.id) else {
            continue;
        };
        for r in perm.runs.iter().filter(|r| r.kind == RunKind::Measured) {
            measured += 1;
            let _ = tally.count(&job.scenario, &r.result);
        }
    }
    errln!(
        "sno-harness: perf {}: {} of {measured} measured runs as expected, {} not, {} errors{}; {}",
        file.display(),
        measured - tally.unexpected - tally.errors,
        tally.unexpected,
        tally.errors,
        if ran.interrupted { "; interrupted" } else { "" },
        json_path.display()
    );
    tally.code(ran.interrupted)
}
