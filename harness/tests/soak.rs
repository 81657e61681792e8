//! Soak (ignored by default; about 30 minutes): 20 smoke runs one after another, the harness
//! killed with SIGKILL at a random moment in every second one, `sno-harness gc` after each. After
//! each round, and at the end: no QEMU process, no libvirt domain and no registration of these
//! runs, no forwarded port still bound, nothing in the runs' TMPDIR, and no file of theirs in
//! /tmp, /var/tmp, /dev/shm or libvirt's per-domain directories. Run it with
//!     cargo nextest run -p sno-harness --test soak --run-ignored only --no-capture
//! `SNO_SOAK_ROUNDS` (default 20) and `SNO_SOAK_BACKEND` (`qemu`, `libvirt`, or `both`:
//! alternating pairs of rounds) change it.

use std::collections::BTreeSet;
use std::net::TcpStream;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// QEMU processes of the soak's runs: their command lines name the soak's directory (the
/// disks are in it). Other VMs may run on the host meanwhile (a CI run, say).
fn qemu_processes(soak: &Path) -> Vec<String> {
    let needle = soak.display().to_string();
    let mut found = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        if let Ok(cmd) = std::fs::read(e.path().join("cmdline")) {
            let cmd = String::from_utf8_lossy(&cmd).replace('\0', " ");
            if (cmd.starts_with("qemu-system") || cmd.contains("/qemu-system"))
                && cmd.contains(&needle)
            {
                found.push(cmd);
            }
        }
    }
    found
}

