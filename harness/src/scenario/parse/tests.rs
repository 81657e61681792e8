//! Tests of scenario parsing and validation.

use super::*;
use crate::flow::phase::Phase;
use crate::hw::CacheMode;
use crate::hw::{AioMode, DiskIo, Throttle};
use std::time::Duration;

fn parse(text: &str) -> Result<Scenario, ScenarioError> {
    parse_str(Path::new("s.toml"), text)
}

const SMOKE: &str = r#"
name = "smoke"
profile = "fixture"

[vm]
firmware = "bios"

[[disks]]
id = "install"
size = "8GiB"
bus = "virtio"

[install]
installation_disk = { by = "id", disk = "install" }

[timeouts]
bootkube = "5m"
"#;

#[test]
fn a_small_scenario_resolves_its_defaults() {
    let s = parse(SMOKE).unwrap();
    assert_eq!(s.vm.vcpus, 2);
    assert_eq!(s.vm.memory_mib, 3072);
    assert_eq!(
        s.install.installation_disk,
        "/dev/disk/by-id/virtio-sno-install"
    );
    assert_eq!(s.install.install_disk_id.as_deref(), Some("install"));
    assert_eq!(s.timeouts[&Phase::Bootkube].as_secs(), 300);
    assert_eq!(s.fixture.unwrap().schedule, "fast");
    assert_eq!(s.disk_write_stall, None);
}

#[test]
fn an_empty_proxy_or_bundle_means_none_and_a_bundle_is_relative_to_the_scenario() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("data")).unwrap();
    std::fs::write(dir.path().join("data/ca.pem"), PROXY_CA).unwrap();
    let outside = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(outside.path(), PROXY_CA).unwrap();
    let with = |extra: &str| {
        parse_str(
            &dir.path().join("s.toml"),
            &SMOKE.replace("[timeouts]", &format!("{extra}\n[timeouts]")),
        )
    };
    // The extra lines land in [install], the section before [timeouts].
    let s = with("proxy = {}\nadditional_trust_bundle = \"\"").unwrap();
    assert_eq!(s.install.proxy, None);
    assert_eq!(s.install.additional_trust_bundle, None);
    let s = with(
        "proxy = { http_proxy = \"http://p:3128\" }\nadditional_trust_bundle = \"data/ca.pem\"",
    )
    .unwrap();
    assert_eq!(
        s.install.proxy.unwrap().http_proxy.as_deref(),
        Some("http://p:3128")
    );
    assert_eq!(
        s.install.additional_trust_bundle,
        Some(dir.path().join("data/ca.pem"))
    );
    let s = with(&format!(
        "additional_trust_bundle = {:?}",
        outside.path().display().to_string()
    ))
    .unwrap();
    assert_eq!(
        s.install.additional_trust_bundle.as_deref(),
        Some(outside.path())
    );
    let e = with("additional_trust_bundle = \"data/none.pem\"").unwrap_err();
    assert_eq!(e.line, Some(16), "{e}");
    assert!(e.message.contains("data/none.pem: cannot read it"), "{e}");
}

const PROXY_CA: &str = include_str!("../../../../scenarios/data/proxy-ca.pem");

#[test]
fn a_pull_secret_file_is_relative_to_the_scenario_and_checked_at_its_line() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("secrets")).unwrap();
    let with = |file: &str| {
        parse_str(
            &dir.path().join("s.toml"),
            &SMOKE.replace(
                "[timeouts]",
                &format!("pull_secret = {{ file = {file:?} }}\n[timeouts]"),
            ),
        )
    };
    let good = dir.path().join("secrets/ps.json");
    std::fs::write(&good, r#"{"auths":{"quay.io":{"auth":"c2VjcmV0"}}}"#).unwrap();
    let s = with("secrets/ps.json").unwrap();
    assert_eq!(s.install.pull_secret, Some(SecretSource::File(good)));

    std::fs::write(
        dir.path().join("secrets/bad.json"),
        "{\"token\": \"hunter2\"}",
    )
    .unwrap();
    let e = with("secrets/bad.json").unwrap_err();
    assert_eq!(e.line, Some(16), "{e}");
    assert!(
        e.message
            .contains("secrets/bad.json: has no \"auths\" object"),
        "{e}"
    );
    assert!(!e.to_string().contains("hunter2"), "{e}");
    let e = with("/dev/null").unwrap_err();
    assert!(
        e.message
            .contains("/dev/null: is a character device, not a regular file"),
        "{e}"
    );
}

