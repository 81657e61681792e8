//! The `redfish` backend's running VM (`vm::bmc_boot`) against the real BMC emulator,
//! sushy-tools with its libvirt driver (`sushy_rig`): its start serves the run's ISO, which the
//! emulator fetches and attaches as the domain's CD, and powers the domain on; the install on
//! the disk ejects the media; its stop powers the domain off. A BMC's refusal (an image it
//! cannot fetch) is the start's error, quoting the emulator.
//! And the smoke scenario, whole: `run --backend redfish` passes on a domain the emulator boots.
//!
//! Needs the emulator's venv (ci/install-host-deps.sh) and libvirtd on qemu:///system; in
//! nextest's host-libvirt-gc group, as redfish_emulator is.

mod sushy_rig;

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::{Duration, Instant};

use sno_harness::vm::backend::BmcMachine;
use sno_harness::vm::bmc_boot::{BmcVm, Power};
use sno_harness::vm::error::VmError;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;

use sushy_rig::{Rig, Setup, PASSWORD, USER};

/// The machine the rig's emulator powers, its credentials in an owner-only file.
fn machine(rig: &Rig) -> BmcMachine {
    let creds = rig.dir.path().join("bmc.creds");
    std::fs::write(&creds, format!("{USER}:{PASSWORD}\n")).unwrap();
    std::fs::set_permissions(&creds, std::fs::Permissions::from_mode(0o600)).unwrap();
    BmcMachine {
        bmc: rig.emulator.url(),
        credentials: Some(creds),
        serve_at: std::net::Ipv4Addr::LOCALHOST.into(),
        ssh: "127.0.0.1:22".parse().unwrap(),
        user: "core".into(),
        api: "127.0.0.1:6443".parse().unwrap(),
        trust: Default::default(),
    }
}

/// A run's VM spec whose CD is `iso`.
fn spec(dir: &Path, iso: &Path) -> sno_harness::vm::VmSpec {
    let s = sno_harness::scenario::parse_str(
        &dir.join("s.toml"),
        "name = \"s\"\nprofile = \"fixture\"\n[[disks]]\nid = \"install\"\nsize = \"1GiB\"\n",
    )
    .unwrap();
    sno_harness::run::vm_spec(&s, dir, iso, sno_harness::hw::Accel::Tcg, 1, 2)
}

/// The source files of the domain definition's CD drives.
fn cd_sources(definition: &str) -> Vec<String> {
    let disk = regex::Regex::new(r"(?s)<disk [^>]*device='cdrom'[^>]*>(.*?)</disk>").unwrap();
    let source = regex::Regex::new(r"<source file='([^']+)'").unwrap();
    disk.captures_iter(definition)
        .filter_map(|c| source.captures(&c[1]).map(|s| s[1].to_string()))
        .collect()
}

