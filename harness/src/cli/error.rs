//! The one error type of the commands, and the exit codes of the command-line contract: 0 all
//! passed, 1 a scenario failed (or, for `report --compare`, regressed), 2 bad input, 3 the
//! host is not ready, 4 a harness error.

use sno_harness::exit;

/// Why a command stopped before it could judge anything.
#[derive(Debug)]
pub enum CliError {
    /// A scenario, matrix, flag or directory that cannot be used: exit 2.
    BadInput(String),
    /// The host lacks what the run needs: exit 3.
    HostNotReady(String),
    /// The harness or the host failed: exit 4.
    Harness(String),
}

impl CliError {
    pub fn code(&self) -> i32 {
        match self {
            CliError::BadInput(_) => exit::BAD_INPUT,
            CliError::HostNotReady(_) => exit::HOST_NOT_READY,
            CliError::Harness(_) => exit::HARNESS_ERROR,
        }
    }

    pub fn message(&self) -> &str {
        match self {
            CliError::BadInput(m) | CliError::HostNotReady(m) | CliError::Harness(m) => m,
        }
    }
}

/// What a command returns: the exit code it judged (0, 1 or 4 from the verdicts), or the
/// error that stopped it.
pub type Outcome = Result<i32, CliError>;

/// The exit code of an outcome, saying the error on stderr.
pub fn exit_code(outcome: Outcome) -> i32 {
    match outcome {
        Ok(code) => code,
        Err(e) => {
            errln!("sno-harness: {}", e.message());
            e.code()
        }
    }
}

/// Bad input, from anything that displays.
pub fn bad(e: impl std::fmt::Display) -> CliError {
    CliError::BadInput(e.to_string())
}

/// A harness error, from anything that displays.
pub fn harness(e: impl std::fmt::Display) -> CliError {
    CliError::Harness(e.to_string())
}