#[test]
fn the_disk_write_stall_is_set_under_timeouts() {
    let s = parse(&SMOKE.replace("bootkube = \"5m\"", "disk-write-stall = \"45s\"")).unwrap();
    assert_eq!(s.disk_write_stall, Some(Duration::from_secs(45)));
    assert!(s.timeouts.is_empty());
    let e = err(&SMOKE.replace("bootkube = \"5m\"", "disk-write-stall = \"soon\""));
    assert_eq!(e.line, Some(17), "{e}");
    assert!(e.message.contains("disk-write-stall"), "{e}");
}

#[test]
fn node_ready_takes_no_timeout_and_the_error_names_the_budget_it_shares() {
    let e = err(&SMOKE.replace("bootkube = \"5m\"", "node-ready = \"5m\""));
    assert_eq!(e.line, Some(17), "{e}");
    for said in [
        "node-ready has no deadline of its own",
        "timeouts.bootstrap-complete",
    ] {
        assert!(e.message.contains(said), "{said:?} in {e}");
    }
    let e = err(&SMOKE.replace("bootkube = \"5m\"", "bootcamp = \"5m\""));
    assert!(!e.message.contains("node-ready"), "not offered: {e}");
    let s = parse(&SMOKE.replace("bootkube = \"5m\"", "bootstrap-complete = \"5m\"")).unwrap();
    assert_eq!(
        s.timeouts[&Phase::BootstrapComplete],
        Duration::from_secs(300)
    );
}

fn err(text: &str) -> ScenarioError {
    parse(text).unwrap_err()
}

#[test]
fn errors_name_the_line_and_what_is_valid() {
    let e = err(&SMOKE.replace("bus = \"virtio\"", "bus = \"floppy\""));
    assert_eq!(e.line, Some(11), "{e}");
    assert!(e.message.contains("virtio"), "{e}");

    let e = err(&SMOKE.replace("bootkube = \"5m\"", "bootcamp = \"5m\""));
    assert_eq!(e.line, Some(17), "{e}");
    assert!(e.message.contains("live-boot"), "{e}");
    assert!(e.message.contains("disk-write-stall"), "{e}");

    let e = err(&SMOKE.replace("disk = \"install\"", "disk = \"other\""));
    assert_eq!(e.line, Some(14), "{e}");
    assert!(e.message.contains("(install)"), "{e}");

    let e = err(&SMOKE.replace("[vm]", "[vm]\ncolour = \"red\""));
    assert_eq!(e.line, Some(6), "{e}");
    assert!(e.to_string().starts_with("s.toml:6:"), "{e}");
}

#[test]
fn a_nat_network_needs_a_machine_network_it_can_lay_out() {
    let s = parse(SMOKE).unwrap();
    assert_eq!(s.vm.network, GuestNetwork::User, "user-mode by default");
    let nat = SMOKE.replace("[vm]", "[vm]\nnetwork = \"nat\"");
    assert_eq!(parse(&nat).unwrap().vm.network, GuestNetwork::Nat);

    let narrow = nat.replace(
        "[install]",
        "[install]\nmachine_network = [\"192.168.126.0/25\"]",
    );
    let e = err(&narrow);
    assert_eq!(e.line, Some(6), "the network line: {e}");
    assert!(e.message.contains("from /8 to /24"), "{e}");
    assert!(e.message.contains("install.machine_network"), "{e}");
    // Single-stack IPv6 is laid out, and then needs the node's address static.
    let v6 = nat.replace("[install]", "[install]\nmachine_network = [\"fd00::/64\"]");
    let e = err(&v6);
    assert!(
        e.message
            .contains("needs the node's IPv6 address given statically"),
        "{e}"
    );
    let none = nat.replace("[install]", "[install]\nmachine_network = []");
    let e = err(&none);
    assert!(e.message.contains("needs an IPv4 or IPv6 CIDR"), "{e}");
    assert_eq!(e.line, Some(6), "the network line: {e}");

    let e = err(&SMOKE.replace("[vm]", "[vm]\nnetwork = \"bridge\""));
    assert_eq!(e.line, Some(6), "{e}");
    assert!(
        e.message.contains("user") && e.message.contains("nat"),
        "{e}"
    );
}

