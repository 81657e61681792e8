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

/// Writes result.json, junit.xml and summary.md of the run. A record that cannot be written
/// (a full disk) is never a quiet pass: the run becomes a harness error saying which file and
/// why, and the returned result says so whatever reached the disk.
pub fn finish(s: &Scenario, opts: &RunOptions, rec: RunRecord) -> RunResult {
    let mut result = build_result(s, opts, &rec);
    tracing::debug!(
        id = %result.id,
        verdict = %result.verdict,
        failed_phase = result.failed_phase.as_deref().unwrap_or(""),
        "writing the run's result and reports"
    );
    let failures = rewrite(&opts.dir, opts.junit, &result);
    if !failures.is_empty() {
        let why = failures.join("; ");
        errln!("sno-harness: {why}");
        mark_unrecorded(&mut result, &why);
        // What can still be written says so (the first failure may have been result.json's).
        let _ = rewrite(&opts.dir, opts.junit, &result);
    }
    result
}

/// Writes result.json, junit.xml, summary.md and report.html into `dir` (again, when the
/// matrix changes a verdict); what could not be written, with why.
pub fn rewrite(
    dir: &Path,
    junit: crate::report::junit::JunitFlavour,
    result: &RunResult,
) -> Vec<String> {
    let mut failures = Vec::new();
    if let Err(e) = result.write(dir) {
        failures.push(format!("writing {}/result.json: {e}", dir.display()));
    }
    let junit_path = dir.join(crate::report::run_dir::JUNIT_FILE);
    let located = [crate::report::load::LocatedRun {
        dir: ".".into(),
        result: result.clone(),
    }];
    if let Err(e) = crate::report::junit::write_junit(&junit_path, &located, dir, &result.id, junit)
    {
        failures.push(format!("writing {}: {e}", junit_path.display()));
    }
    let summary = crate::report::summary::summary_markdown(std::slice::from_ref(result));
    if let Err(e) = fs::write(dir.join("summary.md"), summary) {
        failures.push(format!("writing {}/summary.md: {e}", dir.display()));
    }
    let html = dir.join(crate::report::html::REPORT_HTML_FILE);
    if let Err(e) = crate::report::run_dir::write_html(&html, dir, &located, &[]) {
        failures.push(format!("writing {}: {e}", html.display()));
    }
    failures
}

/// The run's record could not be written: a harness error, keeping what the run itself found.
fn mark_unrecorded(result: &mut RunResult, why: &str) {
    let was = match result.reason.is_empty() {
        true => format!("the run's verdict was {}", result.verdict.as_str()),
        false => format!(
            "the run's verdict was {}: {}",
            result.verdict.as_str(),
            result.reason
        ),
    };
    result.verdict = crate::result::Verdict::Error;
    result.reason = format!("{why} ({was})");
}

/// What a run makes in its directory for the VM's sake only: the disks and the live ISO copy
/// (unless `--keep`) and QEMU's sockets, removed on every way out of `drive` (an error before
/// or while the VM starts included), and only then the run's registration, so that `gc` still
/// finds anything a killed harness left.
pub struct RunFiles {
    pub dir: PathBuf,
    pub keep: bool,
    pub registration: Option<registry::Registration>,
    /// A passing `--keep` run left its VM running (QEMU's pid): its sockets and registration
    /// stay (gc stops it later).
    pub vm_left_running: Option<u32>,
}

impl Drop for RunFiles {
    fn drop(&mut self) {
        if !self.keep {
            let _ = fs::remove_dir_all(self.dir.join("disks"));
            let _ = fs::remove_file(self.dir.join("live.iso"));
            let _ = fs::remove_file(self.dir.join(crate::assets::ROOTFS_FILE));
            let _ = fs::remove_file(self.dir.join(crate::assets::MINIMAL_ISO_FILE));
        }
        match (self.vm_left_running, self.registration.take()) {
            (Some(_), Some(r)) => {
                // QEMU made them with the process umask; QMP runs anything as this user, so
                // they become the owner's alone, as what they live beside is.
                for s in ["serial.sock", "qmp.sock"] {
                    let _ = crate::util::private::set_mode(&self.dir.join(s), 0o600);
                }
                r.leave_for_gc()
            }
            (_, r) => {
                let _ = fs::remove_file(self.dir.join("serial.sock"));
                let _ = fs::remove_file(self.dir.join("qmp.sock"));
                drop(r);
            }
        }
    }
}

/// Where a passing run leaves the admin kubeconfig pointed at the address the harness reached
/// the API on (with the API's name kept for TLS), relative to the run directory.
pub const FORWARDED_KUBECONFIG: &str = "assets/auth/kubeconfig-forwarded";

