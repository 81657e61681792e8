//! Nothing secret under `--out`: a whole run with a canary pull secret, then every file under
//! `--out` (uploaders take it whole and ignore modes) and the harness's own output are searched
//! for the pull secret, the kubeadmin password and every private key the run made. Those live in
//! the run's private directory outside `--out`, whose secrets at rest (the assets, the disks
//! with master.ign, the live ISO with its Ignition, QEMU's sockets) must be the owner's alone,
//! and so must every directory on the way to them. The run is kept (`--keep`), so it also shows
//! what a passing kept run hands on: its VM runs on, the kubeconfig written to
//! `--kubeconfig-out` and `$SHARED_DIR` reaches its API, and `sno-harness gc` stops it.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

mod run_watch;
use run_watch::qemu_processes_for;

/// Distinctive enough to be found anywhere, unlike anything a run prints by itself.
const CANARY: &str = "CANARY-PULL-SECRET-4e1f9b7c2d";

fn base64(data: &[u8]) -> String {
    const T: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in data.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (b[0] as u32) << 16 | (b[1] as u32) << 8 | b[2] as u32;
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(T[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

fn files_under(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        let meta = std::fs::symlink_metadata(&p).unwrap();
        if meta.is_dir() {
            files_under(&p, out);
        } else if meta.is_file() {
            out.push(p);
        }
    }
}

/// The base64 body lines of every PEM private key in `text` (a key is found by any of them).
fn private_key_lines(text: &str) -> Vec<String> {
    let mut lines = Vec::new();
    let mut inside = false;
    for l in text.lines().map(str::trim) {
        if l.starts_with("-----BEGIN") && l.contains("PRIVATE KEY") {
            inside = true;
        } else if l.starts_with("-----END") {
            inside = false;
        } else if inside && l.len() >= 40 {
            lines.push(l.to_string());
        }
    }
    lines
}

/// Private keys inside a kubeconfig (`client-key-data`, base64 of a PEM).
fn kubeconfig_key_lines(kubeconfig: &str) -> Vec<String> {
    kubeconfig
        .lines()
        .filter_map(|l| l.trim().strip_prefix("client-key-data:"))
        .flat_map(|b64| {
            let pem = decode_base64(b64.trim());
            private_key_lines(&String::from_utf8_lossy(&pem))
        })
        .collect()
}

fn decode_base64(s: &str) -> Vec<u8> {
    let val = |c: u8| match c {
        b'A'..=b'Z' => Some(c - b'A'),
        b'a'..=b'z' => Some(c - b'a' + 26),
        b'0'..=b'9' => Some(c - b'0' + 52),
        b'+' => Some(62),
        b'/' => Some(63),
        _ => None,
    };
    let bits: Vec<u8> = s.bytes().filter_map(val).collect();
    let mut out = Vec::new();
    for c in bits.chunks(4) {
        let n = c
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, v)| n | (*v as u32) << (18 - 6 * i));
        for i in 0..c.len().saturating_sub(1) {
            out.push((n >> (16 - 8 * i)) as u8);
        }
    }
    out
}

