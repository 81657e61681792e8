//! The shell snippets that act each fault out where the real failure would happen, and the
//! faults the simulated control plane acts out.

use super::options::{Fault, FixtureOptions};

/// cluster-bootstrap failing the way it does when its pods never come up. The unit restarts it.
const CLUSTER_BOOTSTRAP_FAILS: &str =
    "echo \"Error: error while checking pod status: timed out waiting for the condition\" >&2
            echo \"Tearing down temporary bootstrap control plane...\"
            false";

/// bootkube-flaky: the same failure on the first two attempts only; the attempts are counted
/// in a file, since each attempt is a new run of bootkube.sh after a restart of the unit.
const CLUSTER_BOOTSTRAP_FAILS_TWICE: &str = "attempts=$(( $(cat /opt/openshift/.minisno-cb-bootstrap-attempts 2>/dev/null || echo 0) + 1 ))
            echo \"$attempts\" > /opt/openshift/.minisno-cb-bootstrap-attempts
            if [ \"$attempts\" -le 2 ]; then
                echo \"Error: error while checking pod status: timed out waiting for the condition\" >&2
                echo \"Tearing down temporary bootstrap control plane...\"
                false
            fi";

const CLUSTER_BOOTSTRAP_HANGS: &str = "while true; do echo \"Pod Status:openshift-kube-apiserver/kube-apiserver        Pending\"; sleep 30; done";

/// A truncated image: coreos-installer fails mid-write with its own error, resets the
/// partition table, and the unit restarts every 5 s.
const TRUNCATED_IMAGE: &str = "head -c 48M \"$image\" > /var/tmp/metal-truncated.raw.zst
    image=/var/tmp/metal-truncated.raw.zst";

/// install-reset: a watcher, started beside coreos-installer, that resets the machine without
/// a sync once 64 MiB (a quarter of the image) have reached the disk since the write began:
/// no `Install complete.`, no marker, the partial write left on the disk. The disk's
/// sectors-written counter (field 7 of /sys/block/DEV/stat) measures what reached it.
const RESET_MID_WRITE: &str = "minisno_dev=$(basename \"$(readlink -f \"$1\")\")
    minisno_from=$(awk '{print $7}' \"/sys/block/$minisno_dev/stat\")
    (
        until [ $(( $(awk '{print $7}' \"/sys/block/$minisno_dev/stat\") - minisno_from )) -ge 131072 ]; do
            sleep 0.2
        done
        echo 1 > /proc/sys/kernel/sysrq
        echo b > /proc/sysrq-trigger
    ) </dev/null >/dev/null 2>&1 &";

const POST_REBOOT_FAILS: &str =
    "echo \"error: failed to restore the bootstrap-in-place cluster state: exit status 1\" >&2
exit 1";

/// A real OOM kill, not a printed imitation: a process that grows without bound in a 32 MiB
/// cgroup. The kernel and systemd report it in their own words; the install goes on.
const MEMORY_HOG: &str = "systemd-run --unit=minisno-memory-hog --property=MemoryMax=32M --property=MemorySwapMax=0 tail /dev/zero";

/// gather-hang: a FIFO among the service records, which no one ever writes, so a read of it
/// blocks forever (GNU tar, as bip-gather runs it, archives a FIFO without reading it). Made
/// only if absent: under `set -e` a second mkfifo, after a restart of the unit, would fail.
const STALLED_RECORD: &str = "mkdir -p /var/log/openshift
[ -p /var/log/openshift/minisno-stalled.json ] || mkfifo /var/log/openshift/minisno-stalled.json";

/// journal-cut: the SSH sessions of every process that follows the journal (`journalctl ...
/// -f`), killed with SIGKILL from inside the guest: each sshd process above the reader but the
/// listening daemon (whose parent is pid 1), so the TCP connection closes as a cut would. The
/// line it writes is read only by a reader that came back. A slow guest may reach bootkube's
/// middle before the harness follows the journal: the fault waits for a reader (at most 180 s,
/// then says it cut nothing), so that the cut happens on every run, not only on fast ones.
const CUT_JOURNAL_READERS: &str = r#"minisno_waited=0
            minisno_done=""
            while [ -z "$minisno_done" ]; do
                for minisno_p in /proc/[0-9]*; do
                    case "$(tr '\0' ' ' < "$minisno_p/cmdline" 2>/dev/null)" in
                        "journalctl "*" -f "*) ;;
                        *) continue ;;
                    esac
                    minisno_reader=${minisno_p#/proc/}
                    minisno_s=$minisno_reader
                    minisno_cut=""
                    while minisno_parent=$(awk '/^PPid:/ {print $2}' "/proc/$minisno_s/status" 2>/dev/null) && [ "${minisno_parent:-1}" -gt 1 ]; do
                        case "$(cat "/proc/$minisno_s/comm" 2>/dev/null)" in
                            sshd|sshd-session) minisno_cut="$minisno_cut $minisno_s" ;;
                        esac
                        minisno_s=$minisno_parent
                    done
                    if [ -n "$minisno_cut" ]; then
                        kill -KILL $minisno_cut 2>/dev/null || true
                        echo "minisno fault journal-cut: killed the SSH session (sshd$minisno_cut) of journal reader $minisno_reader after waiting $minisno_waited s for one"
                        minisno_done=1
                    fi
                done
                [ -n "$minisno_done" ] && break
                if [ "$minisno_waited" -ge 180 ]; then
                    echo "minisno fault journal-cut: no journal reader over SSH within 180 s: nothing cut"
                    break
                fi
                sleep 1
                minisno_waited=$((minisno_waited + 1))
            done"#;

/// stale-metadata: the installation disk as it would arrive with an old system's storage on
/// it, made late in bootkube (the fixture cannot prepare the disk image on the host without
/// LVM and MD tools there), once: a GPT, an LVM volume group with an active logical volume on
/// partition 1, a running MD RAID1 array on partition 2. udev activates such metadata on the
/// live system (LVM's autoactivation, mdadm's incremental assembly), which is what makes the
/// disk busy for coreos-installer. `$1` is the installation disk.
const STALE_METADATA: &str = r#"if [ ! -e /opt/openshift/.minisno-stale-metadata ]; then
                minisno_disk=$(readlink -f "$1")
                case "$minisno_disk" in
                    *[0-9]) minisno_part=${minisno_disk}p ;;
                    *) minisno_part=$minisno_disk ;;
                esac
                echo "minisno fault stale-metadata: an old LVM volume group and MD RAID array on $minisno_disk"
                printf 'label: gpt
size=64MiB
size=64MiB
' | sfdisk --quiet --wipe always "$minisno_disk"
                udevadm settle
                pvcreate -ff -y "${minisno_part}1"
                vgcreate minisno-stale "${minisno_part}1"
                lvcreate -y -n old -L 16M minisno-stale
                mdadm --create /dev/md/minisno-stale --run --force --level=1 --raid-devices=1 --metadata=1.2 "${minisno_part}2"
                udevadm settle
                touch /opt/openshift/.minisno-stale-metadata
            fi"#;

/// The snippets pasted into the scripts; `:` where no fault applies.
pub struct FaultSnippets {
    /// At the start of bootkube.sh; independent of `bootkube`, so it combines with its faults.
    pub bootkube_start: &'static str,
    pub bootkube: &'static str,
    /// In the middle of bootkube's stages (kube-scheduler-bootstrap).
    pub bootkube_mid: &'static str,
    /// Late in bootkube (the etcd-down stage, before master.ign is written), given the
    /// installation disk as `$1`.
    pub bootkube_late: &'static str,
    pub install: &'static str,
    /// install-to-disk's `-n ` (`--copy-network`, as the real template has it), or nothing
    /// with copy-network-missing.
    pub copy_network: &'static str,
    pub post_reboot: &'static str,
}

impl FaultSnippets {
    pub fn for_options(o: &FixtureOptions) -> FaultSnippets {
        let pick = |choices: &[(Fault, &'static str)]| {
            choices
                .iter()
                .find(|(f, _)| o.has(f))
                .map_or(":", |(_, s)| *s)
        };
        FaultSnippets {
            bootkube_start: pick(&[(Fault::GatherHang, STALLED_RECORD)]),
            bootkube: pick(&[
                (Fault::BootkubeFail, CLUSTER_BOOTSTRAP_FAILS),
                (Fault::BootkubeFlaky, CLUSTER_BOOTSTRAP_FAILS_TWICE),
                (Fault::BootkubeHang, CLUSTER_BOOTSTRAP_HANGS),
            ]),
            bootkube_mid: pick(&[(Fault::JournalCut, CUT_JOURNAL_READERS)]),
            bootkube_late: pick(&[(Fault::StaleMetadata, STALE_METADATA)]),
            install: pick(&[
                (Fault::InstallFail, TRUNCATED_IMAGE),
                (Fault::InstallReset, RESET_MID_WRITE),
            ]),
            copy_network: if o.has(&Fault::CopyNetworkMissing) {
                ""
            } else {
                "-n "
            },
            post_reboot: pick(&[
                (Fault::PostRebootFail, POST_REBOOT_FAILS),
                (Fault::OomKill, MEMORY_HOG),
            ]),
        }
    }
}

/// The faults the simulated control plane acts out.
pub fn apiserver_faults(o: &FixtureOptions) -> Vec<String> {
    o.faults
        .iter()
        .filter(|f| {
            matches!(
                f,
                Fault::ApiNeverReady
                    | Fault::NodeNotReady
                    | Fault::OperatorDegraded(_)
                    | Fault::OperatorUnavailable(_)
                    | Fault::EtcdMemberNotRemoved
                    | Fault::NetworkTypeDrift
            )
        })
        .map(Fault::name)
        .collect()
}
