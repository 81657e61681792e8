//! The Redfish client (`vm::redfish`) against the real BMC emulator, sushy-tools with its
//! libvirt driver (`sushy_rig`): the emulator fetches the ISO the test serves from the
//! harness's boot server and attaches it to the test's libvirt domain as a CD, sets the boot
//! order, powers the domain on and off, ejects; and its refusals (an image it cannot fetch, an
//! image server it cannot reach, wrong credentials) and a slow answer come back as the
//! client's typed errors, quoting the emulator.
//!
//! Needs the emulator's venv (ci/install-host-deps.sh) and libvirtd on qemu:///system; in
//! nextest's host-libvirt-gc group (it uses the host's libvirtd, as the gc tests do).

// Shared with redfish_backend, which uses what this file does not.
#[allow(dead_code)]
mod sushy_rig;

use std::net::SocketAddr;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};
use sno_harness::netboot::{FileServer, Peers};
use sno_harness::vm::redfish::{
    Bmc, BmcSettings, Credentials, Limits, PowerState, Problem, ResetType, Trust,
};
use sushy_rig::{free_port, slow_proxy, Rig, PASSWORD, USER};

fn settings(url: String) -> BmcSettings {
    BmcSettings {
        url,
        credentials: Credentials::new(USER, PASSWORD).unwrap(),
        trust: Trust::System,
        limits: Limits {
            insert: Duration::from_secs(120),
            ..Limits::default()
        },
    }
}

/// A small "ISO" (its bytes are what matters: the emulator copies them into the domain's
/// pool) served by the harness's boot server on 127.0.0.1; its URL and digest.
async fn serve_iso(dir: &Path) -> (FileServer, String, String) {
    let iso = dir.join("live.iso");
    let bytes: Vec<u8> = (0..1u32 << 20).map(|i| (i % 251) as u8).collect();
    std::fs::write(&iso, &bytes).unwrap();
    let server = FileServer::start(SocketAddr::from(([127, 0, 0, 1], 0)), None, Peers::Any)
        .await
        .unwrap();
    server.serve("live.iso", iso);
    let url = format!("http://{}{}", server.addr(), server.path_of("live.iso"));
    (server, url, hex::encode(Sha256::digest(&bytes)))
}

/// The CD drives of a domain definition: their source file, if any, and boot order, if any.
fn cdroms(definition: &str) -> Vec<(Option<String>, Option<u32>)> {
    let disk = regex::Regex::new(r"(?s)<disk [^>]*device='cdrom'[^>]*>(.*?)</disk>").unwrap();
    let source = regex::Regex::new(r"<source file='([^']+)'").unwrap();
    let order = regex::Regex::new(r"<boot order='(\d+)'").unwrap();
    disk.captures_iter(definition)
        .map(|c| {
            let body = &c[1];
            (
                source.captures(body).map(|s| s[1].to_string()),
                order.captures(body).map(|o| o[1].parse().unwrap()),
            )
        })
        .collect()
}

fn sha256_of(path: &str) -> String {
    hex::encode(Sha256::digest(std::fs::read(path).unwrap()))
}