#[test]
fn nothing_secret_reaches_out_and_a_kept_cluster_is_handed_on() {
    let work = tempfile::Builder::new()
        .prefix("sno-secrets-")
        .tempdir()
        .unwrap();
    let auth = base64(format!("canary:{CANARY}").as_bytes());
    let pull_secret = format!(
        r#"{{"auths":{{"registry.canary.example":{{"auth":"{auth}","email":"{CANARY}@example.test"}}}}}}"#
    );
    let secret_file = work.path().join("pull-secret.json");
    std::fs::write(&secret_file, &pull_secret).unwrap();
    std::fs::set_permissions(&secret_file, std::fs::Permissions::from_mode(0o600)).unwrap();
    let smoke = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios/smoke.toml"),
    )
    .unwrap();
    let scenario = work.path().join("secrets.toml");
    std::fs::write(
        &scenario,
        smoke.replace(
            "[install]\n",
            &format!("[install]\npull_secret = {{ file = {:?} }}\n", secret_file),
        ),
    )
    .unwrap();
    let out = work.path().join("out");
    let state = work.path().join("state");
    let private_root = work.path().join("private");
    let (handed, shared) = (work.path().join("handed"), work.path().join("shared"));
    std::fs::create_dir_all(&handed).unwrap();
    std::fs::create_dir_all(&shared).unwrap();
    let _stop_it = KeptVm {
        state: state.clone(),
        private_root: private_root.clone(),
    };
    // --keep: the private directory stays, so its secrets can be read and searched for.
    let run = Command::new(env!("CARGO_BIN_EXE_sno-harness"))
        .arg("run")
        .arg(&scenario)
        // A passing run gathers too, so that what gather/ keeps is searched.
        .args(["--keep", "--gather", "always", "--out"])
        .arg(&out)
        .arg("--kubeconfig-out")
        .arg(handed.join("kubeconfig"))
        .env("SHARED_DIR", &shared)
        .env("SNO_HARNESS_STATE_DIR", &state)
        .env("SNO_HARNESS_PRIVATE_DIR", &private_root)
        .env("SNO_HARNESS_PROGRESS", "plain")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let harness_output = format!(
        "{}{}",
        String::from_utf8_lossy(&run.stdout),
        String::from_utf8_lossy(&run.stderr)
    );
    assert!(run.status.success(), "the run failed:\n{harness_output}");
    let dir = out.join("smoke");
    let result: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("result.json")).unwrap()).unwrap();
    let private = PathBuf::from(
        result["private"]["dir"]
            .as_str()
            .expect("result.json names it"),
    );
    assert_eq!(result["private"]["kept"], true);
    assert!(private.starts_with(&private_root), "{}", private.display());
    let assets = private.join("assets");

    let needles = needles(&private, &auth);
    let searched = everything_under(&out);
    let leaks = leaks(&searched, &needles, &harness_output);
    assert!(leaks.is_empty(), "secrets leaked:\n{}", leaks.join("\n"));
    eprintln!(
        "searched {} files under --out and the harness's output for {} secrets",
        searched.len(),
        needles.len()
    );

    // The redacted copies say so.
    let redacted = std::fs::read_to_string(dir.join("install-config.yaml")).unwrap();
    assert!(redacted.contains("<redacted>"));
    let ign =
        std::fs::read_to_string(dir.join("assets/bootstrap-in-place-for-live-iso.ign")).unwrap();
    assert!(
        ign.contains("/root/.docker/config.json") && ign.contains("redacted"),
        "{ign}"
    );

    assert_secrets_are_owner_only(&private);
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&assets), 0o700, "assets/");
    the_kept_cluster_is_handed_on_and_gc_stops_it(
        (&dir, &private),
        &state,
        &harness_output,
        &handed,
        &shared,
    );
    let mut asset_files = Vec::new();
    files_under(&assets, &mut asset_files);
    assert!(asset_files.len() >= 5, "{asset_files:?}");
    for f in asset_files {
        assert_eq!(
            mode(&f) & 0o077,
            0,
            "{} is mode {:o}",
            f.display(),
            mode(&f)
        );
    }
}

/// What must not leak, read from where it legitimately lives: the run's private directory.
fn needles(private: &Path, auth: &str) -> Vec<(String, String)> {
    let assets = private.join("assets");
    let password = std::fs::read_to_string(assets.join("auth/kubeadmin-password")).unwrap();
    let mut needles: Vec<(String, String)> = vec![
        ("the pull secret's auth".into(), auth.to_string()),
        ("the pull secret's canary".into(), CANARY.into()),
        ("the kubeadmin password".into(), password.trim().to_string()),
    ];
    let ssh_key = std::fs::read_to_string(private.join("ssh-key")).unwrap();
    for l in private_key_lines(&ssh_key).into_iter().take(3) {
        needles.push(("the run's SSH private key".into(), l));
    }
    let kubeconfig = std::fs::read_to_string(assets.join("auth/kubeconfig")).unwrap();
    let client_key = kubeconfig_key_lines(&kubeconfig);
    assert!(!client_key.is_empty(), "the kubeconfig has a client key");
    for l in client_key.into_iter().take(3) {
        needles.push(("the admin client key".into(), l));
    }
    assert!(needles.iter().all(|(_, n)| n.len() >= 16), "{needles:?}");
    needles
}

