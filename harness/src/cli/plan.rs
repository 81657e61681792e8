//! `sno-harness plan`: what a run would do, without doing any of it; for a matrix, its
//! permutations. The VM is planned by the same code a run uses (`run::plan`).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use sno_harness::exit;
use sno_harness::hw::Accel;
use sno_harness::run::plan::{phase_timeouts, vm_plan};
use sno_harness::scenario::{self, matrix, Profile, Scenario};
use sno_harness::vm::libvirt::nat_network_xml;
use sno_harness::vm::qemu::argv::shell_command_line;
use sno_harness::vm::qemu::qemu_argv;
use sno_harness::vm::start::RunMeta;

use sno_harness::fleet::admission::{self, AtOnce, HostNow, MemoryFrom, Need};
use sno_harness::fleet::matrix_runner::need_of;

use super::error::{bad, Outcome};

/// Print what a run would do (install-config, commands, QEMU command line, timeouts);
/// run nothing.
#[derive(clap::Args)]
pub struct PlanArgs {
    /// A scenario file, or a matrix file (then its permutations are listed).
    scenario: PathBuf,
    /// Print the plan as JSON, for tools.
    #[arg(long)]
    json: bool,
    /// Show the VM as this backend defines it: the QEMU command line, or the libvirt
    /// domain XML.
    #[arg(long, default_value = "qemu", value_parser = sno_harness::vm::backend::NAMES)]
    backend: String,
    /// A matrix: list only the permutations `matrix --shard K/N [--shard-by]` runs.
    #[command(flatten)]
    shard: super::flags::ShardFlags,
    /// A matrix: list only the permutations whose id matches this glob, as `matrix
    /// --filter` runs them (`*`, `?`; `a,b` for either).
    #[arg(long)]
    filter: Option<String>,
    /// A matrix: plan it with this strategy instead of the file's, as `matrix --strategy`.
    #[arg(long, value_parser = ["full", "pairwise"])]
    strategy: Option<String>,
    /// Change a key as `run --set` would, e.g. `--set vm.memory=24GiB` (a matrix axis's
    /// dotted key; again for more); on a matrix, of its base, in every permutation.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    set: Vec<sno_harness::scenario::overrides::Override>,
}

/// The schema `plan --json SCENARIO.toml` names, as result.json and summary.json name theirs
/// (a matrix's plan has its own, `matrix::PLAN_SCHEMA`).
pub const SCHEMA: &str = "sno-harness/plan/v1";

/// Placeholder ports: a run picks free ones when it starts.
const PLAN_PORTS: (u16, u16) = (40022, 46443);

pub fn plan(a: PlanArgs) -> Outcome {
    // A backend this build cannot run is refused for a matrix's plan too.
    sno_harness::vm::Backend::named(&a.backend).map_err(bad)?;
    if matrix::is_matrix_file(&a.scenario) {
        return plan_matrix(&a);
    }
    for (flag, given) in [
        ("--shard", a.shard.get().is_some()),
        ("--filter", a.filter.is_some()),
        ("--strategy", a.strategy.is_some()),
    ] {
        if given {
            return Err(bad(format!(
                "{flag} selects permutations of a matrix; {} is a scenario",
                a.scenario.display()
            )));
        }
    }
    let s = scenario::overrides::load_with(&a.scenario, &a.set).map_err(bad)?;
    let backend = sno_harness::vm::Backend::named(&a.backend).map_err(bad)?;
    let p = ScenarioPlan::of(&s, &backend)?;
    if a.json {
        print_json(&p.json(&s));
    } else {
        p.print(&s, &a.scenario);
    }
    Ok(exit::OK)
}