/// What `--keep` leaves and how to use it: the command that boots the kept disks with the
/// console on the terminal, and how to log in (the run's key, saved 0600 under assets/).
pub fn keep_instructions(dir: &Path, spec: &VmSpec, key: &SshKeyPair, ssh_port: u16) -> String {
    format!(
        "sno-harness: --keep: the VM's disks are in {}.\nTo boot them again (serial console on this terminal; Ctrl-a x quits QEMU):\n{}\n{}",
        dir.join("disks").display(),
        crate::vm::qemu::argv::shell_command_line(&crate::vm::qemu::argv::interactive_argv(spec)),
        login_line(dir, key, ssh_port, "log in, once it is up:"),
    )
}

/// How to log in with the run's key, saved 0600 under assets/ for that, under `heading`.
fn login_line(dir: &Path, key: &SshKeyPair, ssh_port: u16, heading: &str) -> String {
    let key_path = dir.join("assets").join("ssh-key");
    match crate::assets::write_private(&key_path, key.private_openssh.as_bytes()) {
        Ok(()) => format!(
            "{heading}\n  ssh -i {} -p {ssh_port} -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null core@127.0.0.1",
            key_path.display()
        ),
        Err(e) => format!("(the SSH key could not be saved: {e})"),
    }
}

/// A passing `--keep` run whose VM runs on.
pub struct KeptCluster<'a> {
    pub dir: &'a Path,
    pub qemu_pid: u32,
    pub ssh_port: u16,
    pub key: &'a SshKeyPair,
    pub install: &'a crate::scenario::model::InstallSpec,
}

/// What `openshift-install wait-for install-complete` tells, for the cluster the run leaves
/// running: the KUBECONFIG to export, the console, the kubeadmin password's file, how to log
/// in, and how to remove the VM.
pub fn kept_cluster_instructions(k: &KeptCluster<'_>) -> String {
    let dir = crate::util::lexical_absolute(k.dir);
    let apps = format!("apps.{}.{}", k.install.cluster, k.install.base_domain);
    [
        format!(
            "sno-harness: --keep: the cluster runs on in its VM (QEMU pid {}); its API and SSH are forwarded to 127.0.0.1.",
            k.qemu_pid
        ),
        "To use it:".into(),
        format!("  export KUBECONFIG={}", dir.join(FORWARDED_KUBECONFIG).display()),
        format!(
            "  the console: https://console-openshift-console.{apps} (its name must reach the VM's ingress; only the API and SSH are forwarded here)"
        ),
        format!(
            "  the kubeadmin password is in {}",
            dir.join("assets/auth/kubeadmin-password").display()
        ),
        login_line(&dir, k.key, k.ssh_port, "  log in:"),
        format!(
            "When done, stop the VM with `sno-harness gc` (its disks stay in {}; remove the run directory to free them).",
            dir.join("disks").display()
        ),
    ]
    .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options(dir: PathBuf) -> RunOptions {
        RunOptions {
            dir,
            id: "smoke".into(),
            params: Default::default(),
            keep: false,
            leave_running: false,
            timeout_scale: 1.0,
            cache_dir: PathBuf::from("/nonexistent"),
            replay: String::new(),
            backend: crate::vm::running::Backend::Qemu,
            interrupt: tokio::sync::watch::channel(false).1,
            progress: super::super::progress::Display::Plain,
            state: Default::default(),
            junit: Default::default(),
            gather: Default::default(),
        }
    }

    #[test]
    fn a_record_that_cannot_be_written_is_never_a_quiet_pass() {
        let d = tempfile::tempdir().unwrap();
        // Where the run directory should be, a file: every write fails (as on a full disk).
        let not_a_dir = d.path().join("smoke");
        fs::write(&not_a_dir, "").unwrap();
        let opts = options(not_a_dir.clone());
        let mut result = RunResult::unreached_error("smoke", "");
        result.verdict = crate::result::Verdict::Pass;
        result.reason.clear();
        let failures = rewrite(&opts.dir, opts.junit, &result);
        assert_eq!(failures.len(), 4, "{failures:?}");
        assert!(failures[0].starts_with(&format!("writing {}/result.json: ", not_a_dir.display())));
        mark_unrecorded(&mut result, &failures.join("; "));
        assert_eq!(result.verdict, crate::result::Verdict::Error);
        assert!(
            result.reason.ends_with("(the run's verdict was pass)"),
            "{}",
            result.reason
        );

        // Written where it can be: nothing to mark.
        let ok = options(d.path().to_path_buf());
        assert!(rewrite(&ok.dir, ok.junit, &result).is_empty());
        for f in ["result.json", "junit.xml", "summary.md", "report.html"] {
            assert!(d.path().join(f).is_file(), "{f}");
        }
    }
}
