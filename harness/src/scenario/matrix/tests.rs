//! Loading matrices end to end: the example files under tests/data/matrix/, and inline
//! matrices over the same base scenario for the errors.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use super::*;
use crate::hw::{Bus, Firmware, Sector};

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/matrix")
        .join(name)
}

/// An inline matrix beside the example files, so `base = "base.toml"` resolves.
fn parse(text: &str) -> Result<Matrix, MatrixError> {
    parse_str(&data("inline.toml"), text)
}

fn err(text: &str) -> MatrixError {
    match parse(text) {
        Ok(m) => panic!(
            "expected an error, got {:?}",
            m.permutations.iter().map(|p| &p.id).collect::<Vec<_>>()
        ),
        Err(e) => e,
    }
}

const HEAD: &str = "name = \"m\"\nbase = \"base.toml\"\n";

fn with_head(rest: &str) -> String {
    format!("{HEAD}{rest}")
}

fn ids(m: &Matrix) -> Vec<&str> {
    m.permutations.iter().map(|p| p.id.as_str()).collect()
}

// ---- the examples ---------------------------------------------------------------------------

#[test]
fn the_disks_example_covers_every_allowed_pair_in_eleven_permutations() {
    let m = load(&data("disks.toml")).unwrap();
    assert_eq!(m.strategy, Strategy::Pairwise);
    assert_eq!(m.full_count, 4 * 3 * 2 * 2 - 2 * 2 - 4 * 2 + 2);
    // Without sata+4k, bus x sector needs 11 pairs: no array is smaller.
    assert_eq!(m.permutations.len(), 11);
    let full = m.with_strategy(Strategy::Full).unwrap();
    let pairs = |p: &Permutation| -> BTreeSet<(String, String, String, String)> {
        let v: Vec<(&String, &String)> = p.values.iter().collect();
        let mut out = BTreeSet::new();
        for i in 0..v.len() {
            for j in i + 1..v.len() {
                out.insert((
                    v[i].0.clone(),
                    v[i].1.clone(),
                    v[j].0.clone(),
                    v[j].1.clone(),
                ));
            }
        }
        out
    };
    let wanted: BTreeSet<_> = full.permutations.iter().flat_map(pairs).collect();
    let got: BTreeSet<_> = m.permutations.iter().flat_map(pairs).collect();
    assert_eq!(wanted, got);
    for p in &m.permutations {
        let excluded = (p.values["disks.install.sector"] == "4k")
            && (p.values["vm.firmware"] == "bios" || p.values["disks.install.bus"] == "sata");
        assert!(!excluded, "{}", p.id);
    }
}

