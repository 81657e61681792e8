//! The names of minisno's faults, and nothing else: the one list that the fixture (which injects
//! them, images/minisno-install) and the harness (which checks a scenario's `[fixture] faults`
//! before anything starts, and lists them) both read. Neither side depends on the other.
//!
//! A fault is a name, or a name and a parameter after a colon (`operator-degraded:ingress`).

/// One fault of the list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FaultName {
    pub name: &'static str,
    /// What the part after the colon names, when the fault takes one.
    pub parameter: Option<&'static str>,
    /// The values the parameter may take; empty: any name.
    pub values: &'static [&'static str],
    /// What goes wrong, in a line.
    pub summary: &'static str,
}

impl FaultName {
    /// How a scenario spells it: `bootkube-fail`, `operator-degraded:<name>`.
    pub fn form(&self) -> String {
        match self.parameter {
            Some(p) => format!("{}:<{p}>", self.name),
            None => self.name.to_string(),
        }
    }
}

const fn plain(name: &'static str, summary: &'static str) -> FaultName {
    FaultName {
        name,
        parameter: None,
        values: &[],
        summary,
    }
}

/// A fault whose parameter is any name (an operator's).
const fn named(name: &'static str, summary: &'static str) -> FaultName {
    FaultName {
        name,
        parameter: Some("name"),
        values: &[],
        summary,
    }
}

/// The wait loops of the real post-reboot script (openshift/installer's
/// bootstrap-in-place-post-reboot.sh.template), in the order it runs them, as
/// `post-reboot-hang:<loop>` names them. The harness's table of the loops
/// (harness/src/flow/post_reboot.rs) uses the same names; a test there keeps the two in step.
pub const POST_REBOOT_LOOPS: &[&str] = &[
    "api",
    "bootstrap-configmap",
    "cvo-lease",
    "cpc-lease",
    "cvo-overrides",
    "csr",
    "kube-apiserver-operator",
    "static-pod",
    "cvo",
];

/// Every fault minisno knows, in the order its README lists them.
pub const FAULTS: &[FaultName] = &[
    plain(
        "bootkube-fail",
        "cluster-bootstrap fails; bootkube.service restarts every 5 s",
    ),
    plain(
        "bootkube-flaky",
        "cluster-bootstrap fails twice, then succeeds; bootkube.service restarts and resumes from its markers",
    ),
    plain("bootkube-hang", "cluster-bootstrap never finishes"),
    plain(
        "install-fail",
        "coreos-installer fails; install-to-disk.service restarts every 5 s",
    ),
    plain(
        "install-reset",
        "the machine resets while coreos-installer is a quarter into the write",
    ),
    plain(
        "copy-network-missing",
        "install-to-disk runs coreos-installer without -n: the installed system has none of the live system's network configuration (with DHCP on the network, a DHCP address instead of the static one)",
    ),
    plain(
        "stale-metadata",
        "late in bootkube the installation disk gets an old LVM volume group and an MD RAID array, active as udev would have made them on a disk that came with them; install-to-disk's coreos-installer refuses the busy disk, the assisted install wipes it first",
    ),
    plain("no-reboot", "the reboot is scheduled and cancelled"),
    plain(
        "disk-boot-panic",
        "the installed system panics early in its first boot",
    ),
    plain(
        "api-never-ready",
        "/readyz stays 503 and every resource answers 503",
    ),
    plain("node-not-ready", "the node never becomes Ready"),
    plain(
        "no-dns",
        "the harness withholds its DNS records for api, api-int and the routes; the node never registers",
    ),
    named(
        "operator-degraded",
        "that ClusterOperator turns Degraded; ClusterVersion reports Failing",
    ),
    named(
        "operator-unavailable",
        "that ClusterOperator never becomes Available",
    ),
    plain(
        "post-reboot-fail",
        "the post-reboot script exits 1; bootstrap files remain",
    ),
    FaultName {
        name: "post-reboot-hang",
        parameter: Some("loop"),
        values: POST_REBOOT_LOOPS,
        summary: "the post-reboot script's wait loop of that name never sees its condition and goes round forever, printing the real script's lines (loops: api, bootstrap-configmap, cvo-lease, cpc-lease, cvo-overrides, csr, kube-apiserver-operator, static-pod, cvo)",
    },
    plain(
        "etcd-member-not-removed",
        "the etcd operator never removes the bootstrap member",
    ),
    plain(
        "network-type-drift",
        "the cluster reports another network type than was asked",
    ),
    plain(
        "oom-kill",
        "after the reboot a process is OOM-killed; the install succeeds",
    ),
    plain(
        "gather-hang",
        "a service record in /var/log/openshift is a FIFO no one writes: reading it blocks forever; the install is not affected",
    ),
    plain(
        "rootfs-404",
        "the harness's rootfs server answers 404 for the minimal ISO's root filesystem; the live boot fails",
    ),
    plain(
        "rootfs-corrupt",
        "the harness's rootfs server changes one byte in the middle of the root filesystem; the live boot fails its digest check",
    ),
    plain(
        "unsigned-loader",
        "the installer's stream names a live ISO whose EFI boot loader is unsigned (GRUB as grub-mkrescue builds it, no shim); under Secure Boot the firmware refuses it and the live boot fails",
    ),
    plain(
        "journal-cut",
        "mid-bootkube the guest kills the SSH session of every journal reader, as a dropped connection would; the install is not affected",
    ),
    plain(
        "apps-dns",
        "the harness gives the route names to the node's /etc/hosts but not to its DNS; the operators that check their routes fail, as pods resolve through DNS only",
    ),
    plain(
        "no-hostname",
        "the harness's DHCP gives the node no hostname; node-valid-hostname waits five minutes and the node registers as localhost.localdomain",
    ),
    plain(
        "multipath-path-lost",
        "the harness takes one path of the multipath installation disk away from the VM during the write to disk and gives it back later in the write; the install goes on over the other path and passes",
    ),
    plain(
        "multipath-no-kargs",
        "the install of a multipath installation disk passes no multipath kernel arguments; the installed system runs its root on a single path, and disk-boot fails saying so",
    ),
];

