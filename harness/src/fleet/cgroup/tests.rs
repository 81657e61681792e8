use super::*;

const GIB: u64 = 1 << 30;

/// A stand-in root: /proc/self/{cgroup,mountinfo} and the files given, relative to it.
fn tree(cgroup: &str, mountinfo: &str, files: &[(&str, &str)]) -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    let mut all = vec![
        ("proc/self/cgroup", cgroup),
        ("proc/self/mountinfo", mountinfo),
    ];
    all.extend_from_slice(files);
    for (path, text) in all {
        let p = d.path().join(path);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
    d
}

const V2_MOUNT: &str =
    "29 23 0:26 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 rw,nsdelegate\n";
const V1_MOUNTS: &str = "\
31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
32 31 0:29 / /sys/fs/cgroup/cpu,cpuacct rw,relatime - cgroup cgroup rw,cpu,cpuacct
35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
";

#[test]
fn v2_the_tightest_level_on_the_way_up_wins() {
    let d = tree(
        "0::/kubepods/pod1/ctr\n",
        V2_MOUNT,
        &[
            // The pod: 6 GiB, 5 used: 1 GiB left, tighter than the container's own 4 - 1.
            ("sys/fs/cgroup/kubepods/pod1/memory.max", "6442450944\n"),
            ("sys/fs/cgroup/kubepods/pod1/memory.current", "5368709120\n"),
            ("sys/fs/cgroup/kubepods/pod1/ctr/memory.max", "4294967296\n"),
            (
                "sys/fs/cgroup/kubepods/pod1/ctr/memory.current",
                "1073741824\n",
            ),
            ("sys/fs/cgroup/kubepods/memory.max", "max\n"),
            ("sys/fs/cgroup/kubepods/memory.current", "9999999999\n"),
            ("sys/fs/cgroup/kubepods/pod1/ctr/cpu.max", "250000 100000\n"),
            ("sys/fs/cgroup/kubepods/pod1/cpu.max", "max 100000\n"),
        ],
    );
    let l = limits_under(d.path());
    assert_eq!(l.notes, Vec::<String>::new());
    let m = l.memory.unwrap();
    assert_eq!((m.limit, m.available), (6 * GIB, GIB));
    assert!(m.dir.ends_with("sys/fs/cgroup/kubepods/pod1"), "{m:?}");
    // 2.5 CPUs of quota: 3 vCPU threads' worth, rounded up.
    let c = l.cpus.unwrap();
    assert_eq!(c.cpus, 3);
    assert!(c.dir.ends_with("kubepods/pod1/ctr"), "{c:?}");
}

#[test]
fn v2_without_limits_is_no_limit() {
    let d = tree(
        "0::/user.slice\n",
        V2_MOUNT,
        &[
            ("sys/fs/cgroup/user.slice/memory.max", "max\n"),
            ("sys/fs/cgroup/user.slice/memory.current", "123\n"),
            ("sys/fs/cgroup/user.slice/cpu.max", "max 100000\n"),
        ],
    );
    assert_eq!(limits_under(d.path()), Limits::default());
}

#[test]
fn v1_reads_memory_and_cfs_quota_and_huge_is_unlimited() {
    let d = tree(
        "12:memory:/docker/abc\n4:cpu,cpuacct:/docker/abc\n0::/\n",
        V1_MOUNTS,
        &[
            (
                "sys/fs/cgroup/memory/docker/abc/memory.limit_in_bytes",
                "3221225472\n",
            ),
            (
                "sys/fs/cgroup/memory/docker/abc/memory.usage_in_bytes",
                "1073741824\n",
            ),
            // v1's "unlimited".
            (
                "sys/fs/cgroup/memory/docker/memory.limit_in_bytes",
                "9223372036854771712\n",
            ),
            ("sys/fs/cgroup/memory/docker/memory.usage_in_bytes", "5\n"),
            (
                "sys/fs/cgroup/cpu,cpuacct/docker/abc/cpu.cfs_quota_us",
                "100000\n",
            ),
            (
                "sys/fs/cgroup/cpu,cpuacct/docker/abc/cpu.cfs_period_us",
                "100000\n",
            ),
            ("sys/fs/cgroup/cpu,cpuacct/docker/cpu.cfs_quota_us", "-1\n"),
            (
                "sys/fs/cgroup/cpu,cpuacct/docker/cpu.cfs_period_us",
                "100000\n",
            ),
        ],
    );
    let l = limits_under(d.path());
    assert_eq!(l.notes, Vec::<String>::new());
    let m = l.memory.unwrap();
    assert_eq!((m.limit, m.available), (3 * GIB, 2 * GIB));
    assert_eq!(l.cpus.unwrap().cpus, 1);
}

