//! `vm.network = "nat"` on the libvirt backend: the run creates a NAT network of its own, the
//! node gets its reserved address from the network's DHCP, the network's DNS answers the
//! cluster's names, the harness reaches SSH and the API at the node's address (there are no
//! loopback forwards), and the network goes with the run, or with `gc` when the harness was
//! killed.
//!
//! A NAT network puts a bridge and dnsmasq in libvirtd's network namespace, and on these
//! machines only a namespace the test made may carry that traffic: each test runs a private
//! libvirtd inside new network and mount namespaces (tests/data/netns-libvirtd.sh), and the
//! harness inside with it. The same private libvirtd lets one test restart the daemon in the
//! middle of a run, which the host's daemon (serving other tests) must never see.

// The libvirt backend is built with the `libvirt` feature only (on by default).
#![cfg(feature = "libvirt")]

mod run_watch;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const RESOLVER: &str = "192.168.126.1";
const NODE: &str = "192.168.126.10";
/// scenarios/ipv6-nat.toml's network (fd00:1::/64): the host and the node.
const RESOLVER6: &str = "fd00:1::1";
const NODE6: &str = "fd00:1::10";

/// The smoke scenario on its own NAT network in 192.168.126.0/24.
fn nat_smoke(into: &Path) -> PathBuf {
    let smoke = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios/smoke.toml"),
    )
    .unwrap();
    let nat = smoke
        .replace(
            "boot_order = \"disk-first\"",
            "boot_order = \"disk-first\"\nnetwork = \"nat\"",
        )
        .replace(
            "machine_network = [\"10.0.2.0/24\"]",
            "machine_network = [\"192.168.126.0/24\"]",
        )
        .replace("name = \"smoke\"", "name = \"nat\"");
    assert!(
        nat.contains("network = \"nat\"") && nat.contains("192.168.126.0/24"),
        "smoke.toml changed shape"
    );
    let path = into.join("nat.toml");
    std::fs::write(&path, nat).unwrap();
    path
}

/// A work directory libvirt's QEMU user can traverse.
fn work_dir(prefix: &str) -> tempfile::TempDir {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::Builder::new().prefix(prefix).tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    dir
}

/// Runs `command` (a bash script) beside a private libvirtd in new namespaces; `state` gets
/// the script's findings (see netns-libvirtd.sh).
fn in_private_namespace(state: &Path, command: &str) -> Output {
    in_private_namespace_resolving(state, RESOLVER, command)
}

/// The same, its DNS probe asking `resolver` (the network's host address).
fn in_private_namespace_resolving(state: &Path, resolver: &str, command: &str) -> Output {
    std::fs::create_dir_all(state).unwrap();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/netns-libvirtd.sh");
    let out = Command::new("unshare")
        .args(["--net", "--mount", "--propagation", "private", "--", "bash"])
        .arg(&script)
        .arg(state)
        .arg(resolver)
        .args(["--", "bash", "-c", command])
        .env("HARNESS", env!("CARGO_BIN_EXE_sno-harness"))
        .env("SNO_HARNESS_STATE_DIR", state.join("registry"))
        .env("SNO_HARNESS_PROGRESS", "plain")
        .output()
        .expect("running unshare");
    eprintln!("{}", String::from_utf8_lossy(&out.stderr));
    out
}

/// `sno-harness run SCENARIO --backend libvirt --out OUT` beside a private libvirtd.
fn run_in_private_namespace(scenario: &Path, out: &Path, state: &Path) -> Output {
    in_private_namespace(
        state,
        &format!(
            "exec \"$HARNESS\" run {} --backend libvirt --out {}",
            scenario.display(),
            out.display()
        ),
    )
}

/// The head of a namespace script: starts the run in the background as `$run` (its stderr in
/// `state/run.stderr`) and waits, up to 10 minutes, until its events hold `needle`.
fn start_run_until(
    scenario: &Path,
    out: &Path,
    state: &Path,
    events: &Path,
    needle: &str,
) -> String {
    format!(
        r#"set -u
"$HARNESS" run {scenario} --backend libvirt --out {out} 2>{state}/run.stderr &
run=$!
for _ in $(seq 2400); do
    grep -qF '{needle}' {events} 2>/dev/null && break
    kill -0 $run || {{ echo "the run ended early" >&2; exit 3; }}
    sleep 0.25
done"#,
        scenario = scenario.display(),
        out = out.display(),
        state = state.display(),
        events = events.display(),
    )
}

