//! The guest's collectors: commands over SSH, as root through `sudo -n`, each in its own
//! session and under the guest's own `timeout` as well as the harness's limit. Which set runs
//! depends on the system the guest is in when the run fails: the live system's is what
//! `installer-gather.sh` collects for a bootstrap; the installed system's is the bootstrap log
//! bundle, the whole journal, and the kubelet's and CRI-O's status.

use std::time::Duration;

use super::{Collector, Failure, ProbeError, Sink};
use crate::guest::ssh::SshTarget;

/// The exit of a command that found nothing to collect (a file that does not exist, a unit
/// that is not installed): the collector is skipped, saying so.
const NOTHING: i32 = 99;

/// How long a collector may take to log in: a 2-vCPU guest under TCG, busy with what failed
/// (coreos-installer restarting every 5 s), can take many seconds to answer a handshake.
const LOGIN: Duration = Duration::from_secs(20);

/// The largest output kept from one command.
const MAX_OUTPUT: u64 = 128 << 20;

/// The bootstrap units of the live system, as installer-gather.sh gathers their journals.
const LIVE_UNITS: &[&str] = &[
    "release-image.service",
    "release-image-download.service",
    "bootkube.service",
    "kubelet.service",
    "crio.service",
    "approve-csr.service",
    "progress.service",
    "install-to-disk.service",
];

/// The live system's log bundle, made by its own installer-gather.sh as `openshift-install
/// gather bootstrap` runs it over SSH on a bootstrap host (in the installer's layout, which
/// `sno-harness analyze` reads), with this gather id.
pub const LIVE_BUNDLE: &str = "live/log-bundle.tar.gz";
const LIVE_BUNDLE_ID: &str = "gather";

/// What to do with a command's output before it is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Keep {
    AsIs,
    /// An Ignition config: written with its secrets replaced (see `redact`).
    RedactedIgnition,
}

/// One command and where its output goes.
#[derive(Debug, Clone)]
struct GuestCommand {
    file: String,
    /// A shell command; exits [`NOTHING`] when there is nothing to collect.
    command: String,
    keep: Keep,
    /// A multiple of the limit: the whole journal takes longer than a listing.
    weight: u32,
}

fn command(file: &str, command: &str) -> GuestCommand {
    GuestCommand {
        file: file.into(),
        command: command.into(),
        keep: Keep::AsIs,
        weight: 1,
    }
}

/// What both systems give: the kernel's log, mounts, block devices, failed units.
fn common(system: &str) -> Vec<GuestCommand> {
    vec![
        command(&format!("{system}/dmesg.txt"), "dmesg"),
        command(
            &format!("{system}/mounts.txt"),
            "findmnt -A 2>/dev/null || cat /proc/self/mountinfo",
        ),
        command(
            &format!("{system}/block-devices.txt"),
            "lsblk -a -o NAME,KNAME,TYPE,SIZE,RO,FSTYPE,LABEL,PARTLABEL,MOUNTPOINT,MODEL,SERIAL",
        ),
        command(
            &format!("{system}/failed-units.txt"),
            "systemctl list-units --failed --all --no-pager",
        ),
    ]
}

/// The live system's: the bootstrap units' journals, the service records, the log bundle of
/// its installer-gather.sh, /opt/openshift with its markers, master.ign redacted.
fn live() -> Vec<GuestCommand> {
    let mut v: Vec<GuestCommand> = LIVE_UNITS
        .iter()
        .map(|u| {
            command(
                &format!("live/journal/{u}.txt"),
                &format!("journalctl -b --no-pager -o short-precise -u {u}"),
            )
        })
        .collect();
    v.push(command(
        "live/service-records.txt",
        "for f in /var/log/openshift/*.json; do [ -e \"$f\" ] || continue; \
         printf '== %s\\n' \"$f\"; head -c 1048576 \"$f\"; echo; done",
    ));
    v.push(command(
        "live/opt-openshift.txt",
        &format!(
            "[ -d /opt/openshift ] || exit {NOTHING}; \
             find /opt/openshift -maxdepth 2 -printf '%M %10s %TY-%Tm-%Td %TH:%TM:%.2TS %p\\n' | sort -k5"
        ),
    ));
    v.push(GuestCommand {
        weight: 2,
        ..command(LIVE_BUNDLE, &format!(
            "[ -x /usr/local/bin/installer-gather.sh ] || exit {NOTHING}; \
             d=$(mktemp -d) || exit 1; \
             TAR_FILE=$d/b.tar.gz /usr/local/bin/installer-gather.sh --id {LIVE_BUNDLE_ID} >/dev/null 2>&1; \
             cat $d/b.tar.gz; rc=$?; rm -rf $d /tmp/artifacts-{LIVE_BUNDLE_ID}; exit $rc"
        ))
    });
    v.push(GuestCommand {
        keep: Keep::RedactedIgnition,
        ..command(
            "live/master.ign.redacted.json",
            &format!(
                "[ -e /opt/openshift/master.ign ] || exit {NOTHING}; head -c {MAX_OUTPUT} /opt/openshift/master.ign"
            ),
        )
    });
    v.extend(common("live"));
    v
}

