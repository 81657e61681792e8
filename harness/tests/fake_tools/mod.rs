//! Stand-ins for QEMU and its tools, for CLI tests that must not boot a VM even if validation
//! regressed: `qemu-system-x86_64 --version` answers, every other tool fails at once. Put the
//! returned directory alone on PATH.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// Writes the stand-ins into `root/bin` and returns that directory.
pub fn fake_tools(root: &Path) -> PathBuf {
    let bin = root.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    for (name, body) in [
        // perf_cli.rs checks that this line reaches perf.json's host context.
        (
            "qemu-system-x86_64",
            "echo 'QEMU emulator version 0.0.0 (perf_cli stand-in)'",
        ),
        ("qemu-img", "exit 1"),
        ("coreos-installer", "exit 1"),
    ] {
        let p = bin.join(name);
        std::fs::write(&p, format!("#!/bin/sh\n{body}\n")).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    bin
}
