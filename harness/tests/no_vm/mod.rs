//! For CLI tests that must not boot a VM: a scenario that ends at `assets` within
//! milliseconds, and the real binary run with a PATH of the test's choosing.

use std::path::{Path, PathBuf};
use std::process::Command;

pub fn repo_file(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(rel)
}

/// How the binary ended.
pub struct Ran {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

/// `sno-harness ARGS` from the repository's root, with PATH = `path_dir` only, the registry
/// in `state` and plain progress lines.
pub fn harness_with(args: &[&str], path_dir: &Path, state: &Path) -> Ran {
    harness_at(
        Path::new(env!("CARGO_BIN_EXE_sno-harness")),
        args,
        path_dir,
        state,
    )
}

/// `harness_with` of the binary `bin` (another build of it).
pub fn harness_at(bin: &Path, args: &[&str], path_dir: &Path, state: &Path) -> Ran {
    let o = Command::new(bin)
        .args(args)
        .env("PATH", path_dir)
        .env("SNO_HARNESS_STATE_DIR", state)
        .env("SNO_HARNESS_PROGRESS", "plain")
        .env_remove("ARTIFACT_DIR")
        // Tests run on a GitHub runner must not write its job's summary.
        .env_remove("GITHUB_STEP_SUMMARY")
        .env_remove("GITHUB_ACTIONS")
        .current_dir(repo_file("."))
        .output()
        .unwrap();
    Ran {
        code: o.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
    }
}

/// A scenario that never gets past `assets` (its installer does not exist), with an optional
/// `[expect]` section.
pub fn no_vm_scenario(dir: &Path, expect_verdict: Option<&str>) -> PathBuf {
    // Named relative to the scenario, as every path in one is.
    std::fs::write(
        dir.join("pull-secret.json"),
        r#"{"auths":{"registry.invalid":{"auth":"dGVzdDp0ZXN0"}}}"#,
    )
    .unwrap();
    let installer = dir.join("failing-installer");
    std::fs::write(
        &installer,
        "#!/bin/sh\n[ \"$1\" = version ] && { echo 'openshift-install 4.99.0'; exit 0; }\necho 'level=fatal msg=\"a failing stand-in\"' >&2\nexit 1\n",
    )
    .unwrap();
    std::fs::set_permissions(
        &installer,
        <std::fs::Permissions as std::os::unix::fs::PermissionsExt>::from_mode(0o755),
    )
    .unwrap();
    let mut text = String::from(
        r#"
name = "novm"
profile = "openshift"

[vm]
vcpus = 1
memory = "1GiB"
accel = "tcg"

[[disks]]
id = "install"
size = "8GiB"

[install]
pull_secret = { file = "pull-secret.json" }

[openshift]
installer = "./failing-installer"
"#,
    );
    if let Some(v) = expect_verdict {
        text.push_str(&format!(
            "\n[expect]\nverdict = \"{v}\"\nfailed_phase = \"assets\"\nreason_contains = \"a failing stand-in\"\n"
        ));
    }
    let path = dir.join("novm.toml");
    std::fs::write(&path, text).unwrap();
    path
}

/// A matrix of eight permutations over a scenario that ends at `assets` as it expects.
// Not every test binary that includes this module makes a matrix.
#[allow(dead_code)]
pub fn no_vm_matrix(dir: &Path) -> PathBuf {
    no_vm_scenario(dir, Some("error"));
    let path = dir.join("m.toml");
    std::fs::write(
        &path,
        "name = \"m\"\nbase = \"novm.toml\"\n\n[[axis]]\nkey = \"vm.vcpus\"\nvalues = [1, 2, 3, 4]\n\n[[axis]]\nkey = \"disks.install.bus\"\nvalues = [\"virtio\", \"nvme\"]\n",
    )
    .unwrap();
    path
}