/// A fault as a scenario names it, checked against the list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Named<'a> {
    pub fault: &'static FaultName,
    pub parameter: Option<&'a str>,
}

/// Why a fault's text is not one of the list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownFault(pub String);

impl std::fmt::Display for UnknownFault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let valid: Vec<String> = FAULTS.iter().map(FaultName::form).collect();
        write!(
            f,
            "unknown fixture fault {:?}; valid faults: {}",
            self.0,
            valid.join(", ")
        )?;
        for fault in FAULTS.iter().filter(|x| !x.values.is_empty()) {
            write!(
                f,
                "; {}'s <{}> is one of: {}",
                fault.name,
                fault.parameter.unwrap_or_default(),
                fault.values.join(", ")
            )?;
        }
        Ok(())
    }
}

impl std::error::Error for UnknownFault {}

/// `text` (surrounding spaces ignored) as a fault of the list: its name, and its parameter when
/// it takes one (which must then be given, non-empty, and one of its values when it lists
/// them).
pub fn parse(text: &str) -> Result<Named<'_>, UnknownFault> {
    let text = text.trim();
    let (name, parameter) = match text.split_once(':') {
        Some((n, p)) => (n, Some(p)),
        None => (text, None),
    };
    FAULTS
        .iter()
        .find(|f| f.name == name && f.parameter.is_some() == parameter.is_some())
        .filter(|_| parameter.is_none_or(|p| !p.is_empty()))
        .filter(|f| f.values.is_empty() || parameter.is_some_and(|p| f.values.contains(&p)))
        .map(|fault| Named { fault, parameter })
        .ok_or_else(|| UnknownFault(text.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The fault's form with a parameter it takes: its first value, or an operator's name.
    fn example(f: &FaultName) -> (String, Option<&'static str>) {
        let value = f
            .parameter
            .map(|_| f.values.first().copied().unwrap_or("ingress"));
        let text = match value {
            Some(v) => format!("{}:{v}", f.name),
            None => f.name.to_string(),
        };
        (text, value)
    }

    #[test]
    fn every_listed_fault_parses_in_its_own_form() {
        for f in FAULTS {
            let (text, value) = example(f);
            let named = parse(&text).unwrap();
            assert_eq!(named.fault, f);
            assert_eq!(named.parameter, value);
        }
    }

    #[test]
    fn a_fault_that_lists_its_values_takes_only_those_and_says_which() {
        for l in POST_REBOOT_LOOPS {
            let text = format!("post-reboot-hang:{l}");
            assert_eq!(parse(&text).unwrap().parameter, Some(*l));
        }
        let e = parse("post-reboot-hang:kubelet").unwrap_err().to_string();
        assert!(
            e.contains("unknown fixture fault \"post-reboot-hang:kubelet\""),
            "{e}"
        );
        assert!(e.contains("post-reboot-hang:<loop>"), "{e}");
        assert!(
            e.contains("post-reboot-hang's <loop> is one of: api, bootstrap-configmap, cvo-lease, cpc-lease, cvo-overrides, csr, kube-apiserver-operator, static-pod, cvo"),
            "{e}"
        );
        // An operator's name stays free.
        assert!(parse("operator-degraded:anything-at-all").is_ok());
    }

    #[test]
    fn names_are_unique() {
        let mut names: Vec<&str> = FAULTS.iter().map(|f| f.name).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), FAULTS.len());
    }

    #[test]
    fn a_parameter_is_required_exactly_where_the_fault_takes_one() {
        for bad in [
            "operator-degraded",
            "operator-degraded:",
            "post-reboot-hang",
            "post-reboot-hang:",
            "bootkube-fail:x",
            "nope",
            "",
        ] {
            let e = parse(bad).unwrap_err();
            assert_eq!(e.0, bad);
            assert!(
                e.to_string().contains("valid faults: bootkube-fail, "),
                "{e}"
            );
        }
        assert_eq!(parse(" oom-kill ").unwrap().fault.name, "oom-kill");
    }
}