/// A matrix's permutations: those `matrix` with the same `--strategy`, `--filter` and
/// `--shard` would run, under the counts of the whole plan.
fn plan_matrix(a: &PlanArgs) -> Outcome {
    let mut m = super::matrix::load_with_strategy(&a.scenario, a.strategy.as_deref(), &a.set)?;
    let plan_count = m.permutations.len();
    let shard = a.shard.get();
    let selected: BTreeSet<String> =
        super::matrix::sliced(&m, &a.scenario, a.filter.as_deref(), shard)?
            .into_iter()
            .map(|p| p.id.clone())
            .collect();
    let n = selected.len();
    let keep = |id: &str| selected.contains(id);
    let needs: Vec<Need> = m
        .permutations
        .iter()
        .filter(|p| keep(&p.id))
        .map(|p| need_of(&p.scenario))
        .collect();
    let admission = Admitted::here(&needs);
    if a.json {
        m.permutations.retain(|p| keep(&p.id));
        let mut v = matrix::plan_json(&m);
        v["admission"] = admission.json();
        v["shard"] = serde_json::json!(shard);
        v["filter"] = serde_json::json!(a.filter);
        v["plan_count"] = serde_json::json!(plan_count);
        v["files_sha256"] = serde_json::json!(m.files_sha256);
        print_json(&v);
        return Ok(exit::OK);
    }
    match (&a.filter, shard) {
        (None, None) => {}
        (None, Some(s)) => outln!(
            "shard {s} (split by {}): {n} of the plan's {plan_count} permutations",
            s.by.name()
        ),
        (Some(glob), shard) => {
            let slice = shard
                .map(|s| format!(", shard {s} (split by {})", s.by.name()))
                .unwrap_or_default();
            outln!("filter {glob:?}{slice}: {n} of the plan's {plan_count} permutations");
        }
    }
    out!("{}", matrix::plan_text_where(&m, keep));
    outln!("\n{}", admission.text(n));
    Ok(exit::OK)
}

/// What the admission would let run at once on this host, with nothing else running: the
/// memory it counts (the host's MemAvailable, or this process's cgroup limit less its usage
/// when lower), the CPUs, and how many of the listed permutations fit by each.
struct Admitted {
    /// Memory available, where the figure comes from, CPUs; or why the memory is unknown.
    host: Result<(u64, MemoryFrom, u32), String>,
    at_once: Option<AtOnce>,
}

impl Admitted {
    fn here(needs: &[Need]) -> Admitted {
        let host = admission::memory_now()
            .map(|(mem, from)| (mem, from, admission::host_cpus()))
            .map_err(|e| format!("/proc/meminfo: {e}"));
        let at_once = host
            .as_ref()
            .ok()
            .map(|&(mem_available, memory_from, cpus)| {
                admission::at_once(
                    needs,
                    HostNow {
                        mem_available,
                        memory_from,
                        cpus,
                        disk_free: u64::MAX / 4,
                    },
                )
            });
        Admitted { host, at_once }
    }

    fn json(&self) -> serde_json::Value {
        match (&self.host, &self.at_once) {
            (Ok((mem, from, cpus)), Some(at_once)) => serde_json::json!({
                "memory_available_bytes": mem,
                "memory_from": from.to_string(),
                "cgroup_memory_limit_bytes": match from {
                    MemoryFrom::CgroupLimit { limit } => Some(*limit),
                    MemoryFrom::Host => None,
                },
                "cpus": cpus,
                "at_once": at_once,
            }),
            (Err(e), _) => serde_json::json!({ "error": e }),
            (Ok(_), None) => serde_json::Value::Null,
        }
    }

    fn text(&self, n: usize) -> String {
        let gib = |b: u64| b as f64 / (1u64 << 30) as f64;
        match (&self.host, &self.at_once) {
            (Ok((mem, from, cpus)), Some(a)) => format!(
                "admission on this host (nothing else running, --jobs and disk aside): {:.1} GiB of memory available ({from}), {} CPUs; \
                 {} of these {n} at once ({} by memory with {:.0} GiB kept for the host, {} by CPUs)",
                gib(*mem),
                cpus,
                a.both,
                a.by_memory,
                gib(admission::MEMORY_HEADROOM),
                a.by_cpus
            ),
            (Err(e), _) => format!("admission on this host: unknown ({e})"),
            (Ok(_), None) => String::new(),
        }
    }
}

fn print_json(v: &serde_json::Value) {
    outln!("{}", serde_json::to_string_pretty(v).expect("serialisable"));
}

/// Everything `plan` shows of one scenario.
struct ScenarioPlan {
    install_config: String,
    commands: Vec<String>,
    accel: Accel,
    accel_reason: String,
    qemu_argv: Vec<String>,
    domain_xml: Option<String>,
    network_xml: Option<String>,
    timeouts: BTreeMap<sno_harness::flow::phase::Phase, std::time::Duration>,
}

