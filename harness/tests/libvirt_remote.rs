//! The libvirt backend on a remote host: `--connect qemu+ssh://root@127.0.0.1:PORT/system`,
//! through a private sshd, so that libvirt's own SSH transport, the harness's SSH forwards,
//! the per-run storage pool and the console stream all run for real. The "remote" libvirtd is
//! this host's, which nothing in those paths knows: the run directory is made unreadable to
//! libvirt's QEMU user, so a path that read the run's files directly would fail. The console
//! stream is also where a console can be lost: another client may take it by force.

// The libvirt backend is built with the `libvirt` feature only (on by default).
#![cfg(feature = "libvirt")]

mod private_sshd;
mod run_watch;

use private_sshd::Sshd;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Output};

fn uri(sshd: &Sshd) -> String {
    format!(
        "qemu+ssh://root@127.0.0.1:{}/system?keyfile={}&no_verify=1",
        sshd.port,
        sshd.path("client").display()
    )
}

fn virsh(args: &[&str]) -> String {
    let out = Command::new("virsh")
        .args(["-c", "qemu:///system"])
        .args(args)
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The harness's objects libvirt still has: domains, pools, networks named `sno-*` that
/// belong to a run named `run` (its name is part of theirs), and the pool directories. Any
/// run of that name counts, a killed earlier one too: for the runs a test killed itself.
fn leftovers(run: &str) -> Vec<String> {
    leftovers_named(|n| n.starts_with(&format!("sno-{run}-")))
}

/// What libvirt still has of the one VM named `vm` (its pool and pool directory share the
/// name): a passing run checks its own objects only, so a run of the same id on this host
/// (a local libvirt test beside it, a killed rehearsal) is not counted as its leftover.
fn leftovers_of_vm(vm: &str) -> Vec<String> {
    leftovers_named(|n| n == vm)
}

/// The name of the VM a run directory's domain XML (`vm.txt`) defines.
fn vm_name_in(dir: &Path) -> String {
    let domain = std::fs::read_to_string(dir.join("vm.txt")).unwrap();
    domain
        .split("<name>")
        .nth(1)
        .and_then(|rest| rest.split("</name>").next())
        .unwrap_or_else(|| panic!("no <name> in {}: {domain}", dir.display()))
        .to_string()
}

fn leftovers_named(ours: impl Fn(&str) -> bool) -> Vec<String> {
    let mut found = Vec::new();
    for (what, list) in [
        ("domain", virsh(&["list", "--all", "--name"])),
        ("pool", virsh(&["pool-list", "--all", "--name"])),
        ("network", virsh(&["net-list", "--all", "--name"])),
    ] {
        found.extend(
            list.lines()
                .map(str::trim)
                .filter(|n| ours(n))
                .map(|n| format!("{what} {n}")),
        );
    }
    if let Ok(dir) = std::fs::read_dir("/var/lib/libvirt/images") {
        found.extend(
            dir.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| ours(n))
                .map(|n| format!("directory /var/lib/libvirt/images/{n}")),
        );
    }
    found
}

/// A scenario named `name` (smoke otherwise) in `dir`.
fn smoke_named(dir: &Path, name: &str) -> std::path::PathBuf {
    let smoke = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios/smoke.toml"),
    )
    .unwrap();
    let path = dir.join(format!("{name}.toml"));
    std::fs::write(
        &path,
        smoke.replace("name = \"smoke\"", &format!("name = \"{name}\"")),
    )
    .unwrap();
    path
}

fn harness(args: &[&str], state: &Path) -> Output {
    let out = Command::new(env!("CARGO_BIN_EXE_sno-harness"))
        .args(args)
        .env("SNO_HARNESS_STATE_DIR", state)
        .env("SNO_HARNESS_PROGRESS", "plain")
        .output()
        .unwrap();
    eprintln!("{}", String::from_utf8_lossy(&out.stderr));
    out
}

/// `sno-harness ARGS --backend libvirt --connect URI --out OUT` on `sshd`'s host, which must
/// exit 0; its stderr.
fn passing_on(sshd: &Sshd, args: &[&str], out: &Path, state: &Path) -> String {
    let uri = uri(sshd);
    let mut all = args.to_vec();
    all.extend(["--backend", "libvirt", "--connect", &uri, "--out"]);
    all.push(out.to_str().unwrap());
    let ran = harness(&all, state);
    let stderr = String::from_utf8_lossy(&ran.stderr).into_owned();
    assert_eq!(ran.status.code(), Some(0), "{stderr}\n{}", sshd.log());
    stderr
}

