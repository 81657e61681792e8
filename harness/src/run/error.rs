//! Why a run's steps stopped before the state machine reached a verdict of its own.

use crate::flow::machine::{Action, Machine, Status};
use crate::flow::phase::Phase;

#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The system under test refused the input (the installer rejected the install-config):
    /// the current phase fails, verdict `fail`.
    #[error("{0}")]
    Rejected(String),
    /// Ctrl-C or SIGTERM: verdict `error`, reason `interrupted`.
    #[error("interrupted")]
    Interrupted,
    /// The harness or the host failed: verdict `error`.
    #[error("{0}")]
    Harness(String),
    /// The VM could not be started or driven: verdict `error`.
    #[error(transparent)]
    Vm(#[from] crate::vm::VmError),
    /// The run's private directory could not be made: verdict `error`.
    #[error("the run's private directory: {0}")]
    PrivateDir(#[from] crate::registry::private_dir::PrivateDirError),
    /// The state machine already ended the run (a phase's deadline passed while the harness
    /// waited on blocking work): nothing to add.
    #[error("decided")]
    Decided,
}

impl RunError {
    /// Ends the run in `machine` with this error, giving what the machine did. Before the
    /// first phase started (the events file or a saved state could not be read), the first
    /// phase carries it; between two phases (the assets made, the VM not started), the next.
    pub fn record(self, machine: &mut Machine, now_ms: u64) -> Vec<Action> {
        let between = machine.current().is_none() && machine.outcome().is_none();
        let (mut actions, now_ms) = match between {
            true if machine.phase(Phase::Assets).status == Status::Pending => (machine.start(0), 0),
            true => (machine.begin_next_pending(now_ms), now_ms),
            false => (Vec::new(), now_ms),
        };
        actions.extend(match self {
            RunError::Rejected(reason) => machine.fail_now(now_ms, reason),
            RunError::Interrupted => machine.error(now_ms, "interrupted".into()),
            RunError::Harness(reason) => machine.error(now_ms, reason),
            e @ (RunError::Vm(_) | RunError::PrivateDir(_)) => machine.error(now_ms, e.to_string()),
            RunError::Decided if machine.outcome().is_none() => {
                machine.error(now_ms, "the run stopped without a verdict".into())
            }
            RunError::Decided => Vec::new(),
        });
        actions
    }
}

impl From<String> for RunError {
    fn from(reason: String) -> RunError {
        RunError::Harness(reason)
    }
}