/// `systemctl status` of a unit: inactive or failed is still a status; not installed is
/// nothing to collect.
fn unit_status(file: &str, unit: &str) -> GuestCommand {
    command(
        file,
        &format!(
            "systemctl status {unit} --no-pager -l --lines=100; rc=$?; \
             [ $rc -eq 4 ] && exit {NOTHING}; [ $rc -le 3 ] && exit 0; exit $rc"
        ),
    )
}

/// The installed system's: the bootstrap log bundle (written by the live bootkube, carried
/// in master.ign), every unit's journal of every boot, the kubelet's and CRI-O's status.
fn installed() -> Vec<GuestCommand> {
    let bundle = "/var/log/log-bundle-bootstrap.tar.gz";
    let mut v = vec![
        command(
            "installed/log-bundle-bootstrap.tar.gz",
            &format!("[ -e {bundle} ] || exit {NOTHING}; cat {bundle}"),
        ),
        GuestCommand {
            weight: 2,
            ..command(
                "installed/journal.txt",
                "journalctl --no-pager -o short-precise",
            )
        },
        unit_status("installed/kubelet-status.txt", "kubelet.service"),
        unit_status("installed/crio-status.txt", "crio.service"),
    ];
    v.extend(common("installed"));
    v
}

/// `'text'` for sh.
fn sh_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}

/// The command line the guest runs: as root, cut by the guest at `limit` (and killed 5 s
/// later if it ignores that).
fn wrapped(c: &GuestCommand, limit: Duration) -> String {
    format!(
        "sudo -n timeout -k 5 {} sh -c {}",
        limit.as_secs().max(1),
        sh_quote(&c.command)
    )
}

/// Which system the guest is in, asked over SSH within `within`: Ok(true) for the live
/// system (CoreOS's live marker), Ok(false) for the installed one.
pub async fn probe(target: &SshTarget, within: Duration) -> Result<bool, ProbeError> {
    let target = target.clone();
    let task = tokio::task::spawn_blocking(move || {
        let s = target.wait_for_ssh(within)?;
        s.set_io_timeout(within);
        Ok(s.exec("test -e /run/ostree-live")?.status == 0)
    });
    match tokio::time::timeout(within + Duration::from_secs(10), task).await {
        Ok(Ok(r)) => r,
        Ok(Err(e)) => Err(e.into()),
        Err(_) => Err(ProbeError::NoAnswer(within)),
    }
}

/// The collectors of the system the guest is in.
pub fn collectors(target: &SshTarget, live_system: bool, limit: Duration) -> Vec<Collector> {
    let set = if live_system { live() } else { installed() };
    set.into_iter()
        .map(|c| {
            let limit = limit * c.weight;
            let name = c.file.clone();
            let target = target.clone();
            // The harness's guard is the login's time and a little more than the guest's own
            // cut, so that a command the guest cuts comes back with what it wrote.
            Collector::new(name, LOGIN + limit + Duration::from_secs(10), move |sink| {
                Box::pin(async move {
                    tokio::task::spawn_blocking(move || run_command(&target, &c, limit, &sink))
                        .await
                        .map_err(|e| e.to_string())?
                })
            })
        })
        .collect()
}