#[test]
fn files_that_are_not_utf8_text_are_refused_at_the_first_bad_byte() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.toml");
    std::fs::write(&path, b"name = \"x\"\nprofile = \"caf\xe9\"\n").unwrap();
    let e = load(&path).unwrap_err();
    assert_eq!((e.line, e.column), (Some(2), Some(15)), "{e}");
    assert!(e.message.contains("byte 0xe9 is not UTF-8"), "{e}");
    let e = load(dir.path()).unwrap_err();
    assert!(e.message.contains("not a regular file"), "{e}");
    let e = parse(&format!("{SMOKE}\0")).unwrap_err();
    assert_eq!(e.line, Some(18), "{e}");
    assert!(e.message.contains("NUL"), "{e}");
}

#[test]
fn impossible_hardware_is_refused() {
    let e = err(&SMOKE.replace("bus = \"virtio\"", "bus = \"sata\"\nsector = \"4k\""));
    assert!(e.message.contains("SATA"), "{e}");
    let e = err(&SMOKE.replace("bus = \"virtio\"", "sector = \"4k\""));
    assert!(e.message.contains("4Kn"), "{e}");
    assert!(parse(
        &SMOKE
            .replace("bus = \"virtio\"", "sector = \"4k\"")
            .replace("firmware = \"bios\"", "firmware = \"uefi\"")
    )
    .is_ok());
}

#[test]
fn faults_are_checked_against_the_fixture() {
    let e = err(&format!(
        "{SMOKE}\n[fixture]\nfaults = [\"bootkube-explode\"]\n"
    ));
    assert_eq!(e.line, Some(20), "{e}");
    assert!(e.message.contains("bootkube-fail"), "{e}");
    assert!(parse(&format!(
        "{SMOKE}\n[fixture]\nfaults = [\"operator-degraded:ingress\"]\n"
    ))
    .is_ok());
}

#[test]
fn a_post_reboot_hang_names_one_of_the_scripts_loops() {
    let e = err(&format!(
        "{SMOKE}\n[fixture]\nfaults = [\"post-reboot-hang:kubelet\"]\n"
    ));
    assert_eq!(e.line, Some(20), "{e}");
    assert!(
        e.message
            .contains("post-reboot-hang's <loop> is one of: api, bootstrap-configmap, "),
        "{e}"
    );
    let s = parse(&format!(
        "{SMOKE}\n[fixture]\nfaults = [\"post-reboot-hang:static-pod\"]\n"
    ))
    .unwrap();
    assert_eq!(s.fixture.unwrap().faults, ["post-reboot-hang:static-pod"]);
}

#[test]
fn literal_installation_disks_are_kept_as_written() {
    let s = parse(&SMOKE.replace("{ by = \"id\", disk = \"install\" }", "\"/dev/vdz\"")).unwrap();
    assert_eq!(s.install.installation_disk, "/dev/vdz");
    assert_eq!(s.install.install_disk_id, None);
}

#[test]
fn disk_io_defaults_to_the_fast_ci_settings() {
    let s = parse(SMOKE).unwrap();
    assert_eq!(s.disks[0].io, DiskIo::default());
    assert_eq!(s.disks[0].io.cache, CacheMode::Unsafe);
    assert_eq!(s.disks[0].io.aio, AioMode::Threads);
    assert_eq!(s.disks[0].io.throttle, None);
}

