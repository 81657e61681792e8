//! The memory and CPU limits of the cgroup this process runs in, for admission: in a pod or a
//! container the host's MemAvailable and CPU count are not what the harness may use.
//!
//! The process's cgroups come from /proc/self/cgroup, the hierarchies' mounts from
//! /proc/self/mountinfo: cgroup v2 (`0::/path`, an fs of type `cgroup2`) and cgroup v1 (a
//! `memory` or `cpu` controller, an fs of type `cgroup` with that controller in its super
//! options); a hybrid host has both, and the tightest limit of either counts. From the
//! process's own cgroup up to the hierarchy's mount, every level's limit holds, so each is
//! read and the tightest one wins: memory by what is left under it (limit minus usage), CPUs
//! by quota / period rounded up. The usage counts the page cache, which the kernel reclaims
//! under the limit; its inactive file pages (`memory.stat`'s `inactive_file`, v1
//! `total_inactive_file`) are left out, as the kubelet's working set does. Otherwise the
//! cache QEMU's disk writes leave behind (cache = "unsafe" writes go to it) would count as
//! used, and a cgroup whose cache filled it would admit nothing.
//!
//! Files read: v2 `memory.max`, `memory.current`, `cpu.max`; v1 `memory.limit_in_bytes`,
//! `memory.usage_in_bytes`, `cpu.cfs_quota_us`, `cpu.cfs_period_us`. `max`, -1 and values
//! from [`NO_LIMIT_FROM`] up (v1 writes its "unlimited" as 2^63 rounded down to a page) are no
//! limit. Every read is size-limited.
//!
//! A file that cannot be read or parsed (malformed, too large, a path that climbs out of its
//! mount) does not stop a run: that level's limit is ignored and [`Limits::notes`] says
//! which file and why, which the caller prints once. Refusing to run over a file the kernel
//! wrote in a format this code does not know would be worse than admitting by the host's
//! figures, which is what happened before this module; the note makes the difference
//! visible. A missing file is no note: a level without that controller has no limit.
//!
//! Everything is read under a root directory ([`limits_under`]), so tests use a stand-in
//! tree; [`limits`] reads the real one at `/`.

use std::io::Read;
use std::path::{Component, Path, PathBuf};

/// Limits from this many bytes up are no limit (1 EiB: no host has it).
pub const NO_LIMIT_FROM: u64 = 1 << 60;
/// The most read of one cgroup control file (a number or two).
const CONTROL_FILE_LIMIT: u64 = 4096;
/// The most read of a `memory.stat` (some forty lines).
const STAT_FILE_LIMIT: u64 = 64 << 10;
/// The most read of /proc/self/cgroup and /proc/self/mountinfo.
const PROC_FILE_LIMIT: u64 = 1 << 20;

/// The tightest memory limit over the process's cgroups.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemoryLimit {
    /// The limit of the level that leaves the least.
    pub limit: u64,
    /// That level's limit minus its usage.
    pub available: u64,
    /// The cgroup directory it was read in.
    pub dir: PathBuf,
}

/// The tightest CPU quota over the process's cgroups.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CpuLimit {
    /// quota / period, rounded up, at least 1.
    pub cpus: u32,
    pub dir: PathBuf,
}

/// What the process's cgroups allow; none where no level limits.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Limits {
    pub memory: Option<MemoryLimit>,
    pub cpus: Option<CpuLimit>,
    /// Files that were ignored, and why.
    pub notes: Vec<String>,
}

/// The limits of this process's cgroups on this host.
pub fn limits() -> Limits {
    limits_under(Path::new("/"))
}

