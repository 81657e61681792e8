//! The command line, in the real tool's shapes: global `--dir` and `--log-level` before or
//! after the subcommand (`--dir D`, `--dir=D`).

use std::ffi::OsString;
use std::path::PathBuf;

use clap::{Parser, Subcommand};

use crate::log::{Level, Logger};
use crate::Failure;

#[derive(Debug, Parser)]
#[command(
    name = "minisno-install",
    about = "A test fixture standing in for openshift-install (single-node bootstrap-in-place subset); not OpenShift",
    disable_version_flag = true
)]
pub struct Cli {
    /// Assets directory.
    #[arg(long, global = true, default_value = ".", value_name = "DIR")]
    pub dir: PathBuf,
    /// Log level of stderr (e.g. "debug"); the log file always gets everything.
    #[arg(long = "log-level", global = true, default_value = "info", value_name = "LEVEL",
          value_parser = parse_level)]
    pub log_level: String,
    #[command(subcommand)]
    pub command: Command,
}

fn parse_level(s: &str) -> Result<String, String> {
    Level::parse(s)
        .map(|_| s.to_string())
        .ok_or_else(|| format!("invalid log-level {s:?} (debug, info, warn, error)"))
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Create part of an OpenShift cluster.
    Create {
        #[command(subcommand)]
        target: CreateTarget,
    },
    /// Commands for operating on CoreOS boot images.
    Coreos {
        #[command(subcommand)]
        command: CoreosCommand,
    },
    /// Print version information.
    Version,
}

#[derive(Debug, Subcommand)]
pub enum CreateTarget {
    /// Generates the Kubernetes manifests.
    Manifests,
    /// Generates the bootstrap-in-place-for-live-iso Ignition Config asset.
    #[command(name = "single-node-ignition-config")]
    SingleNodeIgnitionConfig,
}

#[derive(Debug, Subcommand)]
pub enum CoreosCommand {
    /// Outputs the CoreOS stream metadata for the bootimages.
    #[command(name = "print-stream-json")]
    PrintStreamJson,
}

/// The `version` text: the release in force (`MINISNO_VERSION` when valid) and its image.
pub fn version_text() -> String {
    let version = crate::release::version_from_env();
    format!(
        "minisno-install {version} (a test fixture standing in for openshift-install; not OpenShift)\nbuilt from commit {}\nrelease image {}\n",
        crate::GIT_COMMIT,
        crate::release::image(&version)
    )
}

/// Runs the command line; returns the exit code.
pub fn run<I, T>(args: I) -> i32
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let cli = match Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return e.exit_code();
        }
    };
    let level = Level::parse(&cli.log_level).unwrap_or(Level::Info);
    match cli.command {
        Command::Version => {
            print!("{}", version_text());
            0
        }
        Command::Coreos {
            command: CoreosCommand::PrintStreamJson,
        } => {
            let mut log = Logger::stderr(level);
            let result = crate::stream::iso_path().and_then(|p| crate::stream::stream_json(&p));
            match result {
                Ok(v) => {
                    println!(
                        "{}",
                        serde_json::to_string_pretty(&v).expect("JSON values serialize")
                    );
                    0
                }
                Err(e) => {
                    log.fatal(&e);
                    1
                }
            }
        }
        Command::Create { target } => create(&target, &cli.dir, level, &cli.log_level),
    }
}

fn create(target: &CreateTarget, dir: &std::path::Path, level: Level, log_level: &str) -> i32 {
    if let Err(e) = std::fs::create_dir_all(dir) {
        Logger::stderr(level).fatal(&format!(
            "failed to create the assets directory {}: {e}",
            dir.display()
        ));
        return 1;
    }
    let mut log = Logger::with_file(dir, level);
    log.debug(&format!(
        "OpenShift Installer {} (minisno-install, a test fixture; not OpenShift)",
        crate::RELEASE
    ));
    log.debug(&format!("Built from commit {}", crate::GIT_COMMIT));
    log.debug(&format!("log-level {log_level}"));
    let result = match target {
        CreateTarget::Manifests => crate::manifests::create(dir, &mut log),
        CreateTarget::SingleNodeIgnitionConfig => crate::assets::create(dir, &mut log, log_level),
    };
    match result {
        Ok(()) => 0,
        Err(f) => {
            match &f {
                Failure::InstallConfig(m) => log.error(m),
                Failure::Fatal(m) => log.fatal(m),
            }
            f.exit_code()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Cli, clap::Error> {
        Cli::try_parse_from(std::iter::once("minisno-install").chain(args.iter().copied()))
    }

    #[test]
    fn dir_before_after_and_equals() {
        for args in [
            &["--dir", "D", "create", "single-node-ignition-config"][..],
            &["create", "single-node-ignition-config", "--dir", "D"][..],
            &["--dir=D", "create", "single-node-ignition-config"][..],
            &["create", "--dir=D", "single-node-ignition-config"][..],
            &["--dir", "D", "create", "manifests"][..],
        ] {
            let cli = parse(args).unwrap();
            assert_eq!(cli.dir, PathBuf::from("D"), "{args:?}");
            assert!(matches!(cli.command, Command::Create { .. }));
        }
        assert_eq!(
            parse(&["create", "single-node-ignition-config"])
                .unwrap()
                .dir,
            PathBuf::from(".")
        );
    }

    #[test]
    fn log_level_anywhere() {
        let cli = parse(&["--log-level", "debug", "version"]).unwrap();
        assert_eq!(cli.log_level, "debug");
        let cli = parse(&["coreos", "print-stream-json", "--log-level=warn"]).unwrap();
        assert_eq!(cli.log_level, "warn");
        assert!(parse(&["--log-level", "loud", "version"]).is_err());
    }

    #[test]
    fn usage_errors_exit_2() {
        let e = parse(&["create", "cluster"]).unwrap_err();
        assert_eq!(e.exit_code(), 2);
        assert_eq!(run(["minisno-install", "frobnicate"]), 2);
    }

    #[test]
    fn version_says_fixture() {
        let v = version_text();
        let first = v.lines().next().unwrap();
        assert!(first.starts_with("minisno-install ") && first.contains("minisno"));
        assert!(v.contains("built from commit "));
        assert!(v.contains("release image "));
    }
}