/// Smoke on a remote host (left out of CI: every check below but the ISO's volume runs on the
/// PXE test's run, `network_boots_on_a_remote_host`).
#[test]
fn smoke_on_a_remote_libvirt_host_passes_and_leaves_nothing_there() {
    let sshd = Sshd::start();
    let work = tempfile::tempdir().unwrap();
    // Only root may enter: libvirt's QEMU (another user) cannot read the run's files here.
    std::fs::set_permissions(work.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
    let scenario = smoke_named(work.path(), "remote");
    let out = work.path().join("out");
    let stderr = passing_on(
        &sshd,
        &["run", scenario.to_str().unwrap()],
        &out,
        &work.path().join("state"),
    );
    // The live ISO and the install disk: two volumes.
    let volumes = a_remote_run_used_the_remote_hosts_copies(&out, "remote", &stderr);
    assert!(volumes >= 2, "{volumes} volumes");
    let vm = vm_name_in(&out.join("remote"));
    assert!(vm.starts_with("sno-remote-"), "{vm}");
    assert_eq!(leftovers_of_vm(&vm), Vec::<String>::new());
    nothing_private_is_left_here(&work.path().join("state"));
}

/// The checks of any passing run `id` under `out` on the remote host: the host it names is
/// the remote libvirtd's, its replay line connects there, every device reads a volume of the
/// run's pool there (none the run directory), the console came through a stream of a pty, and
/// the harness reached the guest through its own SSH forwards, not QEMU's. The number of
/// volumes the domain read.
fn a_remote_run_used_the_remote_hosts_copies(out: &Path, id: &str, stderr: &str) -> usize {
    let dir = out.join(id);
    let result: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("result.json")).unwrap()).unwrap();
    assert_eq!(result["verdict"], "pass", "{id}");
    assert_eq!(result["backend"], "libvirt", "{id}");
    the_host_is_the_remote_libvirtds(&result["host"]);
    assert!(
        result["replay"]
            .as_str()
            .unwrap()
            .contains("--connect qemu+ssh://"),
        "{}",
        result["replay"]
    );
    let domain = std::fs::read_to_string(dir.join("vm.txt")).unwrap();
    let volumes = every_device_reads_a_remote_volume(&domain, out);
    assert!(domain.contains("<serial type=\"pty\">"), "{domain}");
    let serial = std::fs::read_to_string(dir.join("serial.log")).unwrap();
    assert!(
        serial.contains("Linux version"),
        "the console stream: {serial}"
    );
    the_guest_was_reached_through_the_harnesss_forwards(&domain, stderr, id);
    volumes
}

/// The numbers are the remote host's: its context comes from its libvirtd, which names itself,
/// and the kernel it cannot tell is said to be unknown.
fn the_host_is_the_remote_libvirtds(host: &serde_json::Value) {
    let hostname = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
    assert_eq!(
        host["qemu_version"].as_str().unwrap(),
        format!(
            "QEMU {} (libvirt on {})",
            qemu_version_number(),
            hostname.trim()
        ),
        "{host}"
    );
    assert!(
        host["cpu_model"]
            .as_str()
            .unwrap()
            .contains("libvirt's model of"),
        "{host}"
    );
    assert!(
        host["kernel"].as_str().unwrap().starts_with("unknown"),
        "{host}"
    );
}

/// Every `<source file=...>` of the domain is a volume of a run's pool on the remote host; only
/// the metadata names the run directory (for gc). The number of such sources.
fn every_device_reads_a_remote_volume(domain: &str, out: &Path) -> usize {
    let sources: Vec<&str> = domain
        .split("<source file=\"")
        .skip(1)
        .filter_map(|r| r.split('"').next())
        .collect();
    for source in &sources {
        assert!(
            source.starts_with("/var/lib/libvirt/images/sno-"),
            "{source} is not a remote volume"
        );
    }
    assert!(
        !domain.contains(&format!("path=\"{}", out.display())),
        "{domain}"
    );
    sources.len()
}

/// QEMU's own forwards (two: SSH and the API) are not what the harness's "VM started" line of
/// `id` names: it reached them through SSH forwards of its own.
fn the_guest_was_reached_through_the_harnesss_forwards(domain: &str, stderr: &str, id: &str) {
    let started = stderr
        .lines()
        .find(|l| l.contains(id) && l.contains("VM started (libvirt)"))
        .unwrap_or_else(|| panic!("{id}: the VM never started:\n{stderr}"));
    let hostfwd_ports: Vec<&str> = domain
        .split("hostfwd=tcp:127.0.0.1:")
        .skip(1)
        .filter_map(|r| r.split('-').next())
        .collect();
    assert_eq!(hostfwd_ports.len(), 2, "{domain}");
    for p in &hostfwd_ports {
        assert!(
            !started.contains(&format!("127.0.0.1:{p},")) && !started.ends_with(p),
            "the harness used QEMU's forward {p} directly: {started}"
        );
    }
}