/// SMOKE with these lines added to its disk (after `bus`, line 11).
fn with_disk_lines(lines: &str) -> String {
    SMOKE.replace("bus = \"virtio\"", &format!("bus = \"virtio\"\n{lines}"))
}

#[test]
fn cache_aio_and_throttle_are_read_per_disk() {
    let s = parse(&with_disk_lines(
        "cache = \"none\"\naio = \"native\"\nthrottle = { bytes_per_s = \"20MiB\", iops = 500 }",
    ))
    .unwrap();
    assert_eq!(
        s.disks[0].io,
        DiskIo {
            cache: CacheMode::None,
            aio: AioMode::Native,
            throttle: Some(Throttle {
                bytes_per_s: Some(20 << 20),
                iops: Some(500),
            }),
        }
    );
    for (cache, want) in [
        ("unsafe", CacheMode::Unsafe),
        ("writeback", CacheMode::Writeback),
        ("none", CacheMode::None),
        ("directsync", CacheMode::Directsync),
    ] {
        let s = parse(&with_disk_lines(&format!("cache = \"{cache}\""))).unwrap();
        assert_eq!(s.disks[0].io.cache, want);
        assert_eq!(s.disks[0].io.aio, AioMode::Threads);
    }
    let s = parse(&with_disk_lines("aio = \"io_uring\"")).unwrap();
    assert_eq!(s.disks[0].io.aio, AioMode::IoUring);
    assert_eq!(s.disks[0].io.cache, CacheMode::Unsafe);
    let s = parse(&with_disk_lines("cache = \"directsync\"\naio = \"native\"")).unwrap();
    assert_eq!(s.disks[0].io.aio, AioMode::Native);
    // Either limit alone; decimal units too; a sub-table as well as an inline one.
    let s = parse(&with_disk_lines("throttle = { iops = 1 }")).unwrap();
    assert_eq!(
        s.disks[0].io.throttle,
        Some(Throttle {
            bytes_per_s: None,
            iops: Some(1),
        })
    );
    let s = parse(&with_disk_lines("throttle = { bytes_per_s = \"8M\" }")).unwrap();
    assert_eq!(s.disks[0].io.throttle.unwrap().bytes_per_s, Some(8_000_000));
    let s = parse(&with_disk_lines("[disks.throttle]\nbytes_per_s = \"8MiB\"")).unwrap();
    assert_eq!(s.disks[0].io.throttle.unwrap().bytes_per_s, Some(8 << 20));
}

