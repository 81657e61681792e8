//! A multipath installation disk as validation takes it and refuses it.

use std::path::Path;

use crate::scenario::{parse_str, InstallMode, Scenario, ScenarioError};

const MULTIPATH: &str = r#"name = "m"
profile = "fixture"

[[disks]]
id = "install"
size = "8GiB"
bus = "scsi"
multipath = true

[install]
installation_disk = { by = "name", disk = "install" }
"#;

fn parse(text: &str) -> Result<Scenario, ScenarioError> {
    parse_str(Path::new("m.toml"), text)
}

fn err(text: &str) -> ScenarioError {
    parse(text).unwrap_err()
}

#[test]
fn a_multipath_install_disk_is_mpatha_and_gets_the_day1_kargs() {
    let s = parse(MULTIPATH).unwrap();
    assert!(s.disks[0].multipath);
    assert_eq!(s.install.installation_disk, "/dev/mapper/mpatha");
    assert_eq!(
        s.install.multipath_kargs,
        [
            "root=/dev/disk/by-label/dm-mpath-root",
            "rw",
            "rd.multipath=default"
        ]
    );
    assert_eq!(
        s.install.installation_disk_value(),
        "/dev/mapper/mpatha --append-karg root=/dev/disk/by-label/dm-mpath-root --append-karg rw --append-karg rd.multipath=default"
    );
    let by_id = parse(&MULTIPATH.replace("by = \"name\"", "by = \"id\"")).unwrap();
    assert!(
        by_id
            .install
            .installation_disk
            .starts_with("/dev/disk/by-id/dm-uuid-mpath-35"),
        "{}",
        by_id.install.installation_disk
    );
    let plain = parse(&MULTIPATH.replace("multipath = true", "")).unwrap();
    assert!(plain.install.multipath_kargs.is_empty());
    assert_eq!(
        plain.install.installation_disk_value(),
        "/dev/sda",
        "a disk with one path has no kargs"
    );
}

#[test]
fn the_assisted_agent_appends_them_before_the_scenarios_own_and_install_config_has_none() {
    let s = parse(&format!(
        "{MULTIPATH}mode = \"assisted\"\n[install.assisted]\nappend_kargs = [\"console=ttyS0\"]\n"
    ))
    .unwrap();
    assert_eq!(s.install.mode, InstallMode::Assisted);
    assert_eq!(
        s.install.assisted.append_kargs,
        [
            "root=/dev/disk/by-label/dm-mpath-root",
            "rw",
            "rd.multipath=default",
            "console=ttyS0"
        ]
    );
    assert_eq!(s.install.installation_disk_value(), "/dev/mapper/mpatha");
}

#[test]
fn the_no_kargs_fault_withholds_them() {
    let s = parse(&format!(
        "{MULTIPATH}[fixture]\nfaults = [\"multipath-no-kargs\"]\n"
    ))
    .unwrap();
    assert!(s.install.multipath_kargs.is_empty());
    assert_eq!(s.install.installation_disk_value(), "/dev/mapper/mpatha");
}

#[test]
fn multipath_where_it_cannot_be_is_refused_at_its_line() {
    let e = err(&MULTIPATH.replace("bus = \"scsi\"", "bus = \"virtio\""));
    assert_eq!(e.line, Some(8), "{e}");
    assert!(
        e.message
            .contains("multipath = true needs bus = \"scsi\" (its bus is \"virtio\")"),
        "{e}"
    );

    let e = err(&MULTIPATH.replace(
        "multipath = true",
        "multipath = true\nthrottle = { iops = 100 }",
    ));
    assert_eq!(e.line, Some(9), "{e}");
    assert!(e.message.contains("takes no throttle"), "{e}");

    let e = err(&MULTIPATH.replace("by = \"name\"", "by = \"path\""));
    assert_eq!(e.line, Some(11), "{e}");
    assert!(
        e.message
            .contains("by-path link names one of its two paths"),
        "{e}"
    );

    let second = MULTIPATH.replace(
        "[install]",
        "[[disks]]\nid = \"data\"\nsize = \"1GiB\"\nbus = \"scsi\"\nmultipath = true\n\n[install]",
    );
    let e = err(&second);
    assert_eq!(e.line, Some(10), "{e}");
    assert!(
        e.message.contains("only one disk, the installation disk"),
        "{e}"
    );

    let other = MULTIPATH
        .replace("multipath = true\n", "")
        .replace(
            "[install]",
            "[[disks]]\nid = \"data\"\nsize = \"1GiB\"\nbus = \"scsi\"\nmultipath = true\n\n[install]",
        )
        .replace("by = \"name\"", "by = \"id\"");
    let e = err(&other);
    assert_eq!(e.line, Some(9), "{e}");
    assert!(
        e.message
            .contains("is multipath, but install.installation_disk names disk \"install\""),
        "{e}"
    );

    let literal = MULTIPATH.replace(
        "{ by = \"name\", disk = \"install\" }",
        "\"/dev/mapper/mpatha\"",
    );
    assert!(err(&literal)
        .message
        .contains("names no disk of the scenario (a literal path)"));
}

#[test]
fn a_disk_beside_a_multipath_one_has_no_stable_name_and_the_faults_need_one() {
    let beside = MULTIPATH.replace(
        "[install]",
        "[[disks]]\nid = \"data\"\nsize = \"1GiB\"\nbus = \"scsi\"\n\n[install]",
    );
    assert!(parse(&beside).is_ok());
    let named = beside.replace("disk = \"install\"", "disk = \"data\"");
    let e = err(&named);
    assert!(
        e.message.contains(
            "disk \"data\" has no stable name: the multipath disk's two paths take sdX names too"
        ),
        "{e}"
    );

    let e = err(&MULTIPATH.replace("multipath = true", "").replace(
        "[install]",
        "[fixture]\nfaults = [\"multipath-path-lost\"]\n\n[install]",
    ));
    assert_eq!(e.line, Some(11), "{e}");
    assert!(
        e.message
            .contains("\"multipath-path-lost\" acts on a multipath installation disk"),
        "{e}"
    );
}
