//! The host as the preflight sees it, behind one set of functions so that tests can give any
//! host; and the checks that look at it.

use super::{Finding, Level};
use crate::fleet::admission::{CPU_OVERCOMMIT, MEMORY_HEADROOM};
use crate::hw::accel::{Accel, AccelChoice};
use crate::scenario::model::SecretSource;
use crate::scenario::{Profile, Scenario};
use crate::vm::accel::{AccelDecision, KvmUnusable};
use crate::vm::libvirt::LibvirtError;
use crate::vm::Backend;
use std::path::{Path, PathBuf};

type Which = dyn Fn(&str) -> Option<PathBuf>;
type Decide = dyn Fn(AccelChoice) -> Result<AccelDecision, KvmUnusable>;
type CheckPath = dyn Fn(&Path) -> Result<(), NotExecutable>;
type Lookup = dyn Fn(&str) -> Option<String>;
type Reach = dyn Fn(&str) -> Result<(), LibvirtError>;

/// Why a file cannot be run as a program.
#[derive(Debug, thiserror::Error)]
pub enum NotExecutable {
    #[error("{0}")]
    Unreadable(#[from] std::io::Error),
    #[error("not a regular file")]
    NotAFile,
    /// The command that fixes it names the file.
    #[error("not executable (chmod +x {})", .0.display())]
    NoExecuteBit(PathBuf),
}

/// What the checks may ask of the host.
pub struct Probe {
    /// A program on PATH, as the run looks it up.
    pub which: Box<Which>,
    pub is_file: Box<dyn Fn(&Path) -> bool>,
    /// A regular file with an execute bit.
    pub executable: Box<CheckPath>,
    pub env: Box<Lookup>,
    /// MemAvailable in bytes (within this process's cgroup limit), and where it comes
    /// from; None when it cannot be read.
    pub mem_available: Option<(u64, crate::fleet::admission::MemoryFrom)>,
    pub cpus: u32,
    /// The accelerator the run would get (the KVM trial runs once per process).
    pub accel: Box<Decide>,
    /// Opens and closes a connection; libvirt's error on failure.
    pub libvirt: Box<Reach>,
}

impl Probe {
    /// This host.
    pub fn host() -> Probe {
        Probe {
            which: Box::new(crate::util::which),
            is_file: Box::new(|p| p.is_file()),
            executable: Box::new(executable_file),
            env: Box::new(|v| std::env::var(v).ok()),
            mem_available: crate::fleet::admission::memory_now().ok(),
            cpus: crate::fleet::admission::host_cpus(),
            accel: Box::new(crate::vm::accel::decide),
            // Dropping the connection closes it.
            libvirt: Box::new(|uri| crate::vm::libvirt::runtime::connect(uri).map(drop)),
        }
    }
}

fn executable_file(p: &Path) -> Result<(), NotExecutable> {
    use std::os::unix::fs::PermissionsExt;
    let meta = std::fs::metadata(p)?;
    if !meta.is_file() {
        return Err(NotExecutable::NotAFile);
    }
    if meta.permissions().mode() & 0o111 == 0 {
        return Err(NotExecutable::NoExecuteBit(p.to_path_buf()));
    }
    Ok(())
}

/// The installer the scenario names, else `openshift-install` on PATH, as the run takes it.
pub(super) fn installer(s: &Scenario, probe: &Probe) -> Finding {
    const WHAT: &str = "installer";
    let named = s.openshift.as_ref().and_then(|o| o.installer.clone());
    // A bare name is looked up on PATH, as the run starts it.
    let bare = |p: &Path| p.components().count() == 1 && p.is_relative();
    let wanted = named.unwrap_or_else(|| PathBuf::from("openshift-install"));
    let found = if bare(&wanted) {
        (probe.which)(&wanted.to_string_lossy())
    } else {
        Some(wanted.clone())
    };
    let Some(path) = found else {
        return Finding::new(
            WHAT,
            Level::Missing,
            format!(
                "{}: no installer: {} is not on PATH; get the openshift-install of the release \
                 to install (the OpenShift mirror, or `oc adm release extract \
                 --command=openshift-install RELEASE`) and put it on PATH or set \
                 [openshift] installer = \"PATH\"",
                s.path.display(),
                wanted.display()
            ),
        );
    };
    match (probe.executable)(&path) {
        Ok(()) => Finding::new(WHAT, Level::Ok, path.display().to_string()),
        Err(why) => Finding::new(
            WHAT,
            Level::Missing,
            format!(
                "{}: the installer {}: {why}",
                s.path.display(),
                path.display()
            ),
        ),
    }
}

/// The pull secret, read and checked as the run will read it; never quoted.
pub(super) fn pull_secret(source: &SecretSource, probe: &Probe) -> Finding {
    const WHAT: &str = "pull secret";
    let problem = match source {
        SecretSource::File(p) => crate::scenario::files::read_pull_secret(p)
            .err()
            .map(|e| e.to_string()),
        SecretSource::Env(v) => match (probe.env)(v) {
            None => Some(format!(
                "environment variable {v} is not set (export it with the pull secret from console.redhat.com)"
            )),
            Some(text) => crate::scenario::files::pull_secret_problem(&text)
                .map(|why| format!("environment variable {v}: {why}")),
        },
    };
    let named = match source {
        SecretSource::File(p) => p.display().to_string(),
        SecretSource::Env(v) => format!("${v}"),
    };
    match problem {
        None => Finding::new(WHAT, Level::Ok, format!("{named} holds a pull secret")),
        Some(why) => Finding::new(WHAT, Level::Missing, why),
    }
}

/// Memory and CPUs for the scenario's VM on a host the harness runs it on (a remote libvirt
/// host's are its own). One VM must fit with the headroom the admission keeps; CPUs may be
/// overcommitted as far as the admission lets parallel runs go.
pub(super) fn room_for(s: &Scenario, backend: &Backend, probe: &Probe) -> Vec<Finding> {
    if backend.is_remote() {
        return Vec::new();
    }
    let gib = |b: u64| b as f64 / (1u64 << 30) as f64;
    let need = s.vm.memory_mib << 20;
    let memory = match probe.mem_available {
        None => Finding::new("memory", Level::Warn, "MemAvailable unknown (/proc/meminfo)"),
        Some((avail, from)) if avail < need + MEMORY_HEADROOM => Finding::new(
            "memory",
            Level::Missing,
            format!(
                "{}: the VM needs {:.1} GiB (vm.memory) and the host has {:.1} GiB available ({from}), {:.0} GiB of it kept for the host; \
                 free memory, or run on a bigger host",
                s.path.display(),
                gib(need),
                gib(avail),
                gib(MEMORY_HEADROOM)
            ),
        ),
        Some((avail, from)) => Finding::new(
            "memory",
            Level::Ok,
            format!(
                "{:.1} GiB available ({from}), the VM needs {:.1} GiB",
                gib(avail),
                gib(need)
            ),
        ),
    };
    let cpus = if s.vm.vcpus > probe.cpus * CPU_OVERCOMMIT {
        Finding::new(
            "CPUs",
            Level::Missing,
            format!(
                "{}: the VM has {} vCPUs (vm.vcpus) and the host {} CPUs; at most {} vCPUs run here",
                s.path.display(),
                s.vm.vcpus,
                probe.cpus,
                probe.cpus * CPU_OVERCOMMIT
            ),
        )
    } else {
        Finding::new(
            "CPUs",
            Level::Ok,
            format!("{} online, the VM has {} vCPUs", probe.cpus, s.vm.vcpus),
        )
    };
    vec![memory, cpus]
}

/// The accelerator each scenario gets. KVM asked for and unusable stops the run; TCG for a
/// real install is a warning, since it takes many hours where KVM takes one.
pub(super) fn accelerators(scenarios: &[&Scenario], probe: &Probe) -> Vec<Finding> {
    const WHAT: &str = "accelerator";
    scenarios
        .iter()
        .map(|s| match (probe.accel)(s.vm.accel) {
            Err(e) => Finding::new(WHAT, Level::Missing, format!("{}: {e}", s.path.display())),
            Ok(d) if d.accel == Accel::Tcg && s.profile == Profile::Openshift => Finding::new(
                WHAT,
                Level::Warn,
                format!(
                    "tcg ({}): a real OpenShift install under TCG takes many hours; \
                     run it on a host with KVM, or raise the timeouts with --timeout-scale",
                    d.reason
                ),
            ),
            Ok(d) => Finding::new(WHAT, Level::Ok, format!("{}: {}", d.accel, d.reason)),
        })
        .collect()
}

pub(super) fn libvirt(uri: &str, probe: &Probe) -> Finding {
    match (probe.libvirt)(uri) {
        Ok(()) => Finding::new("libvirt", Level::Ok, format!("{uri} answers")),
        Err(why) => Finding::new(
            "libvirt",
            Level::Missing,
            format!(
                "libvirt at {uri} cannot be reached ({why}); start libvirtd here (`systemctl start libvirtd`, \
                 or `virtlogd -d; libvirtd -d`), or check the host with `virsh -c {uri} list`"
            ),
        ),
    }
}
