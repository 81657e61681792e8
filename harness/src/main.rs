//! The sno-harness command line (the commands are in `cli/`).

#[macro_use]
extern crate sno_harness;

mod cli;

fn main() {
    // The logging starts once the arguments are parsed: they say its level.
    std::process::exit(cli::main());
}
