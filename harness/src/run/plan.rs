//! What a run will be, decided before anything is made: the phase timeouts, the state
//! machine's configuration, the VM's hardware and name, and its network. `run` and `plan`
//! build the same plan; `plan` shows it.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use super::state::StateMode;
use crate::flow::badness::{AllowList, Policy as BadnessPolicy};
use crate::flow::machine::{AdaptiveDeadline, Config as MachineConfig, Machine};
use crate::flow::phase::{fixture_default_timeout, openshift_default_timeout, Phase};
use crate::hw::Accel;
use crate::scenario::{BootOrder, GuestNetwork, Profile, Scenario};
use crate::vm::libvirt::network::{from_machine_network, NatNetwork, NetTftp};
use crate::vm::start::RunMeta;
use crate::vm::{CdromSpec, DiskSpec, NetBootSpec, Nic, PortForward, VmSpec};

/// The phase timeouts of a scenario: the profile's defaults, the scenario's overrides, times
/// the TCG factor (real OpenShift defaults assume KVM) and `--timeout-scale`.
pub fn phase_timeouts(s: &Scenario, accel: Accel, scale: f64) -> BTreeMap<Phase, Duration> {
    let tcg = match (s.profile, accel) {
        (Profile::Openshift, Accel::Tcg) => 4.0,
        _ => 1.0,
    };
    Phase::ALL
        .iter()
        .map(|p| {
            // node-ready's value is its budget's: bootstrap-complete's (Phase::budget_phase).
            let b = p.budget_phase();
            let base = s
                .timeouts
                .get(&b)
                .copied()
                .unwrap_or_else(|| match s.profile {
                    Profile::Fixture => fixture_default_timeout(b),
                    Profile::Openshift => openshift_default_timeout(b),
                });
            (*p, scaled(base, tcg * scale))
        })
        .collect()
}

/// The longest phase deadline: a week. `--timeout-scale` is checked (at most 1000), and
/// scenario timeouts have their own bound; this keeps the product a usable Duration whatever
/// comes in (`Duration::mul_f64` panics past u64 seconds, and a deadline of centuries is
/// never meant).
pub const MAX_PHASE_TIMEOUT: Duration = Duration::from_secs(7 * 24 * 3600);

fn scaled(base: Duration, factor: f64) -> Duration {
    let secs = base.as_secs_f64() * factor;
    if secs.is_finite() && secs >= 0.0 {
        Duration::from_secs_f64(secs.min(MAX_PHASE_TIMEOUT.as_secs_f64()))
    } else {
        MAX_PHASE_TIMEOUT
    }
}

/// The state machine of a run of `s` under `accel`: its timeouts (scaled by `scale`), the
/// write-stall limit, the adaptive install-to-disk deadline, the badness allow-list, and where
/// a saving or resuming run stops.
pub fn machine_for(s: &Scenario, accel: Accel, scale: f64, state: &StateMode) -> Machine {
    let timeouts = phase_timeouts(s, accel, scale);
    let adaptive_install = timeouts
        .get(&Phase::InstallToDisk)
        .map(|nominal| AdaptiveDeadline::around(*nominal));
    let mut m = Machine::new(MachineConfig {
        timeouts,
        write_stall: scaled(
            s.disk_write_stall
                .unwrap_or(crate::scenario::DEFAULT_DISK_WRITE_STALL),
            scale,
        ),
        bootkube_max_restarts: s.bootkube_max_restarts,
        adaptive_install,
    });
    // Validated when the scenario was read.
    m.allow_badness(AllowList::new(&s.badness_allow).unwrap_or_default());
    m.scope_badness(BadnessPolicy {
        process_crashes_fatal: s
            .process_crashes_fatal
            .unwrap_or(s.profile == Profile::Fixture),
        tcg: accel == Accel::Tcg,
        kernel_warnings_fatal: s.kernel_warnings_fatal,
    });
    if let Some(p) = state.stops_after() {
        m.stop_after(p);
    }
    m.expect_network_profiles(crate::assets::node_net::profile_ids(s));
    m.expect_secure_boot(s.vm.firmware.secure_boot());
    if crate::assets::multipath::installs_to_multipath(s) {
        m.expect_multipath(crate::hw::multipath::PATHS);
    }
    m
}

/// A VM name made of the run id (characters any backend accepts) and a number unique on the
/// host while the VM runs.
pub fn vm_name(run_id: &str, unique: u16) -> String {
    let id: String = run_id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '.' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .take(48)
        .collect();
    format!("sno-{id}-{unique}")
}