#[test]
fn bad_disk_io_options_name_the_line_and_what_is_valid() {
    let e = err(&with_disk_lines("cache = \"fast\""));
    assert_eq!(e.line, Some(12), "{e}");
    for word in ["unsafe", "writeback", "none", "directsync"] {
        assert!(e.message.contains(word), "{word} missing: {e}");
    }
    let e = err(&with_disk_lines("aio = \"posix\""));
    assert_eq!(e.line, Some(12), "{e}");
    for word in ["threads", "native", "io_uring"] {
        assert!(e.message.contains(word), "{word} missing: {e}");
    }
    let e = err(&with_disk_lines("aio = 1"));
    assert_eq!(e.line, Some(12), "{e}");
    assert!(e.message.contains("io_uring"), "{e}");

    // Native AIO needs O_DIRECT: the aio line is wrong, whether cache is written or not.
    let e = err(&with_disk_lines("aio = \"native\""));
    assert_eq!(e.line, Some(12), "{e}");
    assert!(
        e.message
            .contains("needs cache = \"none\" or \"directsync\"")
            && e.message.contains("O_DIRECT")
            && e.message.contains("\"unsafe\" (the default)"),
        "{e}"
    );
    for cache in ["unsafe", "writeback"] {
        let e = err(&with_disk_lines(&format!(
            "cache = \"{cache}\"\naio = \"native\""
        )));
        assert_eq!(e.line, Some(13), "{e}");
        assert!(e.message.contains(&format!("cache is \"{cache}\";")), "{e}");
        assert!(e.message.contains("\"io_uring\""), "{e}");
    }

    let e = err(&with_disk_lines("throttle = {}"));
    assert_eq!(e.line, Some(12), "{e}");
    assert!(
        e.message.contains("bytes_per_s, iops or both") && e.message.contains("\"20MiB\""),
        "{e}"
    );
    for zero in ["bytes_per_s = \"0\"", "bytes_per_s = \"0MiB\"", "iops = 0"] {
        let e = err(&with_disk_lines(&format!("throttle = {{ {zero} }}")));
        assert_eq!(e.line, Some(12), "{e}");
        assert!(
            e.message.contains("= 0: a limit is more than 0"),
            "{zero}: {e}"
        );
    }
    let e = err(&with_disk_lines("throttle = { bytes_per_s = \"fast\" }"));
    assert!(e.message.contains("disks.throttle.bytes_per_s"), "{e}");
    assert!(e.message.contains("8GiB"), "{e}");
    let e = err(&with_disk_lines("throttle = { bytes_per_s = 100 }"));
    assert_eq!(e.line, Some(12), "{e}");
    assert!(e.message.contains("a size such as"), "{e}");
    for bad in ["-1", "1.5", "\"500\""] {
        let e = err(&with_disk_lines(&format!("throttle = {{ iops = {bad} }}")));
        assert_eq!(e.line, Some(12), "{e}");
        assert!(
            e.message.contains("I/O requests per second, such as 500"),
            "{e}"
        );
    }
    let e = err(&with_disk_lines("throttle = \"8MiB\""));
    assert_eq!(e.line, Some(12), "{e}");
    assert!(
        e.message
            .contains("{ bytes_per_s = \"20MiB\", iops = 500 }"),
        "{e}"
    );
    let e = err(&with_disk_lines("throttle = { iops = 2000000000000000 }"));
    assert!(e.message.contains("QEMU's largest limit"), "{e}");
    let e = err(&with_disk_lines("throttle = { bps = 1 }"));
    assert_eq!(e.line, Some(12), "{e}");
    assert!(
        e.message.contains("bytes_per_s") && e.message.contains("iops"),
        "{e}"
    );
    let e = err(&with_disk_lines("[disks.throttle]\n"));
    assert!(e.message.contains("throttle sets no limit"), "{e}");
}

/// The shipped slow-disk scenario: what `sno-harness plan scenarios/slow-disk.toml` reads.
#[test]
fn the_shipped_slow_disk_scenario_throttles_its_install_disk() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios/slow-disk.toml");
    let s = load(&path).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(s.name, "slow-disk");
    assert_eq!(s.install.install_disk_id.as_deref(), Some("install"));
    let install = &s.disks[0];
    assert_eq!(install.id, "install");
    assert_eq!(
        install.io.throttle,
        Some(Throttle {
            bytes_per_s: Some(8 << 20),
            iops: None,
        })
    );
    // Only the limit differs from the CI default.
    assert_eq!(install.io.cache, CacheMode::Unsafe);
    assert_eq!(install.io.aio, AioMode::Threads);
    assert!(!s.description.is_empty());
}

#[test]
fn openshift_needs_a_pull_secret() {
    let e = err(&SMOKE.replace("profile = \"fixture\"", "profile = \"openshift\""));
    assert!(e.message.contains("pull_secret"), "{e}");
}

/// A scenario with `disks` (id, bus) naming the disk `install` with `by`.
fn scenario(disks: &[(&str, &str)], by: &str) -> String {
    let mut s = format!(
        "name = \"p\"\nprofile = \"fixture\"\n\n[install]\ninstallation_disk = {{ by = \"{by}\", disk = \"install\" }}\n"
    );
    for (id, bus) in disks {
        s.push_str(&format!(
            "\n[[disks]]\nid = \"{id}\"\nsize = \"1GiB\"\nbus = \"{bus}\"\n"
        ));
    }
    s
}

