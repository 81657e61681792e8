//! Which backend runs the VM, known in this one place: its parsing from the command line, where
//! it runs (this host or a remote libvirt host), and what it can do. The rest of the harness
//! asks [`Backend::can`] and the methods below instead of naming a backend; every match over
//! backends is here or in `running.rs`, exhaustive, so a new backend fails to compile wherever it
//! must be handled instead of passing for QEMU.

use crate::util::private::DirAccess;

/// Which backend runs the VM (`--backend`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Backend {
    /// QEMU started by the harness itself (`--backend`'s default).
    #[default]
    Qemu,
    /// A transient libvirt domain on `uri` (`qemu:///system` by default).
    Libvirt { uri: String },
    /// A machine the harness did not boot and does not own (`observe`): reached at the
    /// addresses it was given, its console only when one was given (`external.rs`).
    External(ExternalMachine),
    /// A machine the harness boots through its BMC's Redfish (`bmc_boot.rs`): the run's live
    /// ISO as virtual media, served by the harness; judged, as `External`, through SSH and the
    /// API at the addresses given.
    Redfish(BmcMachine),
    /// A test-only backend whose VM runs nothing (`stand_in.rs`): it shows which files a new
    /// backend touches.
    #[cfg(test)]
    StandIn,
}

/// How the harness reaches a machine it did not boot: the machine's SSH and API as this host
/// reaches them, the user to log in as, and its console when there is a way to read it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExternalMachine {
    pub ssh: std::net::SocketAddr,
    pub user: String,
    /// Where this host reaches the machine's API (port 6443 on the node, or a forward of it).
    pub api: std::net::SocketAddr,
    pub console: Option<ConsoleSource>,
}

/// A machine booted through its BMC: the BMC, how its credentials are had (never from the
/// command line), the address the BMC fetches the live ISO from the harness at, and where this
/// host reaches the machine's SSH and API once it runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BmcMachine {
    /// `http[s]://HOST[:PORT]`, or `.../redfish/v1/Systems/ID` naming the system.
    pub bmc: String,
    /// An owner-only file of `USER:PASSWORD`; `None`: the environment's
    /// `SNO_BMC_USER`/`SNO_BMC_PASSWORD`.
    pub credentials: Option<std::path::PathBuf>,
    /// The address of this host the BMC reaches: the ISO's server listens there.
    pub serve_at: std::net::IpAddr,
    pub ssh: std::net::SocketAddr,
    pub user: String,
    pub api: std::net::SocketAddr,
    /// How the BMC's https certificate is checked (the system's roots, a CA file, or its
    /// fingerprint).
    pub trust: crate::vm::redfish::Trust,
}

impl BmcMachine {
    /// The flags that name this machine, for a replay command (no secret is among them).
    pub fn flags(&self) -> String {
        let credentials = match &self.credentials {
            Some(f) => format!(" --bmc-credentials {}", f.display()),
            None => String::new(),
        };
        let trust = match &self.trust {
            crate::vm::redfish::Trust::System => String::new(),
            crate::vm::redfish::Trust::CaFile(f) => format!(" --bmc-ca-file {}", f.display()),
            crate::vm::redfish::Trust::Fingerprint(f) => format!(" --bmc-fingerprint {f}"),
        };
        let ssh = match self.ssh {
            std::net::SocketAddr::V6(a) => format!("[{}]:{}", a.ip(), a.port()),
            a => a.to_string(),
        };
        format!(
            " --backend redfish --bmc {}{credentials}{trust} --bmc-serve-at {} --ssh {}@{ssh} --api {}",
            self.bmc, self.serve_at, self.user, self.api
        )
    }
}

/// Where the console of a machine the harness did not boot is read from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConsoleSource {
    /// A file the console is logged into (a BMC's or another QEMU's serial log), followed as
    /// it grows, from its start.
    Log(std::path::PathBuf),
    /// A command that prints the console on its standard output (`ipmitool sol activate`,
    /// `virsh console`), run with `sh -c`; its end is the console's.
    Command(String),
}

/// The names `--backend` takes, in the order help lists them.
pub const NAMES: [&str; 3] = ["qemu", "libvirt", "redfish"];

/// The backend whose machine is given by flags of its own (`--bmc`...), built by
/// [`Backend::redfish`], not by [`Backend::from_flags`].
pub const REDFISH: &str = "redfish";

