//! `sno-harness resume RUN`: ends the pause of a run paused at its failure
//! (`run --pause-on-failure`), from another terminal, by sending its harness SIGUSR1.

use sno_harness::exit;

use super::error::{bad, harness, Outcome};

/// Resume a run paused at its failure (`run --pause-on-failure`): it gathers its evidence,
/// stops its VM and writes its reports. RUN is a registered run's id or its run directory.
/// Exit 1 when the run is not paused.
#[derive(clap::Args)]
pub struct ResumeArgs {
    /// A registered run's id or its run directory.
    run: String,
}

pub fn resume(a: ResumeArgs) -> Outcome {
    let entry = super::ssh::find(&a.run)?;
    // The pid is the harness's only while its start time matches: never signal a stranger.
    if !entry.owner_alive() {
        errln!(
            "sno-harness: run {} is not running (its harness has ended)",
            entry.id
        );
        return Ok(exit::SCENARIO_FAILED);
    }
    if !entry.paused {
        errln!(
            "sno-harness: run {} is running, not paused (it pauses only at a failure, with --pause-on-failure)",
            entry.id
        );
        return Ok(exit::SCENARIO_FAILED);
    }
    let pid = rustix::process::Pid::from_raw(entry.pid as i32)
        .ok_or_else(|| bad(format!("run {}: its registration names pid 0", entry.id)))?;
    rustix::process::kill_process(pid, rustix::process::Signal::USR1).map_err(|e| {
        harness(format!(
            "signalling the harness of {} (pid {pid:?}): {e}",
            entry.id
        ))
    })?;
    errln!(
        "sno-harness: resumed {} (its harness, pid {}, gathers and ends)",
        entry.id,
        entry.pid
    );
    Ok(exit::OK)
}