/// Every file under --out, without exception: the evidence a reader needs is there, and
/// nothing of the private directory is.
fn everything_under(out: &Path) -> Vec<PathBuf> {
    let mut searched = Vec::new();
    files_under(out, &mut searched);
    for must in [
        "events.jsonl",
        "junit.xml",
        "serial.log",
        "gather/index.json",
        "gather/installed/journal.txt",
        "gather/api/clusteroperators.json",
        "assets/installer.log",
        "assets/bootstrap-in-place-for-live-iso.ign",
        "assets/private.txt",
    ] {
        assert!(
            searched.iter().any(|p| p.ends_with(must)),
            "{must} not in {searched:?}"
        );
    }
    assert!(searched
        .iter()
        .any(|p| p.extension().is_some_and(|x| x == "gz")));
    for never in [
        "auth",
        "disks",
        "live.iso",
        "ssh-key",
        "qmp.sock",
        "serial.sock",
        "console-in.sock",
    ] {
        assert!(
            !searched
                .iter()
                .any(|p| p.components().any(|c| c.as_os_str() == never)),
            "{never} under --out: {searched:?}"
        );
    }
    searched
}

/// Each secret (and any PEM private key) found in a file or in what the harness printed.
fn leaks(files: &[PathBuf], needles: &[(String, String)], output: &str) -> Vec<String> {
    let mut leaks = Vec::new();
    for p in files {
        let text = String::from_utf8_lossy(&readable(p)).into_owned();
        for (what, needle) in needles {
            if text.contains(needle.as_str()) {
                leaks.push(format!("{what} in {}", p.display()));
            }
        }
        if text.contains("PRIVATE KEY-----") {
            leaks.push(format!("a PEM private key in {}", p.display()));
        }
    }
    for (what, needle) in needles {
        if output.contains(needle.as_str()) {
            leaks.push(format!("{what} in the harness's output"));
        }
    }
    leaks
}

/// Stops what a kept run left running, whatever became of the test: gc with the run's
/// registry, then any QEMU still naming the private directories.
struct KeptVm {
    state: PathBuf,
    private_root: PathBuf,
}

impl Drop for KeptVm {
    fn drop(&mut self) {
        let _ = Command::new(env!("CARGO_BIN_EXE_sno-harness"))
            .arg("gc")
            .env("SNO_HARNESS_STATE_DIR", &self.state)
            .env("SNO_HARNESS_PRIVATE_DIR", &self.private_root)
            .output();
        for line in qemu_processes_for(&self.private_root) {
            eprintln!("still running after gc, killed: {line}");
        }
        let _ = Command::new("pkill")
            .args(["-KILL", "-f"])
            .arg(self.private_root.display().to_string())
            .status();
    }
}

