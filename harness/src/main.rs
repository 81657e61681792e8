//! The sno-harness command line (the commands are in `cli/`).

#[macro_use]
extern crate sno_harness;

mod cli;

fn main() {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("SNO_HARNESS_LOG")
                .unwrap_or_else(|_| "info".into()),
        )
        .with_writer(std::io::stderr)
        .init();
    std::process::exit(cli::main());
}