/// A backend the command line asked for that cannot be had.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BackendError {
    #[error("--backend {name:?}: not a backend; give one of: {}", NAMES.join(", "))]
    Unknown { name: String },
    #[error("--connect is a libvirt URI: it needs --backend libvirt")]
    ConnectWithoutLibvirt,
    /// `--backend redfish` without the machine its own flags name.
    #[error("--backend redfish boots a machine through its BMC: give --bmc URL, --ssh USER@HOST[:PORT] and --api HOST:PORT (the machine's SSH and API as this host reaches them)")]
    RedfishWithoutMachine,
    /// This build was made without the `libvirt` feature; `asked` is the flag that wanted it.
    #[error("{asked}: this build of sno-harness has no libvirt support (built without the \"libvirt\" feature); rebuild with default features, or use --backend qemu")]
    NoLibvirt { asked: &'static str },
}

/// Whether this build has the libvirt backend (the `libvirt` feature).
pub const LIBVIRT_BUILT_IN: bool = cfg!(feature = "libvirt");

/// Refuses what needs libvirt (`asked`, the flag that wants it) in a build without it.
pub fn libvirt_built_in(asked: &'static str) -> Result<(), BackendError> {
    match LIBVIRT_BUILT_IN {
        true => Ok(()),
        false => Err(BackendError::NoLibvirt { asked }),
    }
}

/// What the VM's file logs into the run directory, beside the console.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VmLog {
    /// QEMU's stderr, as the harness started it (`qemu.stderr`).
    Stderr,
    /// libvirt's log of the domain's QEMU, taken when the domain ends (`qemu.log`).
    LibvirtLog,
    /// None the harness can read (a remote host's).
    None,
}

impl VmLog {
    /// The artifact's name and its file in the run directory.
    pub fn artifact(self) -> Option<(&'static str, &'static str)> {
        match self {
            VmLog::Stderr => Some(("qemu-stderr", "qemu.stderr")),
            VmLog::LibvirtLog => Some(("qemu-log", "qemu.log")),
            VmLog::None => None,
        }
    }
}

/// How `gc` finds a run's VM after the harness died.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Owned {
    /// By its process (pid and start time), recorded in the registration.
    Process,
    /// By its libvirt domain's name, recorded in the registration.
    Domain,
    /// Nothing of the machine is the harness's: no process, no domain, no disks to make or to
    /// remove (a machine it observes).
    Nothing,
}

/// What a backend can do. Both backends today have a QMP monitor (libvirt's passthrough), a
/// serial console, block statistics and screenshots; they differ in the rest.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Capabilities {
    /// QMP events and commands reach the VM.
    pub qmp: bool,
    /// The serial console is read into serial.log.
    pub console: bool,
    /// The install disk's writes are counted (block statistics).
    pub block_stats: bool,
    pub screenshots: bool,
    /// The VM can be saved after bootkube and resumed (`--save-state`, `perf --disk-write-only`).
    pub saved_state: bool,
    /// A kept run (`--keep`) may leave the VM running after the harness exits: QEMU started
    /// without the parent-death signal, a local domain without auto-destroy (a remote one is
    /// reached through the harness's SSH forwards, which end with it), or a machine its BMC
    /// leaves powered on.
    pub leave_running: bool,
    /// `vm.network = "nat"`: a network of the run's own.
    pub nat_network: bool,
    /// A boot that fetches from the harness (minimal ISO, PXE) on the run's NAT network.
    pub network_boot_on_nat: bool,
    /// The VM can have two NICs on its network, for `[network] bond` (`hw::guest_net`'s
    /// NIC 0 and NIC 1). Planned, not yet given to the VM; how each backend would:
    /// - QEMU: two virtio-net devices on one QEMU hub joined to the user network's netdev
    ///   (`-netdev hubport,...,netdev=net0`), so that both see the same slirp and the loopback
    ///   forwards reach the node whichever port the bond has active;
    /// - libvirt, user network: the same arguments, through the same `<qemu:commandline>`
    ///   passthrough as its one NIC today;
    /// - libvirt, NAT network: two `<interface type='network'>` on the run's network.
    ///
    /// A backend without it gets a bond refused before the run (exit 2).
    pub two_nics: bool,
    pub vm_log: VmLog,
    pub owned: Owned,
    /// The harness starts this host's QEMU itself (a libvirtd starts its own).
    pub starts_qemu_here: bool,
    /// The backend's machine is one given machine (a BMC's, one being observed), not one the
    /// harness makes per run: two runs at once would share it.
    pub one_machine: bool,
}

