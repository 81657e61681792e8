//! `sno-harness gc`: collect what runs that did not end cleanly left behind.

use std::path::Path;

use sno_harness::exit;

use super::error::Outcome;

/// Collect what runs that did not end cleanly left behind (harness killed, host rebooted):
/// their VMs (QEMU processes, libvirt domains), disks, ISO copies and sockets; their logs
/// stay and get a result.json (verdict error) if they have none. Also destroys the
/// harness's libvirt domains that no live run owns. Exit 0, or 4 when something could not
/// be removed.
#[derive(clap::Args)]
pub struct GcArgs {
    /// Print what would be done, do nothing.
    #[arg(long)]
    dry_run: bool,
    /// libvirt URIs to search for the harness's domains, networks and storage pools
    /// [default: qemu:///system when libvirtd runs here]. Repeatable; the parameters `run`
    /// takes only.
    #[arg(long = "connect", value_name = "URI")]
    connect: Vec<String>,
}

pub fn gc(a: GcArgs) -> Outcome {
    use sno_harness::vm::backend::LIBVIRT_BUILT_IN;
    if !a.connect.is_empty() && !LIBVIRT_BUILT_IN {
        return Err(super::error::bad(
            "--connect: this build of sno-harness has no libvirt support (built without the \"libvirt\" feature), so it cannot sweep a libvirt host; rebuild with default features, or run gc without --connect (QEMU runs only)",
        ));
    }
    super::flags::check_connect(&a.connect)?;
    let mut uris = a.connect;
    // A build without libvirt says, whatever the host, that it did not look at libvirt's
    // objects: it cannot tell whether there are any.
    let libvirtd_here = Path::new("/run/libvirt/libvirt-sock").exists();
    if uris.is_empty() && (libvirtd_here || !LIBVIRT_BUILT_IN) {
        uris.push(sno_harness::vm::libvirt::DEFAULT_URI.to_string());
    }
    let registry = sno_harness::registry::dir();
    let c = sno_harness::registry::gc::collect(&registry, &uris, a.dry_run);
    let verb = if a.dry_run { "would" } else { "did" };
    for action in &c.actions {
        outln!("gc {verb}: {action}");
    }
    for alive in &c.alive {
        outln!("gc: left alone, still running: {alive}");
    }
    for skipped in &c.skipped {
        outln!("gc: skipped: {skipped}");
    }
    for e in &c.errors {
        errln!("sno-harness gc: {e}");
    }
    if c.actions.is_empty() && c.errors.is_empty() {
        outln!("gc: nothing to collect ({})", registry.display());
    }
    Ok(if c.errors.is_empty() {
        exit::OK
    } else {
        exit::HARNESS_ERROR
    })
}