#[test]
fn pairwise_tests_every_accepted_pair_in_permutations_the_installer_accepts() {
    let m = load(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios/install-config.toml"))
        .unwrap();
    assert_eq!(m.strategy, Strategy::Pairwise);
    let sdn = |p: &Permutation| p.values["install.network_type"] == "OpenShiftSDN";
    let ipv6_first = |p: &Permutation| p.values["install.network_stack"] == "ipv6-first";
    // FIPS on a host without FIPS, the installer's host check not skipped.
    let fips = |p: &Permutation| {
        p.values["install.fips"] == "fips"
            && p.values["install.skip_hostcrypt_validation"] == "hostcrypt"
    };
    let reasons = |p: &Permutation| u8::from(sdn(p)) + u8::from(ipv6_first(p)) + u8::from(fips(p));
    let accepted: Vec<&Permutation> = m.permutations.iter().filter(|p| !p.negative).collect();
    let refused: Vec<&Permutation> = m.permutations.iter().filter(|p| p.negative).collect();
    for p in &accepted {
        assert_eq!(reasons(p), 0, "{}", p.id);
        assert!(p.scenario.expect.is_none(), "{}", p.id);
    }
    // The pair that used to ride only on an ipv6-first permutation.
    assert!(
        accepted
            .iter()
            .any(|p| p.values["install.capabilities"] == "caps-none"
                && p.values["install.network_type"] == "OVNKubernetes"),
        "{:?}",
        ids(&m)
    );
    // FIPS is tested in the cluster too, with the host check skipped.
    assert!(
        accepted.iter().any(|p| p.values["install.fips"] == "fips"),
        "{:?}",
        ids(&m)
    );
    assert_eq!(accepted.len(), 7);
    assert_eq!(refused.iter().filter(|p| sdn(p)).count(), 3);
    assert_eq!(refused.iter().filter(|p| ipv6_first(p)).count(), 2);
    assert_eq!(refused.iter().filter(|p| fips(p)).count(), 3);
    for p in &refused {
        assert_eq!(
            reasons(p),
            1,
            "{} has more than one reason to be refused",
            p.id
        );
        let e = p.scenario.expect.as_ref().unwrap();
        assert_eq!(
            (e.verdict.as_str(), e.failed_phase.as_deref()),
            ("fail", Some("assets"))
        );
    }
    // Accepted first, then each rule's rejections in rule order.
    let order: Vec<u8> = m
        .permutations
        .iter()
        .map(|p| u8::from(p.negative) + u8::from(ipv6_first(p)) + 2 * u8::from(fips(p)))
        .collect();
    assert!(order.windows(2).all(|w| w[0] <= w[1]), "{:?}", ids(&m));
    assert!(plan_text(&m).contains(
        "strategy pairwise: 15 permutations (7 accepted, 8 expected rejections at assets; pairwise 15, full 512)"
    ));
    // The full product keeps the rows with several reasons.
    let full = m.with_strategy(Strategy::Full).unwrap();
    assert_eq!(full.permutations.len(), 512);
    // Accepted: three stacks, OVNKubernetes, both proxies, bundles and policies, three of the
    // four FIPS and host-check pairs, both capability sets.
    assert_eq!(full.negative_count(), 512 - 3 * 2 * 2 * 2 * 3 * 2);
}

#[test]
fn pairwise_refuses_a_matrix_whose_every_permutation_has_two_reasons_to_fail() {
    let text = with_head(
        r#"strategy = "pairwise"
[[axis]]
key = "vm.firmware"
values = ["uefi"]

[[expect]]
when = { "vm.firmware" = "uefi" }
verdict = "fail"
failed_phase = "assets"

[[expect]]
when = { "vm.firmware" = "uefi" }
verdict = "fail"
failed_phase = "assets"
"#,
    );
    let e = err(&text);
    assert!(
        e.to_string().contains("two or more [[expect]] rules"),
        "{e}"
    );
    // One of them expecting a later failure makes the row positive again.
    let m = parse(&text.replacen("\"assets\"", "\"live-boot\"", 1)).unwrap();
    assert_eq!(ids(&m), ["uefi"]);
    assert!(!m.permutations[0].negative);
}

#[test]
fn full_lists_every_allowed_combination_in_axis_order() {
    let m = load(&data("disks.toml"))
        .unwrap()
        .with_strategy(Strategy::Full)
        .unwrap();
    assert_eq!(m.strategy, Strategy::Full);
    assert_eq!(m.permutations.len(), 38);
    assert_eq!(m.count(Strategy::Full), 38);
    assert_eq!(m.count(Strategy::Pairwise), 11);
    let ids = ids(&m);
    assert_eq!(
        &ids[..5],
        [
            "virtio.512.bios.by-id",
            "virtio.512.bios.by-name",
            "virtio.512.uefi.by-id",
            "virtio.512.uefi.by-name",
            "virtio.512e.bios.by-id",
        ]
    );
    assert!(ids.contains(&"virtio.4k.uefi.by-id"));
    assert!(!ids.contains(&"virtio.4k.bios.by-id"));
    assert!(!ids.iter().any(|i| i.starts_with("sata.4k")));
    assert_eq!(ids.iter().collect::<BTreeSet<_>>().len(), ids.len());
}

#[test]
fn permutations_are_validated_scenarios_named_by_their_id() {
    let m = load(&data("disks.toml"))
        .unwrap()
        .with_strategy(Strategy::Full)
        .unwrap();
    let p = m.permutation("nvme.4k.uefi.by-name").unwrap();
    assert_eq!(p.scenario.name, "nvme.4k.uefi.by-name");
    assert_eq!(p.scenario.path, data("disks.toml"));
    assert_eq!(p.scenario.vm.firmware, Firmware::Uefi);
    assert_eq!(p.scenario.disks[0].bus, Bus::Nvme);
    assert_eq!(p.scenario.disks[0].sector, Sector::S4k);
    assert_eq!(p.scenario.install.installation_disk, "/dev/nvme0n1");
    assert_eq!(
        p.values,
        BTreeMap::from([
            ("disks.install.bus".to_string(), "nvme".to_string()),
            ("disks.install.sector".to_string(), "4k".to_string()),
            ("vm.firmware".to_string(), "uefi".to_string()),
            (
                "install.installation_disk".to_string(),
                "by-name".to_string()
            ),
        ])
    );
    let by_id = m.permutation("scsi.512.bios.by-id").unwrap();
    assert_eq!(
        by_id.scenario.install.installation_disk,
        "/dev/disk/by-id/scsi-0QEMU_QEMU_HARDDISK_sno-install"
    );
    // What the base sets and no axis touches stays.
    assert_eq!(by_id.scenario.disks[0].size_bytes, 8 << 30);
    assert_eq!(by_id.scenario.fixture.as_ref().unwrap().schedule, "fast");
}

#[test]
fn ids_and_permutations_are_the_same_on_every_load() {
    let a = load(&data("disks.toml")).unwrap();
    let b = load(&data("disks.toml")).unwrap();
    assert_eq!(ids(&a), ids(&b));
    assert_eq!(
        ids(&a),
        [
            "virtio.512.bios.by-id",
            "virtio.512e.uefi.by-name",
            "virtio.4k.uefi.by-id",
            "scsi.512.uefi.by-name",
            "scsi.512e.bios.by-id",
            "scsi.4k.uefi.by-name",
            "nvme.512.bios.by-name",
            "nvme.512e.uefi.by-id",
            "nvme.4k.uefi.by-id",
            "sata.512.bios.by-id",
            "sata.512e.uefi.by-name",
        ]
    );
}

#[test]
fn shape_axes_rewrite_the_disks_and_the_networks() {
    let m = load(&data("network.toml")).unwrap();
    assert_eq!(m.strategy, Strategy::Full);
    // 3 stacks x (1 + 2 + 2) layouts-with-naming.
    assert_eq!(m.permutations.len(), 15);

    let p = m.permutation("ipv4.3-last.by-name").unwrap();
    let disk_ids: Vec<&str> = p.scenario.disks.iter().map(|d| d.id.as_str()).collect();
    assert_eq!(disk_ids, ["extra1", "extra2", "install"]);
    assert_eq!(p.scenario.install.installation_disk, "/dev/vdc");
    assert_eq!(
        p.scenario.install.install_disk_id.as_deref(),
        Some("install")
    );
    let serials: BTreeSet<&str> = p.scenario.disks.iter().map(|d| d.serial.as_str()).collect();
    assert_eq!(serials.len(), 3);
    assert_eq!(p.scenario.install.machine_network, ["10.0.2.0/24"]);

    let p = m.permutation("dual-stack.2-second.by-id").unwrap();
    assert_eq!(p.scenario.disks[1].id, "install");
    assert_eq!(
        p.scenario.install.installation_disk,
        "/dev/disk/by-id/virtio-sno-install"
    );
    assert_eq!(
        p.scenario.install.machine_network,
        ["10.0.2.0/24", "fec0::/64"]
    );
    let cidrs: Vec<&str> = p
        .scenario
        .install
        .cluster_network
        .iter()
        .map(|c| c.cidr.as_str())
        .collect();
    assert_eq!(cidrs, ["10.128.0.0/14", "fd01::/48"]);
    assert_eq!(p.scenario.install.cluster_network[1].host_prefix, 64);

    let p = m.permutation("ipv6-first.1.by-id").unwrap();
    assert_eq!(
        p.scenario.install.service_network,
        ["fd02::/112", "172.30.0.0/16"]
    );
}

#[test]
fn a_layout_copies_the_install_disk_as_the_other_axes_left_it() {
    let m = parse(&with_head(
        "[[axis]]\nkey = \"disks.layout\"\nvalues = [\"2\"]\n\n[[axis]]\nkey = \"disks.install.bus\"\nvalues = [\"nvme\"]\n",
    ))
    .unwrap();
    let s = &m.permutations[0].scenario;
    assert_eq!(m.permutations[0].id, "2.nvme");
    assert!(s.disks.iter().all(|d| d.bus == Bus::Nvme));
    assert_eq!(s.disks[0].id, "install");
}

#[test]
fn expectations_replace_the_base_one_for_the_permutations_they_match() {
    let m = load(&data("network.toml")).unwrap();
    for p in &m.permutations {
        let e = p.scenario.expect.as_ref();
        if p.values["install.network_stack"] == "ipv6-first" {
            let e = e.unwrap();
            assert_eq!(e.verdict, "fail");
            assert_eq!(e.failed_phase.as_deref(), Some("assets"));
        } else {
            assert!(e.is_none(), "{}", p.id);
        }
    }
    // The first matching rule wins; a list of labels matches any of them.
    let m = parse(&with_head(
        r#"
[[axis]]
key = "vm.firmware"
values = ["bios", "uefi"]

[[expect]]
when = { "vm.firmware" = "uefi" }
verdict = "fail"
failed_phase = "live-boot"

[[expect]]
when = { "vm.firmware" = ["bios", "uefi"] }
verdict = "pass"
"#,
    ))
    .unwrap();
    let verdicts: Vec<&str> = m
        .permutations
        .iter()
        .map(|p| p.scenario.expect.as_ref().unwrap().verdict.as_str())
        .collect();
    assert_eq!(verdicts, ["pass", "fail"]);
}

#[test]
fn filters_select_permutations_by_glob() {
    let m = load(&data("disks.toml")).unwrap();
    let uefi: Vec<&str> = m.filter("*.uefi.*").map(|p| p.id.as_str()).collect();
    assert_eq!(uefi.len(), 7);
    assert!(uefi.iter().all(|id| id.contains(".uefi.")));
    assert_eq!(m.filter("nvme.4k.uefi.by-id").count(), 1);
    assert_eq!(m.filter("floppy.*").count(), 0);
}

#[test]
fn matrix_files_are_told_from_scenario_files() {
    assert!(is_matrix_file(&data("disks.toml")));
    assert!(is_matrix_file(&data("smoke-firmware.toml")));
    assert!(!is_matrix_file(&data("base.toml")));
    assert!(!is_matrix_file(&data("no-such-file.toml")));
    assert!(looks_like_matrix("[[axis]]\nkey = \"vm.firmware\"\n"));
    assert!(!looks_like_matrix("name = \"s\"\nprofile = \"fixture\"\n"));
    assert!(!looks_like_matrix("not toml ["));
}

#[test]
fn a_matrix_may_name_a_shipped_scenario_as_its_base() {
    let m = load(&data("smoke-firmware.toml")).unwrap();
    assert_eq!(ids(&m), ["bios", "uefi"]);
    assert!(
        m.base.ends_with("scenarios/smoke.toml"),
        "{}",
        m.base.display()
    );
    assert!(
        !m.base.to_string_lossy().contains(".."),
        "{}",
        m.base.display()
    );
}

#[test]
fn plan_json_lists_ids_values_and_counts() {
    let m = load(&data("network.toml")).unwrap();
    let v = plan_json(&m);
    assert_eq!(v["matrix"], "network");
    assert_eq!(v["strategy"], "full");
    assert_eq!(v["full_count"], 15);
    assert_eq!(v["count"], 15);
    assert_eq!(v["permutations"][0]["id"], "ipv4.1.by-id");
    assert_eq!(v["permutations"][0]["values"]["disks.layout"], "1");
    assert_eq!(v["permutations"][0]["expect"], serde_json::Value::Null);
    assert_eq!(v["permutations"][0]["negative"], false);
    assert_eq!(v["permutations"][14]["expect"]["failed_phase"], "assets");
    // Full expansion marks the rejections too: the five ipv6-first permutations.
    assert_eq!(v["permutations"][14]["negative"], true);
    assert_eq!(v["negative_count"], 5);
    assert_eq!(v["axes"][1]["values"][2], "3-last");
}

#[test]
fn plan_text_has_a_header_and_a_line_per_permutation() {
    let m = load(&data("disks.toml")).unwrap();
    let text = plan_text(&m);
    assert!(
        text.contains("strategy pairwise: 11 permutations (pairwise 11, full 38)"),
        "{text}"
    );
    let table: Vec<&str> = text.lines().skip_while(|l| !l.starts_with("id ")).collect();
    assert_eq!(table.len(), 12, "{text}");
    assert!(table[0].contains("disks.install.bus"));
    assert!(table[1].starts_with("virtio.512.bios.by-id "));
}

// ---- errors ---------------------------------------------------------------------------------

#[test]
fn syntax_and_unknown_fields_name_the_line_and_what_is_valid() {
    let e = err(&with_head("[[axis]]\nkee = \"vm.firmware\"\n"));
    assert_eq!(e.line(), Some(4), "{e}");
    assert!(e.to_string().contains("`key`"), "{e}");
    assert!(
        e.to_string()
            .starts_with(&format!("{}:4:", data("inline.toml").display())),
        "{e}"
    );

    let e = err(&with_head(
        "strategy = \"greedy\"\n[[axis]]\nkey = \"vm.firmware\"\nvalues = [\"bios\"]\n",
    ));
    assert_eq!(e.line(), Some(3), "{e}");
    assert!(e.to_string().contains("pairwise"), "{e}");

    let e = err("name = \"m\"\n[[axis]]\nkey = \"vm.firmware\"\nvalues = [\"bios\"]\n");
    assert!(e.to_string().contains("base"), "{e}");

    let e = err(&with_head(""));
    assert!(e.to_string().contains("at least one [[axis]]"), "{e}");

    let e = err("name = \"My Matrix\"\nbase = \"base.toml\"\n");
    assert_eq!(e.line(), Some(1), "{e}");
}

#[test]
fn unknown_scenario_keys_are_rejected_at_the_axis_line() {
    let e = err(&with_head(
        "\n[[axis]]\nkey = \"vm.colour\"\nvalues = [\"red\"]\n",
    ));
    assert_eq!(e.line(), Some(5), "{e}");
    let text = e.to_string();
    assert!(text.contains("colour") && text.contains("firmware"), "{e}");

    let e = err(&with_head(
        "[[axis]]\nkey = \"flavour\"\nvalues = [\"red\"]\n",
    ));
    assert_eq!(e.line(), Some(4), "{e}");
    assert!(e.to_string().contains("profile"), "{e}");

    let e = err(&with_head(
        "[[axis]]\nkey = \"disks.data.bus\"\nvalues = [\"nvme\"]\n",
    ));
    assert_eq!(e.line(), Some(4), "{e}");
    assert!(e.to_string().contains("(its disks: install)"), "{e}");

    let e = err(&with_head(
        "[[axis]]\nkey = \"disks.install.colour\"\nvalues = [\"red\"]\n",
    ));
    assert_eq!(e.line(), Some(4), "{e}");
    assert!(e.to_string().contains("sector"), "{e}");

    let e = err(&with_head("[[axis]]\nkey = \"name\"\nvalues = [\"x\"]\n"));
    assert!(e.to_string().contains("named by its id"), "{e}");
}

#[test]
fn bad_values_are_rejected_at_their_line_with_what_is_valid() {
    let e = err(&with_head(
        "[[axis]]\nkey = \"vm.firmware\"\nvalues = [\n  \"bios\",\n  \"efi\",\n]\n",
    ));
    assert_eq!(e.line(), Some(7), "{e}");
    assert!(e.to_string().contains("`uefi`"), "{e}");

    let e = err(&with_head(
        "[[axis]]\nkey = \"vm.vcpus\"\nvalues = [\"two\"]\n",
    ));
    assert_eq!(e.line(), Some(5), "{e}");

    let e = err(&with_head(
        "[[axis]]\nkey = \"disks.layout\"\nvalues = [\"2-third\"]\n",
    ));
    assert!(e.to_string().contains("third of 2"), "{e}");

    let e = err(&with_head(
        "[[axis]]\nkey = \"install.network_stack\"\nvalues = [\"ipv5\"]\n",
    ));
    assert!(e.to_string().contains("\"dual-stack\""), "{e}");

    // Numbers label themselves as TOML writes them.
    let m = parse(&with_head(
        "[[axis]]\nkey = \"vm.vcpus\"\nvalues = [1, 4]\n",
    ))
    .unwrap();
    assert_eq!(ids(&m), ["1", "4"]);
    assert_eq!(m.permutations[1].scenario.vm.vcpus, 4);
}

#[test]
fn duplicate_empty_and_colliding_values_are_rejected() {
    let e = err(&with_head("[[axis]]\nkey = \"vm.firmware\"\nvalues = []\n"));
    assert_eq!(e.line(), Some(5), "{e}");
    assert!(e.to_string().contains("no values"), "{e}");

    let e = err(&with_head(
        "[[axis]]\nkey = \"vm.firmware\"\nvalues = [\"bios\", \"bios\"]\n",
    ));
    assert!(e.to_string().contains("twice"), "{e}");

    let e = err(&with_head(
        "[[axis]]\nkey = \"install.installation_disk\"\nvalues = [\"/dev/vda\", \"_dev_vda\"]\n",
    ));
    assert!(e.to_string().contains("same id part"), "{e}");

    let e = err(&with_head(
        "[[axis]]\nkey = \"disks.layout\"\nvalues = [\"3\", \"3-first\"]\n",
    ));
    assert!(e.to_string().contains("means the same"), "{e}");

    let e = err(&with_head(
        "[[axis]]\nkey = \"vm.firmware\"\nvalues = [\"bios\"]\n[[axis]]\nkey = \"vm.firmware\"\nvalues = [\"uefi\"]\n",
    ));
    assert_eq!(e.line(), Some(7), "{e}");
    assert!(e.to_string().contains("twice"), "{e}");
}

#[test]
fn values_that_are_not_scalars_need_a_label() {
    let e = err(&with_head(
        "[[axis]]\nkey = \"install.installation_disk\"\nvalues = [{ by = \"id\", disk = \"install\" }]\n",
    ));
    assert_eq!(e.line(), Some(5), "{e}");
    assert!(e.to_string().contains("label = "), "{e}");

    let e = err(&with_head(
        "[[axis]]\nkey = \"fixture.faults\"\nvalues = [{ label = \"\", value = [] }]\n",
    ));
    assert!(e.to_string().contains("empty label"), "{e}");

    let m = parse(&with_head(
        "[[axis]]\nkey = \"fixture.faults\"\nvalues = [{ label = \"none\", value = [] }, { label = \"degraded\", value = [\"operator-degraded:ingress\"] }]\n",
    ))
    .unwrap();
    assert_eq!(ids(&m), ["none", "degraded"]);
    assert_eq!(
        m.permutations[1].scenario.fixture.as_ref().unwrap().faults,
        ["operator-degraded:ingress"]
    );
}

#[test]
fn a_combination_the_validator_refuses_must_be_excluded() {
    let text = with_head(
        r#"
[[axis]]
key = "disks.install.bus"
values = ["virtio", "nvme"]

[[axis]]
key = "vm.firmware"
values = ["bios", "uefi"]

[[axis]]
key = "disks.install.sector"
values = ["512", "4k"]
"#,
    );
    let e = err(&text);
    // The firmware axis (its key on line 9) is the first one involved in bios + 4k.
    assert_eq!(e.line(), Some(9), "{e}");
    let MatrixError::Permutation {
        id,
        source,
        exclude,
        ..
    } = &e
    else {
        panic!("{e}");
    };
    assert_eq!(id, "virtio.bios.4k");
    assert!(matches!(**source, Refusal::Invalid(_)), "{e}");
    assert!(source.to_string().contains("4Kn"), "{e}");
    assert_eq!(
        exclude,
        &[
            r#""vm.firmware" = "bios""#,
            r#""disks.install.sector" = "4k""#
        ]
    );
    assert!(
        e.to_string().contains(
            r#"the scenario validator refuses it: "#
        ) && e.to_string().ends_with(
            r#"; if the combination cannot run, drop it with [[exclude]] "vm.firmware" = "bios", "disks.install.sector" = "4k""#
        ),
        "{e}"
    );

    // Excluded, written with an unquoted dotted key or a quoted one, it loads.
    for rule in [
        "vm.firmware = \"bios\"\ndisks.install.sector = \"4k\"",
        "\"vm.firmware\" = \"bios\"\n\"disks.install.sector\" = \"4k\"",
    ] {
        let m = parse(&format!("{text}\n[[exclude]]\n{rule}\n")).unwrap();
        assert_eq!(m.permutations.len(), 6);
        assert_eq!(m.full_count, 6);
    }
    // Pairwise finds it too: every pair that is not excluded is in some permutation.
    let e = err(&text.replace("base.toml\"\n", "base.toml\"\nstrategy = \"pairwise\"\n"));
    assert!(matches!(e, MatrixError::Permutation { .. }), "{e}");
}

/// The shipped boot matrix: PXE is left out under Secure Boot, and without that exclusion the
/// matrix is refused at its first axis involved (boot.source), naming the rule to add.
#[test]
fn the_boot_matrix_excludes_pxe_under_secure_boot_and_names_the_rule_without_it() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios/boot.toml");
    let m = load(&path).unwrap();
    assert_eq!(m.permutations.len(), 3 * 3 * 2 - 2);
    assert!(ids(&m).contains(&"live-iso.uefi-secure.install-to-disk"));
    assert!(ids(&m).contains(&"minimal-iso.uefi-secure.assisted"));
    assert!(!ids(&m).iter().any(|id| id.starts_with("pxe.uefi-secure")));
    let text = std::fs::read_to_string(&path).unwrap();
    let without = &text[..text.find("\n# PXE is iPXE").unwrap()];
    let e = match parse_str(&path, without) {
        Ok(_) => panic!("loaded without the exclusion"),
        Err(e) => e,
    };
    let axis_line = text
        .lines()
        .position(|l| l == "key = \"boot.source\"")
        .unwrap()
        + 1;
    assert_eq!(e.line(), Some(axis_line), "{e}");
    let said = e.to_string();
    assert!(
        said.contains("permutation pxe.uefi-secure.install-to-disk")
            && said.ends_with(
                r#"drop it with [[exclude]] "boot.source" = "pxe", "vm.firmware" = "uefi-secure""#
            ),
        "{said}"
    );
}

