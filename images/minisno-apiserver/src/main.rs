use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use minisno_apiserver::{log::log, server, Config, Schedule};

/// minisno's control-plane simulator (a test fixture, not a Kubernetes apiserver).
#[derive(Parser)]
#[command(name = "minisno-apiserver", version)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Serve the simulated API until SIGTERM or SIGINT.
    Serve {
        #[arg(long, default_value = "/etc/kubernetes/minisno/apiserver.json")]
        config: PathBuf,
    },
    /// Print a default schedule as JSON (for the config's "schedule" field).
    Schedule {
        /// Seconds: for smoke tests.
        #[arg(long, conflicts_with = "normal")]
        fast: bool,
        /// Minutes: realistic in shape, short in time.
        #[arg(long)]
        normal: bool,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Schedule { fast: _, normal } => {
            let s = if normal {
                Schedule::normal()
            } else {
                Schedule::fast()
            };
            println!(
                "{}",
                serde_json::to_string_pretty(&s).expect("schedule serializes")
            );
            ExitCode::SUCCESS
        }
        Command::Serve { config } => match serve(config) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("minisno-apiserver: {e:#}");
                ExitCode::FAILURE
            }
        },
    }
}

fn serve(config_path: PathBuf) -> anyhow::Result<()> {
    let config = Config::load(&config_path)?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    rt.block_on(async {
        let running = server::start(config).await?;
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = term.recv() => {}
        }
        log("stopping");
        running.stop().await;
        Ok(())
    })
}