#[test]
fn scenarios_name_the_installation_disk_by_path() {
    let parse = |text: &str| crate::scenario::parse_str(std::path::Path::new("s.toml"), text);
    let s = parse(&scenario(
        &[("data", "virtio"), ("log", "scsi"), ("install", "nvme")],
        "path",
    ))
    .unwrap();
    assert_eq!(
        s.install.installation_disk,
        "/dev/disk/by-path/pci-0000:00:09.0-nvme-1"
    );
    assert_eq!(s.install.install_disk_id.as_deref(), Some("install"));

    let mut five: Vec<(String, &str)> = (0..5).map(|i| (format!("d{i}"), "sata")).collect();
    five.push(("install".into(), "sata"));
    let five: Vec<(&str, &str)> = five.iter().map(|(i, b)| (i.as_str(), *b)).collect();
    let e = parse(&scenario(&five, "path")).unwrap_err();
    assert_eq!(e.line, Some(5), "{e}");
    assert!(
        e.message.contains("\"install\" has no by-path link") && e.message.contains("CD-ROM"),
        "{e}"
    );
    assert_eq!(
        parse(&scenario(&five[1..], "path"))
            .unwrap()
            .install
            .installation_disk,
        "/dev/disk/by-path/pci-0000:00:1f.2-ata-5.0"
    );
}

#[test]
fn an_own_iso_is_a_url_with_its_digest_or_a_file_relative_to_the_scenario() {
    let dir = tempfile::tempdir().unwrap();
    let with = |keys: &str| {
        let text = SMOKE
            .replace("profile = \"fixture\"", "profile = \"openshift\"")
            .replace(
                "[timeouts]",
                &format!(
                    "pull_secret = {{ env = \"PULL_SECRET\" }}\n\n[openshift]\n{keys}\n[timeouts]"
                ),
            );
        parse_str(&dir.path().join("s.toml"), &text)
    };
    let own = |s: Scenario| s.openshift.unwrap().iso;
    let digest = "AB".repeat(32);
    std::fs::write(dir.path().join("rhcos.iso"), b"iso").unwrap();

    assert_eq!(own(with("").unwrap()), None, "the stream metadata's ISO");
    assert_eq!(
        own(with("iso = \"rhcos.iso\"").unwrap()),
        Some(OwnIso::File {
            path: dir.path().join("rhcos.iso"),
            sha256: None
        })
    );
    assert_eq!(
        own(with(&format!(
            "iso = \"https://m.example/r.iso\"\niso_sha256 = \"{digest}\""
        ))
        .unwrap()),
        Some(OwnIso::Url {
            url: "https://m.example/r.iso".into(),
            sha256: digest.to_ascii_lowercase()
        })
    );
    for (keys, says) in [
        (
            "iso = \"https://m.example/r.iso\"",
            "is a URL: add openshift.iso_sha256",
        ),
        (
            "iso = \"missing.iso\"",
            "missing.iso: No such file or directory",
        ),
        ("iso = \".\"", "is not a regular file"),
        (
            "iso = \"ftp://m.example/r.iso\"",
            "a path to the ISO, or an http:// or https:// URL",
        ),
        ("iso = \"rhcos.iso\"\niso_sha256 = \"abc\"", "64 hex digits"),
        (
            &format!("iso_sha256 = \"{digest}\"") as &str,
            "without openshift.iso",
        ),
    ] {
        let e = with(keys).unwrap_err();
        assert!(e.message.contains(says), "{keys}: {e}");
        assert!(e.line.is_some(), "{keys}: {e}");
    }
}

#[test]
fn a_scenario_boots_the_full_live_iso_unless_it_names_the_minimal_one() {
    assert_eq!(parse(SMOKE).unwrap().boot_source, BootSource::LiveIso);
    let minimal = format!("{SMOKE}\n[boot]\nsource = \"minimal-iso\"\n");
    let s = parse(&minimal).unwrap();
    assert_eq!(s.boot_source, BootSource::MinimalIso);
    assert!(s.boot_source.fetches_rootfs());
    // The server's faults need a server: with the full ISO they are refused, at their line.
    let fault = format!("{SMOKE}\n[fixture]\nfaults = [\"rootfs-404\"]\n");
    let e = parse(&fault).unwrap_err().to_string();
    assert!(e.contains("needs [boot] source = \"minimal-iso\""), "{e}");
    assert!(e.contains("s.toml:20:"), "{e}");
    let both = format!("{minimal}[fixture]\nfaults = [\"rootfs-corrupt\"]\n");
    assert_eq!(
        parse(&both).unwrap().fixture.unwrap().faults,
        vec!["rootfs-corrupt".to_string()]
    );
}