#[test]
fn a_mount_of_a_subtree_counts_from_its_root() {
    // A container's view: the mount shows the hierarchy from /docker/abc down.
    let d = tree(
        "0::/docker/abc\n",
        "29 23 0:26 /docker/abc /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n",
        &[
            ("sys/fs/cgroup/memory.max", "2147483648\n"),
            ("sys/fs/cgroup/memory.current", "0\n"),
        ],
    );
    let m = limits_under(d.path()).memory.unwrap();
    assert_eq!(m.available, 2 * GIB);
}

#[test]
fn malformed_and_oversized_files_are_ignored_with_a_note() {
    let d = tree(
        "0::/a\n",
        V2_MOUNT,
        &[
            ("sys/fs/cgroup/a/memory.max", "lots\n"),
            ("sys/fs/cgroup/a/memory.current", "1\n"),
            ("sys/fs/cgroup/a/cpu.max", "fast 100000\n"),
            ("sys/fs/cgroup/memory.max", &"9".repeat(5000)),
        ],
    );
    let l = limits_under(d.path());
    assert_eq!((l.memory, l.cpus), (None, None));
    assert_eq!(l.notes.len(), 3, "{:?}", l.notes);
    assert!(
        l.notes[0].contains("a/memory.max: \"lots\" is not a number of bytes or max"),
        "{:?}",
        l.notes
    );
    assert!(
        l.notes[1].contains("memory.max: larger than 4096 bytes"),
        "{:?}",
        l.notes
    );
    assert!(
        l.notes[2].contains("cpu.max: \"fast 100000\" is not QUOTA PERIOD"),
        "{:?}",
        l.notes
    );
}

#[test]
fn a_path_that_climbs_out_of_its_mount_is_not_followed() {
    let d = tree(
        "0::/../../etc\n",
        V2_MOUNT,
        &[("etc/memory.max", "1024\n"), ("etc/memory.current", "0\n")],
    );
    let l = limits_under(d.path());
    assert_eq!(l.memory, None);
    assert!(l.notes[0].contains("is not a plain path"), "{:?}", l.notes);
}

#[test]
fn no_proc_no_limits() {
    let d = tempfile::tempdir().unwrap();
    assert_eq!(limits_under(d.path()), Limits::default());
}

#[test]
fn mountinfo_escapes_are_decoded() {
    assert_eq!(unescape(r"/a\040b\134c"), r"/a b\c");
    assert_eq!(unescape(r"/a\04"), r"/a\04");
}

#[test]
fn inactive_file_pages_are_not_counted_as_used() {
    // v1: 3 GiB used, 2 GiB of it inactive page cache the kernel reclaims under the limit.
    let d = tree(
        "12:memory:/job\n",
        V1_MOUNTS,
        &[
            (
                "sys/fs/cgroup/memory/job/memory.limit_in_bytes",
                "4294967296\n",
            ),
            (
                "sys/fs/cgroup/memory/job/memory.usage_in_bytes",
                "3221225472\n",
            ),
            (
                "sys/fs/cgroup/memory/job/memory.stat",
                "cache 2147483648\ninactive_file 1\ntotal_inactive_file 2147483648\n",
            ),
        ],
    );
    let m = limits_under(d.path()).memory.unwrap();
    assert_eq!(m.available, 3 * GIB);
    // v2's key is inactive_file; a malformed one is a note, and the usage counts whole.
    let d = tree(
        "0::/job\n",
        V2_MOUNT,
        &[
            ("sys/fs/cgroup/job/memory.max", "4294967296\n"),
            ("sys/fs/cgroup/job/memory.current", "3221225472\n"),
            (
                "sys/fs/cgroup/job/memory.stat",
                "anon 1\ninactive_file lots\n",
            ),
        ],
    );
    let l = limits_under(d.path());
    assert_eq!(l.memory.unwrap().available, GIB);
    assert!(
        l.notes[0].contains("\"inactive_file lots\" is not inactive_file and a number"),
        "{:?}",
        l.notes
    );
}
