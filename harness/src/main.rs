//! The sno-harness command line.

use std::path::PathBuf;

use clap::{Parser, Subcommand};
use sno_harness::exit;
use sno_harness::fixture::{self, BuildOptions};

mod cmd;

#[derive(Parser)]
#[command(
    name = "sno-harness",
    version,
    about = "End-to-end tests of OpenShift single-node bootstrap-in-place in VMs"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run one scenario: assets, VM, bootstrap, install, reboot, API checks; write the run
    /// directory and exit 0 (passed, or failed as the scenario's [expect] says), 1 (failed),
    /// 2 (bad input), 3 (host not ready) or 4 (harness error).
    Run {
        scenario: PathBuf,
        /// Stop once bootkube is done and save the VM into DIR (a new directory): its RAM and
        /// devices (QEMU migration to a file), disks, live ISO and SSH key. Install-to-disk is
        /// held (its unit frozen) from the live boot on, so the state has it not begun. QEMU
        /// backend, disks not on NVMe.
        #[arg(long, value_name = "DIR", conflicts_with = "resume_state")]
        save_state: Option<PathBuf>,
        /// Start from the VM saved in DIR by --save-state (of the same scenario), release
        /// install-to-disk, and end once it is done: repeat the disk write without repeating
        /// the bootstrap. DIR is left as it was (the run writes into overlays).
        #[arg(long, value_name = "DIR")]
        resume_state: Option<PathBuf>,
        #[command(flatten)]
        flags: cmd::RunFlags,
    },
    /// Run every permutation of a matrix file, in parallel as far as the host has memory,
    /// CPUs and disk for; write one directory per permutation and the merged reports
    /// (summary.json, summary.md, junit.xml, report.html). Exit 0 when every permutation
    /// ended as expected, 1 when one did not, 2 bad input, 4 harness error.
    Matrix {
        matrix: PathBuf,
        /// Permutations at once [default: the host's CPUs]; admission control still applies.
        #[arg(long)]
        jobs: Option<u32>,
        /// Override the matrix file's strategy: full | pairwise.
        #[arg(long)]
        strategy: Option<String>,
        /// Only the permutations whose id matches this glob (`*`, `?`; `a,b` for either).
        #[arg(long)]
        filter: Option<String>,
        #[command(flatten)]
        flags: cmd::RunFlags,
    },
    /// Measure: run each permutation of a scenario or matrix --repeat times (after --warmup
    /// runs that are not counted) and report per phase, the whole run and the disk write:
    /// median, p90, min, max, standard deviation, MiB/s, with the host context next to the
    /// numbers (OUT/perf.json, OUT/perf.md, the table on stdout). Runs go strictly one at a
    /// time, never in parallel: measurements must not share the host with each other (nor with
    /// anything else: other VMs are named in a warning). Each run writes OUT/<id>/warmup-<k>/
    /// or OUT/<id>/run-<i>/ (a scenario's id is its name). Exit 0 when every measured run
    /// passed (or ended as the scenario's [expect] says), 1 when one did not, 2 bad input,
    /// 3 host not ready, 4 harness error (an interrupt too).
    Perf {
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
        /// Matrix only: override the matrix file's strategy: full | pairwise.
        #[arg(long)]
        strategy: Option<String>,
        /// Matrix only: the permutations whose id matches this glob (`*`, `?`; `a,b` for
        /// either).
        #[arg(long)]
        filter: Option<String>,
        /// Measure install-to-disk alone: bootstrap each permutation once, save the VM (QEMU
        /// migration to a file, disks kept as qcow2 bases) once bootkube is done, and make
        /// every warmup and measured run resume it. perf.json reports the time this saved.
        /// QEMU backend only.
        #[arg(long)]
        disk_write_only: bool,
        #[command(flatten)]
        flags: cmd::RunFlags,
    },
    /// Print what a run would do (install-config, commands, QEMU command line, timeouts);
    /// run nothing.
    Plan {
        scenario: PathBuf,
        #[arg(long)]
        json: bool,
        /// Show the VM as this backend defines it: the QEMU command line, or the libvirt
        /// domain XML.
        #[arg(long, default_value = "qemu", value_parser = ["qemu", "libvirt"])]
        backend: String,
    },
    /// Regenerate the reports of a run directory (summary.json, summary.md, junit.xml,
    /// report.html) from its result.json files, or compare it with a baseline: per-phase
    /// deltas, exit 1 when a phase, the disk write or a verdict regressed. On a perf directory
    /// (with perf.json) it writes report.html with the distributions of the runs, and
    /// --compare compares the runs' samples: per phase, whole run and disk write a
    /// Mann-Whitney test, a regression being significantly slower at --alpha AND at least
    /// --min-effect-pct slower in median (too few runs for the test: the thresholds on the
    /// medians). A perf directory compares only with a perf directory (else exit 2).
    Report {
        /// A run directory: permutation directories with a result.json each, or one run's; or
        /// a perf directory.
        run_dir: PathBuf,
        /// Compare with this run directory (permutations matched by id); prints the deltas
        /// and writes nothing unless --html is given.
        #[arg(long, value_name = "BASELINE_DIR")]
        compare: Option<PathBuf>,
        /// Write only the HTML report, to this file.
        #[arg(long, value_name = "FILE")]
        html: Option<PathBuf>,
        /// A phase regressed when slower by more than this percentage...
        #[arg(long, default_value_t = 20.0, value_name = "PCT")]
        threshold_pct: f64,
        /// ...and by more than this many seconds. The disk write regressed when its MiB/s
        /// dropped by more than --threshold-pct.
        #[arg(long, default_value_t = 10.0, value_name = "SECONDS")]
        threshold_s: f64,
        /// Perf directories: the significance level of the test, between 0 and 1
        /// [default: 0.05].
        #[arg(long, value_name = "ALPHA", allow_negative_numbers = true)]
        alpha: Option<f64>,
        /// Perf directories: a significantly slower metric is a regression only when its
        /// median is at least this many percent slower [default: 5].
        #[arg(long, value_name = "PCT", allow_negative_numbers = true)]
        min_effect_pct: Option<f64>,
        /// Perf directories: also write the comparison to this file as JSON (schema
        /// sno-harness/perf-compare/v1).
        #[arg(long, value_name = "FILE")]
        json: Option<PathBuf>,
    },
    /// Collect what runs that did not end cleanly left behind (harness killed, host rebooted):
    /// their VMs (QEMU processes, libvirt domains), disks, ISO copies and sockets; their logs
    /// stay and get a result.json (verdict error) if they have none. Also destroys the
    /// harness's libvirt domains that no live run owns. Exit 0, or 4 when something could not
    /// be removed.
    Gc {
        /// Print what would be done, do nothing.
        #[arg(long)]
        dry_run: bool,
        /// libvirt URIs to search for the harness's domains, networks and storage pools
        /// [default: qemu:///system when libvirtd runs here]. Repeatable.
        #[arg(long = "connect", value_name = "URI")]
        connect: Vec<String>,
    },
    /// Check the host: QEMU, a usable KVM or TCG, OVMF, coreos-installer, disk space.
    /// Exit 3 when it cannot run a scenario.
    Doctor,
    /// The minisno fixture appliance.
    Fixture {
        #[command(subcommand)]
        command: FixtureCommand,
    },
}

