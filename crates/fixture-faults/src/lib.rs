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
        summary,
    }
}

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
    FaultName {
        name: "operator-degraded",
        parameter: Some("name"),
        summary: "that ClusterOperator turns Degraded; ClusterVersion reports Failing",
    },
    FaultName {
        name: "operator-unavailable",
        parameter: Some("name"),
        summary: "that ClusterOperator never becomes Available",
    },
    plain(
        "post-reboot-fail",
        "the post-reboot script exits 1; bootstrap files remain",
    ),
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
        )
    }
}

impl std::error::Error for UnknownFault {}

/// `text` (surrounding spaces ignored) as a fault of the list: its name, and its parameter when
/// it takes one (which must then be given, non-empty).
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
        .map(|fault| Named { fault, parameter })
        .ok_or_else(|| UnknownFault(text.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_listed_fault_parses_in_its_own_form() {
        for f in FAULTS {
            let text = f.form().replace("<name>", "ingress");
            let named = parse(&text).unwrap();
            assert_eq!(named.fault, f);
            assert_eq!(named.parameter, f.parameter.map(|_| "ingress"));
        }
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