/// Local disks stay only with --keep.
fn nothing_private_is_left_here(state: &Path) {
    let left = run_watch::private_leftovers(state);
    assert!(
        left.is_empty(),
        "local disks stay only with --keep: {left:?}"
    );
}

/// The boot server's line of a run: the port it listens on here and the one the guest
/// fetches from.
fn boot_server_ports(stderr: &str, id: &str) -> (u16, u16) {
    let line = stderr
        .lines()
        .find(|l| l.contains(id) && l.contains("boot server on 127.0.0.1:"))
        .unwrap_or_else(|| panic!("no boot server line of {id}:\n{stderr}"));
    let port_after = |marker: &str| -> u16 {
        let rest = &line[line
            .find(marker)
            .unwrap_or_else(|| panic!("{marker} in {line}"))
            + marker.len()..];
        let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
        digits
            .parse()
            .unwrap_or_else(|_| panic!("{marker} in {line}"))
    };
    assert!(line.contains("through an SSH remote forward"), "{line}");
    (
        port_after("boot server on 127.0.0.1:"),
        port_after("http://10.0.2.2:"),
    )
}

/// PXE on a remote host: iPXE's files from the run's pool there (QEMU's TFTP), the rootfs
/// from the boot server on this host through the reverse SSH forward.
#[test]
fn pxe_on_a_remote_host_boots_through_a_reverse_ssh_forward() {
    network_boots_on_a_remote_host(&["pxe.bios.install-to-disk"]);
}

/// The minimal ISO on a remote host: its rootfs through the same forward as PXE's (left out
/// of CI, which runs the PXE test above).
#[test]
fn the_minimal_iso_on_a_remote_host_boots_through_a_reverse_ssh_forward() {
    network_boots_on_a_remote_host(&["minimal-iso.bios.install-to-disk"]);
}