impl ScenarioPlan {
    fn of(
        s: &Scenario,
        backend: &sno_harness::vm::Backend,
    ) -> Result<ScenarioPlan, super::error::CliError> {
        // The plan shows the install-config redacted, so it neither needs nor reads the secret.
        let mut unsecret = s.clone();
        unsecret.install.pull_secret = None;
        let placeholder_key = "ssh-ed25519 <a key generated for the run>";
        let (_, install_config) =
            sno_harness::assets::render_install_config(&unsecret, placeholder_key).map_err(bad)?;
        let (accel, accel_reason) = match sno_harness::vm::accel::decide(s.vm.accel) {
            Ok(d) => (d.accel, d.reason),
            Err(e) => (Accel::Kvm, e.to_string()),
        };
        let meta = RunMeta::for_this_process(s.name.clone(), "RUN".into());
        let (spec, network) = vm_plan(
            s,
            Path::new("PRIVATE"),
            Path::new("PRIVATE/live.iso"),
            accel,
            PLAN_PORTS,
            (&s.name, &meta),
        )
        .map_err(bad)?;
        Ok(ScenarioPlan {
            install_config,
            commands: commands(s),
            accel,
            accel_reason,
            qemu_argv: qemu_argv(&spec),
            domain_xml: backend.domain_xml(&spec, &meta),
            // A real cluster on libvirt gets a NAT network of its own (the node on a virtual
            // LAN, its names in the network's DNS); the fixture uses loopback forwards.
            network_xml: network
                .filter(|_| backend.can().nat_network)
                .map(|n| nat_network_xml(&n)),
            timeouts: phase_timeouts(s, accel, 1.0),
        })
    }

    fn json(&self, s: &Scenario) -> serde_json::Value {
        let mut v = serde_json::json!({
            "schema": SCHEMA,
            "scenario": s,
            "install_config": self.install_config,
            "commands": self.commands,
            "accel": {"accel": self.accel.to_string(), "reason": self.accel_reason},
            "qemu_argv": self.qemu_argv,
            "libvirt_domain_xml": self.domain_xml,
            "libvirt_network_xml": self.network_xml,
            "timeouts_s": self.timeouts.iter().map(|(p, d)| (p.name().to_string(), d.as_secs())).collect::<BTreeMap<_, _>>(),
        });
        // Only with the table: a plan without it is the same JSON as before it existed.
        if let Some(n) = &s.network {
            v["network"] = network_json(n);
        }
        v
    }

    fn print(&self, s: &Scenario, path: &Path) {
        outln!(
            "scenario {} ({}), profile {}",
            s.name,
            path.display(),
            s.profile.name()
        );
        if !s.overrides.is_empty() {
            outln!(
                "overridden on the command line: --set {}",
                s.overrides.join(" --set ")
            );
        }
        if !s.authorized_keys.is_empty() {
            outln!("keys [access] adds to user core on both systems, after the run's own:");
            for k in &s.authorized_keys {
                outln!("  {} (from {})", key_summary(k), k.from);
            }
        }
        outln!(
            "\n# install-config.yaml (pull secret redacted)\n{}",
            self.install_config
        );
        outln!("# commands (RUN is the run directory)");
        for c in &self.commands {
            outln!("  {c}");
        }
        outln!(
            "\n# VM: accelerator {} ({}); ports are picked at run time",
            self.accel,
            self.accel_reason
        );
        match &self.domain_xml {
            Some(xml) => outln!(
                "# libvirt domain (transient, auto-destroyed with the harness's connection)\n{xml}"
            ),
            None => outln!("{}", shell_command_line(&self.qemu_argv)),
        }
        if let Some(xml) = &self.network_xml {
            outln!(
                "\n# libvirt NAT network for the cluster (created and removed with the run)\n{xml}"
            );
        }
        if let Some(n) = &s.network {
            print_network(n);
        }
        outln!("\n# phase timeouts (after TCG scaling)");
        for (p, d) in &self.timeouts {
            let d = humantime::format_duration(*d);
            match p.budget_phase() {
                b if b == *p => outln!("  {:<20} {d}", p.name()),
                b => outln!(
                    "  {:<20} none of its own: within {b}'s {d}, from its start",
                    p.name()
                ),
            }
        }
    }
}

