//! Admission control for parallel runs: a run starts only when the host has room for it in
//! memory, CPUs and disk, on top of what the runs already going have reserved. A run the host
//! could never hold is refused up front instead of waiting forever.

use std::path::Path;

use super::cgroup;

/// What one run needs from the host.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Need {
    pub memory_bytes: u64,
    pub vcpus: u32,
    pub disk_bytes: u64,
}

/// What the host has now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HostNow {
    /// MemAvailable from /proc/meminfo, or what this process's cgroup leaves when less.
    pub mem_available: u64,
    /// Which of the two `mem_available` is.
    pub memory_from: MemoryFrom,
    pub cpus: u32,
    /// Free bytes on the filesystem of the run directory.
    pub disk_free: u64,
}

/// Where the available memory figure comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MemoryFrom {
    /// The host's MemAvailable (a remote libvirt host's free memory).
    Host,
    /// This process's cgroup: its tightest limit, less what the cgroup uses.
    CgroupLimit { limit: u64 },
}

impl std::fmt::Display for MemoryFrom {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            MemoryFrom::Host => write!(f, "host MemAvailable"),
            MemoryFrom::CgroupLimit { limit } => {
                write!(f, "cgroup memory limit {:.1} GiB", gib(*limit))
            }
        }
    }
}

/// How far the vCPUs of the VMs running at once may exceed the host's CPUs. Under TCG a VM's
/// vCPU threads are busy only while the guest computes (boots, decompresses, writes); through
/// the long waits of a run (API convergence, the 30 s operator settle) they idle, so two
/// 2-vCPU VMs on 2 cores finish well before two runs one after the other.
pub const CPU_OVERCOMMIT: u32 = 2;

/// Kept free for the host (the harness, the page cache that QEMU's disk writes go through).
pub const MEMORY_HEADROOM: u64 = 1 << 30;

/// Kept free on the run directory's filesystem.
pub const DISK_HEADROOM: u64 = 1 << 30;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    Start,
    /// Not now; the reason says what is short.
    Wait(String),
    /// Not on this host, even with nothing else running.
    Never(String),
}

/// The bookkeeping of what running runs reserved.
#[derive(Debug, Default, Clone)]
pub struct Admission {
    memory: u64,
    vcpus: u32,
    disk: u64,
    running: u32,
}

fn gib(b: u64) -> f64 {
    b as f64 / (1u64 << 30) as f64
}

impl Admission {
    pub fn running(&self) -> u32 {
        self.running
    }

    /// The memory the running runs reserved.
    pub fn memory_reserved(&self) -> u64 {
        self.memory
    }

    /// Whether a run needing `need` may start now on a host looking like `host`, with at most
    /// `jobs` runs at once. MemAvailable already excludes the memory running VMs have touched;
    /// subtracting their whole reservation as well is deliberately conservative: a guest
    /// grows into its memory as it runs, and running out of memory kills runs.
    pub fn decide(&self, need: Need, host: HostNow, jobs: u32) -> Decision {
        let mem_total_ok = need.memory_bytes + MEMORY_HEADROOM <= host.mem_available + self.memory;
        if self.running == 0 && !mem_total_ok {
            return Decision::Never(format!(
                "needs {:.1} GiB of memory (+{:.0} GiB headroom); {:.1} GiB is available ({})",
                gib(need.memory_bytes),
                gib(MEMORY_HEADROOM),
                gib(host.mem_available),
                host.memory_from
            ));
        }
        if self.running == 0 && need.disk_bytes + DISK_HEADROOM > host.disk_free {
            return Decision::Never(format!(
                "needs {:.1} GiB of disk (+{:.0} GiB headroom); {:.1} GiB is free",
                gib(need.disk_bytes),
                gib(DISK_HEADROOM),
                gib(host.disk_free)
            ));
        }
        if self.running >= jobs {
            return Decision::Wait(format!("{} of {jobs} jobs running", self.running));
        }
        let mem_free = host.mem_available.saturating_sub(self.memory);
        if need.memory_bytes + MEMORY_HEADROOM > mem_free {
            return Decision::Wait(format!(
                "memory: {:.1} GiB available after what running VMs reserved, {:.1} GiB needed ({})",
                gib(mem_free),
                gib(need.memory_bytes + MEMORY_HEADROOM),
                host.memory_from
            ));
        }
        let cpu_limit = (host.cpus * CPU_OVERCOMMIT).max(need.vcpus);
        if self.vcpus + need.vcpus > cpu_limit {
            return Decision::Wait(format!(
                "CPUs: {} vCPUs running, {} more would pass {cpu_limit} ({} host CPUs x {CPU_OVERCOMMIT})",
                self.vcpus, need.vcpus, host.cpus
            ));
        }
        let disk_free = host.disk_free.saturating_sub(self.disk);
        if need.disk_bytes + DISK_HEADROOM > disk_free {
            return Decision::Wait(format!(
                "disk: {:.1} GiB free after what running runs reserved, {:.1} GiB needed",
                gib(disk_free),
                gib(need.disk_bytes + DISK_HEADROOM)
            ));
        }
        Decision::Start
    }

