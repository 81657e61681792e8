//! Admission inside a memory cgroup, for real: the test makes a cgroup v1 memory cgroup of
//! its own (under the one it runs in), limits it, starts `sno-harness plan --json` in it,
//! and checks that the admission counts the cgroup's limit, not the host's MemAvailable.
//! Needs root and a writable v1 memory hierarchy; without them it says why and does
//! nothing. The cgroup is removed on every path (its guard kills the child first).

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

const GIB: u64 = 1 << 30;
/// What `fleet::admission` keeps for the host.
const HEADROOM: u64 = GIB;

/// The v1 memory hierarchy's mount point and this process's cgroup in it.
fn own_memory_cgroup() -> Option<PathBuf> {
    let cgroups = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    let path = cgroups.lines().find_map(|l| {
        let mut p = l.splitn(3, ':');
        let (_, controllers, path) = (p.next()?, p.next()?, p.next()?);
        controllers
            .split(',')
            .any(|c| c == "memory")
            .then(|| path.to_string())
    })?;
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    let mount = mountinfo.lines().find_map(|l| {
        let (left, right) = l.split_once(" - ")?;
        let right: Vec<&str> = right.split(' ').collect();
        let is_memory =
            right.first() == Some(&"cgroup") && right.get(2)?.split(',').any(|o| o == "memory");
        let left: Vec<&str> = left.split(' ').collect();
        let point = left.get(4)?;
        (is_memory && left.get(3) == Some(&"/")).then(|| PathBuf::from(point))
    })?;
    Some(mount.join(path.trim_start_matches('/')))
}

/// A cgroup the test made: the child in it is killed and the directory removed on drop.
struct TestCgroup {
    dir: PathBuf,
    child: Option<Child>,
}

impl Drop for TestCgroup {
    fn drop(&mut self) {
        if let Some(c) = &mut self.child {
            let _ = c.kill();
            let _ = c.wait();
        }
        // A cgroup directory is removed with rmdir once no process is in it.
        if let Err(e) = std::fs::remove_dir(&self.dir) {
            eprintln!("could not remove {}: {e}", self.dir.display());
        }
    }
}

fn repo_file(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(rel)
}

#[test]
fn plan_admits_by_the_memory_cgroup_it_runs_in() {
    // SAFETY: geteuid has no preconditions and cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("SKIPPED: not root, cannot make a memory cgroup");
        return;
    }
    let Some(parent) = own_memory_cgroup().filter(|d| d.join("cgroup.procs").exists()) else {
        eprintln!("SKIPPED: no cgroup v1 memory hierarchy (memory controller) on this host");
        return;
    };
    let name = format!(
        "sno-harness-test-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .subsec_nanos()
    );
    let dir = parent.join(name);
    if let Err(e) = std::fs::create_dir(&dir) {
        eprintln!("SKIPPED: {} is not writable: {e}", parent.display());
        return;
    }
    let mut cg = TestCgroup { dir, child: None };
    // 7.5 GiB: two VMs of 3 GiB and the 1 GiB headroom fit, a third does not.
    let limit: u64 = 7 * GIB + GIB / 2;
    std::fs::write(cg.dir.join("memory.limit_in_bytes"), limit.to_string()).unwrap();
    let host_available = mem_available();
    assert!(
        host_available > limit + 3 * GIB,
        "this host has {host_available} bytes available: the test needs a limit well below it"
    );

    // releases.toml: three permutations of smoke.toml, each a 2-vCPU VM of 3 GiB.
    let matrix = repo_file("scenarios/releases.toml");
    let child = Command::new("sh")
        .args([
            "-c",
            r#"echo $$ > "$1/cgroup.procs" && exec "$2" plan --json "$3""#,
            "sh",
        ])
        .arg(&cg.dir)
        .arg(env!("CARGO_BIN_EXE_sno-harness"))
        .arg(&matrix)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let child = cg.child.insert(child);
    let mut stdout = String::new();
    child
        .stdout
        .take()
        .unwrap()
        .take(1 << 20)
        .read_to_string(&mut stdout)
        .unwrap();
    let status = child.wait().unwrap();
    let mut stderr = String::new();
    let _ = child.stderr.take().unwrap().read_to_string(&mut stderr);
    assert!(status.success(), "{status}: {stderr}");
    let v: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let a = &v["admission"];
    eprintln!("admission in a cgroup limited to {limit} bytes: {a}");

    assert_eq!(a["cgroup_memory_limit_bytes"], limit, "{a}");
    assert_eq!(a["memory_from"], "cgroup memory limit 7.5 GiB", "{a}");
    let available = a["memory_available_bytes"].as_u64().unwrap();
    assert!(available <= limit, "{available} > {limit}");
    // The child's own usage (a shell, then the harness) is a few MiB, not half a GiB.
    assert!(available > limit - GIB / 2, "{available}");
    let need = 3 * GIB;
    let fit = (available - HEADROOM) / need;
    assert_eq!(fit, 2);
    assert_eq!(a["at_once"]["by_memory"], fit, "{a}");
    // Outside the cgroup, the host's memory would hold all three.
    assert!((host_available - HEADROOM) / need >= 3);
}

/// MemAvailable of this host, in bytes.
fn mem_available() -> u64 {
    let m = std::fs::read_to_string("/proc/meminfo").unwrap();
    let kib: u64 = m
        .lines()
        .find_map(|l| l.strip_prefix("MemAvailable:"))
        .and_then(|r| r.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap();
    kib * 1024
}
