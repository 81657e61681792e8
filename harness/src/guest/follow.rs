//! Following the guest over SSH across reboots: a status poller (live or installed system,
//! markers, the BiP units' states, bootstrap files) and the journal follower
//! ([`super::journal`]). Each runs on its own thread with its own session, reconnects
//! whenever the guest goes away (the host key changes with the system), and sends what it
//! sees as signals.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use super::journal::{journal_loop, RawJournal};
use super::ssh::{SshSession, SshTarget};
use crate::flow::event::{GuestStatus, SecureBootState, Signal, SignalTx, Source};
use crate::util::wait::sleep_unless_stopped;

/// One shell command that reports everything the state machine needs, `|`-separated, in one
/// line of bounded length: bootkube.service's ActiveState/SubState/Result and whether it is
/// enabled, and the bootstrap files the post-reboot script's `clean` removes (its
/// `/etc/kubernetes/bootstrap-*` as a glob, at most 16 paths of at most 200 characters, a
/// `|` in a name turned into `_`), which a bootstrap-cleanup timeout quotes; last, the value
/// byte of the SecureBoot EFI variable (after its four attribute bytes), `-` without one.
const STATUS_SCRIPT: &str = r#"b=$(cat /proc/sys/kernel/random/boot_id); l=0; [ -e /run/ostree-live ] && l=1
bd=0; [ -e /opt/openshift/.bootkube.done ] && bd=1; id=0; [ -e /opt/openshift/.install-to-disk.done ] && id=1
cd=0; [ -e /opt/openshift/coreos-installer.done ] && cd=1
en=$(systemctl is-enabled bootkube.service 2>/dev/null)
u() { systemctl show -p "$1" --value bootkube.service; }; st=$(u ActiveState)/$(u SubState)/$(u Result)
nr=$(u NRestarts); ir=$(systemctl show -p NRestarts --value install-to-disk.service)
files=$(ls -d /etc/kubernetes/bootstrap-* /usr/local/bin/installer-gather.sh /usr/local/bin/installer-masters-gather.sh /var/log/log-bundle-bootstrap.tar.gz /opt/openshift 2>/dev/null | head -n 16 | cut -c1-200 | tr '\n|' ' _')
sb=-; v=/sys/firmware/efi/efivars/SecureBoot-8be4df61-93ca-11d2-aa0d-00e098032b8c
[ -r $v ] && sb=$(od -An -tu1 -j4 -N1 $v | tr -d " ")
echo "$b|$l|$bd|$id|$en|$st|$nr|$ir|$files|$cd|$(date +%s%N)|${sb:--}""#;

/// Parses the status line (and the session's host key) into a `GuestStatus`.
pub fn parse_status(line: &str, host_key: &str) -> Option<GuestStatus> {
    let f: Vec<&str> = line.trim().split('|').collect();
    if f.len() != 12 || f[0].is_empty() {
        return None;
    }
    Some(GuestStatus {
        boot_id: f[0].to_string(),
        live: f[1] == "1",
        host_key: host_key.to_string(),
        bootkube_done: f[2] == "1",
        install_to_disk_done: f[3] == "1",
        bootkube_enabled: f[4].to_string(),
        bootkube_state: f[5].to_string(),
        bootkube_restarts: f[6].parse().unwrap_or(0),
        install_restarts: f[7].parse().unwrap_or(0),
        bootstrap_files: f[8].split_whitespace().map(str::to_string).collect(),
        coreos_installer_done: f[9] == "1",
        guest_time_ns: f[10].trim().parse().unwrap_or(0),
        secure_boot: SecureBootState::parse(f[11]),
    })
}

/// How long one status poll may take on a guest that answered SSH.
const STATUS_TIMEOUT: Duration = super::ssh::COMMAND_IO_TIMEOUT;

/// How long `Followers::stop` waits for its threads.
pub const STOP_WAIT: Duration = Duration::from_secs(2);

/// Owns the follower threads; stops them on drop.
pub struct Followers {
    stop: Arc<AtomicBool>,
    threads: Vec<std::thread::JoinHandle<()>>,
    /// Closed by `stop` itself: the journal thread may still be in a blocking read then.
    raw: Option<Arc<std::sync::Mutex<RawJournal>>>,
}

impl Followers {
    /// Starts both followers; `raw_dir` gets each boot's whole journal, compressed
    /// ([`RawJournal`]).
    pub fn start(
        target: SshTarget,
        tx: SignalTx,
        poll: Duration,
        raw_dir: Option<std::path::PathBuf>,
    ) -> Followers {
        let stop = Arc::new(AtomicBool::new(false));
        let mut threads = Vec::new();
        {
            let (target, tx, stop) = (target.clone(), tx.clone(), stop.clone());
            threads.push(
                std::thread::Builder::new()
                    .name("guest-status".into())
                    .spawn(move || status_loop(&target, &tx, &stop, poll))
                    .expect("spawn"),
            );
        }
        let raw = raw_dir.map(|d| Arc::new(std::sync::Mutex::new(RawJournal::new(d))));
        {
            let (stop2, raw2) = (stop.clone(), raw.clone());
            threads.push(
                std::thread::Builder::new()
                    .name("guest-journal".into())
                    .spawn(move || journal_loop(&target, &tx, &stop2, raw2.as_deref()))
                    .expect("spawn"),
            );
        }
        Followers { stop, threads, raw }
    }