#[derive(Subcommand)]
enum FixtureCommand {
    /// Build minisno (live ISO, metal images), or return the cached build for the same inputs.
    Build {
        /// Cache directory [default: $XDG_CACHE_HOME/sno-harness, else ~/.cache/sno-harness]
        #[arg(long)]
        out: Option<PathBuf>,
        /// Print the artifact paths as JSON on stdout.
        #[arg(long)]
        json: bool,
    },
}

fn main() {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("SNO_HARNESS_LOG")
                .unwrap_or_else(|_| "info".into()),
        )
        .with_writer(std::io::stderr)
        .init();
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            let code = if e.use_stderr() {
                exit::BAD_INPUT
            } else {
                exit::OK
            };
            let _ = e.print();
            std::process::exit(code);
        }
    };
    std::process::exit(match cli.command {
        Command::Run {
            scenario,
            save_state,
            resume_state,
            flags,
        } => cmd::run(&scenario, flags, save_state, resume_state),
        Command::Matrix {
            matrix,
            jobs,
            strategy,
            filter,
            flags,
        } => cmd::matrix(&cmd::MatrixArgs {
            path: matrix,
            jobs,
            strategy,
            filter,
            flags,
        }),
        Command::Perf {
            file,
            repeat,
            warmup,
            strategy,
            filter,
            disk_write_only,
            flags,
        } => cmd::perf(&cmd::PerfArgs {
            path: file,
            repeat,
            warmup,
            strategy,
            filter,
            disk_write_only,
            flags,
        }),
        Command::Plan {
            scenario,
            json,
            backend,
        } => cmd::plan(&scenario, json, &backend),
        Command::Report {
            run_dir,
            compare,
            html,
            threshold_pct,
            threshold_s,
            alpha,
            min_effect_pct,
            json,
        } => cmd::report(&cmd::ReportArgs {
            dir: run_dir,
            baseline: compare,
            html,
            threshold_pct,
            threshold_s,
            alpha,
            min_effect_pct,
            json,
        }),
        Command::Doctor => cmd::doctor(),
        Command::Gc { dry_run, connect } => cmd::gc(dry_run, connect),
        Command::Fixture {
            command: FixtureCommand::Build { out, json },
        } => fixture_build(out, json),
    });
}

fn fixture_build(out: Option<PathBuf>, json: bool) -> i32 {
    let mut opts = BuildOptions::default();
    if let Some(out) = out {
        opts.cache_dir = out;
    }
    match fixture::build(&opts) {
        Ok(a) => {
            if json {
                println!(
                    "{}",
                    serde_json::to_string_pretty(&a).expect("serialisable")
                );
            } else {
                println!("live ISO:        {}", a.live_iso.display());
                println!("metal (512):     {}", a.metal.sector_512.display());
                println!("metal (4096):    {}", a.metal.sector_4096.display());
            }
            exit::OK
        }
        Err(e) => {
            eprintln!("sno-harness: fixture build failed: {e}");
            if e.is_host_not_ready() {
                exit::HOST_NOT_READY
            } else {
                exit::HARNESS_ERROR
            }
        }
    }
}
