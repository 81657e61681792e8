//! Which filesystem a directory lives on: the backing store of a perf run's disks (their images
//! sit in the runs' private directories, `registry::private_dir::root()`), part of the host context
//! of every number.

use std::path::{Path, PathBuf};

use crate::perf::model::BackingStore;

/// Where a perf run's disk images live: under `private_root` (the runs' private directories) on
/// this host, or in the run's storage pool on a remote libvirt host, whose filesystem this host
/// cannot see.
pub fn backing_for(backend: &crate::vm::Backend, private_root: &Path) -> Option<BackingStore> {
    if let Some(t) = backend.remote_target() {
        return Some(BackingStore {
            fstype: "unknown (remote)".into(),
            source: format!("a libvirt storage pool on {t}"),
            mount_point: crate::vm::libvirt::paths::REMOTE_POOL_BASE.into(),
            options: String::new(),
        });
    }
    backing_store(private_root)
}

/// The mount `path` (absolute and canonical: symbolic links resolved, no `..`) is on, given
/// the text of a `mountinfo` file (proc(5)): the entry whose mount point is the longest prefix
/// of the path, component by component (`/home` is no prefix of `/homework`). Of several
/// entries at the same mount point the last wins: a later mount hides the earlier ones.
/// `None` when no entry matches (never with a real mountinfo, which has `/`) or the path is
/// relative.
pub fn mount_of(mountinfo: &str, path: &Path) -> Option<BackingStore> {
    if !path.is_absolute() {
        return None;
    }
    let mut best: Option<(usize, BackingStore)> = None;
    for line in mountinfo.lines() {
        let Some(entry) = parse_line(line) else {
            continue;
        };
        let mount_point = PathBuf::from(&entry.mount_point);
        if !path.starts_with(&mount_point) {
            continue;
        }
        let depth = mount_point.components().count();
        if best.as_ref().is_none_or(|(d, _)| depth >= *d) {
            best = Some((depth, entry));
        }
    }
    best.map(|(_, e)| e)
}

/// One line: `ID PARENT MAJ:MIN ROOT MOUNT_POINT OPTIONS [OPTIONAL...] - FSTYPE SOURCE SUPER`.
fn parse_line(line: &str) -> Option<BackingStore> {
    let fields: Vec<&str> = line.split_whitespace().collect();
    let mount_point = unescape(fields.get(4)?);
    let options = fields.get(5)?.to_string();
    // The optional fields end at a lone "-"; it comes after the six fixed fields.
    let sep = fields.iter().skip(6).position(|f| *f == "-")? + 6;
    let fstype = unescape(fields.get(sep + 1)?);
    let source = fields.get(sep + 2).map(|s| unescape(s)).unwrap_or_default();
    Some(BackingStore {
        fstype,
        source,
        mount_point,
        options,
    })
}

