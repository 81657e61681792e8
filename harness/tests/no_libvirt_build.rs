//! sno-harness built without the `libvirt` feature (`--no-default-features`): it builds with no
//! libvirt headers or library (pkg-config finds no libvirt, so virt-sys would fail), links
//! no libvirt, and everything but the libvirt backend works: `plan`, `report`,
//! `report --merge`, `check`, `doctor`, `gc`, `run` and `matrix` on QEMU. `--backend libvirt`
//! is bad input (exit 2) saying how to get it.
//!
//! The build goes to `<target>/no-libvirt`, which keeps its dependencies between runs: cold it
//! compiles the whole tree once, warm only what changed. One build serves every test here.
//!
//! `a_build_without_libvirt_boots_smoke_on_qemu` boots a VM (the smoke scenario on QEMU, with
//! the fixture); the rest do not.

mod fake_api;
mod fake_tools;
mod no_vm;
mod report_fixtures;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use fake_tools::fake_tools;
use no_vm::{harness_at, harness_with, no_vm_scenario, repo_file, Ran};

/// What `--backend libvirt` says in this build.
const NO_LIBVIRT: &str = "--backend libvirt: this build of sno-harness has no libvirt support (built without the \"libvirt\" feature); rebuild with default features, or use --backend qemu";

/// The binary built without libvirt, once per test binary.
fn binary() -> &'static Path {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(build)
}

fn build() -> PathBuf {
    // CARGO_TARGET_TMPDIR is `<target>/tmp`: the build's own directory sits beside it.
    let target = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .unwrap()
        .join("no-libvirt");
    std::fs::create_dir_all(&target).unwrap();
    let pc = pkg_config_without_libvirt(&target);
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let o = Command::new(cargo)
        .args(["build", "-p", "sno-harness", "--no-default-features"])
        .args(["--bin", "sno-harness", "--manifest-path"])
        .arg(repo_file("Cargo.toml"))
        .env("CARGO_TARGET_DIR", &target)
        // pkg-config finds every library of the host but libvirt: virt-sys's build script
        // fails if it is built at all, while openssl-sys (under ssh2) still finds OpenSSL.
        .env("PKG_CONFIG_LIBDIR", &pc)
        .env("PKG_CONFIG_PATH", "")
        // No debug information: the binary is run, never debugged, and its own target
        // directory (a second copy of every dependency) stays small and quick to link.
        .env("CARGO_PROFILE_DEV_DEBUG", "0")
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "the build without libvirt failed:\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    target.join("debug/sno-harness")
}

/// `<target>/pkgconfig`: a link to each `.pc` file pkg-config finds on this host, libvirt's
/// left out. Made once under a name of this process's, then renamed into place, so that
/// concurrent tests never read a half-made one.
fn pkg_config_without_libvirt(target: &Path) -> PathBuf {
    let done = target.join("pkgconfig");
    if done.is_dir() {
        return done;
    }
    let o = Command::new("pkg-config")
        .args(["--variable", "pc_path", "pkg-config"])
        .output()
        .expect("pkg-config, which the default build needs too");
    let making = target.join(format!("pkgconfig.{}", std::process::id()));
    std::fs::create_dir_all(&making).unwrap();
    let search = String::from_utf8_lossy(&o.stdout).trim().to_string();
    let mut kept = 0;
    for entry in search
        .split(':')
        .filter_map(|d| std::fs::read_dir(d).ok())
        .flatten()
        .flatten()
    {
        let name = entry.file_name().to_string_lossy().into_owned();
        let link = making.join(&name);
        if name.ends_with(".pc") && !name.starts_with("libvirt") && !link.exists() {
            std::os::unix::fs::symlink(entry.path(), link).unwrap();
            kept += 1;
        }
    }
    assert!(kept > 0, "no .pc file in {search:?}");
    // Another test may have been first: its directory is as good as this one.
    if std::fs::rename(&making, &done).is_err() {
        std::fs::remove_dir_all(&making).unwrap();
    }
    done
}

/// `sno-harness ARGS` of the build without libvirt, from the repository's root, with the fake
/// tools alone on PATH and the registry in `tmp/state`.
fn harness(args: &[&str], tmp: &Path) -> Ran {
    harness_at(binary(), args, &fake_tools(tmp), &tmp.join("state"))
}

fn path(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn the_build_links_no_libvirt() {
    let o = Command::new("ldd").arg(binary()).output().unwrap();
    let libs = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "ldd: {libs}");
    assert!(libs.contains("libc.so"), "ldd read the binary: {libs}");
    assert!(!libs.contains("libvirt"), "{libs}");
}

#[test]
fn backend_libvirt_is_bad_input_naming_the_feature() {
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    let scenario = no_vm_scenario(t, Some("error"));
    let matrix = repo_file("scenarios/disks.toml");
    let out = t.join("out");
    let o = path(&out);
    let cases: [&[&str]; 5] = [
        &["run", path(&scenario), "--backend", "libvirt", "--out", o],
        &["matrix", path(&matrix), "--backend", "libvirt", "--out", o],
        &[
            "perf",
            path(&scenario),
            "--repeat",
            "1",
            "--backend",
            "libvirt",
            "--out",
            o,
        ],
        &["plan", path(&matrix), "--backend", "libvirt"],
        &["doctor", "--backend", "libvirt"],
    ];
    for args in cases {
        let r = harness(args, t);
        assert_eq!(r.code, 2, "{args:?}: {}", r.stderr);
        assert!(r.stderr.contains(NO_LIBVIRT), "{args:?}: {}", r.stderr);
        assert!(!out.exists(), "{args:?} made its --out");
    }
    // `--hosts` names libvirt hosts.
    let hosts = t.join("hosts.toml");
    std::fs::write(&hosts, "[[host]]\nuri = \"qemu+ssh://lab/system\"\n").unwrap();
    let r = harness(
        &["matrix", path(&matrix), "--hosts", path(&hosts), "--out", o],
        t,
    );
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("--hosts: this build"), "{}", r.stderr);
    let r = harness(&["gc", "--connect", "qemu:///system"], t);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr
            .contains("--connect: this build of sno-harness has no libvirt support"),
        "{}",
        r.stderr
    );
}

