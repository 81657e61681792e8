//! The QMP client against a real QEMU: a diskless-boot VM (SeaBIOS, no CD-ROM, one empty qcow2
//! per bus) under TCG, driven through its QMP socket.

use std::path::Path;
use std::time::{Duration, Instant};

use sno_harness::hw::{Accel, Bus, Firmware, Sector};
use sno_harness::vm::qemu::{QemuProcess, Qmp, QmpEvent};
use sno_harness::vm::{disk, DiskSpec, VmSpec};
use tokio::sync::mpsc::UnboundedReceiver;

/// Generous for a loaded two-core CI machine; each step normally takes milliseconds.
const STEP: Duration = Duration::from_secs(15);

fn spec(dir: &Path) -> VmSpec {
    let disks = Bus::ALL
        .iter()
        .map(|bus| {
            let id = format!("d-{}", bus.name());
            let path = dir.join(format!("{id}.qcow2"));
            disk::create_qcow2(&path, 64 << 20).unwrap();
            DiskSpec {
                id,
                path,
                format: "qcow2".into(),
                bus: *bus,
                sector: Sector::S512,
                serial: None,
                bootindex: None,
                io: Default::default(),
                multipath_wwn: None,
            }
        })
        .collect();
    VmSpec {
        name: "qmp".into(),
        vcpus: 1,
        memory_mib: 256,
        firmware: Firmware::Bios,
        accel: Accel::Tcg,
        disks,
        cdrom: None,
        uefi_vars: None,
        serial_socket: dir.join("serial.sock"),
        qmp_socket: Some(dir.join("qmp.sock")),
        forwards: vec![],
        nic: Default::default(),
        netboot: None,
        dhcp_hostname: None,
        second_nic: false,
    }
}

/// Waits for the event `name`, returning it and the events seen before it.
async fn wait_for_event(
    rx: &mut UnboundedReceiver<QmpEvent>,
    name: &str,
) -> (QmpEvent, Vec<QmpEvent>) {
    let deadline = tokio::time::Instant::now() + STEP;
    let mut before = Vec::new();
    loop {
        match tokio::time::timeout_at(deadline, rx.recv()).await {
            Err(_) => panic!("no {name} event within {STEP:?}; saw {before:#?}"),
            Ok(None) => panic!("event stream ended before {name}; saw {before:#?}"),
            Ok(Some(ev)) if ev.name == name => return (ev, before),
            Ok(Some(ev)) => before.push(ev),
        }
    }
}

#[test]
fn qmp_drives_a_real_qemu() {
    let started = Instant::now();
    let dir = tempfile::Builder::new()
        .prefix("sno-qmp-")
        .tempdir()
        .unwrap();
    let spec = spec(dir.path());
    let (mut qemu, _console) = QemuProcess::start(&spec, dir.path()).unwrap();
    let stderr = || std::fs::read_to_string(dir.path().join("qemu.stderr")).unwrap_or_default();

    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let (qmp, mut rx) = Qmp::connect(spec.qmp_socket.as_deref().unwrap(), STEP)
            .await
            .unwrap_or_else(|e| panic!("{e}\nQEMU stderr: {}", stderr()));
        assert_eq!(qmp.status().await.unwrap(), "running");

        let stats = qmp.block_stats().await.unwrap();
        let mut ids: Vec<_> = stats.iter().filter_map(|s| s.drive_id()).collect();
        ids.sort();
        assert_eq!(
            ids,
            ["d-nvme", "d-sata", "d-scsi", "d-virtio"],
            "{stats:#?}"
        );
        for s in &stats {
            assert!(
                s.qdev.starts_with("/machine/peripheral-anon/device["),
                "{s:?}"
            );
            assert_eq!(
                s.qdev.ends_with("/virtio-backend"),
                s.device == "d-virtio",
                "{s:?}"
            );
            assert!(!s.node_name.is_empty(), "{s:?}");
        }

        qmp.system_reset().await.unwrap();
        let (reset, _) = wait_for_event(&mut rx, "RESET").await;
        assert_eq!(reset.data["guest"], false, "{reset:?}");
        assert_eq!(reset.data["reason"], "host-qmp-system-reset", "{reset:?}");
        let ts = reset.qemu_timestamp.expect("QEMU stamps its events");
        let skew = reset
            .received
            .duration_since(ts)
            .unwrap_or_else(|e| e.duration());
        assert!(skew < STEP, "QEMU's timestamp {ts:?} vs received {reset:?}");

        qmp.system_powerdown().await.unwrap();
        wait_for_event(&mut rx, "POWERDOWN").await;

        let png = dir.path().join("screen.png");
        qmp.screendump(&png).await.unwrap();
        let bytes = std::fs::read(&png).unwrap();
        assert!(bytes.starts_with(b"\x89PNG\r\n\x1a\n"), "not a PNG");

        qmp.quit().await.unwrap();
        let (shutdown, _) = wait_for_event(&mut rx, "SHUTDOWN").await;
        assert_eq!(shutdown.data["reason"], "host-qmp-quit", "{shutdown:?}");
        let end = tokio::time::timeout(STEP, rx.recv()).await;
        assert!(matches!(end, Ok(None)), "event stream did not end: {end:?}");
    });

    let deadline = Instant::now() + STEP;
    while qemu.is_running() {
        assert!(Instant::now() < deadline, "QEMU still runs after quit");
        std::thread::sleep(Duration::from_millis(20));
    }
    eprintln!("done in {:.1} s", started.elapsed().as_secs_f64());
}
