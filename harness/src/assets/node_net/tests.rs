use std::os::unix::fs::PermissionsExt;

use super::*;

/// The smoke scenario's shape on the user network, with `network` as its `[network]` table.
fn scenario(network: &str) -> Scenario {
    let text = format!(
        "name = \"n\"\nprofile = \"fixture\"\n[vm]\nnetwork = \"user\"\n\
         [[disks]]\nid = \"install\"\nsize = \"8GiB\"\n\
         [install]\ncluster = \"sno\"\nbase_domain = \"example.test\"\n\
         installation_disk = {{ by = \"id\", disk = \"install\" }}\n\
         machine_network = [\"10.0.2.0/24\"]\n{network}"
    );
    crate::scenario::parse_str(Path::new("n.toml"), &text).unwrap()
}

const STATIC: &str = "[network]\nmode = \"static\"\n\
    ipv4 = { address = \"10.0.2.15/24\", gateway = \"10.0.2.2\" }\ndns = [\"10.0.2.3\"]\n";

#[test]
fn dhcp_gets_no_keyfile_no_hostname_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    for s in [scenario(""), scenario("[network]\nmode = \"dhcp\"\n")] {
        assert!(keyfiles_of(&s).is_empty());
        assert_eq!(static_hostname(&s), None);
        assert!(hostname_machine_config(&s).is_none());
        assert!(write_keyfiles(dir.path(), &s).unwrap().is_empty());
        let mut ign = json!({"ignition": {"version": "3.2.0"}});
        add_hostname_to_live_ignition(&mut ign, &s).unwrap();
        assert_eq!(ign, json!({"ignition": {"version": "3.2.0"}}));
    }
    assert!(!dir.path().join(KEYFILE_DIR).exists());
}

#[test]
fn static_keyfiles_are_written_owner_only_in_a_private_directory() {
    let dir = tempfile::tempdir().unwrap();
    let s = scenario(STATIC);
    // What an earlier attempt left goes.
    std::fs::create_dir(dir.path().join(KEYFILE_DIR)).unwrap();
    std::fs::write(dir.path().join(KEYFILE_DIR).join("old.nmconnection"), "x").unwrap();
    let paths = write_keyfiles(dir.path(), &s).unwrap();
    assert_eq!(paths, vec![dir.path().join("network/nic0.nmconnection")]);
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&dir.path().join(KEYFILE_DIR)), 0o700);
    assert_eq!(mode(&paths[0]), 0o600);
    let text = std::fs::read_to_string(&paths[0]).unwrap();
    assert!(text.contains("address1=10.0.2.15/24,10.0.2.2\n"), "{text}");
    let left: Vec<_> = std::fs::read_dir(dir.path().join(KEYFILE_DIR))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(left, vec![std::ffi::OsString::from("nic0.nmconnection")]);
    assert_eq!(profile_ids(&s), vec!["nic0"]);
}

#[test]
fn a_static_node_is_named_in_both_systems() {
    let s = scenario(STATIC);
    assert_eq!(static_hostname(&s).as_deref(), Some("sno-master-0"));
    let mc = hostname_machine_config(&s).unwrap();
    assert_eq!(mc["metadata"]["name"], HOSTNAME_MACHINE_CONFIG);
    assert_eq!(
        mc["metadata"]["labels"]["machineconfiguration.openshift.io/role"],
        "master"
    );
    let file = &mc["spec"]["config"]["storage"]["files"][0];
    assert_eq!(file["path"], "/etc/hostname");
    assert_eq!(file["contents"]["source"], "data:,sno-master-0%0A");
    let mut ign = json!({"ignition": {"version": "3.2.0"}, "storage": {"files": [{"path": "/a"}]}});
    add_hostname_to_live_ignition(&mut ign, &s).unwrap();
    assert_eq!(ign["storage"]["files"][0]["path"], "/a", "kept what it had");
    assert_eq!(ign["storage"]["files"][1], *file);
    let mut bad = json!({"storage": {"files": {}}});
    assert!(matches!(
        add_hostname_to_live_ignition(&mut bad, &s),
        Err(EditError::FilesNotAList)
    ));
}

#[test]
fn the_hostname_machine_config_is_written_beside_the_installers_manifests() {
    let dir = tempfile::tempdir().unwrap();
    write_hostname_machine_config(dir.path(), &scenario(STATIC)).unwrap();
    let text = std::fs::read_to_string(
        dir.path()
            .join(format!("openshift/{HOSTNAME_MACHINE_CONFIG}.yaml")),
    )
    .unwrap();
    assert!(text.contains("/etc/hostname"), "{text}");
    let none = tempfile::tempdir().unwrap();
    write_hostname_machine_config(none.path(), &scenario("")).unwrap();
    assert!(!none.path().join("openshift").exists());
}