impl Capabilities {
    /// What a run on this backend cannot see that a VM the harness boots shows, each with what
    /// stands in for it; said up front in the run's output, events.jsonl and result.json.
    pub fn lacks(&self) -> Vec<String> {
        let mut out = Vec::new();
        if !self.qmp {
            out.push("no QMP events: a reboot is seen as a new boot id over SSH, once the rebooted system answers; a panic or a shutdown only as the console or the journal shows it".to_string());
        }
        if !self.console {
            out.push("no console (give --console-log PATH or --console-command CMD): firmware, boot loader and kernel lines before SSH answers are not seen".to_string());
        }
        if !self.block_stats {
            out.push("disk writes from coreos-installer's progress lines (what it read of the image), not from the disk's own counters".to_string());
        }
        if !self.screenshots {
            out.push("no screenshots".to_string());
        }
        out
    }
}

impl Backend {
    /// The backends `--backend NAME` and `--connect URI...` (each URI checked by the caller)
    /// name: one for QEMU or a libvirt without `--connect`, one per URI otherwise. libvirt in a
    /// build without it is refused here, the one place every `--backend` goes through.
    pub fn from_flags(name: &str, connect: &[String]) -> Result<Vec<Backend>, BackendError> {
        if name == "libvirt" {
            libvirt_built_in("--backend libvirt")?;
        }
        match name {
            "qemu" if connect.is_empty() => Ok(vec![Backend::Qemu]),
            "qemu" => Err(BackendError::ConnectWithoutLibvirt),
            "libvirt" if connect.is_empty() => Ok(vec![Backend::Libvirt {
                uri: crate::vm::libvirt::DEFAULT_URI.to_string(),
            }]),
            "libvirt" => Ok(connect
                .iter()
                .map(|uri| Backend::Libvirt { uri: uri.clone() })
                .collect()),
            REDFISH if connect.is_empty() => Err(BackendError::RedfishWithoutMachine),
            REDFISH => Err(BackendError::ConnectWithoutLibvirt),
            other => Err(BackendError::Unknown {
                name: other.to_string(),
            }),
        }
    }

    /// The backend `--backend NAME` names on its default host.
    pub fn named(name: &str) -> Result<Backend, BackendError> {
        let mut all = Self::from_flags(name, &[])?;
        Ok(all.remove(0))
    }

    /// A libvirt backend on `uri` (a hosts file's host, `--hosts`).
    pub fn libvirt(uri: String) -> Result<Backend, BackendError> {
        libvirt_built_in("--hosts")?;
        Ok(Backend::Libvirt { uri })
    }

    /// A machine the harness did not boot, reached as `machine` says (`observe`).
    pub fn external(machine: ExternalMachine) -> Backend {
        Backend::External(machine)
    }

    /// A machine booted through its BMC (`--backend redfish`).
    pub fn redfish(machine: BmcMachine) -> Backend {
        Backend::Redfish(machine)
    }

    /// The same backend on the host `uri` names, for a backend that has hosts; QEMU runs here.
    pub fn on(self, uri: &str) -> Backend {
        match self {
            Backend::Qemu => Backend::Qemu,
            Backend::External(m) => Backend::External(m),
            Backend::Redfish(m) => Backend::Redfish(m),
            #[cfg(test)]
            Backend::StandIn => Backend::StandIn,
            Backend::Libvirt { .. } => Backend::Libvirt {
                uri: uri.to_string(),
            },
        }
    }