#[test]
fn a_value_the_validator_refuses_on_its_own_is_named_alone() {
    let e = err(&with_head(
        "[[axis]]\nkey = \"vm.firmware\"\nvalues = [\"uefi\"]\n[[axis]]\nkey = \"disks.install.size\"\nvalues = [\"1MiB\"]\n",
    ));
    assert_eq!(e.line(), Some(7), "{e}");
    assert!(e.to_string().contains("at least 64MiB"), "{e}");
    assert!(
        e.to_string()
            .contains("[[exclude]] \"disks.install.size\" = \"1MiB\""),
        "{e}"
    );
}

#[test]
fn rules_name_axes_and_values_of_the_matrix() {
    let axes = "[[axis]]\nkey = \"vm.firmware\"\nvalues = [\"bios\", \"uefi\"]\n";
    let e = err(&with_head(&format!(
        "{axes}[[exclude]]\n\"vm.bus\" = \"bios\"\n"
    )));
    assert_eq!(e.line(), Some(7), "{e}");
    assert!(e.to_string().contains("the axes are vm.firmware"), "{e}");

    let e = err(&with_head(&format!(
        "{axes}[[exclude]]\n\"vm.firmware\" = \"efi\"\n"
    )));
    assert_eq!(e.line(), Some(7), "{e}");
    assert!(e.to_string().contains("\"bios\", \"uefi\""), "{e}");

    let e = err(&with_head(&format!("{axes}[[exclude]]\n")));
    assert!(e.to_string().contains("empty [[exclude]]"), "{e}");

    let e = err(&with_head(&format!(
        "{axes}[[exclude]]\n\"vm.firmware\" = [\"bios\", \"uefi\"]\n"
    )));
    assert!(e.to_string().contains("leave no permutation"), "{e}");
}

