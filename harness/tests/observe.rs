//! `observe` follows a machine the harness did not boot: this test makes the assets with
//! `prepare`, starts the VM itself with plain QEMU (its own command line: TCG, the live ISO as
//! a CD-ROM, an empty disk with the serial the scenario's installation disk names, the user
//! network with forwards of SSH and the API, the DHCP hostname minisno's node expects, the
//! serial console into a file), so that the harness owns nothing of it, then runs `observe`
//! and checks that it reaches the verdict and the failed phase the scenario expects, as `run`
//! does for the same scenario (tests/tests/scenarios.rs). The test's QEMU is killed on every
//! path.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Instant;

use sno_harness::scenario::{BootOrder, Scenario};

/// The test's own QEMU, killed when the test ends, however it ends.
struct Qemu(Child);

impl Drop for Qemu {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn repo(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(rel)
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn harness(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_sno-harness"))
        .args(args)
        .output()
        .unwrap()
}

/// Where the test's machine answers.
struct Ports {
    ssh: u16,
    api: u16,
}

/// Plain QEMU for the scenario's machine, from the live ISO `iso`, as a person or another tool
/// would start it. The scenario's firmware is SeaBIOS (QEMU's default) and its one disk the
/// installation disk.
fn start_qemu(s: &Scenario, work: &Path, iso: &Path, ports: &Ports) -> Qemu {
    assert!(!s.vm.firmware.is_uefi(), "the test boots SeaBIOS only");
    let disk = work.join("disk.qcow2");
    let made = Command::new("qemu-img")
        .args(["create", "-q", "-f", "qcow2"])
        .arg(&disk)
        .arg(s.disks[0].size_bytes.to_string())
        .status()
        .unwrap();
    assert!(made.success());
    let (disk_index, cd_index) = match s.vm.boot_order {
        BootOrder::DiskFirst => (1, 2),
        BootOrder::CdromFirst => (2, 1),
    };
    let hostname = sno_harness::hw::nat::node_hostname(&s.install.cluster);
    let netdev = format!(
        "user,id=net0,hostfwd=tcp:127.0.0.1:{}-:22,hostfwd=tcp:127.0.0.1:{}-:6443,hostname={hostname}",
        ports.ssh, ports.api
    );
    let log = std::fs::File::create(work.join("qemu.log")).unwrap();
    let child = Command::new("qemu-system-x86_64")
        .args(["-nodefaults", "-no-user-config", "-display", "none"])
        .args([
            "-machine",
            "q35",
            "-accel",
            "tcg,thread=multi,tb-size=64",
            "-cpu",
            "max",
        ])
        .args([
            "-m",
            &s.vm.memory_mib.to_string(),
            "-smp",
            &s.vm.vcpus.to_string(),
        ])
        .args([
            "-serial",
            &format!("file:{}", work.join("console.log").display()),
        ])
        .args(["-netdev", &netdev])
        .args([
            "-device",
            "virtio-net-pci,netdev=net0,mac=52:54:00:12:34:56",
        ])
        .args(["-object", "rng-random,id=rng0,filename=/dev/urandom"])
        .args(["-device", "virtio-rng-pci,rng=rng0"])
        .args([
            "-drive",
            &format!(
                "file={},format=qcow2,if=none,id=install,cache=unsafe",
                disk.display()
            ),
        ])
        .args([
            "-device",
            &format!(
                "virtio-blk-pci,drive=install,serial={},bootindex={disk_index}",
                s.disks[0].serial
            ),
        ])
        .args([
            "-drive",
            &format!(
                "file={},format=raw,if=none,id=cd0,media=cdrom,readonly=on",
                iso.display()
            ),
        ])
        .args([
            "-device",
            &format!("ide-cd,bus=ide.0,drive=cd0,bootindex={cd_index}"),
        ])
        .stdin(Stdio::null())
        .stdout(log.try_clone().unwrap())
        .stderr(log)
        .spawn()
        .expect("qemu-system-x86_64 runs");
    Qemu(child)
}

/// What an observed run ended with.
struct Observed {
    code: i32,
    result: serde_json::Value,
    events: String,
    out: PathBuf,
    took_s: u64,
}

/// Prepares the scenario's assets, boots them in the test's QEMU and observes it to the end.
/// `by_files` gives the kubeconfig and install-config as files instead of the asset directory.
fn observe(scenario: &str, by_files: bool, work: &Path) -> Observed {
    let path = repo(scenario);
    let s = sno_harness::scenario::load(&path).unwrap();
    let assets = work.join("assets");
    let prepared = harness(&[
        "prepare",
        path.to_str().unwrap(),
        "--assets",
        assets.to_str().unwrap(),
    ]);
    assert!(
        prepared.status.success(),
        "prepare: {}",
        String::from_utf8_lossy(&prepared.stderr)
    );
    let ports = Ports {
        ssh: free_port(),
        api: free_port(),
    };
    let _qemu = start_qemu(&s, work, &assets.join("live.iso"), &ports);
    let out = work.join("out");
    let ssh = format!("core@127.0.0.1:{}", ports.ssh);
    let api = format!("127.0.0.1:{}", ports.api);
    let key = assets.join("ssh-key");
    let console = work.join("console.log");
    let mut args = vec![
        "observe".to_string(),
        path.display().to_string(),
        "--ssh".into(),
        ssh,
        "--key".into(),
        key.display().to_string(),
        "--api".into(),
        api,
        "--console-log".into(),
        console.display().to_string(),
        "--out".into(),
        out.display().to_string(),
        "--set".into(),
        "vm.accel=tcg".into(),
    ];
    if by_files {
        args.extend([
            "--kubeconfig".into(),
            assets.join("assets/auth/kubeconfig").display().to_string(),
            "--install-config".into(),
            assets.join("install-config.yaml").display().to_string(),
        ]);
    } else {
        args.extend([
            "--assets".into(),
            assets.join("assets").display().to_string(),
        ]);
    }
    let started = Instant::now();
    let done = Command::new(env!("CARGO_BIN_EXE_sno-harness"))
        .args(&args)
        .output()
        .unwrap();
    let took_s = started.elapsed().as_secs();
    let run = out.join(&s.name);
    let text = std::fs::read_to_string(run.join("result.json")).unwrap_or_else(|e| {
        panic!(
            "no result.json ({e}); observe said:\n{}",
            String::from_utf8_lossy(&done.stderr)
        )
    });
    eprintln!("{}: observed in {took_s} s", s.name);
    Observed {
        code: done.status.code().unwrap_or(-1),
        result: serde_json::from_str(&text).unwrap(),
        events: std::fs::read_to_string(run.join("events.jsonl")).unwrap(),
        out,
        took_s,
    }
}

/// The verdict and failed phase are the scenario's expectation (exit 0 says `observe` judged
/// so too), the run said what it lacked, and nothing secret is under --out.
fn assert_as_expected(o: &Observed, scenario: &str, work: &Path) {
    let s = sno_harness::scenario::load(&repo(scenario)).unwrap();
    let (verdict, phase) = match &s.expect {
        Some(e) => (e.verdict.clone(), e.failed_phase.clone()),
        None => ("pass".to_string(), None),
    };
    assert_eq!(
        (
            o.result["verdict"].as_str().unwrap(),
            o.result["failed_phase"].as_str()
        ),
        (verdict.as_str(), phase.as_deref()),
        "{}: reason {}",
        s.name,
        o.result["reason"]
    );
    assert_eq!(o.code, 0, "observe judged it as the scenario expects");
    assert_eq!(o.result["backend"], "external");
    let lacks = o.result["lacks"].to_string();
    assert!(
        lacks.contains("no QMP") && lacks.contains("progress lines"),
        "{lacks}"
    );
    let assets = &o.result["phases"][0];
    assert_eq!(
        (
            &assets["status"],
            assets["detail"]
                .as_str()
                .unwrap_or("")
                .contains("made by others")
        ),
        (&serde_json::json!("not-reached"), true),
        "no assets phase of the harness's: {assets}"
    );
    let key = std::fs::read_to_string(work.join("assets/ssh-key")).unwrap();
    let body: String = key.lines().nth(1).unwrap().to_string();
    let leaked = Command::new("grep")
        .args(["-rlF", &body])
        .arg(&o.out)
        .output()
        .unwrap();
    assert!(
        leaked.stdout.is_empty(),
        "the key is under --out: {}",
        String::from_utf8_lossy(&leaked.stdout)
    );
    assert!(o.took_s > 0);
}

fn workdir(name: &str) -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix(&format!("sno-observe-{name}-"))
        .tempdir()
        .unwrap()
}

#[test]
fn smoke_observed_passes_with_the_reboot_seen_as_a_new_boot() {
    let work = workdir("smoke");
    let o = observe("scenarios/smoke.toml", false, work.path());
    assert_as_expected(&o, "scenarios/smoke.toml", work.path());
    assert_eq!(
        o.result["resets"], 1,
        "one reboot: {}",
        o.result["reset_causes"]
    );
    assert!(o.events.contains("\"kind\":\"boot-changed\""));
    let write = &o.result["disk_write"];
    assert!(
        write["bytes"].as_u64().unwrap_or(0) > 50 << 20,
        "the write from coreos-installer's progress lines: {write}"
    );
    let serial = std::fs::read_to_string(o.out.join("smoke/serial.log")).unwrap();
    assert!(
        serial.contains("Linux version"),
        "the console log was followed"
    );
}

#[test]
fn bootkube_fail_observed_fails_at_bootkube_as_its_scenario_says() {
    let work = workdir("bootkube-fail");
    let o = observe("scenarios/faults/bootkube-fail.toml", true, work.path());
    assert_as_expected(&o, "scenarios/faults/bootkube-fail.toml", work.path());
}

#[test]
fn post_reboot_fail_observed_fails_at_bootstrap_cleanup_as_its_scenario_says() {
    let work = workdir("post-reboot-fail");
    let o = observe("scenarios/faults/post-reboot-fail.toml", true, work.path());
    assert_as_expected(&o, "scenarios/faults/post-reboot-fail.toml", work.path());
    assert_eq!(o.result["resets"], 1);
}

/// What `observe` and `prepare` refuse, before anything is made: exit 2, naming the flag and
/// what would do, and nothing under --out.
#[test]
fn bad_input_is_refused_naming_the_flag_and_nothing_is_made() {
    let work = workdir("refusals");
    let w = work.path();
    let key = w.join("key");
    let pair = sno_harness::guest::ssh::SshKeyPair::generate("t").unwrap();
    std::fs::write(&key, &pair.private_openssh).unwrap();
    let assets = w.join("assets");
    std::fs::create_dir_all(assets.join("auth")).unwrap();
    std::fs::write(
        assets.join("auth/kubeconfig"),
        "clusters:\n- cluster:\n    server: https://127.0.0.1:6443\n  name: sno\n",
    )
    .unwrap();
    std::fs::write(
        assets.join("install-config.yaml"),
        "metadata:\n  name: sno\nbaseDomain: example.test\n",
    )
    .unwrap();
    let out = w.join("out");
    let (k, a, o) = (
        key.to_str().unwrap(),
        assets.to_str().unwrap(),
        out.to_str().unwrap(),
    );
    let assisted = repo("scenarios/assisted.toml");
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (
            vec![
                "--ssh",
                "core@127.0.0.1",
                "--key",
                k,
                "--assets",
                a,
                "--keep",
            ],
            "--keep",
        ),
        (
            vec!["--ssh", "127.0.0.1", "--key", k, "--assets", a],
            "--ssh",
        ),
        (
            vec![
                "--ssh",
                "core@127.0.0.1",
                "--key",
                "/nonexistent/key",
                "--assets",
                a,
            ],
            "--key",
        ),
        (
            vec!["--ssh", "core@127.0.0.1", "--key", a, "--assets", a],
            "--key",
        ),
        (vec!["--ssh", "core@127.0.0.1", "--key", k], "--assets DIR"),
        (
            vec!["--ssh", "core@127.0.0.1", "--key", k, "--kubeconfig", k],
            "--install-config",
        ),
        (
            vec![
                "--ssh",
                "core@127.0.0.1",
                "--key",
                k,
                "--assets",
                "/nonexistent",
            ],
            "--assets",
        ),
        (
            vec![
                "--ssh",
                "core@127.0.0.1",
                "--key",
                k,
                "--assets",
                a,
                "--console-log",
                "/nonexistent/console.log",
            ],
            "--console-log",
        ),
        (
            vec![
                "--ssh",
                "core@127.0.0.1",
                "--key",
                k,
                "--assets",
                a,
                "--api",
                "127.0.0.1:port",
            ],
            "--api",
        ),
        (
            vec![
                assisted.to_str().unwrap(),
                "--ssh",
                "core@127.0.0.1",
                "--key",
                k,
                "--assets",
                a,
            ],
            "install.mode = \"assisted\"",
        ),
    ];
    for (args, names) in cases {
        let mut all = vec!["observe", "--out", o];
        all.extend(&args);
        let done = harness(&all);
        let said = String::from_utf8_lossy(&done.stderr);
        assert_eq!(done.status.code(), Some(2), "{args:?}: {said}");
        assert!(
            said.contains(names),
            "{args:?} does not name {names}: {said}"
        );
        assert!(!out.exists(), "{args:?} made {}", out.display());
    }
    let done = harness(&[
        "prepare",
        repo("scenarios/smoke.toml").to_str().unwrap(),
        "--assets",
        a,
    ]);
    assert_eq!(done.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&done.stderr).contains("--assets"));
}
