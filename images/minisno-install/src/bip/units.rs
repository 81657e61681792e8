//! The systemd units of the live system and of the installed one, with the real units' names,
//! ordering, conditions and restart policies (docs/bip-contract.md §5, §6).
//!
//! bootkube.service restarts on failure every 5 s without end, as the real one: like the real
//! unit it sets no start limit of its own, and one start per 5 s stays below systemd's default
//! limit (5 starts within 10 s), so the limit never stops it. Each run of bootkube.sh resumes
//! after the stages whose markers say they are done.

pub const LIVE_UNITS: &[(&str, &str)] = &[
    (
        "release-image.service",
        "[Unit]\nDescription=Download the OpenShift Release Image\nWants=network-online.target\nAfter=network-online.target\n\n[Service]\nType=oneshot\nExecStart=/usr/local/bin/release-image-download.sh\nRemainAfterExit=true\n\n[Install]\nWantedBy=multi-user.target\n",
    ),
    (
        "kubelet.service",
        "[Unit]\nDescription=Kubernetes Kubelet\nWants=release-image.service\nAfter=release-image.service\n\n[Service]\nExecStart=/usr/local/bin/kubelet.sh\nRestart=always\nRestartSec=10\n\n[Install]\nWantedBy=multi-user.target\n",
    ),
    (
        "bootkube.service",
        "[Unit]\nDescription=Bootstrap a Kubernetes cluster\nWants=kubelet.service\nAfter=kubelet.service\nConditionPathExists=!/opt/openshift/.bootkube.done\n\n[Service]\nWorkingDirectory=/opt/openshift\nExecStart=/usr/local/bin/bootkube.sh\nRestart=on-failure\nRestartSec=5s\n\n[Install]\nWantedBy=multi-user.target\n",
    ),
    (
        "install-to-disk.service",
        "[Unit]\nDescription=Install to disk\nRequires=bootkube.service\nWants=bootkube.service\nAfter=bootkube.service\nConditionPathExists=!/opt/openshift/.install-to-disk.done\n\n[Service]\nWorkingDirectory=/opt/openshift\nExecStart=/usr/local/bin/install-to-disk.sh\nRestart=on-failure\nRestartSec=5s\n\n[Install]\nWantedBy=multi-user.target\n",
    ),
    (
        "progress.service",
        "[Unit]\nDescription=Report the completion of the cluster bootstrap process\nWants=bootkube.service\nAfter=bootkube.service\n\n[Service]\nExecStart=/usr/local/bin/progress.sh\nRestart=on-failure\nRestartSec=5s\n\n[Install]\nWantedBy=multi-user.target\n",
    ),
    (
        "approve-csr.service",
        "[Unit]\nDescription=Approve CSRs during bootstrap phase\nWants=bootkube.service\nAfter=bootkube.service\n\n[Service]\nType=oneshot\nExecStart=/usr/local/bin/approve-csr.sh\nRemainAfterExit=true\n\n[Install]\nWantedBy=multi-user.target\n",
    ),
];

pub const DISK_BOOTKUBE_UNIT: &str = "[Unit]\nDescription=Bootkube - bootstrap in place post reboot\nWants=kubelet.service\nAfter=kubelet.service\nConditionPathExists=/etc/kubernetes/bootstrap-secrets/kubeconfig\n\n[Service]\nType=oneshot\nExecStart=/usr/local/bin/bootstrap-in-place-post-reboot.sh\nRestartSec=5s\n\n[Install]\nWantedBy=multi-user.target\n";

/// The installed system's kubelet, ordered as the machine-config operator's (4.15 and later):
/// after kubelet-dependencies.target, which it requires. Through that target it only wants
/// node-valid-hostname.service, so a node that never gets a hostname still starts its kubelet
/// once the wait times out, and registers under the name it has.
pub const DISK_KUBELET_UNIT: &str = "[Unit]\nDescription=Kubernetes Kubelet (minisno: runs minisno-apiserver)\nRequires=kubelet-dependencies.target\nAfter=kubelet-dependencies.target\n\n[Service]\nExecStart=/usr/local/bin/kubelet.sh\nRestart=always\nRestartSec=2\n\n[Install]\nWantedBy=multi-user.target\n";

/// The machine-config operator's kubelet-dependencies.target
/// (templates/common/_base/units/kubelet-dependencies.target.yaml), less the units minisno has
/// not got (CRI-O's wipe, rpc-statd, chrony-wait). A target orders itself after what it
/// requires or wants, so it is reached once the network is online.
pub const KUBELET_DEPENDENCIES_TARGET: &str = "[Unit]\nDescription=Dependencies necessary to run kubelet\nRequires=basic.target network-online.target\nWants=NetworkManager-wait-online.service\n";

/// The machine-config operator's node-valid-hostname.service
/// (templates/common/_base/units/node-valid-hostname.service.yaml): up to five minutes for a
/// hostname that is not localhost, before the kubelet's dependencies are reached. It is wanted
/// by them, not required: when it times out the kubelet starts anyway. (Before 4.15 the unit
/// was RequiredBy and Before network-online.target, which the kubelet only wanted: the same
/// outcome.)
pub const NODE_VALID_HOSTNAME_UNIT: &str = "[Unit]\nDescription=Wait for a non-localhost hostname\nBefore=kubelet-dependencies.target\n\n[Service]\nType=oneshot\nRemainAfterExit=yes\nUser=root\nExecStart=/usr/local/bin/mco-hostname --wait\n\n# Wait up to 5min for the node to get a non-localhost name\nTimeoutSec=300\n\n[Install]\nWantedBy=kubelet-dependencies.target\n";

/// disk-boot-panic: the installed system panics early in its first boot, as a broken kernel or
/// initramfs would; the pvpanic device reports it to the host.
pub const PANIC_UNIT: &str = "[Unit]\nDescription=minisno fault disk-boot-panic\nDefaultDependencies=no\nAfter=systemd-udev-settle.service systemd-modules-load.service\n\n[Service]\nType=oneshot\nExecStart=/bin/sh -c 'modprobe pvpanic 2>/dev/null; echo 1 > /proc/sys/kernel/sysrq; echo c > /proc/sysrq-trigger'\n\n[Install]\nWantedBy=sysinit.target\n";