#[test]
fn expectations_are_checked_like_a_scenario_expect() {
    let axes = "[[axis]]\nkey = \"vm.firmware\"\nvalues = [\"bios\", \"uefi\"]\n";
    let e = err(&with_head(&format!(
        "{axes}[[expect]]\nwhen = {{ \"vm.firmware\" = \"uefi\" }}\nverdict = \"fail\"\nfailed_phase = \"boot\"\n"
    )));
    assert_eq!(e.line(), Some(9), "{e}");
    assert!(e.to_string().contains("live-boot"), "{e}");

    let e = err(&with_head(&format!(
        "{axes}[[expect]]\nwhen = {{ \"vm.firmware\" = \"uefi\" }}\nverdict = \"flaky\"\n"
    )));
    assert_eq!(e.line(), Some(8), "{e}");

    let e = err(&with_head(&format!(
        "{axes}[[exclude]]\n\"vm.firmware\" = \"uefi\"\n[[expect]]\nwhen = {{ \"vm.firmware\" = \"uefi\" }}\nverdict = \"pass\"\n"
    )));
    assert_eq!(e.line(), Some(9), "{e}");
    assert!(e.to_string().contains("matches no permutation"), "{e}");

    let e = err(&with_head(&format!(
        "{axes}[[expect]]\nwhen = {{}}\nverdict = \"pass\"\n"
    )));
    assert!(e.to_string().contains("base scenario's [expect]"), "{e}");
}

