//! What a run leaves in its directory besides the timeline: result.json with its JUnit and
//! Markdown renderings, the VM's disposable files (removed on every way out), and what
//! `--keep` prints.

use std::fs;
use std::path::Path;

use super::{build_result, RunOptions, RunRecord};
use crate::registry;
use crate::registry::private_dir::PrivateDir;
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

/// The last look at the run directory before it is handed over: no file may hold one of the
/// run's secrets (or any private key). A leak is the harness's bug, so the run becomes a harness
/// error naming what was found where; the reports are rewritten with their text redacted, and
/// any other file that holds a secret is withheld (removed, with a note beside it saying why),
/// so that an uploader of the directory never publishes it.
pub fn withhold_leaks(
    opts: &RunOptions,
    mut result: RunResult,
    secrets: &crate::secrets::Secrets,
) -> RunResult {
    let leaks = secrets.scan(&opts.dir);
    if leaks.is_empty() {
        return result;
    }
    let found: Vec<String> = leaks
        .iter()
        .map(|l| {
            let rel = l.file.strip_prefix(&opts.dir).unwrap_or(&l.file);
            format!("{} in {}", l.found.join(" and "), rel.display())
        })
        .collect();
    errln!(
        "sno-harness: the run's secrets reached its published directory: {}",
        found.join("; ")
    );
    redact_result(&mut result, secrets);
    let why = format!(
        "the harness found the run's secrets in its published directory ({}); those files were withheld",
        found.join("; ")
    );
    mark_unrecorded(&mut result, &why);
    let _ = rewrite(&opts.dir, opts.junit, &result);
    for l in secrets.scan(&opts.dir) {
        let note = l.file.with_extension("withheld.txt");
        let _ = fs::remove_file(&l.file);
        let _ = fs::write(
            &note,
            format!(
                "{} was removed by sno-harness: it held {}, which must never be published.\n",
                l.file.display(),
                l.found.join(" and ")
            ),
        );
    }
    result
}

/// The result's words (reason, phase details, last signals) with the secrets taken out.
fn redact_result(r: &mut RunResult, secrets: &crate::secrets::Secrets) {
    r.reason = secrets.redact(&r.reason);
    for p in &mut r.phases {
        p.detail = secrets.redact(&p.detail);
    }
    for s in &mut r.last_signals {
        s.summary = secrets.redact(&s.summary);
    }
}

