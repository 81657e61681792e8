//! Shared by the tests that check a run left no VM behind.

use std::path::Path;

/// QEMU processes whose command line names `dir` (a run's disks and sockets are in it).
pub fn qemu_processes_for(dir: &Path) -> Vec<String> {
    let needle = dir.display().to_string();
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|p| std::fs::read(p.path().join("cmdline")).ok())
        .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
        .filter(|c| c.contains("qemu-system") && c.contains(&needle))
        .collect()
}