/// Until `check` holds, at most `deadline`.
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
async fn the_emulator_attaches_the_served_iso_boots_from_it_powers_on_and_off_and_ejects() {
    let rig = Rig::start();
    let (_server, iso_url, iso_sha) = serve_iso(rig.dir.path()).await;
    let bmc = Bmc::connect(&settings(rig.emulator.url())).await.unwrap();
    assert_eq!(
        bmc.target().system,
        format!("/redfish/v1/Systems/{}", rig.machine.uuid)
    );
    assert!(
        bmc.target().media.ends_with("/VirtualMedia/Cd"),
        "{:?}",
        bmc.target()
    );
    assert_eq!(bmc.power_state().await.unwrap(), PowerState::Off);

    bmc.insert_media(&iso_url).await.unwrap();
    let media = bmc.media().await.unwrap();
    assert!(media.inserted, "{media:?}");
    assert_eq!(media.image, iso_url);
    let drives = cdroms(&rig.machine.definition());
    let [(Some(source), _)] = drives.as_slice() else {
        panic!("one CD drive with the image: {drives:?}")
    };
    assert!(
        source.starts_with(&rig.dir.path().join("pool").display().to_string()),
        "{source}"
    );
    assert_eq!(
        sha256_of(source),
        iso_sha,
        "the attached image is the served ISO"
    );

    bmc.boot_once_from_cd().await.unwrap();
    let boot = bmc.boot_override().await.unwrap();
    assert_eq!(boot.target.as_deref(), Some("Cd"));
    // The libvirt driver keeps a boot order, not a one-time override: it reports Continuous
    // whatever was asked (the backend ejects the media once the install is on the disk).
    assert_eq!(boot.enabled.as_deref(), Some("Continuous"));
    assert_eq!(
        cdroms(&rig.machine.definition())[0].1,
        Some(1),
        "the CD boots first"
    );

    bmc.reset(ResetType::On).await.unwrap();
    assert_eq!(rig.machine.state(), "running");
    assert_eq!(bmc.power_state().await.unwrap(), PowerState::On);
    bmc.reset(ResetType::ForceOff).await.unwrap();
    until(Duration::from_secs(30), "the domain off", || {
        rig.machine.state() == "shut off"
    })
    .await;
    assert_eq!(bmc.power_state().await.unwrap(), PowerState::Off);

    bmc.eject_media().await.unwrap();
    assert!(!bmc.media().await.unwrap().inserted);
    assert_eq!(
        cdroms(&rig.machine.definition()),
        [],
        "the driver removes the CD drive"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_emulators_refusals_are_typed_errors_quoting_it() {
    let rig = Rig::start();
    let (server, _iso_url, _) = serve_iso(rig.dir.path()).await;
    let bmc = Bmc::connect(&settings(rig.emulator.url())).await.unwrap();

    // An image the boot server does not have: the emulator's fetch gets 404, it answers 400.
    let missing = format!("http://{}{}", server.addr(), server.path_of("no-such.iso"));
    let e = bmc.insert_media(&missing).await.unwrap_err();
    let Some(Problem::Refused { status, message }) = e.problem() else {
        panic!("{e:?}")
    };
    assert_eq!(*status, 400, "{e}");
    assert!(
        message.contains("Cannot download virtual media: got error 404"),
        "{e}"
    );

    // An image server the BMC cannot reach: its fetch is refused, it answers 500.
    let unreachable = format!("http://127.0.0.1:{}/live.iso", free_port());
    let e = bmc.insert_media(&unreachable).await.unwrap_err();
    let Some(Problem::Refused { status, message }) = e.problem() else {
        panic!("{e:?}")
    };
    assert_eq!(*status, 500, "{e}");
    assert!(message.contains("Failed fetching image from URL"), "{e}");
    assert!(message.contains("Connection refused"), "{e}");
    assert!(e.to_string().contains("VirtualMedia.InsertMedia"), "{e}");
    assert!(!bmc.media().await.unwrap().inserted, "nothing was inserted");

    let mut wrong = settings(rig.emulator.url());
    wrong.credentials = Credentials::new(USER, "not-the-password").unwrap();
    let e = Bmc::connect(&wrong).await.err().unwrap();
    assert!(
        matches!(e.problem(), Some(Problem::Unauthorized(_))),
        "{e:?}"
    );
    assert!(!e.to_string().contains("not-the-password"), "{e}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_bmc_ends_the_request_at_the_clients_deadline() {
    let rig = Rig::start();
    let delay = Arc::new(AtomicU64::new(0));
    let proxy = slow_proxy(rig.emulator.addr(), delay.clone()).await;
    let mut s = settings(format!("http://{proxy}"));
    s.limits.request = Duration::from_secs(3);
    let bmc = Bmc::connect(&s).await.unwrap();
    delay.store(6000, Ordering::SeqCst);
    let started = Instant::now();
    let e = bmc.power_state().await.unwrap_err();
    let took = started.elapsed();
    assert_eq!(
        e.problem(),
        Some(&Problem::Deadline(Duration::from_secs(3))),
        "{e}"
    );
    assert!(e.to_string().contains("no answer within 3s"), "{e}");
    assert!(
        took < Duration::from_secs(5),
        "ended at the deadline, not the answer: {took:?}"
    );
}