/// Runs the boot matrix's permutations `ids` on a remote libvirt host (this host's libvirtd
/// behind a private sshd): each passes, the guest fetched through the forward, and nothing is
/// left on the host.
fn network_boots_on_a_remote_host(ids: &[&str]) {
    let sshd = Sshd::start();
    let work = tempfile::tempdir().unwrap();
    std::fs::set_permissions(work.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
    let out = work.path().join("out");
    let boot = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios/boot.toml");
    let filter = ids.join(",");
    let stderr = passing_on(
        &sshd,
        &[
            "matrix",
            boot.to_str().unwrap(),
            "--filter",
            &filter,
            "--jobs",
            "1",
        ],
        &out,
        &work.path().join("state"),
    );
    for &id in ids {
        let dir = out.join(id);
        // At least the install disk (PXE's kernel and initrd come by TFTP, not as volumes).
        let volumes = a_remote_run_used_the_remote_hosts_copies(&out, id, &stderr);
        assert!(volumes >= 1, "{id}: {volumes} volumes");
        // The guest's requests reached the server only through the forward: the port it
        // fetched from is sshd's on the remote side, not the server's own.
        let (server, guest) = boot_server_ports(&stderr, id);
        assert_ne!(server, guest, "{id}");
        let serial = std::fs::read_to_string(dir.join("serial.log")).unwrap();
        // The kernel's command line names the URL: the forwarded port, then the run's token.
        let told = serial
            .split(&format!("coreos.live.rootfs_url=http://10.0.2.2:{guest}/"))
            .nth(1)
            .and_then(|rest| rest.split_whitespace().next())
            .unwrap_or_default();
        let token = told.strip_suffix("/rootfs.img").unwrap_or_default();
        assert!(
            token.len() == 32 && token.bytes().all(|b| b.is_ascii_hexdigit()),
            "{id}: the guest was told the forwarded port and the run's path: {serial}"
        );
        let domain = std::fs::read_to_string(dir.join("vm.txt")).unwrap();
        if id.starts_with("pxe") {
            // The TFTP root is the run's pool on the remote host, not the run directory.
            assert!(
                domain.contains("tftp=/var/lib/libvirt/images/sno-"),
                "{domain}"
            );
        }
    }
    let left: Vec<String> = ids
        .iter()
        .flat_map(|id| leftovers_of_vm(&vm_name_in(&out.join(id))))
        .collect();
    assert_eq!(left, Vec::<String>::new());
    nothing_private_is_left_here(&work.path().join("state"));
}

#[test]
fn gc_over_ssh_removes_what_a_killed_remote_run_left() {
    let sshd = Sshd::start();
    let work = tempfile::tempdir().unwrap();
    std::fs::set_permissions(work.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
    let scenario = smoke_named(work.path(), "remotekill");
    let out = work.path().join("out");
    let state = work.path().join("state");
    let uri = uri(&sshd);
    let mut child = Command::new(env!("CARGO_BIN_EXE_sno-harness"))
        .args(["run"])
        .arg(&scenario)
        .args(["--backend", "libvirt", "--connect", &uri, "--out"])
        .arg(&out)
        .env("SNO_HARNESS_STATE_DIR", &state)
        .env("SNO_HARNESS_PROGRESS", "plain")
        .stdin(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let events = out.join("remotekill/events.jsonl");
    let started = std::time::Instant::now();
    // The guest prints on its console: the pool and the domain exist.
    while !std::fs::read_to_string(&events)
        .unwrap_or_default()
        .contains("\"kind\":\"console\"")
    {
        assert!(
            child.try_wait().unwrap().is_none(),
            "the run ended before the guest started"
        );
        assert!(started.elapsed().as_secs() < 600, "the guest never started");
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let left = leftovers("remotekill");
    assert!(
        left.iter().any(|l| l.starts_with("pool ")),
        "the pool outlives a SIGKILL: {left:?}"
    );
    let gc = harness(&["gc", "--connect", &uri], &state);
    let said = String::from_utf8_lossy(&gc.stdout);
    assert_eq!(gc.status.code(), Some(0), "{said}");
    assert!(
        said.contains("remove storage pool sno-remotekill-"),
        "{said}"
    );
    // The domain died with the harness's connection (auto-destroy), the pool went with gc.
    let settle = std::time::Instant::now();
    while !leftovers("remotekill").is_empty() && settle.elapsed().as_secs() < 15 {
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    assert_eq!(leftovers("remotekill"), Vec::<String>::new());
    let result: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("remotekill/result.json")).unwrap())
            .unwrap();
    assert_eq!(result["verdict"], "error");
}

/// Takes the domain's console the way `virsh console --force` does, holds it a moment, and
/// gives it up.
fn take_console(domain: &str) {
    let conn = virt::connect::Connect::open(Some("qemu:///system")).unwrap();
    let dom = conn.lookup_domain_by_name(domain).unwrap();
    let stream = virt::stream::Stream::new(&conn, 0).unwrap();
    dom.open_console(None, &stream, virt::sys::VIR_DOMAIN_CONSOLE_FORCE)
        .expect("taking the console by force");
    std::thread::sleep(std::time::Duration::from_secs(2));
    let _ = stream.finish();
}

/// A console the harness loses while the VM runs is the harness's loss, not the system's:
/// another client takes the domain's console by force during bootkube, the harness's stream
/// closes, and the run ends at once as verdict `error` naming the serial console (exit 4),
/// with nothing left on the host.
#[test]
fn a_console_taken_by_another_client_ends_the_run_as_error_naming_it() {
    let sshd = Sshd::start();
    let work = tempfile::tempdir().unwrap();
    std::fs::set_permissions(work.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
    let slow = run_watch::slow_smoke(work.path());
    let text = std::fs::read_to_string(&slow).unwrap();
    std::fs::write(
        &slow,
        text.replace("name = \"smoke\"", "name = \"conslost\""),
    )
    .unwrap();
    let out = work.path().join("out");
    let uri = uri(&sshd);
    let mut child = Command::new(env!("CARGO_BIN_EXE_sno-harness"))
        .args(["run"])
        .arg(&slow)
        .args(["--backend", "libvirt", "--connect", &uri, "--out"])
        .arg(&out)
        .env("SNO_HARNESS_STATE_DIR", work.path().join("state"))
        .env("SNO_HARNESS_PROGRESS", "plain")
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let dir = out.join("conslost");
    run_watch::wait_for_bootkube(&mut child, &dir.join("events.jsonl"));
    let domains: Vec<String> = virsh(&["list", "--name"])
        .lines()
        .map(str::trim)
        .filter(|n| n.starts_with("sno-conslost-"))
        .map(str::to_string)
        .collect();
    assert_eq!(domains.len(), 1, "the run's domain: {domains:?}");
    take_console(&domains[0]);
    let taken = std::time::Instant::now();
    let output = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(4), "{stderr}");
    assert!(
        taken.elapsed().as_secs() < 120,
        "the run went on for {:?} without its console",
        taken.elapsed()
    );
    let result: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("result.json")).unwrap()).unwrap();
    assert_eq!(result["verdict"], "error", "{result}");
    let reason = result["reason"].as_str().unwrap();
    assert!(reason.contains("serial console"), "{reason}");
    let settle = std::time::Instant::now();
    while !leftovers("conslost").is_empty() && settle.elapsed().as_secs() < 15 {
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    assert_eq!(leftovers("conslost"), Vec::<String>::new());
}

/// This host's QEMU version number (`7.2.22`), as libvirt reports its hypervisor's.
fn qemu_version_number() -> String {
    let out = std::process::Command::new("qemu-system-x86_64")
        .arg("--version")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    text.split_whitespace()
        .skip_while(|w| *w != "version")
        .nth(1)
        .unwrap()
        .to_string()
}