/// Runs one command in its own session and writes what it printed.
fn run_command(
    target: &SshTarget,
    c: &GuestCommand,
    limit: Duration,
    sink: &Sink,
) -> Result<Option<String>, Failure> {
    let session = target.wait_for_ssh(LOGIN).map_err(|e| e.to_string())?;
    session.set_io_timeout(limit + Duration::from_secs(8));
    let out = session
        .exec_bytes(&wrapped(c, limit), MAX_OUTPUT)
        .map_err(|e| e.to_string())?;
    match out.status {
        NOTHING => return Ok(Some(nothing_reason(c))),
        // timeout(1)'s exits: 124 on the limit, 137 when it had to kill.
        124 | 137 => {
            sink.write(&c.file, &out.stdout)?;
            return Err(Failure::Cut(format!(
                "cut at its limit in the guest of {} s; {} bytes kept",
                limit.as_secs(),
                out.stdout.len()
            )));
        }
        _ => {}
    }
    let bytes = match c.keep {
        Keep::AsIs => out.stdout,
        Keep::RedactedIgnition => crate::secrets::ignition::redacted(&out.stdout)
            .map_err(|e| Failure::Failed(e.to_string()))?,
    };
    sink.write(&c.file, &bytes)?;
    if out.status != 0 {
        return Err(Failure::Failed(format!(
            "exited {}: {}",
            out.status,
            crate::util::out::printable(out.stderr.trim())
        )));
    }
    Ok(None)
}

fn nothing_reason(c: &GuestCommand) -> String {
    match c.command.split_once(" ] || exit") {
        Some((test, _)) => format!(
            "nothing to collect: {} does not exist",
            test.rsplit(' ').next().unwrap_or("")
        ),
        None => "nothing to collect: the unit is not installed".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_command_is_quoted_whole_for_the_guest_shell() {
        let c = command("x.txt", "printf '%s\\n' \"$f\"; echo it's");
        let line = wrapped(&c, Duration::from_secs(20));
        assert_eq!(
            line,
            "sudo -n timeout -k 5 20 sh -c 'printf '\\''%s\\n'\\'' \"$f\"; echo it'\\''s'"
        );
        // What sh makes of it is the command itself.
        let out = std::process::Command::new("sh")
            .args(["-c", &format!("printf %s {}", sh_quote(&c.command))])
            .output()
            .unwrap();
        assert_eq!(String::from_utf8(out.stdout).unwrap(), c.command);
    }

    #[test]
    fn each_system_has_its_own_set_and_every_file_is_its_own() {
        let (live, installed) = (live(), installed());
        for set in [&live, &installed] {
            let mut files: Vec<&str> = set.iter().map(|c| c.file.as_str()).collect();
            files.sort();
            files.dedup();
            assert_eq!(files.len(), set.len());
        }
        assert!(live.iter().all(|c| c.file.starts_with("live/")));
        assert!(installed.iter().all(|c| c.file.starts_with("installed/")));
        assert!(live
            .iter()
            .any(|c| c.file == "live/journal/bootkube.service.txt"));
        assert!(live.iter().any(
            |c| c.file == LIVE_BUNDLE && c.command.contains("installer-gather.sh --id gather")
        ));
        assert!(live
            .iter()
            .any(|c| c.keep == Keep::RedactedIgnition && c.command.contains("master.ign")));
        assert!(installed
            .iter()
            .any(|c| c.command.contains("/var/log/log-bundle-bootstrap.tar.gz")));
    }

    #[test]
    fn nothing_to_collect_names_what_is_missing() {
        let bundle = &installed()[0];
        assert_eq!(
            nothing_reason(bundle),
            "nothing to collect: /var/log/log-bundle-bootstrap.tar.gz does not exist"
        );
        let kubelet = unit_status("k.txt", "kubelet.service");
        assert_eq!(
            nothing_reason(&kubelet),
            "nothing to collect: the unit is not installed"
        );
    }

    #[test]
    fn a_unit_status_counts_inactive_as_a_status_and_missing_as_nothing() {
        let c = unit_status("k.txt", "kubelet.service");
        for (rc, want) in [(0, 0), (1, 0), (3, 0), (4, NOTHING), (5, 5)] {
            let script = c.command.replace(
                "systemctl status kubelet.service --no-pager -l --lines=100",
                &format!("(exit {rc})"),
            );
            let got = std::process::Command::new("sh")
                .args(["-c", &script])
                .status()
                .unwrap()
                .code();
            assert_eq!(got, Some(want), "systemctl exit {rc}");
        }
    }
}