/// The commands of the assets phase, as a run gives them (RUN is the run directory).
fn commands(s: &Scenario) -> Vec<String> {
    let installer = match s.profile {
        Profile::Fixture => "<minisno-install from `sno-harness fixture build`>".to_string(),
        Profile::Openshift => s
            .openshift
            .as_ref()
            .and_then(|o| o.installer.as_ref())
            .map(|p| p.display().to_string())
            .unwrap_or_else(|| "openshift-install".into()),
    };
    // What this shell's environment adds is said as result.json records it (no value of a
    // variable that may hold a credential).
    let inherited = sno_harness::run::installer::inherited_installer_env(s, std::env::vars());
    let env: Vec<String> = sno_harness::run::installer_env(s)
        .into_iter()
        .map(|(k, v)| match inherited.iter().any(|(i, _)| *i == k) {
            true => format!("[{}]", sno_harness::run::installer::recorded(&k, &v)),
            false => format!("{k}={v}"),
        })
        .collect();
    let env = env.join(" ");
    let mut commands = Vec::new();
    let names = sno_harness::assets::dns::provision_for(s);
    let assisted = s.install.mode == sno_harness::scenario::InstallMode::Assisted;
    let multipath = sno_harness::assets::multipath::installs_to_multipath(s);
    let live_ign = if names.records().is_some() || assisted || multipath {
        sno_harness::assets::LIVE_IGNITION_FILE
    } else {
        "bootstrap-in-place-for-live-iso.ign"
    };
    if let Some(what) = names.what_the_node_gets() {
        commands.push(
            format!("{env} {installer} --dir PRIVATE/assets create manifests")
                .trim()
                .to_string(),
        );
        commands.push(format!(
            "# PRIVATE/assets/openshift/{}.yaml: a MachineConfig with {what}; the live Ignition has them too",
            sno_harness::assets::dns::MACHINE_CONFIG_NAME,
        ));
    }
    commands.extend([
        format!("{env} {installer} --dir PRIVATE/assets create single-node-ignition-config")
            .trim()
            .to_string(),
        iso_line(s, &installer),
    ]);
    if assisted {
        commands.push(format!(
            "# PRIVATE/assets/{}: install-to-disk.service masked (install.mode = \"assisted\")",
            sno_harness::assets::LIVE_IGNITION_FILE
        ));
    }
    if multipath {
        commands.push(format!(
            "# PRIVATE/assets/{}: /etc/multipath.conf (mpathconf --enable's defaults) and multipathd.service enabled, for the multipath installation disk",
            sno_harness::assets::LIVE_IGNITION_FILE
        ));
    }
    commands.extend(boot_lines(s.boot_source, live_ign));
    if assisted {
        let args = sno_harness::run::assisted::installer_args("DEVICE", &s.install.assisted);
        let mut before = vec![format!(
            "# once bootkube is done, over SSH on the live system: readlink -f {}, then the device's old LVM volume groups and physical volumes removed, its MD RAID arrays stopped and zeroed, wipefs -a on its partitions and the device",
            s.install.installation_disk
        )];
        if let Some(p) = &s.install.assisted.host_ignition {
            before.push(format!(
                "# {} merged into {}",
                p.display(),
                sno_harness::run::assisted::MASTER_IGNITION
            ));
        }
        commands.extend(before);
        commands.extend([
            format!(
                "# then, up to 3 times (DEVICE the resolved device): {}",
                sno_harness::run::assisted::command_line(&args)
            ),
            format!(
                "# then on UEFI the EFI boot entry (efibootmgr -c), the live system's journal and /var/log into RUN/{}/, and `sudo systemctl reboot`",
                sno_harness::run::assisted::LOGS_DIR
            ),
        ]);
    }
    commands
}

/// Where the ISO comes from: the scenario's `[openshift] iso`, or the installer's metadata.
fn iso_line(s: &Scenario, installer: &str) -> String {
    use sno_harness::scenario::model::OwnIso;
    match s.openshift.as_ref().and_then(|o| o.iso.as_ref()) {
        Some(OwnIso::File { path, sha256 }) => format!(
            "# ISO: {} (the scenario's), sha256 {}",
            path.display(),
            sha256.as_deref().unwrap_or("computed at the run")
        ),
        Some(OwnIso::Url { url, sha256 }) => {
            format!(
                "# ISO: {} (the scenario's), sha256 {sha256}, downloaded into the ISO cache",
                sno_harness::util::url::redacted(url)
            )
        }
        None => format!("{installer} coreos print-stream-json   # .architectures.x86_64.artifacts.metal.formats.iso.disk.{{location,sha256}}"),
    }
}

/// How the live system's boot medium is made: the ISO with the live Ignition embedded (the
/// full ISO, or the minimal ISO extracted from it), or PXE's files.
fn boot_lines(source: sno_harness::scenario::BootSource, live_ign: &str) -> Vec<String> {
    use sno_harness::scenario::BootSource;
    let mut lines = Vec::new();
    let iso = match source {
        BootSource::Pxe => return pxe_lines(live_ign),
        BootSource::LiveIso => "ISO",
        BootSource::MinimalIso => {
            lines.extend([
                "# boot server: 127.0.0.1:PORT, serving PRIVATE/rootfs.img at /TOKEN/rootfs.img for the run's lifetime (TOKEN: 128 random bits of the run's; other paths are refused and counted)".into(),
                "coreos-installer iso extract minimal-iso --rootfs-url http://10.0.2.2:PORT/TOKEN/rootfs.img --output-rootfs PRIVATE/rootfs.img ISO PRIVATE/minimal.iso".into(),
            ]);
            "PRIVATE/minimal.iso"
        }
    };
    lines.extend([
        format!(
            "coreos-installer iso ignition embed -f -i PRIVATE/assets/{live_ign} -o PRIVATE/live.iso {iso}"
        ),
        "coreos-installer iso kargs modify -a console=ttyS0,115200n8 PRIVATE/live.iso".into(),
    ]);
    lines
}