#[test]
fn a_bad_or_missing_base_is_reported_at_the_base_line() {
    let e = err("name = \"m\"\nbase = \"missing.toml\"\n[[axis]]\nkey = \"vm.firmware\"\nvalues = [\"bios\"]\n");
    assert_eq!(e.line(), Some(2), "{e}");
    assert!(
        e.to_string().contains("cannot read the base scenario"),
        "{e}"
    );

    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("base.toml"),
        "name = \"b\"\nprofile = \"fixture\"\n[[disks]]\nid = \"install\"\nsize = \"8GiB\"\nbus = \"floppy\"\n",
    )
    .unwrap();
    let e = parse_str(
        &dir.path().join("m.toml"),
        "name = \"m\"\nbase = \"base.toml\"\n[[axis]]\nkey = \"vm.firmware\"\nvalues = [\"bios\"]\n",
    )
    .unwrap_err();
    assert_eq!(e.line(), Some(2), "{e}");
    // The base's own error, with its own file and line.
    assert!(e.to_string().contains("base.toml:6:"), "{e}");
}

#[test]
fn a_layout_needs_a_base_with_one_disk() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("base.toml"),
        "name = \"b\"\nprofile = \"fixture\"\n[[disks]]\nid = \"install\"\nsize = \"8GiB\"\n[[disks]]\nid = \"data\"\nsize = \"1GiB\"\n",
    )
    .unwrap();
    let e = parse_str(
        &dir.path().join("m.toml"),
        "name = \"m\"\nbase = \"base.toml\"\n[[axis]]\nkey = \"disks.layout\"\nvalues = [\"2\"]\n",
    )
    .unwrap_err();
    assert_eq!(e.line(), Some(5), "{e}");
    assert!(e.to_string().contains("exactly one [[disks]] entry"), "{e}");
}

