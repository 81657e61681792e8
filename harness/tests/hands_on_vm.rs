//! A developer's hands on the node, on real VMs under TCG: `sno-harness ssh` into a running run
//! during bootkube, a failed run kept running after the harness (`--keep=on-failure`) and
//! reached with `ssh`, `console` and its kubeconfig until `gc` stops it, a failed run paused at
//! its verdict (`--pause-on-failure`) and resumed by `sno-harness resume` and by SIGUSR1, and
//! `--set` and an inherited `OPENSHIFT_INSTALL_RELEASE_IMAGE_OVERRIDE` recorded in a run. Each
//! run is a shipped fault scenario and must still end as its `[expect]` says (exit 0); the kept
//! ones have bootkube-flaky added, which makes bootkube long enough to log in to.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

mod run_watch;
use run_watch::{pseudo_terminal, qemu_processes_for, wait_for_events, what_the_run_left};

/// A release image no registry serves: the fixture's installer records what it is given.
const RELEASE: &str = "quay.io/sno-harness-test/release:4.17.0-inherited";

/// The registry, the private directories and the run directories of one test, and the gc that
/// stops whatever the test's runs left running, whatever became of the test.
struct Work {
    dir: tempfile::TempDir,
}

impl Work {
    fn new(prefix: &str) -> Work {
        let dir = tempfile::Builder::new().prefix(prefix).tempdir().unwrap();
        // libvirt's QEMU runs as its own user and must reach the run's disks and ISO.
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        Work { dir }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// `sno-harness ARGS` with this test's registry and private directories.
    fn harness(&self) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_sno-harness"));
        c.env("SNO_HARNESS_STATE_DIR", self.path("state"))
            .env("SNO_HARNESS_PRIVATE_DIR", self.path("private"))
            .env("SNO_HARNESS_PROGRESS", "plain")
            .env_remove("OPENSHIFT_INSTALL_RELEASE_IMAGE_OVERRIDE");
        c
    }

    fn run_harness(&self, args: &[&str]) -> Output {
        self.harness()
            .args(args)
            .stdin(Stdio::null())
            .output()
            .unwrap()
    }

    /// A shipped fault scenario with bootkube-flaky added to its faults: cluster-bootstrap fails
    /// twice and bootkube.service restarts 5 s later each time, so that bootkube lasts long
    /// enough (the fast schedule's takes 4 s) for a login to land in it; the rest of the
    /// scenario, its fast schedule and its expectation are as shipped.
    fn with_a_long_bootkube(&self, fault: &str) -> PathBuf {
        let text = std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("../scenarios/faults/{fault}.toml")),
        )
        .unwrap();
        let faults = format!("faults = [\"{fault}\"]");
        assert!(text.contains(&faults), "{fault}.toml changed shape");
        let path = self.path(&format!("{fault}.toml"));
        let longer = format!("faults = [\"bootkube-flaky\", \"{fault}\"]");
        std::fs::write(&path, text.replace(&faults, &longer)).unwrap();
        path
    }
}

impl Drop for Work {
    fn drop(&mut self) {
        let _ = self.run_harness(&["gc"]);
        let private = self.path("private");
        for line in qemu_processes_for(&private) {
            eprintln!("still running after gc, killed: {line}");
        }
        let _ = Command::new("pkill")
            .args(["-KILL", "-f"])
            .arg(private.display().to_string())
            .status();
    }
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn said(o: &Output) -> String {
    format!("{}{}", text(&o.stdout), text(&o.stderr))
}

/// Waits for the run's harness to exit, within `limit`.
fn wait_within(child: &mut Child, limit: Duration, events: &Path) -> std::process::ExitStatus {
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            panic!(
                "the run did not end within {limit:?}\n{}",
                what_the_run_left(events)
            );
        }
        std::thread::sleep(Duration::from_millis(500));
    }
}

/// When phase `name` of result `r` ended, on the wall clock.
fn phase_end(r: &serde_json::Value, name: &str) -> std::time::SystemTime {
    let started = humantime::parse_rfc3339(r["started_at"].as_str().unwrap()).unwrap();
    let phase = r["phases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == name)
        .unwrap_or_else(|| panic!("no phase {name}: {r}"));
    let end_ms = phase["end_ms"]
        .as_u64()
        .unwrap_or_else(|| panic!("{name} did not end: {r}"));
    started + Duration::from_millis(end_ms)
}

fn result_of(dir: &Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(dir.join("result.json")).unwrap()).unwrap()
}

