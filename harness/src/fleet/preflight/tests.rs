use super::*;
use crate::hw::accel::Accel;
use crate::scenario::Profile;
use crate::vm::accel::{AccelDecision, KvmUnusable};
use std::path::PathBuf;

fn smoke() -> Scenario {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios/smoke.toml");
    crate::scenario::load(&path).unwrap()
}

/// The openshift example as a scenario of this host: its VM made to fit, its installer the
/// one named.
fn openshift(installer: Option<&str>) -> Scenario {
    let mut s = smoke();
    s.profile = Profile::Openshift;
    s.install.pull_secret = Some(crate::scenario::model::SecretSource::Env("PS".into()));
    s.openshift = Some(crate::scenario::model::OpenshiftSpec {
        installer: installer.map(PathBuf::from),
        release_image: None,
        iso: None,
    });
    s
}

const SECRET: &str = r#"{"auths":{"quay.io":{"auth":"dXNlcjpwdw=="}}}"#;

/// A host with everything: every tool, 16 GiB available, 4 CPUs, KVM, libvirt answering.
fn ready_host() -> Probe {
    Probe {
        which: Box::new(|t| Some(PathBuf::from("/usr/bin").join(t))),
        is_file: Box::new(|_| true),
        executable: Box::new(|_| Ok(())),
        env: Box::new(|v| (v == "PS").then(|| SECRET.to_string())),
        mem_available: Some((16 << 30, crate::fleet::admission::MemoryFrom::Host)),
        cpus: 4,
        accel: Box::new(|_| {
            Ok(AccelDecision {
                accel: Accel::Kvm,
                reason: "KVM usable".into(),
            })
        }),
        libvirt: Box::new(|_| Ok(())),
    }
}

fn libvirt() -> Backend {
    Backend::Libvirt {
        uri: "qemu:///system".into(),
    }
}

fn missing(f: &[Finding]) -> Vec<String> {
    f.iter()
        .filter(|f| f.level == Level::Missing)
        .map(|f| f.detail.clone())
        .collect()
}

#[test]
fn a_host_with_everything_is_ready_on_both_backends() {
    let s = openshift(None);
    for backend in [Backend::Qemu, libvirt()] {
        let all = findings(&[&s], &backend, &ready_host());
        assert_eq!(missing(&all), Vec::<String>::new());
        assert!(all.iter().all(|f| f.level == Level::Ok), "{all:?}");
        for check in ["installer", "pull secret", "memory", "CPUs", "accelerator"] {
            assert!(
                all.iter().any(|f| f.check == check),
                "no {check} in {all:?}"
            );
        }
    }
}

#[test]
fn each_missing_tool_is_named_with_how_to_install_it() {
    let s = smoke();
    let mut host = ready_host();
    host.which = Box::new(|_| None);
    let e = verdict(findings(&[&s], &Backend::Qemu, &host)).unwrap_err();
    let text = e.to_string();
    for said in [
        "coreos-installer is not on PATH (cargo install coreos-installer",
        "qemu-img is not on PATH (Debian and Ubuntu: apt-get install qemu-utils",
        "qemu-system-x86_64 is not on PATH (QEMU is not installed",
        "sno-harness doctor",
    ] {
        assert!(text.contains(said), "{said:?} not in {text}");
    }
    assert_eq!(e.missing.len(), 3);
}

#[test]
fn the_libvirt_backend_does_not_need_qemu_on_our_path() {
    let s = smoke();
    let mut host = ready_host();
    host.which = Box::new(|t| (t != crate::vm::qemu::QEMU_BINARY).then(|| PathBuf::from(t)));
    assert!(verdict(findings(&[&s], &libvirt(), &host)).is_ok());
    let e = verdict(findings(&[&s], &Backend::Qemu, &host)).unwrap_err();
    assert_eq!(e.missing.len(), 1, "{e}");
}