/// A passing `--keep` run on the QEMU backend: the VM runs on after the harness has exited,
/// the instructions say how to use and remove it, the kubeconfig it hands on (0600, both
/// places) passes `sno-harness check` against the running VM, and `gc` stops the VM and leaves
/// the disks.
fn the_kept_cluster_is_handed_on_and_gc_stops_it(
    (dir, private): (&Path, &Path),
    state: &Path,
    output: &str,
    handed: &Path,
    shared: &Path,
) {
    let result: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("result.json")).unwrap()).unwrap();
    let pid = result["vm_left_running"]
        .as_u64()
        .unwrap_or_else(|| panic!("no vm_left_running in {result}"));
    assert!(
        result["artifacts"].get("kubeconfig").is_none(),
        "no artifact names a secret: {result}"
    );
    assert_eq!(qemu_processes_for(private).len(), 1, "the kept VM runs");
    let forwarded = private.join("assets/auth/kubeconfig-forwarded");
    for said in [
        format!("the cluster runs on in its VM (QEMU pid {pid})"),
        format!("export KUBECONFIG={}", forwarded.display()),
        "the console: https://console-openshift-console.apps.".to_string(),
        format!(
            "the kubeadmin password is in {}",
            private.join("assets/auth/kubeadmin-password").display()
        ),
        format!("ssh -i {}", private.join("ssh-key").display()),
        "stop the VM with `sno-harness gc`".to_string(),
        format!(
            "the admin kubeconfig is in {}",
            handed.join("kubeconfig").display()
        ),
        format!(
            "the admin kubeconfig is in {}",
            shared.join("kubeconfig").display()
        ),
    ] {
        assert!(output.contains(&said), "{said:?} not in:\n{output}");
    }
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    for k in [handed.join("kubeconfig"), shared.join("kubeconfig")] {
        assert_eq!(mode(&k), 0o600, "{}", k.display());
        assert_eq!(
            std::fs::read(&k).unwrap(),
            std::fs::read(&forwarded).unwrap()
        );
        // The cluster answers through it, after the harness has gone.
        let check = Command::new(env!("CARGO_BIN_EXE_sno-harness"))
            .arg("check")
            .arg("--kubeconfig")
            .arg(&k)
            .args(["--wait", "2m"])
            .output()
            .unwrap();
        assert!(
            check.status.success(),
            "check through {}: {}{}",
            k.display(),
            String::from_utf8_lossy(&check.stdout),
            String::from_utf8_lossy(&check.stderr)
        );
    }
    let gc = Command::new(env!("CARGO_BIN_EXE_sno-harness"))
        .arg("gc")
        .env("SNO_HARNESS_STATE_DIR", state)
        .env("SNO_HARNESS_PRIVATE_DIR", private.parent().unwrap())
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&gc.stdout);
    assert!(
        gc.status.success(),
        "gc: {said}{}",
        String::from_utf8_lossy(&gc.stderr)
    );
    assert!(
        said.contains("smoke: "),
        "gc did nothing for the run: {said}"
    );
    assert_eq!(
        qemu_processes_for(private),
        Vec::<String>::new(),
        "gc: {said}"
    );
    assert!(
        private.join("disks").is_dir(),
        "gc removed the kept disks: {said}"
    );
    let left: Vec<_> = std::fs::read_dir(state.join("runs"))
        .map(|d| d.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    assert!(left.is_empty(), "registrations remain: {left:?}");
}

/// A file's bytes as a reader sees them: a gzipped one (the raw journals) decompressed.
fn readable(p: &Path) -> Vec<u8> {
    let bytes = std::fs::read(p).unwrap();
    if p.extension().is_none_or(|x| x != "gz") {
        return bytes;
    }
    let mut out = Vec::new();
    std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(&bytes[..]), &mut out)
        .unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    out
}

/// What in a private directory carries secrets at rest: the assets, the SSH key, the disks
/// (master.ign, with the cluster CA's key and the pull secret, once installed), the live ISO
/// (its Ignition), a saved VM's state (the guest's memory) and QEMU's sockets (QMP runs anything
/// as the harness's user).
fn carries_secrets(private: &Path, p: &Path) -> bool {
    p.starts_with(private.join("assets"))
        || p.starts_with(private.join("disks"))
        || p.ends_with("ssh-key")
        || p.extension().is_some_and(|x| {
            ["iso", "qcow2", "state", "sock", "fd"]
                .iter()
                .any(|e| x == *e)
        })
}

/// No secret under the private directory (the QEMU backend's) grants group or others anything,
/// nor does any directory from it down to one (a kept VM's QEMU sockets stay while it runs, and
/// must be the owner's alone too).
fn assert_secrets_are_owner_only(private: &Path) {
    use sno_harness::util::private::{exposures, DirAccess};
    let mut secret_files = Vec::new();
    files_under(private, &mut secret_files);
    secret_files.retain(|p| carries_secrets(private, p));
    assert!(
        secret_files.iter().any(|p| p.ends_with("live.iso"))
            && secret_files
                .iter()
                .any(|p| p.extension().is_some_and(|x| x == "qcow2")),
        "--keep leaves the disks and the ISO to judge: {secret_files:?}"
    );
    let found = exposures(
        private,
        &|p| carries_secrets(private, p),
        DirAccess::OwnerOnly,
    )
    .expect("reading the private directory");
    let shown: Vec<String> = found.iter().map(ToString::to_string).collect();
    assert!(
        found.is_empty(),
        "secrets at rest others can reach:\n{}",
        shown.join("\n")
    );
    let mode = std::fs::metadata(private).unwrap().permissions().mode() & 0o777;
    assert_eq!(
        mode, 0o700,
        "the private directory (QEMU's sockets are in it)"
    );
}