/// The limits read under `root` as if it were `/`: `root/proc/self/cgroup`,
/// `root/proc/self/mountinfo`, and the cgroup directories under `root`.
pub fn limits_under(root: &Path) -> Limits {
    let mut out = Limits::default();
    let (Some(cgroups), Some(mounts)) = (
        read_limited(
            &root.join("proc/self/cgroup"),
            PROC_FILE_LIMIT,
            &mut out.notes,
        ),
        read_limited(
            &root.join("proc/self/mountinfo"),
            PROC_FILE_LIMIT,
            &mut out.notes,
        ),
    ) else {
        return out;
    };
    let memberships = parse_proc_cgroup(&cgroups);
    let mounts = parse_mountinfo(&mounts);
    for (controller, kind) in [("memory", Controller::Memory), ("cpu", Controller::Cpu)] {
        for (version, dirs) in hierarchies(root, controller, &memberships, &mounts, &mut out.notes)
        {
            for dir in dirs {
                read_level(&dir, kind, version, &mut out);
            }
        }
    }
    out
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Controller {
    Memory,
    Cpu,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Version {
    V1,
    V2,
}

/// One line of /proc/self/cgroup: the controllers (empty for v2) and the path.
struct Membership {
    controllers: Vec<String>,
    path: String,
}

fn parse_proc_cgroup(text: &str) -> Vec<Membership> {
    text.lines()
        .filter_map(|l| {
            let mut parts = l.splitn(3, ':');
            let (_id, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
            Some(Membership {
                controllers: controllers
                    .split(',')
                    .filter(|c| !c.is_empty())
                    .map(str::to_string)
                    .collect(),
                path: path.to_string(),
            })
        })
        .collect()
}

/// One line of /proc/self/mountinfo, the fields this module needs.
struct Mount {
    /// The directory of the hierarchy this mount shows (field 4).
    root: String,
    mount_point: String,
    fstype: String,
    super_options: Vec<String>,
}

fn parse_mountinfo(text: &str) -> Vec<Mount> {
    text.lines()
        .filter_map(|l| {
            let (left, right) = l.split_once(" - ")?;
            let left: Vec<&str> = left.split(' ').collect();
            let right: Vec<&str> = right.split(' ').collect();
            Some(Mount {
                root: unescape(left.get(3)?),
                mount_point: unescape(left.get(4)?),
                fstype: right.first()?.to_string(),
                super_options: right.get(2)?.split(',').map(str::to_string).collect(),
            })
        })
        .collect()
}

/// mountinfo writes space, tab, newline and backslash as `\ooo`.
fn unescape(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let octal = b
            .get(i + 1..i + 4)
            .filter(|d| d.iter().all(|c| (b'0'..=b'7').contains(c)));
        match (b[i], octal) {
            (b'\\', Some(d)) => {
                out.push((d[0] - b'0') * 64 + (d[1] - b'0') * 8 + (d[2] - b'0'));
                i += 4;
            }
            (c, _) => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// For each hierarchy with `controller` that this process is in: the directories from its
/// own cgroup up to the mount, nearest first.
fn hierarchies(
    root: &Path,
    controller: &str,
    memberships: &[Membership],
    mounts: &[Mount],
    notes: &mut Vec<String>,
) -> Vec<(Version, Vec<PathBuf>)> {
    let mut out = Vec::new();
    for m in memberships {
        let (version, mount) = if m.controllers.is_empty() {
            (Version::V2, mounts.iter().find(|x| x.fstype == "cgroup2"))
        } else if m.controllers.iter().any(|c| c == controller) {
            let mount = mounts
                .iter()
                .find(|x| x.fstype == "cgroup" && x.super_options.iter().any(|o| o == controller));
            (Version::V1, mount)
        } else {
            continue;
        };
        let Some(mount) = mount else { continue };
        match levels(root, mount, &m.path) {
            Some(dirs) => out.push((version, dirs)),
            None => notes.push(format!(
                "cgroup path {:?} under mount root {:?} ({}) is not a plain path; its limits are ignored",
                m.path, mount.root, mount.mount_point
            )),
        }
    }
    out
}

/// The process's cgroup directory under `mount` and its ancestors up to the mount point,
/// nearest first; none for a path with `..` or other than plain names.
fn levels(root: &Path, mount: &Mount, path: &str) -> Option<Vec<PathBuf>> {
    // The mount shows the hierarchy from `mount.root` down; a process outside it (another
    // cgroup namespace) is counted at the mount itself.
    let rel = if mount.root == "/" {
        path
    } else {
        match path.strip_prefix(mount.root.as_str()) {
            Some(rest) if rest.is_empty() || rest.starts_with('/') => rest,
            _ => "/",
        }
    };
    let names: Vec<&str> = Path::new(rel)
        .components()
        .map(|c| match c {
            Component::RootDir => Some(""),
            Component::Normal(n) => n.to_str(),
            _ => None,
        })
        .collect::<Option<Vec<&str>>>()?;
    let base = root.join(mount.mount_point.trim_start_matches('/'));
    let mut dir = base.clone();
    let mut out = vec![base];
    for n in names.into_iter().filter(|n| !n.is_empty()) {
        dir = dir.join(n);
        out.push(dir.clone());
    }
    out.reverse();
    Some(out)
}

/// One level's limit of `kind`, tightened into `out`.
fn read_level(dir: &Path, kind: Controller, version: Version, out: &mut Limits) {
    match kind {
        Controller::Memory => {
            let (limit_file, usage_file, inactive_key) = match version {
                Version::V2 => ("memory.max", "memory.current", "inactive_file"),
                Version::V1 => (
                    "memory.limit_in_bytes",
                    "memory.usage_in_bytes",
                    "total_inactive_file",
                ),
            };
            let Some(limit) = number_file(&dir.join(limit_file), &mut out.notes) else {
                return;
            };
            // A usage that cannot be read counts as none used (the note says so).
            let usage = number_file(&dir.join(usage_file), &mut out.notes).unwrap_or(0);
            let reclaimable = stat_value(&dir.join("memory.stat"), inactive_key, &mut out.notes);
            let used = usage.saturating_sub(reclaimable.unwrap_or(0));
            let available = limit.saturating_sub(used);
            if out.memory.as_ref().is_none_or(|m| available < m.available) {
                out.memory = Some(MemoryLimit {
                    limit,
                    available,
                    dir: dir.to_path_buf(),
                });
            }
        }
        Controller::Cpu => {
            let Some(cpus) = cpu_quota(dir, version, &mut out.notes) else {
                return;
            };
            if out.cpus.as_ref().is_none_or(|c| cpus < c.cpus) {
                out.cpus = Some(CpuLimit {
                    cpus,
                    dir: dir.to_path_buf(),
                });
            }
        }
    }
}

/// The CPUs a level's quota allows; none without a quota.
fn cpu_quota(dir: &Path, version: Version, notes: &mut Vec<String>) -> Option<u32> {
    let (quota, period) = match version {
        Version::V2 => {
            let file = dir.join("cpu.max");
            let text = read_limited(&file, CONTROL_FILE_LIMIT, notes)?;
            let mut parts = text.split_whitespace();
            let (q, p) = (parts.next(), parts.next());
            if q == Some("max") {
                return None;
            }
            match (
                q.and_then(|q| q.parse::<u64>().ok()),
                p.and_then(|p| p.parse::<u64>().ok()),
            ) {
                (Some(q), Some(p)) => (q, p),
                _ => {
                    notes.push(malformed(&file, &text, "QUOTA PERIOD or max PERIOD"));
                    return None;
                }
            }
        }
        Version::V1 => {
            let file = dir.join("cpu.cfs_quota_us");
            let text = read_limited(&file, CONTROL_FILE_LIMIT, notes)?;
            let q: i64 = match text.trim().parse() {
                Ok(q) => q,
                Err(_) => {
                    notes.push(malformed(&file, &text, "a number of microseconds, or -1"));
                    return None;
                }
            };
            if q < 0 {
                return None;
            }
            let p = number_file(&dir.join("cpu.cfs_period_us"), notes)?;
            (q as u64, p)
        }
    };
    if period == 0 {
        notes.push(format!("{}: a CPU period of 0 is ignored", dir.display()));
        return None;
    }
    Some(quota.div_ceil(period).clamp(1, u64::from(u32::MAX)) as u32)
}

/// A byte count, `max` or a huge value meaning none; none with a note when malformed.
fn number_file(file: &Path, notes: &mut Vec<String>) -> Option<u64> {
    let text = read_limited(file, CONTROL_FILE_LIMIT, notes)?;
    let t = text.trim();
    if t == "max" || t == "-1" {
        return None;
    }
    match t.parse::<u64>() {
        Ok(n) if n >= NO_LIMIT_FROM => None,
        Ok(n) => Some(n),
        Err(_) => {
            notes.push(malformed(file, &text, "a number of bytes or max"));
            None
        }
    }
}

/// The value of `key` in a `memory.stat` (`key value` lines); none when absent or unreadable.
fn stat_value(file: &Path, key: &str, notes: &mut Vec<String>) -> Option<u64> {
    let text = read_limited(file, STAT_FILE_LIMIT, notes)?;
    let line = text
        .lines()
        .find(|l| l.split_whitespace().next() == Some(key))?;
    match line.split_whitespace().nth(1).map(str::parse::<u64>) {
        Some(Ok(n)) => Some(n),
        _ => {
            notes.push(malformed(
                file,
                line,
                &format!("{key} and a number of bytes"),
            ));
            None
        }
    }
}

fn malformed(file: &Path, text: &str, valid: &str) -> String {
    let shown: String = text.trim().chars().take(40).collect();
    format!(
        "{}: {shown:?} is not {valid}; this limit is ignored",
        file.display()
    )
}

/// The file's text, at most `limit` bytes; none when absent (no note), or with a note when
/// unreadable, larger than `limit` or not UTF-8.
fn read_limited(file: &Path, limit: u64, notes: &mut Vec<String>) -> Option<String> {
    let f = match std::fs::File::open(file) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return None,
        Err(e) => {
            notes.push(format!("{}: {e}; ignored", file.display()));
            return None;
        }
    };
    let mut bytes = Vec::new();
    if let Err(e) = f.take(limit + 1).read_to_end(&mut bytes) {
        notes.push(format!("{}: {e}; ignored", file.display()));
        return None;
    }
    if bytes.len() as u64 > limit {
        notes.push(format!(
            "{}: larger than {limit} bytes; ignored",
            file.display()
        ));
        return None;
    }
    match String::from_utf8(bytes) {
        Ok(t) => Some(t),
        Err(_) => {
            notes.push(format!("{}: not UTF-8; ignored", file.display()));
            None
        }
    }
}

#[cfg(test)]
mod tests;