#[test]
fn the_openshift_profile_needs_an_installer_it_can_run() {
    let mut host = ready_host();
    host.which = Box::new(|t| (t != "openshift-install").then(|| PathBuf::from(t)));
    let none = missing(&findings(&[&openshift(None)], &Backend::Qemu, &host));
    assert_eq!(none.len(), 1, "{none:?}");
    assert!(
        none[0].contains("openshift-install is not on PATH")
            && none[0].contains("[openshift] installer = \"PATH\""),
        "{none:?}"
    );
    // A bare name is looked up on PATH.
    let on_path = missing(&findings(
        &[&openshift(Some("oi-4.99"))],
        &Backend::Qemu,
        &host,
    ));
    assert!(on_path.is_empty(), "{on_path:?}");
    host.executable = Box::new(|p| Err(NotExecutable::NoExecuteBit(p.to_path_buf())));
    let named = openshift(Some("/opt/oi"));
    let m = missing(&findings(&[&named], &Backend::Qemu, &host));
    assert_eq!(
        m,
        [format!(
            "{}: the installer /opt/oi: not executable (chmod +x /opt/oi)",
            named.path.display()
        )]
    );
    // The fixture builds its own installer: nothing to look for.
    assert!(missing(&findings(&[&smoke()], &Backend::Qemu, &host)).is_empty());
}

#[test]
fn a_pull_secret_variable_that_is_unset_or_not_a_pull_secret_is_missing_and_never_quoted() {
    let s = openshift(Some("/opt/oi"));
    let mut host = ready_host();
    host.env = Box::new(|_| None);
    let m = missing(&findings(&[&s], &Backend::Qemu, &host));
    assert_eq!(m.len(), 1, "{m:?}");
    assert!(m[0].contains("environment variable PS is not set"), "{m:?}");
    host.env = Box::new(|_| Some("{\"canary-7f3\": 1}".into()));
    let m = missing(&findings(&[&s], &Backend::Qemu, &host));
    assert_eq!(m.len(), 1, "{m:?}");
    assert!(m[0].starts_with("environment variable PS: "), "{m:?}");
    assert!(!m[0].contains("canary-7f3"), "{m:?}");
}

#[test]
fn a_vm_larger_than_the_host_is_missing_room_and_says_both_sizes() {
    let mut s = smoke();
    s.vm.memory_mib = 16 << 10;
    s.vm.vcpus = 9;
    let host = ready_host();
    let m = missing(&findings(&[&s], &Backend::Qemu, &host));
    assert_eq!(m.len(), 2, "{m:?}");
    assert!(
        m[0].contains("needs 16.0 GiB (vm.memory)") && m[0].contains("16.0 GiB available"),
        "{m:?}"
    );
    assert!(
        m[1].contains("9 vCPUs (vm.vcpus)") && m[1].contains("at most 8 vCPUs"),
        "{m:?}"
    );
    // Exactly what fits: the VM and the headroom.
    s.vm.memory_mib = (16 << 10) - 1024;
    s.vm.vcpus = 8;
    assert!(missing(&findings(&[&s], &Backend::Qemu, &host)).is_empty());
    // A remote libvirt host's memory is its own.
    s.vm.memory_mib = 64 << 10;
    let remote = Backend::Libvirt {
        uri: "qemu+ssh://lab/system".into(),
    };
    assert!(missing(&findings(&[&s], &remote, &host)).is_empty());
}

#[test]
fn tcg_is_a_warning_for_a_real_install_and_unusable_kvm_asked_for_is_missing() {
    let mut host = ready_host();
    host.accel = Box::new(|choice| match choice {
        crate::hw::accel::AccelChoice::Kvm => Err(KvmUnusable("/dev/kvm: no such file".into())),
        _ => Ok(AccelDecision {
            accel: Accel::Tcg,
            reason: "KVM unusable".into(),
        }),
    });
    let real = openshift(Some("/opt/oi"));
    let warnings = verdict(findings(&[&real], &Backend::Qemu, &host)).unwrap();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(
        warnings[0].detail.contains("takes many hours"),
        "{warnings:?}"
    );
    // The fixture is made for TCG.
    assert!(verdict(findings(&[&smoke()], &Backend::Qemu, &host))
        .unwrap()
        .is_empty());
    let mut kvm = smoke();
    kvm.vm.accel = crate::hw::accel::AccelChoice::Kvm;
    let m = missing(&findings(&[&kvm], &Backend::Qemu, &host));
    assert_eq!(m.len(), 1, "{m:?}");
    assert!(m[0].contains("/dev/kvm: no such file"), "{m:?}");
}