/// The VM of a scenario: disks (qemu-img, in `dir/disks`), boot order, firmware, forwards.
pub fn vm_spec(
    s: &Scenario,
    dir: &Path,
    iso: &Path,
    accel: Accel,
    ssh_port: u16,
    api_port: u16,
) -> VmSpec {
    let install = s.install.install_disk_id.clone();
    let (disk_index, cd_index) = match s.vm.boot_order {
        BootOrder::DiskFirst => (1, 2),
        BootOrder::CdromFirst => (2, 1),
    };
    let disks = s
        .disks
        .iter()
        .map(|d| DiskSpec {
            id: d.id.clone(),
            path: dir
                .join("disks")
                .join(format!("{}.{}", d.id, disk_format(d))),
            format: disk_format(d).into(),
            bus: d.bus,
            sector: d.sector,
            serial: Some(d.serial.clone()),
            bootindex: (Some(&d.id) == install.as_ref()
                || (install.is_none() && d.id == s.disks[0].id))
                .then_some(disk_index),
            io: d.io,
            multipath_wwn: d.multipath.then(|| crate::hw::multipath::wwn(&d.serial)),
        })
        .collect();
    VmSpec {
        name: format!("sno-{}", s.name),
        vcpus: s.vm.vcpus,
        memory_mib: s.vm.memory_mib,
        firmware: s.vm.firmware,
        accel,
        disks,
        // A PXE machine has no CD-ROM: the NIC takes the CD-ROM's place in the boot order.
        cdrom: (!s.boot_source.is_pxe()).then(|| CdromSpec {
            path: iso.to_path_buf(),
            bootindex: Some(cd_index),
        }),
        uefi_vars: s.vm.firmware.is_uefi().then(|| dir.join("OVMF_VARS.fd")),
        serial_socket: dir.join("serial.sock"),
        qmp_socket: Some(dir.join("qmp.sock")),
        forwards: vec![
            PortForward {
                host_port: ssh_port,
                guest_port: 22,
            },
            PortForward {
                host_port: api_port,
                guest_port: 6443,
            },
        ],
        nic: Nic::User,
        netboot: s.boot_source.is_pxe().then(|| NetBootSpec {
            tftp_dir: dir.join(crate::assets::pxe::TFTP_DIR),
            bootfile: crate::assets::pxe::BOOT_SCRIPT.into(),
            bootindex: cd_index,
        }),
        dhcp_hostname: (!s.has_fault(NO_HOSTNAME_FAULT))
            .then(|| crate::hw::nat::node_hostname(&s.install.cluster)),
        second_nic: s
            .network
            .as_ref()
            .and_then(|n| n.bond.as_ref())
            .is_some_and(|b| b.interfaces >= 2),
    }
}

/// A disk's image format: qcow2, but raw for a multipath disk, whose two paths open one
/// image. libvirt shares a disk between devices only in a format made for concurrent access
/// (`<shareable/>` needs raw), and the QEMU backend makes the same image.
fn disk_format(d: &crate::hw::Disk) -> &'static str {
    if d.multipath {
        "raw"
    } else {
        "qcow2"
    }
}

/// The fixture fault that gives the node no hostname: the user network's DHCP names none,
/// and 10.0.2.15 has no reverse record (a site whose DHCP sends no option 12).
pub const NO_HOSTNAME_FAULT: &str = "no-hostname";

/// The run's VM as a backend will define it: the hardware of `vm_spec` named for the run
/// (unique on the host while it runs: the run id and its SSH port), and for `network = "nat"`
/// the run's own libvirt network with the NIC on it.
pub fn vm_plan(
    s: &Scenario,
    dir: &Path,
    iso: &Path,
    accel: Accel,
    (ssh_port, api_port): (u16, u16),
    run: (&str, &RunMeta),
) -> Result<(VmSpec, Option<NatNetwork>), String> {
    let mut spec = vm_spec(s, dir, iso, accel, ssh_port, api_port);
    spec.name = vm_name(run.0, ssh_port);
    let mut network = match s.vm.network {
        GuestNetwork::User => None,
        GuestNetwork::Nat => Some(
            from_machine_network(
                &s.install.machine_network,
                &s.install.cluster,
                &s.install.base_domain,
                run.1.clone(),
                spec.name.clone(),
            )
            .map_err(|e| format!("vm.network = \"nat\": {e}"))?,
        ),
    };
    // A PXE boot on the run's network: its dnsmasq takes the user network's part.
    if let (Some(n), Some(b)) = (network.as_mut(), spec.netboot.as_ref()) {
        n.tftp = Some(NetTftp {
            root: b.tftp_dir.clone(),
            bootfile: b.bootfile.clone(),
        });
    }
    if let Some(n) = &network {
        spec.nic = Nic::LibvirtNetwork {
            network: n.name.clone(),
        };
    }
    Ok((spec, network))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_huge_scale_bounds_the_deadline_instead_of_panicking() {
        assert_eq!(scaled(Duration::from_secs(1200), 1e17), MAX_PHASE_TIMEOUT);
        assert_eq!(scaled(Duration::from_secs(60), f64::NAN), MAX_PHASE_TIMEOUT);
        assert_eq!(
            scaled(Duration::from_secs(60), 2.5),
            Duration::from_secs(150)
        );
    }
}