/// The kernel writes space, tab, newline and backslash in mountinfo as `\040`, `\011`, `\012`
/// and `\134`.
fn unescape(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        // Bytes, not a string slice: a backslash may be followed by a multi-byte character.
        if let (b'\\', Some(oct)) = (b[i], b.get(i + 1..i + 4)) {
            if oct.iter().all(|c| (b'0'..=b'7').contains(c)) {
                let v = oct.iter().fold(0u32, |v, c| v * 8 + u32::from(c - b'0'));
                if let Ok(v) = u8::try_from(v) {
                    out.push(v);
                    i += 4;
                    continue;
                }
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The mount `dir` is on, on this host: its canonical path looked up in
/// `/proc/self/mountinfo`. `None` when the directory does not exist or mountinfo cannot be
/// read.
pub fn backing_store(dir: &Path) -> Option<BackingStore> {
    let canonical = std::fs::canonicalize(dir).ok()?;
    let text = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    mount_of(&text, &canonical)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn disks_on_a_remote_libvirt_host_are_in_its_pool_not_under_out() {
        use crate::vm::Backend;
        let remote = Backend::Libvirt {
            uri: "qemu+ssh://root@lab-7:2222/system".into(),
        };
        let b = backing_for(&remote, Path::new("/")).unwrap();
        assert_eq!(b.source, "a libvirt storage pool on root@lab-7:2222");
        assert_eq!(b.mount_point, "/var/lib/libvirt/images");
        assert_eq!(b.fstype, "unknown (remote)");
        // Local libvirt and QEMU: the mount --out is on.
        let local = Backend::Libvirt {
            uri: "qemu:///system".into(),
        };
        assert_eq!(
            backing_for(&local, Path::new("/")),
            backing_store(Path::new("/"))
        );
        assert_eq!(
            backing_for(&Backend::Qemu, Path::new("/")),
            backing_store(Path::new("/"))
        );
        assert!(backing_store(Path::new("/")).is_some());
    }

    const MOUNTINFO: &str = "\
22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw,errors=remount-ro
23 22 0:21 / /proc rw,nosuid,nodev,noexec,relatime shared:12 - proc proc rw
24 22 0:22 / /home rw,relatime shared:2 - xfs /dev/sdb1 rw,attr2,inode64
25 22 0:23 / /tmp rw,nosuid,nodev shared:3 - tmpfs tmpfs rw,size=8G
26 24 8:33 / /home/work\\040dir rw,noatime - btrfs /dev/sdc1 rw,space_cache=v2
27 22 0:45 / /tmp rw,relatime shared:40 - tmpfs scratch rw,size=1G
28 22 0:50 / /mnt/nfs rw,relatime - nfs4 server:/export\\040x rw,vers=4.2
";

    fn at(path: &str) -> BackingStore {
        mount_of(MOUNTINFO, Path::new(path)).unwrap()
    }

    #[test]
    fn longest_mount_point_prefix_wins() {
        let b = at("/home/alice/runs");
        assert_eq!(b.fstype, "xfs");
        assert_eq!(b.source, "/dev/sdb1");
        assert_eq!(b.mount_point, "/home");
        assert_eq!(b.options, "rw,relatime");
        assert_eq!(at("/var/lib/x").fstype, "ext4");
        assert_eq!(at("/").mount_point, "/");
        // The mount point itself is on its own mount.
        assert_eq!(at("/home").fstype, "xfs");
    }

    #[test]
    fn prefixes_are_whole_components() {
        // "/homework" starts with the string "/home" but is not under it.
        let b = at("/homework/runs");
        assert_eq!((b.fstype.as_str(), b.mount_point.as_str()), ("ext4", "/"));
    }

    #[test]
    fn escaped_names_and_later_mounts_over_earlier_ones() {
        let b = at("/home/work dir/out");
        assert_eq!(b.fstype, "btrfs");
        assert_eq!(b.mount_point, "/home/work dir");
        assert_eq!(at("/home/work/out").fstype, "xfs");
        // Two mounts on /tmp: the later one hides the first.
        assert_eq!(at("/tmp/perf").source, "scratch");
        assert_eq!(at("/mnt/nfs/a").source, "server:/export x");
        assert_eq!(unescape(r"a\134b\011c\0"), "a\\b\tc\\0");
        assert_eq!(unescape("\\é\\777\\04"), "\\é\\777\\04");
    }

    #[test]
    fn no_answer_without_a_matching_entry() {
        assert_eq!(mount_of(MOUNTINFO, Path::new("relative/dir")), None);
        assert_eq!(mount_of("", Path::new("/x")), None);
        // Malformed lines are skipped, not fatal.
        let text = "garbage\n30 1 8:1 / /srv rw - ext4 /dev/sdz1 rw\n31 1 8:1 / /opt rw";
        assert_eq!(
            mount_of(text, Path::new("/srv/x")).unwrap().source,
            "/dev/sdz1"
        );
        assert_eq!(mount_of(text, Path::new("/opt/x")), None);
    }

    #[test]
    fn this_hosts_temporary_directory() {
        let dir = tempfile::tempdir().unwrap();
        let b = backing_store(dir.path()).expect("mountinfo names a mount for every path");
        assert!(!b.fstype.is_empty() && !b.mount_point.is_empty(), "{b:?}");
        assert!(std::fs::canonicalize(dir.path())
            .unwrap()
            .starts_with(&b.mount_point));
        assert_eq!(backing_store(&dir.path().join("missing")), None);
    }
}
