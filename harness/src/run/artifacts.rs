//! What a run leaves in its directory besides the timeline: result.json with its JUnit and
//! Markdown renderings, the VM's disposable files (removed on every way out), and what
//! `--keep` prints.

use std::fs;
use std::path::{Path, PathBuf};

use super::{build_result, registry, RunOptions, RunRecord};
use crate::guest::ssh::SshKeyPair;
use crate::result::RunResult;
use crate::scenario::Scenario;
use crate::vm::VmSpec;

/// Writes result.json, junit.xml and summary.md of the run.
pub fn finish(s: &Scenario, opts: &RunOptions, rec: RunRecord) -> RunResult {
    let result = build_result(s, opts, &rec);
    tracing::debug!(
        id = %result.id,
        verdict = %result.verdict,
        failed_phase = result.failed_phase.as_deref().unwrap_or(""),
        "writing the run's result and reports"
    );
    if let Err(e) = result.write(&opts.dir) {
        errln!(
            "sno-harness: writing {}/result.json: {e}",
            opts.dir.display()
        );
    }
    let _ = crate::report::junit::write_junit(
        &opts.dir.join(crate::report::run_dir::JUNIT_FILE),
        &[crate::report::load::LocatedRun {
            dir: ".".into(),
            result: result.clone(),
        }],
        &opts.dir,
        &result.id,
        opts.junit,
    );
    let _ = fs::write(
        opts.dir.join("summary.md"),
        crate::report::summary::summary_markdown(std::slice::from_ref(&result)),
    );
    result
}

/// What a run makes in its directory for the VM's sake only: the disks and the live ISO copy
/// (unless `--keep`) and QEMU's sockets, removed on every way out of `drive` (an error before
/// or while the VM starts included), and only then the run's registration, so that `gc` still
/// finds anything a killed harness left.
pub struct RunFiles {
    pub dir: PathBuf,
    pub keep: bool,
    pub registration: Option<registry::Registration>,
}

impl Drop for RunFiles {
    fn drop(&mut self) {
        if !self.keep {
            let _ = fs::remove_dir_all(self.dir.join("disks"));
            let _ = fs::remove_file(self.dir.join("live.iso"));
        }
        let _ = fs::remove_file(self.dir.join("serial.sock"));
        let _ = fs::remove_file(self.dir.join("qmp.sock"));
        drop(self.registration.take());
    }
}

/// What `--keep` leaves and how to use it: the command that boots the kept disks with the
/// console on the terminal, and how to log in (the run's key, saved 0600 under assets/).
pub fn keep_instructions(dir: &Path, spec: &VmSpec, key: &SshKeyPair, ssh_port: u16) -> String {
    let key_path = dir.join("assets").join("ssh-key");
    let login = match crate::assets::write_private(&key_path, key.private_openssh.as_bytes()) {
        Ok(()) => format!(
            "log in, once it is up:\n  ssh -i {} -p {ssh_port} -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null core@127.0.0.1",
            key_path.display()
        ),
        Err(e) => format!("(the SSH key could not be saved: {e})"),
    };
    format!(
        "sno-harness: --keep: the VM's disks are in {}.\nTo boot them again (serial console on this terminal; Ctrl-a x quits QEMU):\n{}\n{login}",
        dir.join("disks").display(),
        crate::vm::qemu::argv::shell_command_line(&crate::vm::qemu::argv::interactive_argv(spec)),
    )
}