#[test]
fn a_huge_full_product_is_refused_and_pairwise_plans_it() {
    let values = (1..=10)
        .map(|m| format!("\"{m}m\""))
        .collect::<Vec<_>>()
        .join(", ");
    let axes: String = [
        "live-boot",
        "bootkube",
        "install-to-disk",
        "disk-boot",
        "api-ready",
    ]
    .iter()
    .map(|p| format!("[[axis]]\nkey = \"timeouts.{p}\"\nvalues = [{values}]\n"))
    .collect();
    let e = err(&with_head(&format!("strategy = \"full\"\n{axes}")));
    assert_eq!(e.line(), Some(3), "{e}");
    assert!(e.to_string().contains("100000 permutations"), "{e}");

    let m = parse(&with_head(&format!("strategy = \"pairwise\"\n{axes}"))).unwrap();
    assert_eq!(m.full_count, 100_000);
    assert!(
        (100..=120).contains(&m.permutations.len()),
        "{}",
        m.permutations.len()
    );
    assert!(m.with_strategy(Strategy::Full).is_err());
}

/// An axis of `n` distinct timeouts (any scenario accepts every one of them).
fn timeout_axis(phase: &str, n: usize) -> String {
    let values = (1..=n)
        .map(|s| format!("\"{s}s\""))
        .collect::<Vec<_>>()
        .join(", ");
    format!("[[axis]]\nkey = \"timeouts.{phase}\"\nvalues = [{values}]\n")
}

#[test]
fn pairwise_is_capped_like_the_full_product_before_any_row_is_built() {
    // 3000 x 3000 took minutes to build (9 million pairs); 300 x 300 gave 90,000 permutations.
    for n in [3000, 300, 101] {
        let text = with_head(&format!(
            "strategy = \"pairwise\"\n{}{}",
            timeout_axis("bootkube", n),
            timeout_axis("install-to-disk", n)
        ));
        let started = std::time::Instant::now();
        let e = err(&text);
        assert!(started.elapsed() < std::time::Duration::from_secs(30));
        assert_eq!(e.line(), Some(3), "{e}");
        let said = e.to_string();
        assert!(
            said.contains("pairwise needs more than 10000 permutations")
                && said.contains(&format!("{} pairs of values", n * n))
                && said.contains(&format!("timeouts.bootkube ({n} values)")),
            "{said}"
        );
    }
    // 100 x 100 is exactly the cap: every pair once, as the full product.
    let text = with_head(&format!(
        "strategy = \"pairwise\"\n{}{}",
        timeout_axis("bootkube", 100),
        timeout_axis("install-to-disk", 100)
    ));
    assert_eq!(parse(&text).unwrap().permutations.len(), MAX_PERMUTATIONS);
}