    pub fn reserve(&mut self, need: Need) {
        self.memory += need.memory_bytes;
        self.vcpus += need.vcpus;
        self.disk += need.disk_bytes;
        self.running += 1;
    }

    pub fn release(&mut self, need: Need) {
        self.memory = self.memory.saturating_sub(need.memory_bytes);
        self.vcpus = self.vcpus.saturating_sub(need.vcpus);
        self.disk = self.disk.saturating_sub(need.disk_bytes);
        self.running = self.running.saturating_sub(1);
    }
}

/// How many runs start at once on an idle host, in order, before the first that must wait.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct AtOnce {
    /// Counting memory alone (each run's memory and the headroom).
    pub by_memory: u32,
    /// Counting CPUs alone (overcommitted [`CPU_OVERCOMMIT`] times).
    pub by_cpus: u32,
    /// Both, as the admission decides (not counting `--jobs` or disk).
    pub both: u32,
}

/// How many of `needs`, started in order on `host` with nothing running, the admission lets
/// run at once (disk and `--jobs` aside).
pub fn at_once(needs: &[Need], host: HostNow) -> AtOnce {
    let count = |host: HostNow| {
        let mut a = Admission::default();
        for &need in needs {
            if a.decide(need, host, u32::MAX) != Decision::Start {
                break;
            }
            a.reserve(need);
        }
        a.running()
    };
    let roomy = HostNow {
        disk_free: u64::MAX / 4,
        ..host
    };
    AtOnce {
        by_memory: count(HostNow {
            cpus: u32::MAX / (2 * CPU_OVERCOMMIT),
            ..roomy
        }),
        by_cpus: count(HostNow {
            mem_available: u64::MAX / 4,
            ..roomy
        }),
        both: count(roomy),
    }
}

/// The host as it is now: MemAvailable, online CPUs, free space under `dir`; memory and
/// CPUs within this process's cgroup limits where those are lower (in a pod, a container).
pub fn host_now(dir: &Path) -> std::io::Result<HostNow> {
    // One walk of the cgroup tree serves both figures.
    let limits = cgroup_limits();
    let (mem_available, memory_from) = memory_within(&limits)?;
    Ok(HostNow {
        mem_available,
        memory_from,
        cpus: cpus_within(&limits),
        disk_free: free_bytes(dir)?,
    })
}

/// The memory this process may use now, and where the figure comes from.
pub fn memory_now() -> std::io::Result<(u64, MemoryFrom)> {
    memory_within(&cgroup_limits())
}

fn memory_within(limits: &cgroup::Limits) -> std::io::Result<(u64, MemoryFrom)> {
    use std::io::Read;
    let mut meminfo = String::new();
    std::fs::File::open("/proc/meminfo")?
        .take(1 << 20)
        .read_to_string(&mut meminfo)?;
    let host = parse_meminfo_available(&meminfo).ok_or_else(|| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            "no MemAvailable in /proc/meminfo",
        )
    })?;
    Ok(within_cgroup(host, limits))
}

/// The host's MemAvailable, or what the cgroup leaves when that is less.
pub fn within_cgroup(host_available: u64, limits: &cgroup::Limits) -> (u64, MemoryFrom) {
    match &limits.memory {
        Some(m) if m.available < host_available => {
            (m.available, MemoryFrom::CgroupLimit { limit: m.limit })
        }
        _ => (host_available, MemoryFrom::Host),
    }
}

/// This process's cgroup limits; the files it ignored are said once per process.
fn cgroup_limits() -> cgroup::Limits {
    static SAID: std::sync::Once = std::sync::Once::new();
    let limits = cgroup::limits();
    if !limits.notes.is_empty() {
        SAID.call_once(|| {
            for n in &limits.notes {
                tracing::warn!("cgroup limits: {n}");
            }
        });
    }
    limits
}

