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

/// A NAT network's layout comes from the machine network: refuse one it cannot use now, not
/// when the run creates the network.
pub(super) fn check_nat(cx: &Ctx, f: &ScenarioFile) -> Result<(), ScenarioError> {
    let inst = &f.install;
    if *f.vm.network.get_ref() == GuestNetwork::Nat {
        if let Err(why) = crate::hw::nat::layout(&inst.machine_network) {
            return Err(cx.at(
                &f.vm.network,
                format!("vm.network = \"nat\": {why} (set install.machine_network, e.g. [\"192.168.126.0/24\"])"),
            ));
        }
    }
    Ok(())
}