#[test]
fn the_pairwise_bound_counts_only_pairs_the_exclusions_allow() {
    // 150 x 100 pairs, but values 101 to 150 of the first axis are excluded: 10,000 remain.
    let excluded: String = (101..=150)
        .map(|s| format!("[[exclude]]\n\"timeouts.bootkube\" = \"{s}s\"\n"))
        .collect();
    let text = with_head(&format!(
        "strategy = \"pairwise\"\n{}{}{excluded}",
        timeout_axis("bootkube", 150),
        timeout_axis("install-to-disk", 100)
    ));
    assert_eq!(parse(&text).unwrap().permutations.len(), MAX_PERMUTATIONS);
    let text = with_head(&format!(
        "strategy = \"pairwise\"\n{}{}{}",
        timeout_axis("bootkube", 150),
        timeout_axis("install-to-disk", 100),
        excluded.replacen("[[exclude]]\n\"timeouts.bootkube\" = \"101s\"\n", "", 1)
    ));
    let e = err(&text).to_string();
    assert!(
        e.contains("pairwise needs more than 10000 permutations")
            && e.contains("more than 10000 pairs of values"),
        "{e}"
    );
}

#[test]
fn an_axis_of_more_values_than_permutations_is_refused_at_its_values() {
    let text = with_head(&format!(
        "strategy = \"pairwise\"\n{}",
        timeout_axis("bootkube", 10_001)
    ));
    let e = err(&text);
    assert_eq!(e.line(), Some(6), "{e}");
    assert!(
        e.to_string()
            .contains("axis timeouts.bootkube has 10001 values, more than the 10000 permutations"),
        "{e}"
    );
}

#[test]
fn strategies_parse_from_the_command_line() {
    assert_eq!("pairwise".parse::<Strategy>(), Ok(Strategy::Pairwise));
    assert_eq!("full".parse::<Strategy>(), Ok(Strategy::Full));
    assert_eq!(
        "some".parse::<Strategy>().unwrap_err().to_string(),
        "strategy \"some\": use \"full\" or \"pairwise\""
    );
}

#[test]
fn files_a_base_in_another_directory_names_stay_next_to_the_base() {
    let dir = tempfile::tempdir().unwrap();
    let base_dir = dir.path().join("bases");
    std::fs::create_dir(&base_dir).unwrap();
    std::fs::write(
        base_dir.join("ca.pem"),
        include_str!("../../../../scenarios/data/proxy-ca.pem"),
    )
    .unwrap();
    std::fs::write(
        base_dir.join("ps.json"),
        r#"{"auths":{"quay.io":{"auth":"c2VjcmV0"}}}"#,
    )
    .unwrap();
    std::fs::write(
        base_dir.join("b.toml"),
        "name = \"b\"\nprofile = \"fixture\"\n[[disks]]\nid = \"install\"\nsize = \"8GiB\"\n[install]\nadditional_trust_bundle = \"ca.pem\"\npull_secret = { file = \"ps.json\" }\n",
    )
    .unwrap();
    let m = parse_str(
        &dir.path().join("m.toml"),
        "name = \"m\"\nbase = \"bases/b.toml\"\n[[axis]]\nkey = \"vm.firmware\"\nvalues = [\"bios\", \"uefi\"]\n",
    )
    .unwrap();
    let absolute = std::path::absolute(&base_dir).unwrap();
    for p in &m.permutations {
        assert_eq!(
            p.scenario.install.additional_trust_bundle,
            Some(absolute.join("ca.pem")),
            "{}",
            p.id
        );
        assert_eq!(
            p.scenario.install.pull_secret,
            Some(crate::scenario::model::SecretSource::File(
                absolute.join("ps.json")
            ))
        );
    }

    // An axis value names a file relative to the matrix, checked at its line.
    std::fs::write(
        dir.path().join("key.pem"),
        "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n",
    )
    .unwrap();
    let e = parse_str(
        &dir.path().join("m.toml"),
        "name = \"m\"\nbase = \"bases/b.toml\"\n[[axis]]\nkey = \"install.additional_trust_bundle\"\nvalues = [\"key.pem\"]\n",
    )
    .unwrap_err();
    assert_eq!(e.line(), Some(5), "{e}");
    assert!(
        e.to_string()
            .contains("key.pem:1: a private key, not a certificate"),
        "{e}"
    );
}

#[test]
fn a_host_ignition_a_base_in_another_directory_names_stays_next_to_the_base() {
    let dir = tempfile::tempdir().unwrap();
    let base_dir = dir.path().join("bases");
    std::fs::create_dir(&base_dir).unwrap();
    std::fs::write(
        base_dir.join("host.ign"),
        r#"{"ignition": {"version": "3.2.0"}, "storage": {"files": [{"path": "/etc/x"}]}}"#,
    )
    .unwrap();
    std::fs::write(
        base_dir.join("b.toml"),
        "name = \"b\"\nprofile = \"fixture\"\n[[disks]]\nid = \"install\"\nsize = \"8GiB\"\n[install]\nmode = \"assisted\"\n[install.assisted]\nhost_ignition = \"host.ign\"\n",
    )
    .unwrap();
    let m = parse_str(
        &dir.path().join("m.toml"),
        "name = \"m\"\nbase = \"bases/b.toml\"\n[[axis]]\nkey = \"vm.firmware\"\nvalues = [\"bios\", \"uefi\"]\n",
    )
    .unwrap();
    let absolute = std::path::absolute(&base_dir).unwrap();
    for p in &m.permutations {
        assert_eq!(
            p.scenario.install.assisted.host_ignition,
            Some(absolute.join("host.ign")),
            "{}",
            p.id
        );
    }

    // An axis value names a host Ignition relative to the matrix, checked at its line.
    std::fs::write(
        dir.path().join("v2.ign"),
        "{\"ignition\": {\"version\": \"2.2.0\"}}",
    )
    .unwrap();
    let e = parse_str(
        &dir.path().join("m.toml"),
        "name = \"m\"\nbase = \"bases/b.toml\"\n[[axis]]\nkey = \"install.assisted.host_ignition\"\nvalues = [\"v2.ign\"]\n",
    )
    .unwrap_err();
    assert_eq!(e.line(), Some(5), "{e}");
    assert!(
        e.to_string()
            .contains("v2.ign:1: ignition.version is \"2.2.0\""),
        "{e}"
    );
}

// ---- --set on a matrix ----------------------------------------------------------------------

