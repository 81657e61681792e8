//! The run's registration (`registry`), so that `gc` finds what a killed harness leaves: made
//! before the run makes anything, then told the VM's domain name or QEMU process once there is
//! one, as the backend owns its VM (`Capabilities::owned`).

use super::artifacts::RunFiles;
use super::context::Run;
use crate::registry;
use crate::vm::backend::Owned;
use crate::vm::running::RunningVm;
use crate::vm::VmSpec;

/// Registers the run before it makes anything (the assets phase writes the live ISO copy), so
/// that `gc` finds what a killed harness leaves. A failure is a warning: the run goes on, but
/// a kill would leave what gc cannot find.
pub fn register(run: &Run<'_>) -> Option<registry::Registration> {
    let registry_dir = registry::dir();
    let dir = run.opts.dir.as_path();
    let entry = registry::Entry {
        id: run.opts.id.clone(),
        pid: 0,
        pid_start: 0,
        dir: crate::util::lexical_absolute(dir),
        backend: run.opts.backend.name().into(),
        uri: run.opts.backend.uri().map(str::to_string),
        // Named once the VM is planned (`name_domain`).
        domain: None,
        keep: run.opts.keep.when.may_keep(),
        paused: false,
        qemu: None,
        private: Some(run.private.clone()),
        bmc: run.opts.backend.bmc().map(registry::BmcRecord::of),
    };
    match registry::register(&registry_dir, entry) {
        Ok(r) => Some(r),
        Err(e) => {
            run.ui.line(&format!(
                "warning: cannot register the run in {} ({e}): if the harness is killed, `sno-harness gc` will not find its leftovers",
                registry_dir.display()
            ));
            None
        }
    }
}

/// Adds the libvirt domain's name to the registration, before the domain (or its network or
/// pool) exists.
pub fn name_domain(run: &Run<'_>, files: &mut RunFiles, spec: &VmSpec) {
    if run.opts.backend.can().owned != Owned::Domain {
        return;
    }
    let Some(reg) = files.registration.as_mut() else {
        return;
    };
    if let Err(e) = reg.update(|e| e.domain = Some(spec.name.clone())) {
        run.ui.line(&format!(
            "warning: cannot record the domain {} in the run's registration ({e}): if the harness is killed, `sno-harness gc` will not find it by its run",
            spec.name
        ));
    }
}

/// Adds the QEMU process of a backend whose VM is a process of the harness's (a libvirt domain
/// is gc's by name) to the registration, so that gc kills that process and no other. A failure
/// is a warning, as for the registration itself.
pub fn record_qemu(run: &Run<'_>, files: &mut RunFiles, vm: &RunningVm) {
    let Some(reg) = files.registration.as_mut() else {
        return;
    };
    if run.opts.backend.can().owned != Owned::Process {
        return;
    }
    let Some(id) = vm.pid().and_then(registry::ProcessId::of) else {
        return;
    };
    if let Err(e) = reg.record_qemu(id) {
        run.ui.line(&format!(
            "warning: cannot record QEMU (pid {}) in the run's registration ({e}): if the harness is killed, `sno-harness gc` will not stop it",
            id.pid
        ));
    }
}