#[test]
fn secure_boot_takes_the_live_and_minimal_isos_and_refuses_pxe_at_its_line() {
    let secure = SMOKE.replace("firmware = \"bios\"", "firmware = \"uefi-secure\"");
    let s = parse(&secure).unwrap();
    assert_eq!(s.vm.firmware, crate::hw::Firmware::UefiSecure);
    let minimal = format!("{secure}\n[boot]\nsource = \"minimal-iso\"\n");
    assert_eq!(parse(&minimal).unwrap().boot_source, BootSource::MinimalIso);
    let pxe = format!("{secure}\n[boot]\nsource = \"pxe\"\n");
    let e = parse(&pxe).unwrap_err().to_string();
    assert!(e.contains("s.toml:20:"), "{e}");
    assert!(
        e.contains("boot.source = \"pxe\" with vm.firmware = \"uefi-secure\"")
            && e.contains("use PXE with vm.firmware = \"uefi\""),
        "{e}"
    );
    // PXE on plain OVMF stays.
    let uefi_pxe = pxe.replace("uefi-secure", "uefi");
    assert_eq!(parse(&uefi_pxe).unwrap().boot_source, BootSource::Pxe);
}

#[test]
fn the_unsigned_loader_needs_secure_boot_and_the_full_live_iso() {
    let fault = format!("{SMOKE}\n[fixture]\nfaults = [\"unsigned-loader\"]\n");
    let e = parse(&fault).unwrap_err().to_string();
    assert!(e.contains("s.toml:20:"), "{e}");
    assert!(
        e.contains("needs vm.firmware = \"uefi-secure\"") && e.contains("boots \"bios\""),
        "{e}"
    );
    let secure = fault.replace("firmware = \"bios\"", "firmware = \"uefi-secure\"");
    assert_eq!(
        parse(&secure).unwrap().fixture.unwrap().faults,
        ["unsigned-loader"]
    );
    let minimal = format!("{secure}[boot]\nsource = \"minimal-iso\"\n");
    let e = parse(&minimal).unwrap_err().to_string();
    assert!(e.contains("needs [boot] source = \"live-iso\""), "{e}");
}

#[test]
fn install_to_disk_installs_unless_the_scenario_asks_for_the_assisted_way() {
    let s = parse(SMOKE).unwrap();
    assert_eq!(s.install.mode, InstallMode::InstallToDisk);
    assert_eq!(s.install.assisted, AssistedSection::default());
    let assisted = SMOKE.replace(
        "[timeouts]",
        "mode = \"assisted\"\n[install.assisted]\nappend_kargs = [\"a=1\", \"b\"]\ncopy_network = true\n[timeouts]",
    );
    let s = parse(&assisted).unwrap();
    assert_eq!(s.install.mode, InstallMode::Assisted);
    assert_eq!(s.install.assisted.append_kargs, ["a=1", "b"]);
    assert!(s.install.assisted.copy_network);
    // The mode alone takes the section's defaults.
    let bare = SMOKE.replace("[timeouts]", "mode = \"assisted\"\n[timeouts]");
    assert_eq!(
        parse(&bare).unwrap().install.assisted,
        AssistedSection::default()
    );
    // A node with static addresses gets --copy-network, as the assisted installer gives it.
    let static_node = format!(
        "{bare}\n[network]\nmode = \"static\"\n\
         ipv4 = {{ address = \"10.0.2.15/24\", gateway = \"10.0.2.2\" }}\ndns = [\"10.0.2.3\"]\n"
    );
    assert!(parse(&static_node).unwrap().install.assisted.copy_network);
    for (bad, says) in [
        (
            "mode = \"agent\"\n",
            "expected `install-to-disk` or `assisted`",
        ),
        (
            "[install.assisted]\ncopy_network = true\n",
            "is for install.mode = \"assisted\"",
        ),
        (
            "mode = \"assisted\"\n[install.assisted]\nappend_kargs = [\"-x\"]\n",
            "is not one kernel argument",
        ),
        (
            "mode = \"assisted\"\n[install.assisted]\nappend_kargs = [\"x=\\\"y\\\"\"]\n",
            "is not one kernel argument",
        ),
    ] {
        let text = SMOKE.replace("[timeouts]", &format!("{bad}[timeouts]"));
        let e = parse(&text).unwrap_err();
        assert!(e.message.contains(says), "{bad}: {e}");
        assert!(e.line.is_some(), "{bad}: {e}");
    }
}

