//! `[vm]`: the VM's size, and a NAT network's layout.

use super::{Ctx, ScenarioError};
use crate::scenario::model::*;
use crate::scenario::units::parse_size;

/// More memory than any host this runs on has is a typo; admission control would refuse it
/// only after the run directory exists.
const MAX_MEMORY: u64 = 16 << 40;

pub(super) fn vm_size(cx: &Ctx, vm: &VmSection) -> Result<(u32, u64), ScenarioError> {
    // The range is checked as the file is read (`vcpu_count`), in the same words.
    let vcpus = *vm.vcpus.get_ref();
    if !(1..=MAX_VCPUS).contains(&vcpus) {
        return Err(cx.at(
            &vm.vcpus,
            format!("vm.vcpus: expected an integer from 1 to {MAX_VCPUS}, got {vcpus}"),
        ));
    }
    let memory = parse_size(vm.memory.get_ref())
        .map_err(|m| cx.at(&vm.memory, format!("vm.memory: {m}")))?;
    let memory_mib = memory / (1 << 20);
    if memory_mib < 512 {
        return Err(cx.at(&vm.memory, "vm.memory: at least 512MiB"));
    }
    if memory > MAX_MEMORY {
        return Err(cx.at(&vm.memory, "vm.memory: at most 16TiB"));
    }
    Ok((vcpus, memory_mib))
}

/// A network boot under Secure Boot: the harness's PXE is iPXE (the NIC's option ROM, which
/// OVMF runs), and iPXE hands the kernel to the firmware to load. Secure Boot firmware loads
/// only what a key of its db signs (Microsoft's), and the kernel's signer (Debian's key for
/// minisno, Red Hat's for RHCOS) is trusted through shim alone: the firmware refuses it
/// (measured under QEMU: iPXE says "Could not select: Exec format error"). A Secure Boot
/// network boot is shim and GRUB over TFTP, which the harness does not serve.
pub(super) fn check_secure_boot(cx: &Ctx, f: &ScenarioFile) -> Result<(), ScenarioError> {
    let firmware = *f.vm.firmware.get_ref();
    if !firmware.secure_boot() || !f.boot.source.get_ref().is_pxe() {
        return Ok(());
    }
    Err(cx.at(
        &f.boot.source,
        format!(
            "boot.source = \"pxe\" with vm.firmware = \"{firmware}\": the harness's PXE boot is iPXE handing the kernel to the firmware, and Secure Boot firmware trusts only what Microsoft's keys sign, not the kernel's signer (trusted through shim), so it refuses the kernel; under Secure Boot boot \"live-iso\" or \"minimal-iso\", or use PXE with vm.firmware = \"uefi\""
        ),
    ))
}

/// A NAT network's layout comes from the machine network: refuse one it cannot use now, not
/// when the run creates the network.
pub(super) fn check_nat(cx: &Ctx, f: &ScenarioFile) -> Result<(), ScenarioError> {
    let inst = &f.install;
    if *f.vm.network.get_ref() != GuestNetwork::Nat {
        return Ok(());
    }
    match crate::hw::nat::layout(&inst.machine_network) {
        Err(why) => Err(cx.at(
            &f.vm.network,
            format!("vm.network = \"nat\": {why} (set install.machine_network, e.g. [\"192.168.126.0/24\"], or [\"fd00:1::/64\"] for single-stack IPv6)"),
        )),
        Ok(l) if l.ipv6_only() => check_ipv6_only(cx, f, &l),
        Ok(_) => Ok(()),
    }
}

/// A single-stack IPv6 NAT network: the node's address must be static (the harness reaches it
/// there, and no DHCP reservation can put it there), and the machine boots from its own media
/// (the harness's boot server and a network boot are IPv4's).
fn check_ipv6_only(
    cx: &Ctx,
    f: &ScenarioFile,
    l: &crate::hw::nat::NatLayout,
) -> Result<(), ScenarioError> {
    let quoted: Vec<String> = f
        .install
        .machine_network
        .iter()
        .map(|c| format!("{c:?}"))
        .collect();
    let mn = format!("install.machine_network = [{}]", quoted.join(", "));
    let source = *f.boot.source.get_ref();
    if source.fetches_rootfs() {
        return Err(cx.at(
            &f.boot.source,
            format!(
                "boot.source = \"{}\" on a single-stack IPv6 NAT network ({mn}): the harness's boot server listens on the network's IPv4 host address only, and a network boot's DHCP and TFTP are IPv4's (the network's dnsmasq serves them on IPv4), so the node could not fetch its root filesystem; use boot.source = \"live-iso\" (the default), or add an IPv4 CIDR to install.machine_network (dual stack)",
                source.as_str()
            ),
        ));
    }
    let section = f.network.as_ref();
    let static_v6 = section.is_some_and(|n| {
        let n = n.get_ref();
        *n.mode.get_ref() == NetworkMode::Static && n.ipv6.is_some()
    });
    if static_v6 {
        return Ok(());
    }
    let (node, host) = (l.node_address(), l.host_address());
    let prefix = l.ipv6.map(|v6| v6.prefix).unwrap_or(64);
    let span = match section {
        Some(n) if !n.get_ref().mode.span().is_empty() => n.get_ref().mode.span(),
        Some(n) => n.span(),
        None => f.vm.network.span(),
    };
    Err(cx.err(
        Some(span),
        format!("vm.network = \"nat\" on a single-stack IPv6 machine network ({mn}) needs the node's IPv6 address given statically: [network] mode = \"static\", ipv6 = {{ address = \"{node}/{prefix}\", gateway = \"{host}\" }}, dns = [\"{host}\"]. The harness reaches the node at {node}, and the network cannot reserve it by DHCP: DHCPv6 tells clients apart by their DUID, not their MAC, and the node's DUID is not known before it boots"),
    ))
}