/// `sno-harness ssh RUN -- CMD` until it answers (a node's sshd restarts while it boots).
fn ssh_answer(work: &Work, run: &str, cmd: &str) -> String {
    let start = Instant::now();
    loop {
        let o = work.run_harness(&["ssh", run, "--", cmd]);
        if o.status.success() {
            return text(&o.stdout);
        }
        assert!(
            start.elapsed() < Duration::from_secs(120),
            "ssh {run} -- {cmd} never answered: {}",
            said(&o)
        );
        std::thread::sleep(Duration::from_secs(2));
    }
}

const WHERE_AM_I: &str =
    "id -un; test -e /run/ostree-live && echo live-system || echo installed-system";

/// A failing run kept by `--keep=on-failure` on `backend`: in during bootkube, out as
/// expected, its VM running on after the harness for ssh, console and (when the API answered)
/// the kubeconfig, until gc stops it. Returns the run's result and the harness's output.
fn kept_failure(
    work: &Work,
    (fault, gathered_files): (&str, &[&str]),
    backend: &[&str],
) -> (serde_json::Value, String) {
    let scenario = work.with_a_long_bootkube(fault);
    let out = work.path("out");
    let id = format!("fault-{fault}");
    let dir = out.join(&id);
    let log = work.path(&format!("{id}.stderr"));
    let mut child = work
        .harness()
        .arg("run")
        .arg(&scenario)
        .args(["--keep=on-failure", "--set", "vm.memory=2560MiB", "--out"])
        .arg(&out)
        .args(backend)
        .env("OPENSHIFT_INSTALL_RELEASE_IMAGE_OVERRIDE", RELEASE)
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(work.path(&format!("{id}.stdout"))).unwrap())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    let events = dir.join("events.jsonl");
    wait_for_events(
        &mut child,
        &events,
        &["\"kind\":\"phase-started\",\"phase\":\"bootkube\""],
    );
    let during = ssh_answer(work, &id, WHERE_AM_I);
    let answered = std::time::SystemTime::now();
    assert_eq!(during, "core\nlive-system\n", "ssh during bootkube reached");
    let status = wait_within(&mut child, Duration::from_secs(900), &events);
    let output = std::fs::read_to_string(&log).unwrap();
    assert!(
        status.success(),
        "{id} did not end as it expects ({status}):\n{output}"
    );
    let r = result_of(&dir);
    assert_eq!(r["verdict"], "fail", "{r}");
    assert!(
        answered < phase_end(&r, "bootkube"),
        "ssh answered after bootkube had ended: {r}"
    );
    assert_eq!(r["private"]["kept"], true, "{r}");
    let pid = r["vm_left_running"]
        .as_u64()
        .unwrap_or_else(|| panic!("no VM left running: {r}"));
    assert!(
        Path::new(&format!("/proc/{pid}")).exists(),
        "QEMU {pid} runs on"
    );
    assert!(
        output.contains(&format!(
            "--keep: the run failed ({}",
            r["failed_phase"].as_str().unwrap()
        )),
        "{output}"
    );
    for way_in in [
        format!("sno-harness ssh {id} "),
        format!("sno-harness console {id} "),
        "`sno-harness gc`".into(),
    ] {
        assert!(output.contains(&way_in), "{way_in:?} not in:\n{output}");
    }
    let status = work.run_harness(&["status", &id, "--json"]);
    let st: serde_json::Value = serde_json::from_slice(&status.stdout).unwrap();
    assert_eq!(st["runs"][0]["state"], "kept", "{st}");
    gathered(&dir, gathered_files);
    // --set and the inherited release override: changed, recorded, and what the installer used.
    assert_eq!(
        r["overrides"],
        serde_json::json!(["vm.memory=2560MiB"]),
        "{r}"
    );
    let vm = std::fs::read_to_string(dir.join("vm.txt")).unwrap();
    assert!(
        vm.contains("-m 2560") || vm.contains(">2560</memory>"),
        "{vm}"
    );
    assert_eq!(r["assets"]["release_image"], RELEASE, "{r}");
    assert!(
        r["assets"]["inherited_env"]
            .to_string()
            .contains("OPENSHIFT_INSTALL_RELEASE_IMAGE_OVERRIDE"),
        "{r}"
    );
    let console = work.run_harness(&["console", &id, "--no-follow"]);
    assert!(console.status.success(), "{}", said(&console));
    assert!(
        text(&console.stdout).contains("Linux version"),
        "the console's boot lines"
    );
    (r, output)
}