#[test]
fn a_libvirtd_that_does_not_answer_is_missing_with_libvirts_words() {
    let mut host = ready_host();
    host.libvirt = Box::new(|uri| {
        Err(crate::vm::libvirt::LibvirtError::Connect {
            uri: uri.into(),
            message: "Failed to connect socket: No such file".into(),
            hint: String::new(),
        })
    });
    let m = missing(&findings(&[&smoke()], &libvirt(), &host));
    assert_eq!(m.len(), 1, "{m:?}");
    assert!(
        m[0].contains(
            "libvirt at qemu:///system cannot be reached (connecting to qemu:///system: Failed to connect socket"
        ) && m[0].contains("libvirtd -d"),
        "{m:?}"
    );
    // The QEMU backend does not ask libvirt.
    assert!(missing(&findings(&[&smoke()], &Backend::Qemu, &host)).is_empty());
}

#[test]
fn a_nat_network_is_for_the_libvirt_backend_only() {
    let user = smoke();
    let mut nat = smoke();
    nat.vm.network = GuestNetwork::Nat;
    assert!(backend_fits(&[&user], &Backend::Qemu).is_ok());
    let e = backend_fits(&[&user, &nat], &Backend::Qemu).unwrap_err();
    assert_eq!(
        e,
        BackendMismatch::NatNeedsLibvirt {
            scenario: nat.path.clone()
        }
    );
    let e = e.to_string();
    assert!(
        e.contains("smoke.toml") && e.contains("--backend libvirt"),
        "{e}"
    );
    assert!(backend_fits(&[&user, &nat], &libvirt()).is_ok());
}

#[test]
fn pxe_runs_on_either_backend_and_a_remote_host_but_not_on_a_remote_nat_network() {
    let mut pxe = smoke();
    pxe.boot_source = crate::scenario::BootSource::Pxe;
    assert!(backend_fits(&[&pxe], &Backend::Qemu).is_ok());
    assert!(backend_fits(&[&pxe], &libvirt()).is_ok());
    let mut nat = pxe.clone();
    nat.vm.network = GuestNetwork::Nat;
    assert!(backend_fits(&[&nat], &libvirt()).is_ok());
    let remote = Backend::Libvirt {
        uri: "qemu+ssh://root@lab.example/system".into(),
    };
    assert!(backend_fits(&[&pxe], &remote).is_ok());
    let e = backend_fits(&[&pxe, &nat], &remote)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("\"pxe\"") && e.contains("remote") && e.contains("nat"),
        "{e}"
    );
    let mut minimal = nat.clone();
    minimal.boot_source = crate::scenario::BootSource::MinimalIso;
    assert!(backend_fits(&[&minimal], &libvirt()).is_ok());
    assert!(backend_fits(&[&minimal], &remote).is_err());
}

/// A bond is asked of the backend's capability: both real backends have two NICs to give; a
/// backend without them gets the scenario refused, named.
#[test]
fn a_bond_needs_a_backend_that_gives_two_nics() {
    use crate::scenario::model::{BondMode, BondSpec, NetworkMode, NetworkSpec};
    let plain = smoke();
    let mut bonded = smoke();
    bonded.path = PathBuf::from("/s/bonded.toml");
    bonded.network = Some(NetworkSpec {
        mode: NetworkMode::Static,
        ipv4: None,
        ipv6: None,
        dns: Vec::new(),
        bond: Some(BondSpec {
            mode: BondMode::ActiveBackup,
            interfaces: 2,
        }),
    });
    let mut unbonded = bonded.clone();
    unbonded.network.as_mut().unwrap().bond = None;
    for b in [Backend::Qemu, libvirt()] {
        assert!(b.can().two_nics);
        assert!(backend_fits(&[&plain, &bonded], &b).is_ok());
    }
    let one_nic = Capabilities {
        two_nics: false,
        ..Backend::Qemu.can()
    };
    assert!(fits(&[&plain, &unbonded], &one_nic, "one-nic").is_ok());
    let e = fits(&[&plain, &bonded], &one_nic, "one-nic").unwrap_err();
    assert_eq!(
        e,
        BackendMismatch::BondNeedsTwoNics {
            scenario: bonded.path.clone(),
            backend: "one-nic",
        }
    );
    assert_eq!(
        e.to_string(),
        "/s/bonded.toml: [network] bond needs a VM with two NICs, which the one-nic backend cannot give; remove the bond, or choose another --backend"
    );
}

#[test]
fn the_same_finding_of_many_scenarios_is_said_once() {
    let s = smoke();
    let mut host = ready_host();
    host.which = Box::new(|_| None);
    let all = findings(&[&s, &s, &s], &Backend::Qemu, &host);
    assert_eq!(missing(&all).len(), 3, "{all:?}");
}
