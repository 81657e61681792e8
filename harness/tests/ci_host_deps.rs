//! ci/install-host-deps.sh installs Debian 12 packages as root: on any other host, or as
//! another user, it says what to do instead and stops with exit 3 before it installs anything.
//! The host is a stand-in os-release (OS_RELEASE_FILE); the user is uid 65534 (setpriv) or,
//! when the tests do not run as root, a user namespace's root. apt-get, cargo and rustc are
//! stand-ins, and apt-get records that it ran: no case here may reach it.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

const FEDORA: &str = "NAME=\"Fedora Linux\"\nVERSION_ID=40\nID=fedora\n\
                      PRETTY_NAME=\"Fedora Linux 40 (Workstation Edition)\"\n";
const UBUNTU: &str = "PRETTY_NAME=\"Ubuntu 22.04.4 LTS\"\nNAME=\"Ubuntu\"\n\
                      VERSION_ID=\"22.04\"\nID=ubuntu\nID_LIKE=debian\n";
const DEBIAN_11: &str =
    "PRETTY_NAME=\"Debian GNU/Linux 11 (bullseye)\"\nNAME=\"Debian GNU/Linux\"\n\
                         VERSION_ID=\"11\"\nVERSION=\"11 (bullseye)\"\nID=debian\n";
const DEBIAN_12: &str =
    "PRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\nNAME=\"Debian GNU/Linux\"\n\
                         VERSION_ID=\"12\"\nVERSION=\"12 (bookworm)\"\nID=debian\n";

/// Who runs the script.
#[derive(Clone, Copy)]
enum As {
    Root,
    Nobody,
}

struct Host {
    dir: tempfile::TempDir,
}

impl Host {
    /// The scripts (ci/install-host-deps.sh, ci/check-rust.sh, Cargo.toml for its
    /// rust-version, the pins it reads) copied where uid 65534 can read them, and the
    /// stand-ins.
    fn new() -> Host {
        let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        for d in ["ci", "bin", "home", "images/recipe"] {
            std::fs::create_dir_all(root.join(d)).unwrap();
        }
        let files = [
            "ci/install-host-deps.sh",
            "ci/check-rust.sh",
            "Cargo.toml",
            "images/recipe/pins.env",
        ];
        for f in files {
            std::fs::copy(repo.join(f), root.join(f)).unwrap();
        }
        let marker = root.join("apt-get-ran");
        let bin = root.join("bin");
        stand_in(
            &bin,
            "apt-get",
            &format!("touch {}; exit 0", marker.display()),
        );
        stand_in(&bin, "cargo", "echo 'cargo 9.0.0'");
        stand_in(&bin, "rustc", "echo 'rustc 9.0.0 (0000000 2099-01-01)'");
        for p in [
            root,
            &root.join("ci"),
            &bin,
            &root.join("home"),
            &root.join("images"),
        ] {
            std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        Host { dir }
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    /// Runs the script with `os_release` as the host's, as `who`; its exit code and stderr.
    fn install(&self, os_release: Option<&str>, who: As, args: &[&str]) -> (i32, String) {
        let release = self.path("os-release");
        match os_release {
            Some(text) => std::fs::write(&release, text).unwrap(),
            None => {
                let _ = std::fs::remove_file(&release);
            }
        }
        std::fs::set_permissions(self.dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        let root_now = euid() == "0";
        let mut cmd = match (who, root_now) {
            (As::Root, true) | (As::Nobody, false) => Command::new("/bin/bash"),
            (As::Root, false) => {
                let mut c = Command::new("unshare");
                c.args(["--map-root-user", "/bin/bash"]);
                c
            }
            (As::Nobody, true) => {
                let mut c = Command::new("setpriv");
                c.args([
                    "--reuid=65534",
                    "--regid=65534",
                    "--clear-groups",
                    "/bin/bash",
                ]);
                c
            }
        };
        let out = cmd
            .arg(self.path("ci/install-host-deps.sh"))
            .args(args)
            .env_clear()
            .env("HOME", self.path("home"))
            .env(
                "PATH",
                format!("{}:/usr/bin:/bin", self.path("bin").display()),
            )
            .env("OS_RELEASE_FILE", &release)
            .output()
            .unwrap();
        assert!(
            !self.path("apt-get-ran").exists(),
            "apt-get ran: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into_owned()
                + &String::from_utf8_lossy(&out.stderr),
        )
    }
}

/// The tests' own effective uid.
fn euid() -> String {
    let out = Command::new("id").arg("-u").output().unwrap();
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

fn stand_in(dir: &Path, name: &str, body: &str) {
    let p = dir.join(name);
    std::fs::write(&p, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// The refusal of a host that is not Debian 12 names it and the two ways on.
fn assert_not_debian_12(out: &str, named: &str) {
    assert!(
        out.contains(&format!("this host is {named}")),
        "names the host: {out}"
    );
    assert!(out.contains("Nothing was installed"), "{out}");
    assert!(out.contains("ci/image/Containerfile"), "the image: {out}");
    assert!(out.contains("ci/image/packages.txt"), "the list: {out}");
    assert!(out.contains("ci/host-programs.txt"), "the list: {out}");
}

#[test]
fn fedora_is_told_to_use_the_image_or_the_package_list_and_stops_with_exit_3() {
    let host = Host::new();
    let (code, out) = host.install(Some(FEDORA), As::Root, &[]);
    assert_eq!(code, 3, "{out}");
    assert_not_debian_12(&out, "Fedora Linux 40 (Workstation Edition)");
}

#[test]
fn ubuntu_though_debian_like_is_not_debian_12() {
    let host = Host::new();
    let (code, out) = host.install(Some(UBUNTU), As::Root, &["--check-only"]);
    assert_eq!(code, 3, "{out}");
    assert_not_debian_12(&out, "Ubuntu 22.04.4 LTS");
}

#[test]
fn debian_11_is_not_debian_12() {
    let host = Host::new();
    let (code, out) = host.install(Some(DEBIAN_11), As::Root, &[]);
    assert_eq!(code, 3, "{out}");
    assert_not_debian_12(&out, "Debian GNU/Linux 11 (bullseye)");
}

#[test]
fn a_host_without_os_release_is_not_taken_for_debian_12() {
    let host = Host::new();
    let (code, out) = host.install(None, As::Root, &[]);
    assert_eq!(code, 3, "{out}");
    assert_not_debian_12(&out, "unknown");
}

#[test]
fn debian_12_as_another_user_is_told_to_run_it_as_root() {
    let host = Host::new();
    let (code, out) = host.install(Some(DEBIAN_12), As::Nobody, &[]);
    assert_eq!(code, 3, "{out}");
    assert!(out.contains("run it as root"), "{out}");
    assert!(out.contains("Nothing was installed"), "{out}");
}

#[test]
fn debian_12_as_root_passes_the_checks() {
    let host = Host::new();
    let (code, out) = host.install(Some(DEBIAN_12), As::Root, &["--check-only"]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("host checks passed"), "{out}");
}