/// A failure's gather, as the scenario tests check it (tests/tests/scenarios.rs, which runs
/// these two scenarios outside CI): the VM's collectors succeeded, every other collector that
/// did not says why, and the files the fault's cause is read from are there.
fn gathered(dir: &Path, files: &[&str]) {
    let text = std::fs::read_to_string(dir.join("gather/index.json")).unwrap();
    let index: serde_json::Value = serde_json::from_str(&text).unwrap();
    let collectors = index["collectors"].as_array().unwrap();
    for c in collectors {
        let vm = c["name"].as_str().unwrap().starts_with("vm/");
        assert!(
            c["status"] == "ok" || (!vm && !c["reason"].is_null()),
            "{c}"
        );
    }
    for f in files {
        let len = std::fs::metadata(dir.join("gather").join(f)).map_or(0, |m| m.len());
        assert!(len > 0, "gather/{f} is missing or empty:\n{text}");
    }
}

/// gc stops the kept VM `pid` (and, on libvirt, its domain) and the run is no longer listed.
fn gc_stops(work: &Work, id: &str, pid: u64) {
    let gc = work.run_harness(&["gc"]);
    assert!(gc.status.success(), "gc: {}", said(&gc));
    let start = Instant::now();
    while Path::new(&format!("/proc/{pid}")).exists() {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "QEMU {pid} outlived gc: {}",
            said(&gc)
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    let listed = work.run_harness(&["status", id]);
    assert_eq!(listed.status.code(), Some(1), "{}", said(&listed));
}

#[test]
fn a_kept_failure_runs_on_for_ssh_console_and_kubeconfig_until_gc_stops_it() {
    let work = Work::new("sno-kept-");
    let id = "fault-post-reboot-fail";
    let (r, output) = kept_failure(
        &work,
        (
            "post-reboot-fail",
            &[
                "installed/journal.txt",
                "installed/kubelet-status.txt",
                "api/clusterversion.json",
                "api/nodes.json",
            ][..],
        ),
        &[],
    );
    // After the harness: the installed system answers, and the API answered during the run.
    let after = ssh_answer(&work, id, WHERE_AM_I);
    assert_eq!(after, "core\ninstalled-system\n");
    let private = PathBuf::from(r["private"]["dir"].as_str().unwrap());
    let kubeconfig = private.join("assets/auth/kubeconfig-forwarded");
    assert!(
        kubeconfig.is_file(),
        "the API answered: its kubeconfig is handed on"
    );
    assert!(
        output.contains(&format!("export KUBECONFIG={}", kubeconfig.display())),
        "{output}"
    );
    gc_stops(&work, id, r["vm_left_running"].as_u64().unwrap());
    assert!(private.join("disks").is_dir(), "gc leaves the kept disks");
}

#[test]
fn libvirt_a_kept_failure_runs_on_as_a_domain_for_ssh_and_console_until_gc_destroys_it() {
    let work = Work::new("sno-kept-libvirt-");
    let id = "fault-install-fail";
    let (r, output) = kept_failure(
        &work,
        (
            "install-fail",
            &[
                "live/journal/install-to-disk.service.txt",
                "live/journal/bootkube.service.txt",
                "live/service-records.txt",
                "live/block-devices.txt",
            ][..],
        ),
        &["--backend", "libvirt"],
    );
    assert!(
        output.contains("its VM runs on (libvirt domain sno-"),
        "{output}"
    );
    // The live system, kept where install-to-disk failed.
    assert_eq!(ssh_answer(&work, id, WHERE_AM_I), "core\nlive-system\n");
    assert!(
        output.contains("no kubeconfig: the API never answered"),
        "{output}"
    );
    let domain = output
        .split("libvirt domain ")
        .nth(1)
        .and_then(|s| s.split(',').next())
        .unwrap()
        .to_string();
    gc_stops(&work, id, r["vm_left_running"].as_u64().unwrap());
    let listed = Command::new("virsh")
        .args(["-c", "qemu:///system", "list", "--all", "--name"])
        .output()
        .unwrap();
    assert!(
        !text(&listed.stdout).contains(&domain),
        "gc destroyed {domain}: {}",
        said(&listed)
    );
}

/// The rootfs-404 fault (a failure at live-boot, in the live initramfs's emergency shell) paused
/// at its verdict, then resumed by `resume(work, pid)`; the run then gathers and ends as it
/// expects, its pause left out of its duration.
fn paused_then(work: &Work, name: &str, resume: impl FnOnce(&Work, u32)) {
    // `--pause-on-failure` needs a terminal for the run's standard input.
    let (_controller, slave) = pseudo_terminal();
    let out = work.path(name);
    let dir = out.join("fault-rootfs-404");
    let log = work.path(&format!("{name}.stderr"));
    let mut child = work
        .harness()
        .args(["run", "--pause-on-failure", "--out"])
        .arg(&out)
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios/faults/rootfs-404.toml"))
        .stdin(slave)
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    let events = dir.join("events.jsonl");
    wait_for_events(&mut child, &events, &["paused at the failure"]);
    let paused_at = Instant::now();
    let st = work.run_harness(&["status", "fault-rootfs-404", "--json"]);
    let st: serde_json::Value = serde_json::from_slice(&st.stdout).unwrap();
    assert_eq!(st["runs"][0]["state"], "paused", "{st}");
    // The VM is alive while paused: the console grows no verdict, and reads the live boot.
    let console = work.run_harness(&["console", "fault-rootfs-404", "--no-follow"]);
    let lines = text(&console.stdout);
    assert!(
        lines.contains("Linux version") && lines.contains("404"),
        "{lines}"
    );
    assert!(!dir.join("result.json").exists(), "no result while paused");
    assert!(
        !dir.join("gather").exists(),
        "the gather waits for the pause's end"
    );
    std::thread::sleep(Duration::from_secs(3));
    resume(work, child.id());
    let status = wait_within(&mut child, Duration::from_secs(300), &events);
    let paused_for = paused_at.elapsed();
    let output = std::fs::read_to_string(&log).unwrap();
    assert!(status.success(), "not as expected ({status}):\n{output}");
    for said in [
        "paused at the failure (live-boot",
        "sno-harness resume fault-rootfs-404",
        "press Enter",
    ] {
        assert!(output.contains(said), "{said:?} not in:\n{output}");
    }
    let r = result_of(&dir);
    let paused_ms = r["paused_ms"]
        .as_u64()
        .unwrap_or_else(|| panic!("no paused_ms: {r}"));
    assert!(
        paused_ms >= 3000 && paused_ms <= paused_for.as_millis() as u64 + 1000,
        "{paused_ms} ms of {paused_for:?}"
    );
    gathered(&dir, &["vm/screenshot.png"]);
    assert!(
        qemu_processes_for(&work.path("private")).is_empty(),
        "the VM stopped after the pause"
    );
}

#[test]
fn a_paused_failure_is_resumed_by_resume_then_gathered() {
    let work = Work::new("sno-paused-");
    paused_then(&work, "by-resume", |work, _| {
        let o = work.run_harness(&["resume", "fault-rootfs-404"]);
        assert!(o.status.success(), "resume: {}", said(&o));
    });
    // The run has ended: nothing is registered under its id any more.
    let o = work.run_harness(&["resume", "fault-rootfs-404"]);
    assert_ne!(o.status.code(), Some(0), "{}", said(&o));
}

#[test]
fn a_paused_failure_is_resumed_by_sigusr1_then_gathered() {
    let work = Work::new("sno-paused-signal-");
    paused_then(&work, "by-signal", |_, pid| {
        rustix::process::kill_process(
            rustix::process::Pid::from_raw(pid as i32).unwrap(),
            rustix::process::Signal::USR1,
        )
        .unwrap();
    });
}