#[test]
fn plan_lists_a_shipped_matrix() {
    let tmp = tempfile::tempdir().unwrap();
    let r = harness(
        &["plan", "--json", path(&repo_file("scenarios/disks.toml"))],
        tmp.path(),
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    assert!(v["permutations"].as_array().unwrap().len() > 4, "{v}");
}

/// `run` and `matrix` on QEMU (runs that end at `assets`, before a VM), then `report` of one
/// shard and `report --merge` of both.
#[test]
fn run_matrix_report_and_merge_work_on_qemu() {
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    let scenario = no_vm_scenario(t, Some("error"));
    let r = harness(
        &[
            "run",
            path(&scenario),
            "--backend",
            "qemu",
            "--out",
            path(&t.join("run")),
        ],
        t,
    );
    assert_eq!(r.code, 0, "the expected error is a pass: {}", r.stderr);
    let m = t.join("m.toml");
    std::fs::write(
        &m,
        "name = \"m\"\nbase = \"novm.toml\"\n\n[[axis]]\nkey = \"vm.vcpus\"\nvalues = [1, 2]\n",
    )
    .unwrap();
    for k in 1..=2 {
        let shard = format!("{k}/2");
        let out = t.join(format!("s{k}"));
        let r = harness(
            &["matrix", path(&m), "--shard", &shard, "--out", path(&out)],
            t,
        );
        assert_eq!(r.code, 0, "shard {shard}: {}", r.stderr);
    }
    let r = harness(&["report", path(&t.join("s1"))], t);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let merged = t.join("merged");
    let (s1, s2) = (t.join("s1"), t.join("s2"));
    let r = harness(
        &[
            "report",
            "--merge",
            path(&s1),
            path(&s2),
            "--out",
            path(&merged),
        ],
        t,
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    let s: serde_json::Value =
        serde_json::from_slice(&std::fs::read(merged.join("summary.json")).unwrap()).unwrap();
    assert_eq!(s["counts"]["total"], 2, "{s}");
}

/// `report` of a run directory the report tests use (synthetic results).
#[test]
fn report_regenerates_a_run_directory() {
    let tmp = tempfile::tempdir().unwrap();
    let run = report_fixtures::passed_run("virtio.512", &[("bus", "virtio")]);
    let dir = tmp.path().join("runs");
    std::fs::create_dir_all(dir.join(&run.id)).unwrap();
    run.write(&dir.join(&run.id)).unwrap();
    let r = harness(&["report", path(&dir)], tmp.path());
    assert_eq!(r.code, 0, "{}", r.stderr);
    for f in ["summary.json", "summary.md", "junit.xml", "report.html"] {
        assert!(dir.join(f).is_file(), "{f}");
    }
}

/// `check` of an API that does not answer: exit 4, as with libvirt built in.
#[test]
fn check_of_an_api_that_does_not_answer_is_exit_4() {
    let tmp = tempfile::tempdir().unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let ca = fake_api::Ca::new("no-libvirt-ca");
    let kc = fake_api::kubeconfig(tmp.path(), &format!("https://127.0.0.1:{port}"), &ca, None);
    let r = harness(&["check", "--kubeconfig", path(&kc)], tmp.path());
    assert_eq!(r.code, 4, "{}{}", r.stdout, r.stderr);
    assert!(
        r.stdout.contains("the API cannot be reached"),
        "{}",
        r.stdout
    );
}

/// `doctor` says libvirt is not built in (a warning: QEMU runs), where the default build says
/// it is.
#[test]
fn doctor_says_libvirt_is_not_built_in() {
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    let line = |r: &Ran| {
        r.stdout
            .lines()
            .find(|l| l.contains("libvirt support"))
            .unwrap_or_else(|| panic!("no libvirt line: {}", r.stdout))
            .to_string()
    };
    let without = harness(&["doctor"], t);
    assert!(line(&without).starts_with("warn"), "{}", line(&without));
    assert!(
        line(&without).contains("not built in"),
        "{}",
        line(&without)
    );
    let with = harness_with(&["doctor"], &fake_tools(t), &t.join("state"));
    assert!(line(&with).starts_with("ok"), "{}", line(&with));
}

/// `gc` runs (exit 0) and says it did not look at libvirt, libvirtd here or not.
#[test]
fn gc_says_it_skipped_libvirt() {
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    let r = harness(&["gc"], t);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stdout.contains("gc: skipped: libvirt qemu:///system:")
            && r.stdout.contains("no libvirt support"),
        "{}",
        r.stdout
    );
}

/// The VM test: the smoke scenario boots and passes on QEMU with the build without libvirt
/// (the fixture from the cache, as the other VM tests use it).
#[test]
fn a_build_without_libvirt_boots_smoke_on_qemu() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let o = Command::new(binary())
        .args(["run", path(&repo_file("scenarios/smoke.toml"))])
        .args(["--backend", "qemu", "--out", path(&out)])
        .env("SNO_HARNESS_STATE_DIR", tmp.path().join("state"))
        .env("SNO_HARNESS_PROGRESS", "plain")
        .env_remove("ARTIFACT_DIR")
        .current_dir(repo_file("."))
        .output()
        .unwrap();
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let result: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("smoke/result.json")).unwrap()).unwrap();
    assert_eq!(result["verdict"], "pass", "{result}");
}