/// What a PXE boot's assets are made of, and how the machine gets them.
fn pxe_lines(live_ign: &str) -> Vec<String> {
    use sno_harness::assets::pxe;
    vec![
        "# boot server: 127.0.0.1:PORT (the guest's 10.0.2.2:PORT), for the run's lifetime; every path starts with TOKEN, 128 random bits of the run's".into(),
        "coreos-installer iso extract pxe -o PRIVATE/pxe ISO".into(),
        format!("coreos-installer pxe ignition wrap -i PRIVATE/assets/{live_ign} -o PRIVATE/{}/{}", pxe::TFTP_DIR, pxe::IGNITION_NAME),
        format!(
            "# served at /TOKEN/{}, /TOKEN/{}, /TOKEN/{}; kernel arguments: `coreos-installer iso kargs show ISO` with coreos.liveiso= replaced by coreos.live.rootfs_url=http://10.0.2.2:PORT/TOKEN/rootfs.img, and console=ttyS0,115200n8",
            pxe::KERNEL_NAME,
            pxe::INITRD_NAME,
            sno_harness::netboot::ROOTFS_NAME
        ),
        format!(
            "# the wrapped Ignition (the cluster's secrets) goes by the user network's own TFTP, which only the guest reaches; on a NAT network the boot server sends it once, to the node's address only, as /TOKEN/{}",
            pxe::IGNITION_NAME
        ),
        format!(
            "# PRIVATE/{}/{}: the iPXE script the user network's TFTP serves, or on a NAT network the network's dnsmasq (DHCP boot file); no CD-ROM, the install disk first in the boot order, then the NIC",
            pxe::TFTP_DIR,
            pxe::BOOT_SCRIPT
        ),
        "# PRIVATE: the run's private directory, outside --out (SNO_HARNESS_PRIVATE_DIR, else /var/tmp/sno-harness-UID/ID-RANDOM)".into(),
    ]
}

/// What a run does with `[network]`'s keyfiles, said wherever they are shown.
const KEYFILES_WAY: &str = "embedded into the live ISO with `coreos-installer iso network embed` (a PXE boot: `pxe network wrap`, an initramfs of their own), copied into the live system's NetworkManager by its initramfs and to the installed system by install-to-disk's `coreos-installer install -n`; the node is named <cluster>-master-0 in /etc/hostname of both systems; after the pivot the Node's InternalIPs must hold the static addresses and each system must have brought its NICs up with these profiles";

/// `[network]`: the mode, addresses and bond, and the NetworkManager keyfiles of it.
fn print_network(n: &sno_harness::scenario::NetworkSpec) {
    use sno_harness::assets::keyfiles;
    outln!("\n# network: {}", n.summary());
    let files = keyfiles::keyfiles(n);
    if files.is_empty() {
        outln!("# no NetworkManager keyfile: the live system's default DHCP");
        return;
    }
    outln!("# NetworkManager keyfiles (mode 0600), {KEYFILES_WAY}");
    for k in files {
        outln!("\n## {}\n{}", k.file_name(), k.text.trim_end());
    }
}

fn network_json(n: &sno_harness::scenario::NetworkSpec) -> serde_json::Value {
    use sno_harness::assets::keyfiles;
    let files: Vec<serde_json::Value> = keyfiles::keyfiles(n)
        .iter()
        .map(|k| serde_json::json!({"file": k.file_name(), "text": k.text}))
        .collect();
    serde_json::json!({
        "summary": n.summary(),
        "keyfiles": files,
        "keyfiles_embedded": true,
        "note": KEYFILES_WAY,
    })
}

/// A key as `ssh-keygen -l` shows one: its fingerprint, then its type and comment.
fn key_summary(k: &sno_harness::scenario::files::authorized_keys::AuthorizedKey) -> String {
    let mut words = k.line.split(' ');
    let key_type = words.next().unwrap_or("");
    let comment: Vec<&str> = words.skip(1).collect();
    format!("{} {key_type} {}", k.fingerprint, comment.join(" "))
        .trim_end()
        .to_string()
}
