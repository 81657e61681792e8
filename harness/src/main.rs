//! The sno-harness command line.

use std::path::PathBuf;

use clap::{Parser, Subcommand};
use sno_harness::exit;
use sno_harness::fixture::{self, BuildOptions};

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