/// The CPUs this process may use: online CPUs (Rust's count already follows the cgroup
/// quota), and the cgroup's quota read here as well, the lower of the two.
pub fn host_cpus() -> u32 {
    cpus_within(&cgroup_limits())
}

fn cpus_within(limits: &cgroup::Limits) -> u32 {
    let online = std::thread::available_parallelism()
        .map(|n| n.get() as u32)
        .unwrap_or(1);
    match &limits.cpus {
        Some(c) => online.min(c.cpus).max(1),
        None => online,
    }
}

/// The default number of parallel runs: the host's CPUs (the admission checks still apply).
pub fn default_jobs() -> u32 {
    host_cpus().max(1)
}

fn parse_meminfo_available(text: &str) -> Option<u64> {
    let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

fn free_bytes(dir: &Path) -> std::io::Result<u64> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(dir.as_os_str().as_bytes())
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))?;
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: a valid NUL-terminated path and a zeroed statvfs the call fills.
    if unsafe { libc::statvfs(c.as_ptr(), &mut st) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(st.f_bavail as u64 * st.f_frsize as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    const GIB: u64 = 1 << 30;

    fn need() -> Need {
        Need {
            memory_bytes: 3 * GIB,
            vcpus: 2,
            disk_bytes: 2 * GIB,
        }
    }

    fn host(mem_gib: u64) -> HostNow {
        HostNow {
            mem_available: mem_gib * GIB,
            memory_from: MemoryFrom::Host,
            cpus: 2,
            disk_free: 50 * GIB,
        }
    }

    #[test]
    fn two_small_vms_fit_on_this_host_and_a_third_waits_for_a_job() {
        let mut a = Admission::default();
        assert_eq!(a.decide(need(), host(20), 2), Decision::Start);
        a.reserve(need());
        assert_eq!(a.decide(need(), host(17), 2), Decision::Start);
        a.reserve(need());
        assert!(
            matches!(a.decide(need(), host(14), 2), Decision::Wait(w) if w.contains("2 of 2 jobs"))
        );
        a.release(need());
        assert_eq!(a.decide(need(), host(17), 2), Decision::Start);
    }

    #[test]
    fn memory_counts_what_running_vms_reserved() {
        let mut a = Admission::default();
        a.reserve(need());
        // 5 GiB available, 3 GiB of it reserved by the running VM: 2 GiB < 3 + 1 needed.
        assert!(
            matches!(a.decide(need(), host(5), 4), Decision::Wait(w) if w.starts_with("memory"))
        );
        assert_eq!(a.decide(need(), host(8), 4), Decision::Start);
    }

    #[test]
    fn cpus_may_be_overcommitted_twice_and_no_more() {
        let mut a = Admission::default();
        for _ in 0..2 {
            assert_eq!(a.decide(need(), host(20), 8), Decision::Start);
            a.reserve(need());
        }
        // 4 vCPUs running on 2 CPUs: the limit of 2 x 2.
        assert!(
            matches!(a.decide(need(), host(20), 8), Decision::Wait(w) if w.starts_with("CPUs"))
        );
    }

    #[test]
    fn a_vm_larger_than_the_host_is_refused_not_queued() {
        let a = Admission::default();
        let big = Need {
            memory_bytes: 64 * GIB,
            ..need()
        };
        assert!(matches!(a.decide(big, host(20), 2), Decision::Never(w) if w.contains("64.0 GiB")));
        let wide = Need {
            disk_bytes: 100 * GIB,
            ..need()
        };
        assert!(matches!(a.decide(wide, host(20), 2), Decision::Never(w) if w.contains("disk")));
        // A VM with more vCPUs than the host still runs, alone.
        let many = Need { vcpus: 8, ..need() };
        assert_eq!(a.decide(many, host(20), 2), Decision::Start);
    }

    #[test]
    fn meminfo_parses_and_the_host_probe_works_here() {
        assert_eq!(
            parse_meminfo_available("MemTotal: 10 kB\nMemAvailable:    2048 kB\n"),
            Some(2048 * 1024)
        );
        assert_eq!(parse_meminfo_available("MemTotal: 10 kB\n"), None);
        let h = host_now(Path::new("/")).unwrap();
        assert!(
            h.mem_available > 0 && h.cpus >= 1 && h.disk_free > 0,
            "{h:?}"
        );
    }
}
