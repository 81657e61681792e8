//! Validation of a scenario file's sections into a [`Scenario`], section by section (one
//! module each), each error naming the file, the line and what would be valid. Needs no
//! backend: the hardware facts (slots, disk names, the NAT layout, the user network's
//! addresses) come from `hw`.

mod access;
mod disks;
mod fixture;
mod install;
mod judging;
mod network;
mod openshift;
mod timeouts;
mod vm;

use toml::Spanned;

use super::error::{Ctx, ScenarioError};
use super::model::*;
use super::names::check_name;

/// The scenario of a parsed file, or its first error.
pub(super) fn validate(cx: &Ctx, f: ScenarioFile) -> Result<Scenario, ScenarioError> {
    check_name(cx, "name", &f.name)?;
    let (vcpus, memory_mib) = vm::vm_size(cx, &f.vm)?;
    let firmware = *f.vm.firmware.get_ref();
    let disks = disks::disks(cx, &f.disks)?;
    let (installation_disk, install_disk_id) = install::installation_disk(cx, &f, &disks)?;
    disks::check_bootable(cx, &f, &disks, install_disk_id.as_ref(), firmware)?;
    disks::check_multipath(cx, &f, &disks, install_disk_id.as_ref())?;
    disks::check_slots(cx, &f, &disks)?;
    let profile = *f.profile.get_ref();
    let pull_secret = install::pull_secret(cx, &f, profile)?;
    let limits = timeouts::timeouts(cx, &f.timeouts)?;
    let fixture = fixture::fixture_section(cx, &f, profile)?;
    let openshift = openshift::openshift_section(cx, &f, profile)?;
    judging::check_expect(cx, &f.expect)?;
    vm::check_nat(cx, &f)?;
    vm::check_secure_boot(cx, &f)?;
    let network = network::network(cx, &f)?;
    fixture::check_multipath(cx, &f, &disks)?;
    let multipath_kargs: Vec<String> = match disks.iter().any(|d| d.multipath) {
        true if !fixture::withholds_multipath_kargs(&f) => crate::hw::multipath::DAY1_KARGS
            .iter()
            .map(|k| k.to_string())
            .collect(),
        _ => Vec::new(),
    };
    let assisted = install::assisted_section(cx, &f.install, network.as_ref(), &multipath_kargs)?;
    fixture::check_boot(cx, &f)?;
    fixture::check_unsigned_loader(cx, &f)?;
    fixture::check_network(cx, &f)?;
    fixture::check_static_network(cx, &f)?;
    install::check_install_mode(cx, &f)?;
    let badness_allow = judging::badness_allow(cx, &f.badness)?;
    let additional_trust_bundle = install::trust_bundle(cx, &f.install)?;
    let authorized_keys = access::authorized_keys(cx, &f)?;
    let inst = &f.install;
    Ok(Scenario {
        name: f.name.into_inner(),
        path: cx.file.to_path_buf(),
        profile,
        description: f.description,
        vm: VmConfig {
            vcpus,
            memory_mib,
            firmware,
            accel: f.vm.accel,
            boot_order: f.vm.boot_order,
            network: *f.vm.network.get_ref(),
        },
        disks,
        network,
        boot_source: *f.boot.source.get_ref(),
        install: InstallSpec {
            cluster: inst.cluster.clone(),
            base_domain: inst.base_domain.clone(),
            installation_disk,
            install_disk_id,
            multipath_kargs,
            network_type: inst.network_type.clone(),
            machine_network: inst.machine_network.clone(),
            cluster_network: inst.cluster_network.clone(),
            service_network: inst.service_network.clone(),
            control_plane_replicas: inst.control_plane_replicas,
            bootstrap_in_place: inst.bootstrap_in_place,
            pull_secret,
            // An empty section means none: how a matrix value says "without".
            proxy: inst.proxy.clone().filter(|p| {
                p.http_proxy.is_some() || p.https_proxy.is_some() || p.no_proxy.is_some()
            }),
            additional_trust_bundle,
            trust_bundle_policy: inst.trust_bundle_policy,
            fips: inst.fips,
            skip_hostcrypt_validation: inst.skip_hostcrypt_validation,
            capabilities: inst.capabilities.clone(),
            mode: *inst.mode.get_ref(),
            assisted,
        },
        timeouts: limits.phases,
        disk_write_stall: limits.disk_write_stall,
        bootkube_max_restarts: limits.bootkube_restarts,
        fixture,
        openshift,
        expect: f.expect.map(Spanned::into_inner),
        etcd_check: f.checks.etcd_bootstrap_member_removed,
        operators_rule: f.checks.operators,
        process_crashes_fatal: f.badness.process_crashes.map(|c| c == CrashSeverity::Fatal),
        overrides: Vec::new(),
        kernel_warnings_fatal: f.badness.kernel_warnings == Some(CrashSeverity::Fatal),
        badness_allow,
        authorized_keys,
    })
}

#[cfg(test)]
mod multipath_tests;