/// The last lines of a failed run's console: the run directory is a temporary one, gone with
/// the test, and a guest that hung (a CI run's disk boot ended in a console of kernel traces)
/// is only explained there.
fn console_tail(run_dir: &Path) -> String {
    const LINES: usize = 60;
    let Ok(text) = std::fs::read_to_string(run_dir.join("serial.log")) else {
        return format!("\n(no console at {})", run_dir.join("serial.log").display());
    };
    let lines: Vec<&str> = text.lines().collect();
    let tail = lines[lines.len().saturating_sub(LINES)..].join("\n");
    format!("\nthe console's last {LINES} lines:\n{tail}")
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// What the namespace had once the command ended: no `sno-` network, no `sno` bridge.
fn assert_no_network_left(state: &Path) {
    let networks = read(&state.join("networks-after"));
    assert!(
        !networks.lines().any(|n| n.starts_with("sno-")),
        "a network remains: {networks}"
    );
    let links = read(&state.join("links-after"));
    assert!(
        !links.lines().any(|l| l.starts_with("sno")),
        "a bridge remains: {links}"
    );
}

#[test]
fn a_nat_network_run_reaches_the_node_at_its_reserved_address_and_removes_the_network() {
    let work = work_dir("sno-nat-");
    let scenario = nat_smoke(work.path());
    let (out, state) = (work.path().join("out"), work.path().join("ns"));
    let ran = run_in_private_namespace(&scenario, &out, &state);
    let stderr = String::from_utf8_lossy(&ran.stderr);
    let dir = out.join("nat");
    assert_eq!(
        ran.status.code(),
        Some(0),
        "the run failed:\n{stderr}{}",
        console_tail(&dir)
    );
    let result: serde_json::Value = serde_json::from_str(&read(&dir.join("result.json"))).unwrap();
    assert_eq!(result["verdict"], "pass");
    assert_eq!(result["backend"], "libvirt");
    // No forwards: the harness spoke to the node through the bridge, at the address DHCP
    // reserved for the node's MAC, so the reservation was honoured.
    assert!(
        stderr.contains(&format!(
            "SSH on {NODE}:22, API on {NODE}:6443 (network sno-nat-"
        )),
        "{stderr}"
    );
    let domain = read(&dir.join("vm.txt"));
    assert!(domain.contains("<interface type=\"network\">"), "{domain}");
    assert!(
        !domain.contains("hostfwd"),
        "user-mode forwards on a NAT run"
    );
    let network = read(&dir.join("network.xml"));
    assert!(network.contains(&format!("ip=\"{NODE}\"")), "{network}");
    assert!(network.contains("<sno:run"), "{network}");

    // The network's DNS, through the namespace's resolver, while the run lived.
    let dns = read(&state.join("dns"));
    for name in [
        "api.sno.example.test",
        "api-int.sno.example.test",
        "console-openshift-console.apps.sno.example.test",
        "anything.apps.sno.example.test",
    ] {
        assert!(
            dns.lines().any(|l| l == format!("{name} {NODE}")),
            "{name} does not resolve to {NODE}: {dns}"
        );
    }
    assert_no_network_left(&state);
}

/// Single-stack IPv6 (scenarios/ipv6-nat.toml as shipped): a network with no IPv4 at all, the
/// node given fd00:1::10 by keyfile, the cluster's names AAAA records, the harness's SSH and
/// API at [fd00:1::10], and the Node registered with its IPv6 address.
#[test]
fn a_single_stack_ipv6_nat_run_reaches_the_node_at_its_static_ipv6_address() {
    let started = std::time::Instant::now();
    let work = work_dir("sno-ipv6-nat-");
    let scenario = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios/ipv6-nat.toml");
    let (out, state) = (work.path().join("out"), work.path().join("ns"));
    let ran = in_private_namespace_resolving(
        &state,
        RESOLVER6,
        &format!(
            "exec \"$HARNESS\" run {} --backend libvirt --out {}",
            scenario.display(),
            out.display()
        ),
    );
    let stderr = String::from_utf8_lossy(&ran.stderr);
    let dir = out.join("ipv6-nat");
    assert_eq!(
        ran.status.code(),
        Some(0),
        "the run failed:\n{stderr}{}",
        console_tail(&dir)
    );
    let result: serde_json::Value = serde_json::from_str(&read(&dir.join("result.json"))).unwrap();
    assert_eq!(result["verdict"], "pass", "{result}");
    let addresses: Vec<&str> = result["node"]["addresses"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|a| a.as_str())
        .collect();
    assert!(addresses.contains(&NODE6), "{}", result["node"]);
    assert!(
        addresses.iter().all(|a| a.contains(':')),
        "an IPv4 InternalIP on a single-stack IPv6 node: {}",
        result["node"]
    );
    assert!(
        stderr.contains(&format!(
            "SSH on [{NODE6}]:22, API on [{NODE6}]:6443 (network sno-ipv6-nat-"
        )),
        "{stderr}"
    );
    let network = read(&dir.join("network.xml"));
    assert!(
        network.contains(&format!("<ip family=\"ipv6\" address=\"{RESOLVER6}\""))
            && network.matches("<ip ").count() == 1,
        "{network}"
    );
    let dns = read(&state.join("dns"));
    for name in [
        "api.sno.example.test",
        "api-int.sno.example.test",
        "console-openshift-console.apps.sno.example.test",
        "anything.apps.sno.example.test",
    ] {
        assert!(
            dns.lines().any(|l| l == format!("{name} {NODE6}")),
            "{name} does not resolve to {NODE6}: {dns}"
        );
    }
    assert_no_network_left(&state);
    eprintln!(
        "MEASURE ipv6-nat run: {:.0} s",
        started.elapsed().as_secs_f64()
    );
}

/// Runs `variant` (a scenario's text) as `WORK/nat.toml` in the private namespace, into
/// `WORK/out`, and checks it exited 0 with a passing result: the harness's stderr, the
/// result and the namespace's state directory.
fn a_passing_variant(work: &Path, variant: &str) -> (String, serde_json::Value, PathBuf) {
    let scenario = work.join("nat.toml");
    std::fs::write(&scenario, variant).unwrap();
    let (out, state) = (work.join("out"), work.join("ns"));
    let ran = run_in_private_namespace(&scenario, &out, &state);
    let stderr = String::from_utf8_lossy(&ran.stderr).into_owned();
    assert_eq!(
        ran.status.code(),
        Some(0),
        "the run failed:\n{stderr}{}",
        console_tail(&out.join("nat"))
    );
    let result: serde_json::Value =
        serde_json::from_str(&read(&out.join("nat/result.json"))).unwrap();
    assert_eq!(result["verdict"], "pass");
    (stderr, result, state)
}

/// The boot and install variants on a NAT network: the minimal ISO fetches its root filesystem
/// from the harness's server at the network's host address, and the assisted install's
/// coreos-installer runs over SSH at the node's address.
#[test]
fn the_minimal_iso_and_the_assisted_install_work_on_a_nat_network() {
    let work = work_dir("sno-nat-variants-");
    let smoke = read(&nat_smoke(work.path()));
    let variant = format!(
        "{}\n[boot]\nsource = \"minimal-iso\"\n",
        smoke.replace(
            "machine_network = [\"192.168.126.0/24\"]",
            "machine_network = [\"192.168.126.0/24\"]\nmode = \"assisted\"",
        )
    );
    assert!(
        variant.contains("mode = \"assisted\""),
        "smoke.toml changed shape"
    );
    let (stderr, result, state) = a_passing_variant(work.path(), &variant);
    assert!(
        stderr.contains(&format!("boot server on {RESOLVER}:")),
        "the server did not listen on the network's host address: {stderr}"
    );
    let boot = &result["boot"];
    let url = boot["rootfs_url"].as_str().unwrap_or_default();
    assert!(
        url.starts_with(&format!("http://{RESOLVER}:")) && url.ends_with("/rootfs.img"),
        "{boot}"
    );
    let whole = boot["served"].as_array().into_iter().flatten().any(|r| {
        r["method"] == "GET" && r["status"] == 200 && r["bytes"].as_u64() > Some(32 << 20)
    });
    assert!(whole, "the root filesystem was not fetched whole: {boot}");
    let install = result["phases"]
        .as_array()
        .and_then(|p| p.iter().find(|p| p["name"] == "install-to-disk"))
        .cloned()
        .unwrap_or_default();
    assert!(
        install["detail"]
            .as_str()
            .is_some_and(|d| d.contains("run by the harness over SSH (assisted install)")),
        "{install}"
    );
    assert_no_network_left(&state);
}

/// PXE on a NAT network: the network's own dnsmasq gives iPXE the boot file from the run's
/// TFTP directory, and the kernel, the initramfs, the Ignition (once) and the root filesystem
/// come from the harness's server at the network's host address, for the node alone.
#[test]
fn pxe_boots_from_the_networks_own_tftp_on_a_nat_network() {
    let work = work_dir("sno-nat-pxe-");
    let variant = format!(
        "{}\n[boot]\nsource = \"pxe\"\n",
        read(&nat_smoke(work.path()))
    );
    let (_, result, state) = a_passing_variant(work.path(), &variant);
    let boot = &result["boot"];
    let url = boot["rootfs_url"].as_str().unwrap_or_default();
    assert!(url.starts_with(&format!("http://{RESOLVER}:")), "{boot}");
    let served: Vec<&serde_json::Value> = boot["served"].as_array().into_iter().flatten().collect();
    for path in ["/vmlinuz", "/initrd.img", "/ignition.img", "/rootfs.img"] {
        assert!(
            served
                .iter()
                .any(|r| r["path"] == path && r["method"] == "GET" && r["status"] == 200),
            "no whole GET of {path}: {boot}"
        );
    }
    // The Ignition (the cluster's secrets) went once, to the node alone (the server answers
    // only its address on the network, and refuses the file once sent whole).
    let ignition: Vec<_> = served
        .iter()
        .filter(|r| r["path"] == "/ignition.img" && r["method"] == "GET")
        .collect();
    assert_eq!(ignition.len(), 1, "{boot}");
    // The script iPXE ran came from the network's TFTP (its URLs named the files fetched
    // above): the network's dnsmasq served the run's TFTP root and named the script.
    let network = read(&work.path().join("out/nat/network.xml"));
    assert!(
        network.contains("<tftp root=") && network.contains("file=\"boot.ipxe\""),
        "{network}"
    );
    assert_no_network_left(&state);
}

/// Static addressing on a NAT network, carried by an active-backup bond of the VM's two
/// interfaces on the network's bridge: the keyfiles embedded in the live ISO bring both systems
/// up on the bond (a NIC on any other profile would fail the run), and the Node registers at
/// the static address.
#[test]
fn a_static_bond_of_two_interfaces_carries_the_node_on_a_nat_network() {
    let work = work_dir("sno-nat-bond-");
    let variant = format!(
        "{}\n[network]\nmode = \"static\"\nipv4 = {{ address = \"{NODE}/24\", gateway = \"{RESOLVER}\" }}\n\
         dns = [\"{RESOLVER}\"]\nbond = {{ mode = \"active-backup\", interfaces = 2 }}\n",
        read(&nat_smoke(work.path()))
    );
    let (_, result, state) = a_passing_variant(work.path(), &variant);
    assert_eq!(result["node"]["name"], "sno-master-0", "{}", result["node"]);
    assert_eq!(result["node"]["addresses"][0], NODE, "{}", result["node"]);
    let domain = read(&work.path().join("out/nat/vm.txt"));
    assert_eq!(
        domain.matches("<interface type=\"network\">").count(),
        2,
        "{domain}"
    );
    assert!(
        domain.contains("52:54:00:12:34:57"),
        "NIC 1's MAC: {domain}"
    );
    assert_no_network_left(&state);
}

/// Dual stack on a NAT network: the IPv4 and IPv6 machine, cluster and service networks, the
/// node given both families' addresses by one keyfile, and the Node registered with both.
#[test]
fn a_dual_stack_nat_run_registers_the_node_at_both_static_addresses() {
    let work = work_dir("sno-nat-dual-");
    let smoke = read(&nat_smoke(work.path()));
    let variant = format!(
        "{}\n[network]\nmode = \"static\"\n\
         ipv4 = {{ address = \"{NODE}/24\", gateway = \"{RESOLVER}\" }}\n\
         ipv6 = {{ address = \"{NODE6}/64\", gateway = \"{RESOLVER6}\" }}\n\
         dns = [\"{RESOLVER}\", \"{RESOLVER6}\"]\n",
        smoke.replace(
            "machine_network = [\"192.168.126.0/24\"]",
            "machine_network = [\"192.168.126.0/24\", \"fd00:1::/64\"]\n\
             cluster_network = [{ cidr = \"10.128.0.0/14\", host_prefix = 23 }, { cidr = \"fd01::/48\", host_prefix = 64 }]\n\
             service_network = [\"172.30.0.0/16\", \"fd02::/112\"]",
        )
    );
    assert!(variant.contains("fd02::/112"), "smoke.toml changed shape");
    let (_, result, state) = a_passing_variant(work.path(), &variant);
    let addresses: Vec<&str> = result["node"]["addresses"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|a| a.as_str())
        .collect();
    assert!(
        addresses.contains(&NODE) && addresses.contains(&NODE6),
        "the Node lacks a family: {}",
        result["node"]
    );
    let network = read(&work.path().join("out/nat/network.xml"));
    assert_eq!(network.matches("<ip ").count(), 2, "{network}");
    assert_no_network_left(&state);
}

#[test]
fn gc_removes_the_network_of_a_killed_nat_run() {
    let work = work_dir("sno-nat-gc-");
    let scenario = nat_smoke(work.path());
    let (out, state) = (work.path().join("out"), work.path().join("ns"));
    let events = out.join("nat/events.jsonl");
    // Inside: start the run, wait for its VM (the network is made before it), SIGKILL the
    // harness, note what is left, run gc.
    let ran = in_private_namespace(
        &state,
        &format!(
            r#"{start}
kill -9 $run
wait $run 2>/dev/null
virsh -c qemu:///system net-list --name | sed '/^$/d' >{state}/networks-killed
"$HARNESS" gc"#,
            start = start_run_until(&scenario, &out, &state, &events, "\"kind\":\"console\""),
            state = state.display(),
        ),
    );
    let stdout = String::from_utf8_lossy(&ran.stdout);
    assert_eq!(ran.status.code(), Some(0), "gc failed: {stdout}");
    let killed = read(&state.join("networks-killed"));
    assert!(
        killed.lines().any(|n| n.starts_with("sno-nat-")),
        "the network outlives a SIGKILL (transient networks are not auto-destroyed): {killed}"
    );
    assert!(
        stdout.contains("destroy network sno-nat-"),
        "gc did not say it destroyed the network: {stdout}"
    );
    assert_no_network_left(&state);
    // The run's own leftovers went too, and the evidence stays.
    let dir = out.join("nat");
    let registry = state.join("registry");
    assert!(run_watch::qemu_processes_of_state(&registry).is_empty());
    let left = run_watch::private_leftovers(&registry);
    assert!(left.is_empty(), "remains: {left:?}");
    let result: serde_json::Value = serde_json::from_str(&read(&dir.join("result.json"))).unwrap();
    assert_eq!(result["verdict"], "error");
}

/// libvirtd restarted mid-run (SIGTERM, then started again, as `systemctl restart` does): the
/// harness's connection is lost, which is the harness's loss and not the system's: verdict
/// `error` naming the libvirt connection, exit 4, and the domain destroyed over a new
/// connection instead of left running.
#[test]
fn a_libvirtd_restart_mid_run_is_an_error_naming_the_connection_and_leaves_no_domain() {
    let work = work_dir("sno-restart-");
    let scenario = run_watch::slow_smoke(work.path());
    let text = read(&scenario);
    std::fs::write(
        &scenario,
        text.replace("name = \"smoke\"", "name = \"restart\""),
    )
    .unwrap();
    let (out, state) = (work.path().join("out"), work.path().join("ns"));
    let events = out.join("restart/events.jsonl");
    let ran = in_private_namespace(
        &state,
        &format!(
            r#"{start}
virsh -c qemu:///system list --name | sed '/^$/d' >{state}/domains-before
kill -TERM "$(cat /run/libvirtd.pid)"
for _ in $(seq 100); do [ -e /run/libvirtd.pid ] || break; kill -0 "$(cat /run/libvirtd.pid)" 2>/dev/null || break; sleep 0.1; done
rm -f /run/libvirtd.pid
LIBVIRT_LOG_OUTPUTS="3:file:{state}/libvirtd-2.log" libvirtd -d
set +e
wait $run
echo $? >{state}/run.rc
set -e
sleep 2
virsh -c qemu:///system list --all --name | sed '/^$/d' >{state}/domains-after"#,
            start = start_run_until(&scenario, &out, &state, &events, "Rendering"),
            state = state.display(),
        ),
    );
    let run_stderr = read(&state.join("run.stderr"));
    assert_eq!(
        ran.status.code(),
        Some(0),
        "the script failed:\n{run_stderr}"
    );
    let before = read(&state.join("domains-before"));
    assert!(
        before.lines().any(|d| d.starts_with("sno-restart-")),
        "the run's domain ran before the restart: {before}"
    );
    assert_eq!(read(&state.join("run.rc")).trim(), "4", "{run_stderr}");
    let result: serde_json::Value =
        serde_json::from_str(&read(&out.join("restart/result.json"))).unwrap();
    assert_eq!(result["verdict"], "error", "{result}");
    let reason = result["reason"].as_str().unwrap();
    assert!(reason.contains("libvirt connection"), "{reason}");
    let after = read(&state.join("domains-after"));
    assert!(
        !after.lines().any(|d| d.starts_with("sno-restart-")),
        "the domain outlived the run: {after}"
    );
}