/// A mistyped key is refused where it stands, naming its table and the known key it is
/// closest to; one like no known key gets no guess.
#[test]
fn an_unknown_key_suggests_the_closest_known_one_with_its_table_and_line() {
    let e = parse(&SMOKE.replace("firmware = \"bios\"", "firmwre = \"bios\"")).unwrap_err();
    assert_eq!(e.line, Some(6), "{e}");
    assert!(e.message.contains("[vm]"), "{e}");
    assert!(e.message.contains("did you mean `firmware`?"), "{e}");
    // serde's list of the valid keys stays (docs/scenario-format.md's test reads it).
    assert!(e.message.contains("expected one of `vcpus`"), "{e}");

    let e = parse(&SMOKE.replace("size = \"8GiB\"", "sise = \"8GiB\"")).unwrap_err();
    assert!(e.message.contains("[[disks]]"), "{e}");
    assert!(e.message.contains("did you mean `size`?"), "{e}");

    let e = parse(&SMOKE.replace("profile = ", "profil = ")).unwrap_err();
    assert_eq!(e.line, Some(3), "{e}");
    assert!(e.message.contains("did you mean `profile`?"), "{e}");

    let e = parse(&SMOKE.replace("firmware = \"bios\"", "zzz = \"bios\"")).unwrap_err();
    assert!(e.message.contains("unknown field `zzz`"), "{e}");
    assert!(!e.message.contains("did you mean"), "{e}");
}

/// `[install.assisted] host_ignition`: resolved against the scenario file and read now, a bad
/// one refused with the scenario's line and the Ignition file's own line.
#[test]
fn a_host_ignition_is_resolved_next_to_the_scenario_and_checked() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("host.ign"),
        "{\"ignition\": {\"version\": \"3.2.0\"},\n \"systemd\": {\"units\": [{\"name\": \"x.service\"}]}}",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("bad.ign"),
        "{\"ignition\": {\"version\": \"3.2.0\"},\n \"storage\": {\"filesystems\": []}}",
    )
    .unwrap();
    let with = |file: &str| {
        SMOKE.replace(
            "[timeouts]",
            &format!(
                "mode = \"assisted\"\n[install.assisted]\nhost_ignition = \"{file}\"\n[timeouts]"
            ),
        )
    };
    let scenario = dir.path().join("s.toml");
    let s = parse_str(&scenario, &with("host.ign")).unwrap();
    assert_eq!(
        s.install.assisted.host_ignition,
        Some(dir.path().join("host.ign"))
    );
    let e = parse_str(&scenario, &with("bad.ign")).unwrap_err();
    assert!(e.line.is_some(), "{e}");
    assert!(
        e.message
            .contains("bad.ign:2: storage.filesystems is not merged by the harness"),
        "{e}"
    );
    let e = parse_str(&scenario, &with("missing.ign")).unwrap_err();
    assert!(e.message.contains("install.assisted.host_ignition:"), "{e}");
    assert!(e.message.contains("cannot read it"), "{e}");
    // "" means none, as a matrix value says "without".
    let none = parse_str(&scenario, &with("")).unwrap();
    assert_eq!(none.install.assisted.host_ignition, None);
}