fn set(s: &str) -> Override {
    s.parse().unwrap()
}

const FIRMWARE_AXIS: &str = "[[axis]]\nkey = \"vm.firmware\"\nvalues = [\"bios\", \"uefi\"]\n";

#[test]
fn an_override_changes_the_base_of_every_permutation_and_every_one_records_it() {
    let sets = [set("vm.memory=4GiB"), set("disks.install.bus=nvme")];
    let m = parse_with(&data("inline.toml"), &with_head(FIRMWARE_AXIS), &sets).unwrap();
    assert_eq!(ids(&m), ["bios", "uefi"]);
    for p in &m.permutations {
        assert_eq!(p.scenario.vm.memory_mib, 4096, "{}", p.id);
        assert_eq!(p.scenario.disks[0].bus, Bus::Nvme, "{}", p.id);
        assert_eq!(
            p.scenario.overrides,
            ["vm.memory=4GiB", "disks.install.bus=nvme"]
        );
    }
    assert_eq!(m.overrides, ["vm.memory=4GiB", "disks.install.bus=nvme"]);
    // A strategy of its own keeps them.
    let full = m.with_strategy(Strategy::Pairwise).unwrap();
    assert!(full
        .permutations
        .iter()
        .all(|p| p.scenario.overrides.len() == 2));
    let text = plan_text(&m);
    assert!(
        text.contains("overridden on the command line, in every permutation: --set vm.memory=4GiB --set disks.install.bus=nvme"),
        "{text}"
    );
    let json = plan_json(&m);
    assert_eq!(json["overrides"][0], "vm.memory=4GiB");
    for p in json["permutations"].as_array().unwrap() {
        assert_eq!(p["overrides"][1], "disks.install.bus=nvme", "{p}");
    }
    // Without overrides, neither the plan nor a permutation says anything of them.
    let plain = parse(&with_head(FIRMWARE_AXIS)).unwrap();
    assert!(plan_json(&plain).get("overrides").is_none());
    assert!(plan_json(&plain)["permutations"][0]
        .get("overrides")
        .is_none());
    assert!(!plan_text(&plain).contains("overridden"));
}

#[test]
fn an_override_of_a_key_an_axis_sets_is_refused_at_the_axis() {
    let text = with_head(&format!(
        "{FIRMWARE_AXIS}[[axis]]\nkey = \"install.proxy\"\nvalues = [{{ label = \"none\", value = {{}} }}]\n"
    ));
    let e = parse_with(&data("inline.toml"), &text, &[set("vm.firmware=uefi")]).unwrap_err();
    assert_eq!(e.line(), Some(4), "{e}");
    assert!(
        e.to_string()
            .contains("--set vm.firmware=uefi: vm.firmware is an axis of this matrix (here)"),
        "{e}"
    );
    // A part of an axis's key, too.
    let e = parse_with(
        &data("inline.toml"),
        &text,
        &[set("install.proxy.http_proxy=http://proxy:3128")],
    )
    .unwrap_err();
    assert_eq!(e.line(), Some(7), "{e}");
    assert!(e.to_string().contains("install.proxy is an axis"), "{e}");
}

#[test]
fn an_override_the_base_refuses_is_named_as_run_set_names_it() {
    let e = parse_with(
        &data("inline.toml"),
        &with_head(FIRMWARE_AXIS),
        &[set("vm.memroy=4GiB")],
    )
    .unwrap_err();
    assert!(matches!(e, MatrixError::Override(_)), "{e:?}");
    let shown = e.to_string();
    assert!(
        shown.starts_with(&format!(
            "{}: --set vm.memroy=4GiB: ",
            data("base.toml").display()
        )),
        "{shown}"
    );
    assert!(shown.contains("did you mean `memory`?"), "{shown}");
    let e = parse_with(
        &data("inline.toml"),
        &with_head(FIRMWARE_AXIS),
        &[set("disks.install.bus=floppy")],
    )
    .unwrap_err();
    assert!(e.to_string().contains("`virtio`"), "{e}");
}

#[test]
fn the_bases_authorized_keys_stay_the_keys_it_read_wherever_the_base_is() {
    const KEY: &str =
        "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIKS1GOM4iZ3Jw/8/Dy6E7UbT0+kyuGA0TF6+GbLmcpt6 me@ed25519";
    let dir = tempfile::tempdir().unwrap();
    let base_dir = dir.path().join("bases");
    std::fs::create_dir(&base_dir).unwrap();
    std::fs::write(base_dir.join("me.pub"), format!("{KEY}\n")).unwrap();
    std::fs::write(
        base_dir.join("b.toml"),
        "name = \"b\"\nprofile = \"fixture\"\n[[disks]]\nid = \"install\"\nsize = \"8GiB\"\n[access]\nauthorized_keys = [\"me.pub\"]\n",
    )
    .unwrap();
    let m = parse_str(
        &dir.path().join("m.toml"),
        &format!("name = \"m\"\nbase = \"bases/b.toml\"\n{FIRMWARE_AXIS}"),
    )
    .unwrap();
    for p in &m.permutations {
        let lines: Vec<&str> = p
            .scenario
            .authorized_keys
            .iter()
            .map(|k| k.line.as_str())
            .collect();
        assert_eq!(lines, [KEY], "{}", p.id);
    }
    // An axis value's key file is checked at its line, relative to the matrix.
    std::fs::write(
        dir.path().join("id"),
        "-----BEGIN OPENSSH PRIVATE KEY-----\n",
    )
    .unwrap();
    let e = parse_str(
        &dir.path().join("m.toml"),
        "name = \"m\"\nbase = \"bases/b.toml\"\n[[axis]]\nkey = \"access.authorized_keys\"\nvalues = [{ label = \"mine\", value = [\"id\"] }]\n",
    )
    .unwrap_err();
    assert_eq!(e.line(), Some(5), "{e}");
    assert!(e.to_string().contains("id:1: a private key"), "{e}");
}