async fn until(deadline: Duration, what: &str, mut check: impl FnMut() -> bool) {
    let started = Instant::now();
    while !check() {
        assert!(
            started.elapsed() < deadline,
            "{what} not within {deadline:?}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_backend_boots_the_served_iso_through_the_emulator_ejects_it_and_powers_off() {
    let rig = Rig::start();
    let run = rig.dir.path().join("run");
    std::fs::create_dir(&run).unwrap();
    let iso = run.join("live.iso");
    let bytes: Vec<u8> = (0..1u32 << 20).map(|i| (i % 251) as u8).collect();
    std::fs::write(&iso, &bytes).unwrap();
    let (mut vm, _console) = BmcVm::start(&machine(&rig), &spec(&run, &iso), &[], &run)
        .await
        .unwrap();
    let sources = cd_sources(&rig.machine.definition());
    let [source] = sources.as_slice() else {
        panic!("one CD drive with the image: {sources:?}")
    };
    assert_eq!(
        std::fs::read(source).unwrap(),
        bytes,
        "the CD is the run's ISO"
    );
    assert_eq!(rig.machine.state(), "running");
    assert_eq!(vm.power(), Power::On);
    assert!(vm.describe().contains("/live.iso"), "{}", vm.describe());

    vm.install_on_disk();
    until(Duration::from_secs(60), "the media ejected", || {
        cd_sources(&rig.machine.definition()).is_empty()
    })
    .await;

    vm.stop();
    assert_eq!(rig.machine.state(), "shut off", "powered off at the end");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_image_the_emulator_cannot_fetch_is_the_starts_error_quoting_it() {
    let rig = Rig::start();
    let run = rig.dir.path().join("run");
    std::fs::create_dir(&run).unwrap();
    // The server cannot open the file: it answers 500, and the emulator refuses the insertion.
    let missing = run.join("no-such.iso");
    let e = BmcVm::start(&machine(&rig), &spec(&run, &missing), &[], &run)
        .await
        .err()
        .expect("refused");
    let text = e.to_string();
    assert!(matches!(e, VmError::Bmc(_)), "{text}");
    assert!(
        text.contains("Cannot download virtual media: got error 500 from the server"),
        "the emulator's message quoted: {text}"
    );
    assert_ne!(rig.machine.state(), "running", "not powered on");
}

/// A machine for the smoke scenario: its 3 GiB and 2 vCPUs, its install disk (virtio, serial
/// `sno-install`), an empty CD drive, and QEMU's user network with SSH and the API forwarded
/// from `ports` on this host's loopback (the harness's own `-netdev user`, through libvirt's
/// QEMU passthrough as its libvirt backend passes it).
fn smoke_machine_xml(name: &str, disk: &Path, ports: (u16, u16)) -> String {
    let (ssh, api) = ports;
    format!(
        "<domain type='qemu' xmlns:qemu='http://libvirt.org/schemas/domain/qemu/1.0'>
  <name>{name}</name>
  <memory unit='MiB'>3072</memory>
  <vcpu>2</vcpu>
  <os><type arch='x86_64' machine='q35'>hvm</type></os>
  <features><acpi/></features>
  <devices>
    <disk type='file' device='disk'>
      <driver name='qemu' type='raw'/>
      <source file='{}'/>
      <target dev='vda' bus='virtio'/>
      <serial>sno-install</serial>
    </disk>
    <disk type='file' device='cdrom'>
      <driver name='qemu' type='raw'/>
      <target dev='sda' bus='sata'/>
      <readonly/>
    </disk>
    <graphics type='vnc' autoport='yes' listen='127.0.0.1'/>
  </devices>
  <qemu:commandline>
    <qemu:arg value='-netdev'/>
    <qemu:arg value='user,id=net0,hostfwd=tcp:127.0.0.1:{ssh}-:22,hostfwd=tcp:127.0.0.1:{api}-:6443,hostname=sno-master-0'/>
    <qemu:arg value='-device'/>
    <qemu:arg value='virtio-net-pci,netdev=net0,bus=pcie.0,addr=0x10'/>
  </qemu:commandline>
</domain>
",
        disk.display()
    )
}

/// `sno-harness run scenarios/smoke.toml --backend redfish` on the rig's machine, through the
/// BMC at `bmc`, with SSH and the API at `ports` on this host's loopback; what it printed and
/// its result.json.
fn run_through(
    rig: &Rig,
    bmc: &str,
    ports: (u16, u16),
    extra: &[&str],
) -> (std::process::Output, serde_json::Value) {
    let m = machine(rig);
    let out = rig.dir.path().join("out");
    let started = Instant::now();
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_sno-harness"))
        .arg("run")
        .arg(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../scenarios/smoke.toml"
        ))
        .args(["--backend", "redfish", "--bmc", bmc])
        .arg("--bmc-credentials")
        .arg(m.credentials.as_ref().unwrap())
        .args(["--ssh", &format!("core@127.0.0.1:{}", ports.0)])
        .args(["--api", &format!("127.0.0.1:{}", ports.1)])
        .args(extra)
        .args(["--set", "vm.accel=tcg", "--out"])
        .arg(&out)
        .env("SNO_HARNESS_STATE_DIR", rig.dir.path().join("state"))
        .output()
        .unwrap();
    eprintln!("run --backend redfish took {:?}", started.elapsed());
    let result = std::fs::read(out.join("smoke/result.json"))
        .map(|b| serde_json::from_slice(&b).unwrap())
        .unwrap_or_else(|e| panic!("no result.json ({e}): {}", said(&o)));
    (o, result)
}

fn said(o: &std::process::Output) -> String {
    format!(
        "{}\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// The smoke scenario, whole, on a machine the emulator boots: `run --backend redfish --keep`
/// passes and leaves the machine powered on, booted from its disk, with the media ejected and
/// the way in printed; `sno-harness gc` then powers it off through the BMC.
#[test]
fn smoke_passes_on_a_machine_booted_through_the_emulator() {
    let ports = (sushy_rig::free_port(), sushy_rig::free_port());
    let rig = Rig::start_with(8 << 30, |name, disk| smoke_machine_xml(name, disk, ports));
    let (o, result) = run_through(&rig, &rig.emulator.url(), ports, &["--keep"]);
    let printed = said(&o);
    assert_eq!(o.status.code(), Some(0), "{printed}");
    assert_eq!(result["verdict"], "pass", "{result}");
    assert_eq!(result["left_powered_on"], true, "{result}");
    assert!(printed.contains("left powered on by its BMC"), "{printed}");
    assert!(printed.contains("sno-harness gc"), "{printed}");
    assert_eq!(rig.machine.state(), "running", "kept: left powered on");
    assert!(cd_sources(&rig.machine.definition()).is_empty(), "ejected");

    let gc = std::process::Command::new(env!("CARGO_BIN_EXE_sno-harness"))
        .arg("gc")
        .env("SNO_HARNESS_STATE_DIR", rig.dir.path().join("state"))
        .output()
        .unwrap();
    let gc_said = said(&gc);
    assert_eq!(gc.status.code(), Some(0), "{gc_said}");
    assert!(
        gc_said.contains("power off the machine of the BMC"),
        "{gc_said}"
    );
    assert_eq!(rig.machine.state(), "shut off", "gc powered it off");
}

/// What a run the BMC stopped must show: verdict `error` (exit 4) at live-boot, the reason
/// quoting `quoted`, the machine never powered on and no media left in it.
fn ended_by_the_bmc(
    rig: &Rig,
    o: &std::process::Output,
    result: &serde_json::Value,
    quoted: &[&str],
) {
    assert_eq!(o.status.code(), Some(4), "{}", said(o));
    assert_eq!(result["verdict"], "error", "{result}");
    assert_eq!(result["failed_phase"], "live-boot", "{result}");
    let reason = result["reason"].as_str().unwrap();
    eprintln!("the run's reason: {reason}");
    for q in quoted {
        assert!(reason.contains(q), "the reason quotes {q:?}: {reason}");
    }
    assert_ne!(rig.machine.state(), "running", "never powered on");
    assert!(
        cd_sources(&rig.machine.definition()).is_empty(),
        "no media left in"
    );
}

/// Fault: the BMC refuses the media. This one takes images only from IPv6 addresses (as a BMC
/// on an IPv6-only management network does) and the harness serves at 127.0.0.1: its 400
/// with Redfish's extended error ends the run.
#[test]
fn the_bmc_refusing_the_media_ends_the_run_as_error_quoting_it() {
    let rig = Rig::start_set_up(&Setup {
        config: "SUSHY_EMULATOR_VIRTUAL_MEDIA_IP_FAMILY = '6'\n".into(),
        ..Default::default()
    });
    let ports = (sushy_rig::free_port(), sushy_rig::free_port());
    let (o, result) = run_through(&rig, &rig.emulator.url(), ports, &[]);
    ended_by_the_bmc(
        &rig,
        &o,
        &result,
        &[
            "VirtualMedia.InsertMedia",
            "400",
            "IPv6 address required but got IPv4 address: 127.0.0.1",
        ],
    );
}

/// Fault: the ISO's URL is not reachable from the BMC. The emulator runs in a network
/// namespace of its own (a management network), reached over a veth pair; the harness serves
/// on this host's loopback (`--bmc-serve-at` left at 127.0.0.1), which from the BMC's side is
/// its own: its fetch is refused and so is the insertion, with the URL's token hidden.
#[test]
fn an_iso_url_the_bmc_cannot_reach_ends_the_run_as_error_quoting_it() {
    let rig = Rig::start_set_up(&Setup {
        own_network: true,
        ..Default::default()
    });
    let ports = (sushy_rig::free_port(), sushy_rig::free_port());
    let (o, result) = run_through(&rig, &rig.emulator.url(), ports, &[]);
    ended_by_the_bmc(
        &rig,
        &o,
        &result,
        &[
            "VirtualMedia.InsertMedia",
            "500",
            "Failed fetching image from URL http://127.0.0.1:",
            "/<token>/live.iso",
            "Connection refused",
        ],
    );
}

/// Fault: a slow BMC. Every connection to it waits 40 s before it is answered, past the
/// client's 30 s deadline for a request: the run ends at the first request, naming it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bmc_slower_than_the_clients_deadline_ends_the_run_as_error_naming_it() {
    let rig = Rig::start();
    let delay = Arc::new(AtomicU64::new(40_000));
    let proxy = sushy_rig::slow_proxy(rig.emulator.addr(), delay).await;
    let ports = (sushy_rig::free_port(), sushy_rig::free_port());
    let started = Instant::now();
    let (o, result) =
        tokio::task::block_in_place(|| run_through(&rig, &format!("http://{proxy}"), ports, &[]));
    ended_by_the_bmc(
        &rig,
        &o,
        &result,
        &["GET /redfish/v1", "no answer within 30s"],
    );
    assert!(
        started.elapsed() < Duration::from_secs(300),
        "ended at the client's deadline: {:?}",
        started.elapsed()
    );
}

/// `--keep` on a machine booted through its BMC: the run's end leaves it powered on with the
/// media ejected (the harness's server, which they name, ends with it), and `sno-harness gc`
/// powers it off through the BMC from the run's registration once the harness is gone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kept_machine_stays_powered_on_and_gc_powers_it_off_through_the_bmc() {
    let rig = Rig::start();
    let run = rig.dir.path().join("run");
    std::fs::create_dir(&run).unwrap();
    let iso = run.join("live.iso");
    std::fs::write(&iso, vec![7u8; 1 << 20]).unwrap();
    let m = machine(&rig);
    let (mut vm, _console) = BmcVm::start(&m, &spec(&run, &iso), &[], &run)
        .await
        .unwrap();
    assert_eq!(rig.machine.state(), "running");
    tokio::task::block_in_place(|| vm.leave_powered_on());
    drop(vm);
    assert_eq!(rig.machine.state(), "running", "left powered on");
    assert!(cd_sources(&rig.machine.definition()).is_empty(), "ejected");

    // The registration a kept run leaves, of a harness that is gone.
    let state = rig.dir.path().join("state");
    let runs = state.join("runs");
    std::fs::create_dir_all(&runs).unwrap();
    std::fs::set_permissions(&runs, std::fs::Permissions::from_mode(0o700)).unwrap();
    let entry = serde_json::json!({
        "id": "smoke", "pid": u32::MAX - 1, "pid_start": 1,
        "dir": run, "backend": "redfish", "keep": true,
        "bmc": sno_harness::registry::BmcRecord::of(&m),
    });
    std::fs::write(runs.join("1-smoke.json"), entry.to_string()).unwrap();
    let o = tokio::task::block_in_place(|| {
        std::process::Command::new(env!("CARGO_BIN_EXE_sno-harness"))
            .arg("gc")
            .env("SNO_HARNESS_STATE_DIR", &state)
            .output()
            .unwrap()
    });
    let said = String::from_utf8_lossy(&o.stdout).to_string() + &String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{said}");
    assert!(
        said.contains("power off the machine of the BMC"),
        "gc says what it did: {said}"
    );
    assert_eq!(rig.machine.state(), "shut off", "gc powered it off");
}
