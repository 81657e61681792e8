//! The `redfish` backend's running VM (`vm::bmc_boot`) against the real BMC emulator,
//! sushy-tools with its libvirt driver (`sushy_rig`): its start serves the run's ISO, which the
//! emulator fetches and attaches as the domain's CD, and powers the domain on; the install on
//! the disk ejects the media; its stop powers the domain off. A BMC's refusal (an image it
//! cannot fetch) is the start's error, quoting the emulator.
//! A whole `run --backend redfish` is not here yet (docs/real-openshift.md says what stands).
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
use sushy_rig::{Rig, PASSWORD, USER};

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