    /// Tells the threads to stop and waits up to [`STOP_WAIT`] for them. A thread inside a
    /// blocking SSH call (a connect or an exec to a guest that is busy or going down can take
    /// several of its 5-second timeouts) is left to finish on its own: it holds nothing of the
    /// run's but a connection, and what it may still send is never read.
    pub fn stop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let deadline = std::time::Instant::now() + STOP_WAIT;
        while self.threads.iter().any(|t| !t.is_finished()) && std::time::Instant::now() < deadline
        {
            std::thread::sleep(Duration::from_millis(20));
        }
        for t in self.threads.drain(..) {
            if t.is_finished() {
                let _ = t.join();
            }
        }
        if let Some(raw) = &self.raw {
            raw.lock().unwrap_or_else(|e| e.into_inner()).close();
        }
    }
}

impl Drop for Followers {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The guest stopped answering SSH (a reboot, a crash, a network loss): one event with why.
fn ssh_down(tx: &SignalTx, e: &impl std::fmt::Display) {
    let _ = tx.send((
        Source::Guest,
        Signal::Ssh {
            up: false,
            detail: e.to_string(),
        },
    ));
}

fn status_loop(target: &SshTarget, tx: &SignalTx, stop: &AtomicBool, poll: Duration) {
    let mut session: Option<SshSession> = None;
    let mut up = false;
    while !stop.load(Ordering::SeqCst) {
        if session.is_none() {
            match target.connect(Duration::from_secs(5)) {
                Ok(s) => {
                    // The status script runs a dozen commands; a loaded TCG guest can take
                    // well over the connect's few seconds to answer, which must not read as
                    // SSH being down.
                    s.set_io_timeout(STATUS_TIMEOUT);
                    let _ = tx.send((
                        Source::Guest,
                        Signal::Ssh {
                            up: true,
                            detail: format!(
                                "host key {}",
                                &s.host_key_sha256[..16.min(s.host_key_sha256.len())]
                            ),
                        },
                    ));
                    up = true;
                    session = Some(s);
                }
                Err(e) => {
                    if up {
                        ssh_down(tx, &e);
                        up = false;
                    }
                    sleep_unless_stopped(stop, Duration::from_secs(1));
                    continue;
                }
            }
        }
        let s = session.as_ref().expect("connected above");
        match s.exec(&format!(
            "sudo -n sh -c '{}'",
            STATUS_SCRIPT.replace('\'', r"'\''")
        )) {
            Ok(out) => {
                if let Some(st) = out
                    .stdout
                    .lines()
                    .last()
                    .and_then(|l| parse_status(l, &s.host_key_sha256))
                {
                    let _ = tx.send((Source::Guest, Signal::GuestStatus(st)));
                }
            }
            Err(e) => {
                ssh_down(tx, &e);
                up = false;
                session = None;
                continue;
            }
        }
        sleep_unless_stopped(stop, poll);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_lines_parse() {
        let s = parse_status("abc|1|1|0|enabled|activating/start/success|0|2|/opt/openshift /etc/kubernetes/bootstrap-secrets |1|1700000000123456789|1\n", "hk").unwrap();
        assert_eq!(s.bootkube_state, "activating/start/success");
        assert!(s.live && s.bootkube_done && !s.install_to_disk_done);
        assert!(s.coreos_installer_done);
        assert_eq!(s.install_restarts, 2);
        assert_eq!(s.guest_time_ns, 1_700_000_000_123_456_789);
        assert_eq!(s.secure_boot, SecureBootState::On);
        let line = |sb: &str| format!("b|0|0|0||//|0|0||0|1|{sb}");
        assert_eq!(
            parse_status(&line("0"), "hk").unwrap().secure_boot,
            SecureBootState::Off
        );
        assert_eq!(
            parse_status(&line("-"), "hk").unwrap().secure_boot,
            SecureBootState::NoVariable
        );
        assert_eq!(
            s.bootstrap_files,
            ["/opt/openshift", "/etc/kubernetes/bootstrap-secrets"]
        );
        assert!(parse_status("garbage", "hk").is_none());
    }

    /// The status script itself, run by the host's sh with a stand-in systemctl that answers
    /// each property with its own name: one line that parses, with the unit's three states.
    #[test]
    fn the_status_script_gives_one_line_with_the_units_active_sub_state_and_result() {
        use std::os::unix::fs::PermissionsExt;
        let d = tempfile::tempdir().unwrap();
        let stub = d.path().join("systemctl");
        std::fs::write(
            &stub,
            "#!/bin/sh\ncase \"$1\" in show) echo \"$3\" ;; is-enabled) echo disabled ;; esac\n",
        )
        .unwrap();
        std::fs::set_permissions(&stub, std::fs::Permissions::from_mode(0o755)).unwrap();
        let path = format!("{}:{}", d.path().display(), std::env::var("PATH").unwrap());
        let out = std::process::Command::new("sh")
            .args(["-c", STATUS_SCRIPT])
            .env("PATH", path)
            .output()
            .unwrap();
        let text = String::from_utf8(out.stdout).unwrap();
        assert_eq!(text.lines().count(), 1, "{text}");
        let s = parse_status(&text, "hk").expect("parses");
        assert_eq!(s.bootkube_state, "ActiveState/SubState/Result");
        assert_eq!(s.bootkube_enabled, "disabled");
        assert!(s.guest_time_ns > 0);
        // The build host booted without the variable, or with it: either reads as a state.
        let efivar = std::path::Path::new(
            "/sys/firmware/efi/efivars/SecureBoot-8be4df61-93ca-11d2-aa0d-00e098032b8c",
        );
        if !efivar.exists() {
            assert_eq!(s.secure_boot, SecureBootState::NoVariable);
        }
    }
}