fn libvirt_sno_domains() -> Vec<String> {
    Command::new("virsh")
        .args(["-c", "qemu:///system", "list", "--all", "--name"])
        .output()
        .map(|o| {
            String::from_utf8_lossy(&o.stdout)
                .lines()
                .map(str::trim)
                .filter(|l| l.starts_with("sno-soak-"))
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

/// Where a run could leave files outside its directory, beside the run's own TMPDIR (checked
/// empty): the shared temporary directories, and libvirt's per-domain state. Other programs
/// on the host (other tests among them) use the shared ones too, so only names of the soak's
/// runs count (`sno-soak-`: the scenario is named `soak`), there and in libvirt's directories.
fn outside_files() -> BTreeSet<String> {
    let mut all = BTreeSet::new();
    for dir in ["/tmp", "/var/tmp", "/dev/shm"] {
        if let Ok(d) = std::fs::read_dir(dir) {
            all.extend(
                d.flatten()
                    .map(|e| e.path().display().to_string())
                    .filter(|p| p.contains("sno-soak")),
            );
        }
    }
    for dir in [
        "/run/libvirt/qemu",
        "/var/lib/libvirt/qemu",
        "/var/lib/libvirt/qemu/channel/target",
        "/var/lib/libvirt/qemu/nvram",
        "/var/log/libvirt/qemu",
    ] {
        if let Ok(d) = std::fs::read_dir(dir) {
            all.extend(
                d.flatten()
                    .map(|e| e.path().display().to_string())
                    .filter(|p| p.contains("sno-soak-")),
            );
        }
    }
    all
}

/// A small deterministic generator: the kill moments differ from round to round but a failing
/// soak can be replayed with the same seed (`SNO_SOAK_SEED`).
struct Lcg(u64);
impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0 >> 33
    }
}

fn forwarded_ports(stderr: &str) -> Vec<u16> {
    stderr
        .lines()
        .filter(|l| l.contains("VM started"))
        .flat_map(|l| {
            l.split("127.0.0.1:")
                .skip(1)
                .filter_map(|r| {
                    r.chars()
                        .take_while(char::is_ascii_digit)
                        .collect::<String>()
                        .parse()
                        .ok()
                })
                .collect::<Vec<u16>>()
        })
        .collect()
}

/// What every round shares: the run directories, the registry, the TMPDIR, the scenario, and
/// the files outside them before the first round.
struct Soak {
    out: tempfile::TempDir,
    state: tempfile::TempDir,
    tmp: std::path::PathBuf,
    smoke: std::path::PathBuf,
    before: std::collections::BTreeSet<String>,
}

/// One round's run of the smoke scenario, killed at `kill_at` when given; its exit status, or
/// None when it was killed.
fn run_round(
    soak: &Soak,
    round: usize,
    backend: &str,
    kill_at: Option<Duration>,
) -> Option<std::process::ExitStatus> {
    let (smoke, state, tmp) = (&soak.smoke, &soak.state, &soak.tmp);
    let dir = soak.out.path().join(format!("round-{round:02}"));
    let stderr_path = soak.out.path().join(format!("round-{round:02}.stderr"));
    let mut child = Command::new(env!("CARGO_BIN_EXE_sno-harness"))
        .arg("run")
        .arg(smoke)
        .args(["--backend", backend, "--out"])
        .arg(&dir)
        .env("SNO_HARNESS_STATE_DIR", state.path())
        .env("SNO_HARNESS_PROGRESS", "plain")
        .env("TMPDIR", tmp)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&stderr_path).unwrap())
        .spawn()
        .unwrap();
    let started = Instant::now();
    loop {
        if let Some(s) = child.try_wait().unwrap() {
            break Some(s);
        }
        if kill_at.is_some_and(|k| started.elapsed() >= k) {
            child.kill().unwrap();
            child.wait().unwrap();
            break None;
        }
        assert!(
            started.elapsed() < Duration::from_secs(900),
            "round {round} hangs"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// After a round and gc: no VM, registration, bound port or disposable file of the run is
/// left; returns the run's directory.
fn assert_round_collected(soak: &Soak, round: usize, stderr_path: &Path) -> std::path::PathBuf {
    let (state, tmp) = (&soak.state, &soak.tmp);
    let dir = soak.out.path().join(format!("round-{round:02}"));
    let gc = Command::new(env!("CARGO_BIN_EXE_sno-harness"))
        .arg("gc")
        .env("SNO_HARNESS_STATE_DIR", state.path())
        .env("TMPDIR", tmp)
        .output()
        .unwrap();
    assert!(
        gc.status.success(),
        "round {round}: gc failed: {}",
        String::from_utf8_lossy(&gc.stderr)
    );
    // The VM dies with the harness; give the kernel (or libvirtd) a moment to reap it.
    let settle = Instant::now();
    let private = state.path().join("private");
    while !qemu_processes(&private).is_empty() || !libvirt_sno_domains().is_empty() {
        assert!(
            settle.elapsed() < Duration::from_secs(15),
            "round {round}: a VM remains: {:?} {:?}",
            qemu_processes(&private),
            libvirt_sno_domains()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    let registrations = std::fs::read_dir(state.path().join("runs"))
        .map(|d| d.count())
        .unwrap_or(0);
    assert_eq!(registrations, 0, "round {round}: a registration remains");
    let stderr = std::fs::read_to_string(stderr_path).unwrap_or_default();
    for port in forwarded_ports(&stderr) {
        assert!(
            TcpStream::connect(("127.0.0.1", port)).is_err(),
            "round {round}: port {port} still bound"
        );
    }
    let run = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .next()
        .unwrap()
        .path();
    let left: Vec<_> = std::fs::read_dir(&private)
        .map(|d| d.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    assert!(
        left.is_empty(),
        "round {round}: private directories remain: {left:?}"
    );
    run
}

/// Nothing of the round outside the run directories and the registry, nor in its TMPDIR.
fn assert_nothing_outside(soak: &Soak, round: usize) {
    let (before, out, state, tmp) = (&soak.before, &soak.out, &soak.state, &soak.tmp);
    let new: Vec<String> = outside_files()
        .difference(before)
        .filter(|p| {
            !p.starts_with(&out.path().display().to_string())
                && !p.starts_with(&state.path().display().to_string())
        })
        .cloned()
        .collect();
    assert!(
        new.is_empty(),
        "round {round}: files outside the run directories: {new:?}"
    );
    let in_tmp: Vec<_> = std::fs::read_dir(tmp)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    assert!(
        in_tmp.is_empty(),
        "round {round}: left in the run's TMPDIR: {in_tmp:?}"
    );
}

#[test]
#[ignore = "a 30-minute soak; run it on purpose"]
fn twenty_runs_half_killed_leave_nothing_behind() {
    use std::os::unix::fs::PermissionsExt;
    let rounds: usize = std::env::var("SNO_SOAK_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20);
    // `both`: rounds 0-1 on QEMU, 2-3 on libvirt, and so on, so each backend has killed and
    // unkilled rounds.
    let backends = std::env::var("SNO_SOAK_BACKEND").unwrap_or_else(|_| "qemu".into());
    let seed: u64 = std::env::var("SNO_SOAK_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(7);
    let mut rng = Lcg(seed);
    let out = tempfile::Builder::new()
        .prefix("sno-soak-")
        .tempdir()
        .unwrap();
    std::fs::set_permissions(out.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let state = tempfile::tempdir().unwrap();
    // libvirt's QEMU passes through it to the runs' private directories.
    std::fs::set_permissions(state.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let before = outside_files();
    // The harness and what it starts (QEMU, ssh, coreos-installer) make their temporary files
    // here: it must be empty after every round.
    let tmp = out.path().join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    // The smoke scenario named `soak`: its domains (`sno-soak-...`) are told apart from
    // other runs' on the same host.
    let smoke = out.path().join("soak.toml");
    std::fs::write(
        &smoke,
        std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios/smoke.toml"),
        )
        .unwrap()
        .replace("name = \"smoke\"", "name = \"soak\""),
    )
    .unwrap();
    let soak = Soak {
        out,
        state,
        tmp,
        smoke,
        before,
    };
    let (mut passed, mut killed) = (0, 0);
    for round in 0..rounds {
        let stderr_path = soak.out.path().join(format!("round-{round:02}.stderr"));
        let backend = match backends.as_str() {
            "both" if round / 2 % 2 == 0 => "qemu",
            "both" => "libvirt",
            one => one,
        };
        // A smoke run takes about 105 s here: the kill lands anywhere from QEMU's start to the
        // cluster checks.
        let kill_at = (round % 2 == 1).then(|| Duration::from_millis(2_000 + rng.next() % 95_000));
        let status = run_round(&soak, round, backend, kill_at);
        let was_killed = status.is_none();
        match status {
            Some(s) => {
                assert!(
                    s.success(),
                    "round {round}: the smoke run failed ({s}); see {}",
                    stderr_path.display()
                );
                passed += 1;
            }
            None => killed += 1,
        }
        let run = assert_round_collected(&soak, round, &stderr_path);
        let result: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(run.join("result.json")).unwrap())
                .unwrap();
        eprintln!(
            "round {round:2} on {backend}: {} ({}{})",
            result["verdict"].as_str().unwrap_or("?"),
            match (kill_at, was_killed) {
                (Some(k), true) => format!("killed at {:.0} s, ", k.as_secs_f64()),
                (Some(k), false) =>
                    format!("ended before the kill planned at {:.0} s", k.as_secs_f64()),
                (None, _) => String::new(),
            },
            result["reason"].as_str().unwrap_or("")
        );
        assert_nothing_outside(&soak, round);
    }
    eprintln!("{rounds} rounds: {passed} passed, {killed} killed and collected by gc");
}