    pub fn name(&self) -> &'static str {
        match self {
            Backend::Qemu => "qemu",
            Backend::Libvirt { .. } => "libvirt",
            Backend::External(_) => "external",
            Backend::Redfish(_) => REDFISH,
            #[cfg(test)]
            Backend::StandIn => "stand-in",
        }
    }

    /// The user the harness logs in as over SSH: `core`, whom the install's Ignition gives the
    /// run's key, or the one given for a machine the harness did not boot.
    pub fn ssh_user(&self) -> &str {
        match self {
            Backend::External(m) => &m.user,
            Backend::Redfish(m) => &m.user,
            _ => "core",
        }
    }

    /// The machine a BMC boots, for the registration gc reads.
    pub fn bmc(&self) -> Option<&BmcMachine> {
        match self {
            Backend::Redfish(m) => Some(m),
            _ => None,
        }
    }

    /// The libvirt URI the VM goes to, for the registration and the hosts' placement.
    pub fn uri(&self) -> Option<&str> {
        match self {
            Backend::Qemu => None,
            Backend::Libvirt { uri } => Some(uri),
            Backend::External(_) | Backend::Redfish(_) => None,
            #[cfg(test)]
            Backend::StandIn => None,
        }
    }

    /// The libvirt host a run goes to, for the reports: its URI without the parameters (a key
    /// file's path says nothing about where the run went); `None` for QEMU.
    pub fn libvirt_host(&self) -> Option<String> {
        self.uri()
            .map(|uri| uri.split('?').next().unwrap_or(uri).to_string())
    }

    /// The flags a replay command must repeat to run on the same backend and host.
    pub fn replay_flags(&self) -> String {
        match self {
            Backend::Qemu => String::new(),
            Backend::Libvirt { uri } => format!(" --backend libvirt --connect {uri}"),
            // Nothing `run` could repeat: the machine was booted by others.
            Backend::External(_) => String::new(),
            Backend::Redfish(m) => m.flags(),
            #[cfg(test)]
            Backend::StandIn => " --backend stand-in".into(),
        }
    }

    /// The SSH target of a libvirt backend whose libvirtd runs on another host (`qemu+ssh://`);
    /// `None` for this host's backends (and for a URI that names none).
    pub fn remote_target(&self) -> Option<crate::vm::libvirt::RemoteTarget> {
        match self {
            Backend::Qemu => None,
            Backend::Libvirt { uri } => crate::vm::libvirt::remote_target(uri).ok().flatten(),
            Backend::External(_) | Backend::Redfish(_) => None,
            #[cfg(test)]
            Backend::StandIn => None,
        }
    }

    /// Whether the VM runs on another host (its files are copied there, its addresses
    /// forwarded here).
    pub fn is_remote(&self) -> bool {
        self.remote_target().is_some()
    }

    /// How far others may reach into the run's private directory and its `disks/`: not at all,
    /// except that a local libvirtd runs QEMU as its own user (`libvirt-qemu` on Debian), which
    /// opens the disks and the ISO by path and so must pass through the directories (never list
    /// them; the files themselves stay owner-only and libvirt relabels them for that user). A
    /// remote libvirtd's QEMU opens copies on its own host.
    pub fn dir_access(&self) -> DirAccess {
        match self {
            Backend::Libvirt { .. } if !self.is_remote() => DirAccess::Traverse,
            Backend::Libvirt { .. }
            | Backend::Qemu
            | Backend::External(_)
            | Backend::Redfish(_) => DirAccess::OwnerOnly,
            #[cfg(test)]
            Backend::StandIn => DirAccess::OwnerOnly,
        }
    }

    /// The libvirt domain XML this backend would define for `spec` (for `plan`); `None` for a
    /// backend that defines no domain.
    pub fn domain_xml(
        &self,
        spec: &crate::vm::VmSpec,
        meta: &crate::vm::start::RunMeta,
    ) -> Option<String> {
        match self {
            Backend::Qemu => None,
            Backend::Libvirt { .. } => Some(crate::vm::libvirt::domain_xml(spec, meta)),
            Backend::External(_) | Backend::Redfish(_) => None,
            #[cfg(test)]
            Backend::StandIn => None,
        }
    }

    /// What this backend can do.
    pub fn can(&self) -> Capabilities {
        let remote = self.is_remote();
        let common = Capabilities {
            qmp: true,
            console: true,
            block_stats: true,
            screenshots: true,
            saved_state: false,
            leave_running: false,
            nat_network: false,
            network_boot_on_nat: false,
            two_nics: true,
            vm_log: VmLog::None,
            owned: Owned::Process,
            starts_qemu_here: false,
            one_machine: false,
        };
        match self {
            Backend::Qemu => Capabilities {
                saved_state: true,
                leave_running: true,
                vm_log: VmLog::Stderr,
                starts_qemu_here: true,
                ..common
            },
            Backend::Libvirt { .. } => Capabilities {
                leave_running: !remote,
                nat_network: true,
                // A remote host's bridge is not reached by a forward on its loopback.
                network_boot_on_nat: !remote,
                vm_log: if remote {
                    VmLog::None
                } else {
                    VmLog::LibvirtLog
                },
                owned: Owned::Domain,
                ..common
            },
            Backend::External(m) => Capabilities {
                qmp: false,
                console: m.console.is_some(),
                block_stats: false,
                screenshots: false,
                owned: Owned::Nothing,
                one_machine: true,
                ..common
            },
            // The machine's own disks and firmware; the BMC's power state and SSH's boot id
            // stand in for QMP. Its console is not read (a BMC's serial-over-LAN is not asked).
            // Kept, it stays powered on (gc powers it off through the BMC).
            Backend::Redfish(_) => Capabilities {
                leave_running: true,
                qmp: false,
                console: false,
                block_stats: false,
                screenshots: false,
                owned: Owned::Nothing,
                one_machine: true,
                ..common
            },
            #[cfg(test)]
            Backend::StandIn => Capabilities {
                qmp: false,
                block_stats: false,
                screenshots: false,
                ..common
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn qemu_and_an_unknown_name_parse_alike_with_or_without_libvirt() {
        assert_eq!(Backend::from_flags("qemu", &[]), Ok(vec![Backend::Qemu]));
        let uri = ["qemu:///system".to_string()];
        assert_eq!(
            Backend::from_flags("qemu", &uri),
            Err(BackendError::ConnectWithoutLibvirt)
        );
        assert!(matches!(
            Backend::named("vbox"),
            Err(BackendError::Unknown { .. })
        ));
        assert_eq!(LIBVIRT_BUILT_IN, cfg!(feature = "libvirt"));
    }

    /// Without the feature, every way to ask for libvirt is refused, naming the flag and the
    /// way out.
    #[cfg(not(feature = "libvirt"))]
    #[test]
    fn libvirt_is_refused_by_a_build_without_it() {
        let no = |asked| Err(BackendError::NoLibvirt { asked });
        assert_eq!(Backend::from_flags("libvirt", &[]), no("--backend libvirt"));
        let two = ["qemu+ssh://a/system".to_string(), "qemu:///system".into()];
        assert_eq!(
            Backend::from_flags("libvirt", &two),
            no("--backend libvirt")
        );
        assert_eq!(
            Backend::named("libvirt"),
            no("--backend libvirt").map(|_: Vec<_>| Backend::Qemu)
        );
        assert_eq!(
            Backend::libvirt("qemu:///system".into()),
            no("--hosts").map(|_: Vec<_>| Backend::Qemu)
        );
        assert_eq!(
            libvirt_built_in("--connect"),
            no("--connect").map(|_: Vec<Backend>| ())
        );
        let e = Backend::named("libvirt").unwrap_err().to_string();
        assert_eq!(
            e,
            "--backend libvirt: this build of sno-harness has no libvirt support (built without the \"libvirt\" feature); rebuild with default features, or use --backend qemu"
        );
    }

    #[cfg(feature = "libvirt")]
    #[test]
    fn libvirt_is_had_in_a_build_with_it() {
        assert_eq!(libvirt_built_in("--connect"), Ok(()));
        assert_eq!(
            Backend::libvirt("qemu:///system".into()),
            Ok(Backend::Libvirt {
                uri: "qemu:///system".into()
            })
        );
    }

    #[cfg(feature = "libvirt")]
    #[test]
    fn the_flags_name_one_backend_or_one_per_libvirt_host() {
        assert_eq!(Backend::from_flags("qemu", &[]), Ok(vec![Backend::Qemu]));
        assert_eq!(
            Backend::from_flags("libvirt", &[]),
            Ok(vec![Backend::Libvirt {
                uri: "qemu:///system".into()
            }])
        );
        let two = ["qemu+ssh://a/system".to_string(), "qemu:///system".into()];
        assert_eq!(Backend::from_flags("libvirt", &two).unwrap().len(), 2);
        assert_eq!(
            Backend::from_flags("qemu", &two),
            Err(BackendError::ConnectWithoutLibvirt)
        );
        let e = Backend::named("vbox").unwrap_err().to_string();
        assert_eq!(
            e,
            "--backend \"vbox\": not a backend; give one of: qemu, libvirt, redfish"
        );
    }

    #[test]
    fn a_machine_the_harness_did_not_boot_owns_nothing_and_says_what_it_lacks() {
        let machine = |console| ExternalMachine {
            ssh: "192.0.2.7:22".parse().unwrap(),
            user: "admin".into(),
            api: "192.0.2.7:6443".parse().unwrap(),
            console,
        };
        let blind = Backend::external(machine(None));
        let can = blind.can();
        assert!(!can.qmp && !can.console && !can.block_stats && !can.screenshots);
        assert!(!can.saved_state && !can.leave_running && !can.nat_network);
        assert!(!can.starts_qemu_here);
        assert_eq!((can.owned, can.vm_log), (Owned::Nothing, VmLog::None));
        assert_eq!(blind.ssh_user(), "admin");
        assert_eq!(Backend::Qemu.ssh_user(), "core");
        assert_eq!(
            (blind.name(), blind.uri(), blind.is_remote()),
            ("external", None, false)
        );
        assert_eq!(blind.dir_access(), DirAccess::OwnerOnly);
        let lacks = can.lacks().join("; ");
        for said in [
            "no QMP events",
            "no console (give --console-log PATH or --console-command CMD)",
            "disk writes from coreos-installer's progress lines",
            "no screenshots",
        ] {
            assert!(lacks.contains(said), "{said}: {lacks}");
        }
        let logged =
            Backend::external(machine(Some(ConsoleSource::Log("/var/log/sol.log".into()))));
        assert!(logged.can().console);
        assert!(!logged.can().lacks().join(" ").contains("no console"));
        assert!(
            Backend::Qemu.can().lacks().is_empty(),
            "a VM of the harness's lacks nothing"
        );
    }

    #[test]
    fn a_machine_booted_through_its_bmc_is_judged_as_an_external_one_and_named_by_its_flags() {
        assert_eq!(
            Backend::from_flags(REDFISH, &[]),
            Err(BackendError::RedfishWithoutMachine)
        );
        assert_eq!(
            Backend::from_flags(REDFISH, &["qemu:///system".into()]),
            Err(BackendError::ConnectWithoutLibvirt)
        );
        let b = Backend::redfish(BmcMachine {
            bmc: "https://bmc.example".into(),
            credentials: Some("/home/me/bmc.creds".into()),
            serve_at: "192.0.2.1".parse().unwrap(),
            ssh: "[2001:db8::7]:22".parse().unwrap(),
            user: "core".into(),
            api: "192.0.2.7:6443".parse().unwrap(),
            trust: Default::default(),
        });
        let can = b.can();
        assert!(!can.qmp && !can.console && !can.block_stats && !can.screenshots);
        assert!(!can.saved_state && can.leave_running && !can.starts_qemu_here);
        assert_eq!((can.owned, can.vm_log), (Owned::Nothing, VmLog::None));
        assert_eq!((b.name(), b.uri(), b.is_remote()), ("redfish", None, false));
        assert_eq!(b.ssh_user(), "core");
        assert_eq!(b.dir_access(), DirAccess::OwnerOnly);
        assert_eq!(
            b.replay_flags(),
            " --backend redfish --bmc https://bmc.example --bmc-credentials /home/me/bmc.creds --bmc-serve-at 192.0.2.1 --ssh core@[2001:db8::7]:22 --api 192.0.2.7:6443"
        );
        assert!(NAMES.contains(&REDFISH));
    }

    #[cfg(feature = "libvirt")]
    #[test]
    fn what_each_backend_can_do_where_it_runs() {
        let local = Backend::named("libvirt").unwrap();
        let remote = Backend::Libvirt {
            uri: "qemu+ssh://root@lab/system?keyfile=/k".into(),
        };
        let qemu = Backend::Qemu;
        assert!(qemu.can().saved_state && qemu.can().leave_running && !qemu.can().nat_network);
        assert_eq!(
            qemu.can().vm_log.artifact(),
            Some(("qemu-stderr", "qemu.stderr"))
        );
        assert_eq!(qemu.can().owned, Owned::Process);
        assert!(!local.can().saved_state && local.can().nat_network);
        assert!(local.can().network_boot_on_nat && !remote.can().network_boot_on_nat);
        assert!(local.can().leave_running && !remote.can().leave_running);
        assert!(qemu.can().two_nics && local.can().two_nics && remote.can().two_nics);
        assert_eq!(local.can().vm_log, VmLog::LibvirtLog);
        assert_eq!(remote.can().vm_log, VmLog::None);
        assert_eq!(remote.can().owned, Owned::Domain);
        assert!(remote.is_remote() && !local.is_remote() && !qemu.is_remote());
        assert_eq!(local.dir_access(), DirAccess::Traverse);
        assert_eq!(remote.dir_access(), DirAccess::OwnerOnly);
        assert_eq!(
            remote.libvirt_host().as_deref(),
            Some("qemu+ssh://root@lab/system")
        );
        assert_eq!(qemu.replay_flags(), "");
    }
}