/// Writes result.json, its JUnit (junit.xml, or a permutation's report.junit), summary.md
/// and report.html into `dir` (again, when the matrix changes a verdict); what could not be
/// written, with why.
pub fn rewrite(
    dir: &Path,
    junit: crate::report::junit::JunitOut,
    result: &RunResult,
) -> Vec<String> {
    let mut failures = Vec::new();
    if let Err(e) = result.write(dir) {
        failures.push(format!("writing {}/result.json: {e}", dir.display()));
    }
    let junit_path = dir.join(junit.file_name());
    let located = [crate::report::load::LocatedRun {
        dir: ".".into(),
        result: result.clone(),
    }];
    if let Err(e) =
        crate::report::junit::write_junit(&junit_path, &located, dir, &result.id, junit.flavour)
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

/// What a run makes for the VM's sake and its secrets, all in its private directory (see
/// `private_dir`), released on every way out of `drive` (an error before or while the VM starts
/// included): the directory goes unless the run keeps it (`--keep`, or a VM left running), and
/// only then the run's registration, so that `gc` still finds anything a killed harness left.
pub struct RunFiles {
    pub private: Option<PrivateDir>,
    pub keep: bool,
    pub registration: Option<registry::Registration>,
    /// A `--keep` run left its VM running (QEMU's pid, or a machine powered on): its sockets
    /// and registration stay (gc stops it later).
    pub vm_left_running: Option<crate::vm::running::LeftRunning>,
    /// How long the run was paused at its failure.
    pub paused: std::time::Duration,
}

impl Drop for RunFiles {
    fn drop(&mut self) {
        if let Some(mut private) = self.private.take() {
            if self.keep || self.vm_left_running.is_some() {
                private.keep();
            }
            for s in ["serial.sock", "qmp.sock"] {
                let sock = private.path().join(s);
                let _ = match self.vm_left_running {
                    // QEMU made them under the process umask; QMP runs anything as this user,
                    // so they become the owner's alone, as what they live beside is.
                    Some(_) => crate::util::private::set_mode(&sock, 0o600),
                    None => fs::remove_file(&sock),
                };
            }
            // The console input socket is the harness's own: it ends with it, whatever the VM
            // does (a kept QEMU's console is then its serial socket's).
            let _ = fs::remove_file(private.path().join(crate::guest::console_input::SOCKET));
            drop(private);
        }
        match (self.vm_left_running, self.registration.take()) {
            (Some(_), Some(r)) => r.leave_for_gc(),
            (_, r) => drop(r),
        }
    }
}

/// Where a passing run leaves the admin kubeconfig pointed at the address the harness reached
/// the API on (with the API's name kept for TLS), relative to the private directory.
pub const FORWARDED_KUBECONFIG: &str = "assets/auth/kubeconfig-forwarded";

/// The run's SSH private key in the private directory, written (0600) when the run starts.
pub const SSH_KEY_FILE: &str = "ssh-key";

/// Where the run reaches the guest's SSH (`127.0.0.1:PORT`, or the node's address on a NAT
/// network), in the private directory once the VM started: what `sno-harness ssh` connects to.
pub const SSH_ADDRESS_FILE: &str = "ssh-address";

/// What `--keep` leaves and how to use it: the command that boots the kept disks with the
/// console on the terminal, and how to log in with the run's key; `private` is the run's
/// private directory, which holds both.
pub fn keep_instructions(private: &Path, spec: &VmSpec, ssh_port: u16) -> String {
    format!(
        "sno-harness: --keep: the VM's disks are in {}.\nTo boot them again (serial console on this terminal; Ctrl-a x quits QEMU):\n{}\n{}\nThey are the run's private files (its secrets among them), outside --out; remove {} when done.",
        private.join("disks").display(),
        crate::vm::qemu::argv::shell_command_line(&crate::vm::qemu::argv::interactive_argv(spec)),
        login_line(private, ([127, 0, 0, 1], ssh_port).into(), "log in, once it is up:"),
        private.display(),
    )
}

/// How to log in with the run's key (in the private directory) at `at` (the run's forward,
/// or the node's address on a NAT network), under `heading`.
pub fn login_line(private: &Path, at: std::net::SocketAddr, heading: &str) -> String {
    login_line_as(private, ("core", at), heading)
}

/// [`login_line`] as `user` (a machine the harness did not boot has its own).
pub fn login_line_as(
    private: &Path,
    (user, at): (&str, std::net::SocketAddr),
    heading: &str,
) -> String {
    format!(
        "{heading}\n  ssh -i {} -p {} -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null {user}@{}",
        crate::util::lexical_absolute(private).join(SSH_KEY_FILE).display(),
        at.port(),
        at.ip()
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn options(dir: PathBuf) -> RunOptions {
        RunOptions {
            dir,
            id: "smoke".into(),
            params: Default::default(),
            keep: Default::default(),
            pause_on_failure: false,
            timeout_scale: 1.0,
            cache_dir: PathBuf::from("/nonexistent"),
            replay: String::new(),
            backend: crate::vm::Backend::Qemu,
            interrupt: tokio::sync::watch::channel(false).1,
            progress: super::super::progress::Display::Plain,
            state: Default::default(),
            junit: Default::default(),
            gather: Default::default(),
            kubeconfig_to: Vec::new(),
        }
    }

    #[test]
    fn a_secret_in_the_published_directory_is_withheld_and_the_run_becomes_an_error() {
        let d = tempfile::tempdir().unwrap();
        let opts = options(d.path().to_path_buf());
        let mut secrets = crate::secrets::Secrets::default();
        secrets.add("the kubeadmin password", "Kx9pQ-aaaaa-bbbbb-ccccc");
        std::fs::create_dir_all(d.path().join("gather/guest")).unwrap();
        let leaked = d.path().join("gather/guest/journal.txt");
        std::fs::write(&leaked, "login with Kx9pQ-aaaaa-bbbbb-ccccc\n").unwrap();
        std::fs::write(d.path().join("serial.log"), "an ordinary console\n").unwrap();
        let mut result = RunResult::unreached_error("smoke", "");
        result.verdict = crate::result::Verdict::Pass;
        result.reason.clear();
        result.last_signals = vec![crate::result::LastSignal {
            t_ms: 1,
            source: "journal".into(),
            summary: "password Kx9pQ-aaaaa-bbbbb-ccccc".into(),
        }];
        let clean = withhold_leaks(&opts, result.clone(), &crate::secrets::Secrets::default());
        assert_eq!(
            clean.verdict,
            crate::result::Verdict::Pass,
            "no secrets: no finding"
        );
        assert!(rewrite(&opts.dir, opts.junit, &result).is_empty());
        let r = withhold_leaks(&opts, result, &secrets);
        assert_eq!(r.verdict, crate::result::Verdict::Error);
        assert!(
            r.reason.starts_with("the harness found the run's secrets in its published directory (the kubeadmin password in ")
                && r.reason.contains("gather/guest/journal.txt")
                && r.reason.contains("result.json"),
            "{}",
            r.reason
        );
        assert!(!leaked.exists(), "the leaking file is withheld");
        let note = std::fs::read_to_string(leaked.with_extension("withheld.txt")).unwrap();
        assert!(note.contains("must never be published"), "{note}");
        assert!(d.path().join("serial.log").exists(), "clean files stay");
        assert!(
            secrets.scan(d.path()).is_empty(),
            "{:?}",
            secrets.scan(d.path())
        );
        assert!(
            d.path().join("result.json").exists(),
            "the reports are redacted, not removed"
        );
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

#[cfg(test)]
mod login_tests {
    use super::*;

    #[test]
    fn the_login_line_names_the_private_key_and_where_ssh_answers() {
        let line = login_line(
            Path::new("/var/tmp/sno-harness-0/run-x"),
            ([192, 168, 126, 10], 22).into(),
            "log in:",
        );
        assert_eq!(
            line,
            "log in:\n  ssh -i /var/tmp/sno-harness-0/run-x/ssh-key -p 22 -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null core@192.168.126.10"
        );
    }
}
