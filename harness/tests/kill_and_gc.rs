//! SIGKILL of the harness during bootkube, then `sno-harness gc`: nothing of the run remains
//! (no QEMU process, no libvirt domain, no disk, ISO copy or socket, no bound port, no
//! registration), its logs stay, and it gets a result.json saying what happened. Once with each
//! backend: under QEMU the VM dies with the harness (parent-death signal), under libvirt with its
//! connection (auto-destroy); gc collects the files.

mod run_watch;
use run_watch::{
    private_dir_of, private_leftovers, qemu_processes_of_state, slow_smoke, wait_for_bootkube,
};

use std::net::TcpStream;
use std::path::Path;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The forwarded ports, from the harness's "VM started" line.
fn forwarded_ports(stderr: &str) -> Vec<u16> {
    let line = stderr
        .lines()
        .find(|l| l.contains("VM started"))
        .expect("a VM started line");
    line.split("127.0.0.1:")
        .skip(1)
        .map(|rest| {
            rest.chars()
                .take_while(char::is_ascii_digit)
                .collect::<String>()
                .parse()
                .unwrap()
        })
        .collect()
}

fn libvirt_domains() -> Vec<String> {
    let out = Command::new("virsh")
        .args(["-c", "qemu:///system", "list", "--all", "--name"])
        .output()
        .expect("virsh (libvirt-clients)");
    assert!(
        out.status.success(),
        "virsh: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(str::to_string)
        .collect()
}

fn kill_then_gc(backend: &str) {
    use std::os::unix::fs::PermissionsExt;
    let out = tempfile::Builder::new()
        .prefix("sno-kill-")
        .tempdir()
        .unwrap();
    let state = tempfile::tempdir().unwrap();
    // libvirt's QEMU runs as its own user and must pass through to the run's private directory.
    std::fs::set_permissions(state.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let scenario = slow_smoke(out.path());
    let stderr_path = out.path().join("harness.stderr");
    let mut child = Command::new(env!("CARGO_BIN_EXE_sno-harness"))
        .arg("run")
        .arg(&scenario)
        .args(["--backend", backend, "--out"])
        .arg(out.path())
        .env("SNO_HARNESS_STATE_DIR", state.path())
        .env("SNO_HARNESS_PROGRESS", "plain")
        .stdin(Stdio::null())
        .stderr(std::fs::File::create(&stderr_path).unwrap())
        .spawn()
        .unwrap();
    let dir = out.path().join("smoke");
    wait_for_bootkube(&mut child, &dir.join("events.jsonl"));
    let ports = forwarded_ports(&std::fs::read_to_string(&stderr_path).unwrap());
    assert_eq!(ports.len(), 2, "SSH and API forwards");
    let vm_name = format!("sno-smoke-{}", ports[0]);
    match backend {
        "qemu" => assert!(
            !qemu_processes_of_state(state.path()).is_empty(),
            "QEMU runs during bootkube"
        ),
        _ => assert!(
            libvirt_domains().contains(&vm_name),
            "the domain runs during bootkube"
        ),
    }
    let registrations = || {
        std::fs::read_dir(state.path().join("runs"))
            .map(|d| d.count())
            .unwrap_or(0)
    };
    assert_eq!(registrations(), 1, "the run registered itself");

    child.kill().unwrap(); // SIGKILL: no cleanup of any kind in the harness
    child.wait().unwrap();
    // The VM goes with the harness: QEMU by its parent-death signal, the libvirt domain when
    // libvirtd sees the harness's connection close.
    let killed = Instant::now();
    while !qemu_processes_of_state(state.path()).is_empty()
        || (backend == "libvirt" && libvirt_domains().contains(&vm_name))
    {
        assert!(
            killed.elapsed() < Duration::from_secs(15),
            "the VM outlived the killed harness by 15 s"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    eprintln!(
        "VM gone {:.1} s after SIGKILL",
        killed.elapsed().as_secs_f64()
    );
    let private = private_dir_of(state.path(), "smoke").expect("the run's private directory");
    assert!(
        private.join("disks").exists(),
        "the killed harness left its disks (gc's job)"
    );

    let gc = Command::new(env!("CARGO_BIN_EXE_sno-harness"))
        .arg("gc")
        .env("SNO_HARNESS_STATE_DIR", state.path())
        .output()
        .unwrap();
    let gc_out = String::from_utf8_lossy(&gc.stdout);
    eprintln!("{gc_out}{}", String::from_utf8_lossy(&gc.stderr));
    assert!(gc.status.success(), "gc failed");
    assert!(
        gc_out.contains(&format!("remove {}", private.display())),
        "{gc_out}"
    );

    assert!(qemu_processes_of_state(state.path()).is_empty());
    if backend == "libvirt" {
        // By name: other tests may run the smoke scenario on libvirt at the same time.
        assert!(
            !libvirt_domains().contains(&vm_name),
            "the run's domain {vm_name} remains"
        );
        // libvirt's log of the domain's QEMU joined the run's evidence.
        assert!(
            !Path::new(&format!("/var/log/libvirt/qemu/{vm_name}.log")).exists(),
            "libvirt's QEMU log of {vm_name} was left in /var/log/libvirt/qemu"
        );
        assert!(dir.join("qemu.log").is_file(), "qemu.log is in the run");
    }
    let left = private_leftovers(state.path());
    assert!(left.is_empty(), "left after gc: {left:?}");
    for port in ports {
        assert!(
            TcpStream::connect(("127.0.0.1", port)).is_err(),
            "port {port} is still bound"
        );
    }
    assert_eq!(registrations(), 0, "the registration remains");
    for kept in ["events.jsonl", "serial.log", "install-config.yaml"] {
        assert!(dir.join(kept).is_file(), "{kept} is evidence and stays");
    }
    let result: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("result.json")).unwrap()).unwrap();
    assert_eq!(result["verdict"], "error");
    assert_eq!(result["backend"], backend);
    assert!(
        result["reason"].as_str().unwrap().contains("gc"),
        "{result}"
    );
    // A second gc finds nothing.
    let again = Command::new(env!("CARGO_BIN_EXE_sno-harness"))
        .arg("gc")
        .env("SNO_HARNESS_STATE_DIR", state.path())
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&again.stdout).contains("nothing to collect"));
}

#[test]
fn sigkill_during_bootkube_then_gc_leaves_nothing_qemu() {
    kill_then_gc("qemu");
}

#[test]
fn sigkill_during_bootkube_then_gc_leaves_nothing_libvirt() {
    kill_then_gc("libvirt");
}
