use super::*;

/// The smoke scenario's shape, on `network` with `faults`.
fn scenario(network: &str, faults: &str) -> Scenario {
    let machine = if network == "nat" {
        "192.168.126.0/24"
    } else {
        "10.0.2.0/24"
    };
    let text = format!(
        "name = \"d\"\nprofile = \"fixture\"\n[vm]\nnetwork = \"{network}\"\n\
         [[disks]]\nid = \"install\"\nsize = \"8GiB\"\n\
         [install]\ncluster = \"sno\"\nbase_domain = \"example.test\"\n\
         installation_disk = {{ by = \"id\", disk = \"install\" }}\n\
         machine_network = [\"{machine}\"]\n[fixture]\nfaults = [{faults}]\n"
    );
    crate::scenario::parse_str(Path::new("d.toml"), &text).unwrap()
}

fn paths(files: &Value) -> Vec<&str> {
    files
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["path"].as_str().unwrap())
        .collect()
}

#[test]
fn the_user_network_gets_a_resolver_on_the_node_and_nat_gets_nothing() {
    let Provision::NodeResolver(r) = provision_for(&scenario("user", "")) else {
        panic!("user network")
    };
    assert_eq!(r.address.to_string(), "10.0.2.15");
    assert_eq!(r.cluster_domain, "sno.example.test");
    assert_eq!(provision_for(&scenario("nat", "")), Provision::NetworkDns);
    assert_eq!(
        provision_for(&scenario("user", "\"no-dns\"")),
        Provision::Withheld
    );
    assert!(matches!(
        provision_for(&scenario("user", "\"apps-dns\"")),
        Provision::HostsOnly(_)
    ));
}

#[test]
fn no_machine_config_owns_etc_hosts_unless_the_fault_asks_for_it() {
    let mc = machine_config(&provision_for(&scenario("user", ""))).unwrap();
    assert_eq!(mc["kind"], "MachineConfig");
    assert_eq!(
        mc["metadata"]["labels"]["machineconfiguration.openshift.io/role"],
        "master"
    );
    let config = &mc["spec"]["config"];
    assert_eq!(
        paths(&config["storage"]["files"]),
        [
            resolver::DNSMASQ_CONF,
            resolver::DISPATCHER_SCRIPT,
            resolver::NM_CONF
        ]
    );
    assert_eq!(config["systemd"]["units"][0]["name"], resolver::UNIT);
    let faulty = machine_config(&provision_for(&scenario("user", "\"apps-dns\""))).unwrap();
    assert_eq!(
        paths(&faulty["spec"]["config"]["storage"]["files"]),
        ["/etc/hosts"]
    );
    assert!(machine_config(&Provision::NetworkDns).is_none());
    assert!(machine_config(&Provision::Withheld).is_none());
}

#[test]
fn the_live_ignition_gets_the_same_resolver_and_keeps_what_it_had() {
    let mut ign = json!({"ignition": {"version": "3.2.0"},
        "storage": {"files": [{"path": "/etc/x"}]},
        "systemd": {"units": [{"name": "bootkube.service"}]}});
    add_to_live_ignition(&mut ign, &provision_for(&scenario("user", ""))).unwrap();
    assert_eq!(
        paths(&ign["storage"]["files"]),
        [
            "/etc/x",
            resolver::DNSMASQ_CONF,
            resolver::DISPATCHER_SCRIPT,
            resolver::NM_CONF
        ]
    );
    let units: Vec<&str> = ign["systemd"]["units"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| u["name"].as_str().unwrap())
        .collect();
    assert_eq!(units, ["bootkube.service", resolver::UNIT]);
    let mut bare = json!({"ignition": {"version": "3.2.0"}});
    add_to_live_ignition(&mut bare, &provision_for(&scenario("user", "\"apps-dns\""))).unwrap();
    assert_eq!(paths(&bare["storage"]["files"]), ["/etc/hosts"]);
    assert!(bare["storage"]["files"][0]["append"][0]["source"]
        .as_str()
        .unwrap()
        .contains("oauth-openshift.apps.sno.example.test"));
    assert!(bare.get("systemd").is_none());
    let mut nat = json!({"ignition": {"version": "3.2.0"}});
    add_to_live_ignition(&mut nat, &Provision::NetworkDns).unwrap();
    assert_eq!(nat, json!({"ignition": {"version": "3.2.0"}}));
}

#[test]
fn the_hosts_lines_name_the_api_api_int_and_the_routes() {
    let Provision::HostsOnly(r) = provision_for(&scenario("user", "\"apps-dns\"")) else {
        panic!("apps-dns")
    };
    let lines = hosts::lines(&r);
    assert!(
        lines.starts_with("10.0.2.15\tapi.sno.example.test api-int.sno.example.test "),
        "{lines}"
    );
    assert!(lines.contains("console-openshift-console.apps.sno.example.test"));
}

#[test]
fn a_config_not_shaped_as_ignition_has_it_is_refused_naming_the_part() {
    let names = provision_for(&scenario("user", ""));
    let mut bad_storage = json!({"storage": "x"});
    assert!(matches!(
        add_to_live_ignition(&mut bad_storage, &names),
        Err(EditError::StorageNotAnObject)
    ));
    let mut bad_files = json!({"storage": {"files": {}}});
    assert!(matches!(
        add_to_live_ignition(&mut bad_files, &names),
        Err(EditError::FilesNotAList)
    ));
    let mut bad_units = json!({"systemd": {"units": "x"}});
    assert!(matches!(
        add_to_live_ignition(&mut bad_units, &names),
        Err(EditError::NoUnits)
    ));
}
