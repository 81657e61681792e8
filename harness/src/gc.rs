//! `sno-harness gc`: collects what runs that did not end cleanly left behind (the harness
//! killed with SIGKILL, a second Ctrl-C, a crash, the host rebooted).
//!
//! A run registers itself (`run::registry`) before it makes anything; a registration whose
//! process is gone marks a run to collect. For each: the VM (a QEMU process still holding the run
//! directory, a libvirt domain still carrying the run's id), the disks, the copy of the live ISO,
//! the sockets; the run directory keeps its logs and gets a `result.json` saying what happened
//! if it has none. Then every libvirt domain and NAT network with the harness's metadata whose
//! run is not alive is destroyed too, so objects of runs that never registered (or whose
//! registry was lost) go.

use std::collections::BTreeSet;
use std::fs;
use std::path::Path;

use crate::result::RunResult;
use crate::run::registry::{self, Entry};
use crate::vm::libvirt::domain::RUN_XMLNS;

/// What gc did (or, with `dry_run`, would do), one line per action; and what it could not.
#[derive(Debug, Default)]
pub struct Collected {
    pub actions: Vec<String>,
    pub errors: Vec<String>,
    /// Runs still in progress, left alone.
    pub alive: Vec<String>,
}

/// QEMU processes whose command line names `dir` (the run's disks and sockets are in it).
fn qemu_processes_of(dir: &Path) -> Vec<u32> {
    let needle = dir.display().to_string();
    let Ok(procs) = fs::read_dir("/proc") else {
        return Vec::new();
    };
    procs
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            let Ok(cmd) = fs::read(format!("/proc/{pid}/cmdline")) else {
                return false;
            };
            let args: Vec<String> = cmd
                .split(|b| *b == 0)
                .map(|a| String::from_utf8_lossy(a).into_owned())
                .collect();
            args.first().is_some_and(|a| a.contains("qemu-system"))
                && args.iter().any(|a| a.contains(&needle))
        })
        .collect()
}

/// The files a run makes that are not evidence: disks (GiBs), the ISO copy, sockets.
fn disposable_files(dir: &Path) -> Vec<std::path::PathBuf> {
    [
        "disks",
        "live.iso",
        "serial.sock",
        "qmp.sock",
        "OVMF_VARS.fd",
    ]
    .iter()
    .map(|n| dir.join(n))
    .filter(|p| p.symlink_metadata().is_ok())
    .collect()
}

fn remove(path: &Path) -> std::io::Result<()> {
    if path.symlink_metadata()?.is_dir() {
        fs::remove_dir_all(path)
    } else {
        fs::remove_file(path)
    }
}

/// An attribute of a domain's `<sno:run .../>` metadata element.
fn attr_of(metadata: &str, name: &str) -> Option<String> {
    let re = regex::Regex::new(&format!(r#"\s{}="([^"]*)""#, regex::escape(name)))
        .expect("a valid pattern");
    let raw = re.captures(metadata)?.get(1)?.as_str();
    Some(
        raw.replace("&quot;", "\"")
            .replace("&apos;", "'")
            .replace("&lt;", "<")
            .replace("&gt;", ">")
            .replace("&amp;", "&"),
    )
}

/// Whether the harness process named in the metadata still runs. A domain owned from another
/// host cannot be judged from here and counts as alive: gc never takes another machine's run.
fn owner_alive(metadata: &str) -> bool {
    let host = attr_of(metadata, "host").unwrap_or_default();
    if host != crate::vm::libvirt::domain::host_name() {
        return true;
    }
    let pid = attr_of(metadata, "pid").and_then(|p| p.parse::<u32>().ok());
    let start = attr_of(metadata, "pid-start").and_then(|p| p.parse::<u64>().ok());
    match (pid, start) {
        (Some(pid), Some(start)) => crate::util::process::process_start(pid) == Some(start),
        _ => false,
    }
}

/// Destroys the harness's domains on `uri` whose run is not in `alive`; `only` limits it to
/// one domain name. Returns what it did.
fn collect_domains(
    uri: &str,
    only: Option<&str>,
    alive: &BTreeSet<String>,
    dry_run: bool,
    out: &mut Collected,
) {
    let Some(conn) = connect_noting(uri, out) else {
        return;
    };
    let domains = match conn.list_all_domains(0) {
        Ok(d) => d,
        Err(e) => {
            out.errors
                .push(format!("libvirt {uri}: listing domains: {e}"));
            return;
        }
    };
    for dom in domains {
        let Ok(name) = dom.name() else { continue };
        if only.is_some_and(|o| o != name) {
            continue;
        }
        let Ok(meta) = dom.metadata(
            virt_sys::VIR_DOMAIN_METADATA_ELEMENT as i32,
            Some(RUN_XMLNS),
            0,
        ) else {
            continue; // not the harness's
        };
        let Some(id) = attr_of(&meta, "id") else {
            continue;
        };
        if alive.contains(&name) || owner_alive(&meta) {
            continue;
        }
        let run_dir = attr_of(&meta, "dir").map(std::path::PathBuf::from);
        let what = format!("libvirt {uri}: destroy domain {name} (run {id})");
        if dry_run {
            out.actions.push(what);
            continue;
        }
        // A transient domain is gone once destroyed; a persistent one (defined by hand from
        // our XML) is undefined too, with its NVRAM.
        let destroyed = dom.is_active().unwrap_or(false).then(|| dom.destroy());
        let undefined = dom
            .is_persistent()
            .unwrap_or(false)
            .then(|| dom.undefine_flags(virt_sys::VIR_DOMAIN_UNDEFINE_NVRAM));
        note_removal(what, [(destroyed, ""), (undefined, "undefine: ")], out);
        // libvirt keeps a transient domain's QEMU log; it belongs with the run's evidence.
        if let Some(dir) = &run_dir {
            if crate::vm::libvirt::runtime::take_qemu_log(&name, dir) {
                out.actions.push(format!(
                    "libvirt {uri}: move the QEMU log of {name} into {}",
                    dir.display()
                ));
            }
        }
    }
}

/// Destroys the harness's NAT networks on `uri` (they carry the same `<sno:run>` element as
/// the domains, and the domain's name) whose run is not in `alive`; `only` limits it to one
/// name. Transient networks outlive the connection that made them, so a killed run's network
/// stays until this.
fn collect_networks(
    uri: &str,
    only: Option<&str>,
    alive: &BTreeSet<String>,
    dry_run: bool,
    out: &mut Collected,
) {
    let Some(conn) = connect_noting(uri, out) else {
        return;
    };
    let networks = match conn.list_all_networks(0) {
        Ok(n) => n,
        Err(e) => {
            out.errors
                .push(format!("libvirt {uri}: listing networks: {e}"));
            return;
        }
    };
    for net in networks {
        let Ok(name) = net.name() else { continue };
        if only.is_some_and(|o| o != name) || !name.starts_with("sno-") {
            continue;
        }
        // libvirt 9.0 has no virNetworkGetMetadata: the element is read from the XML.
        let Ok(xml) = net.xml_desc(0) else { continue };
        let Some(run) = run_element(&xml) else {
            continue; // not the harness's
        };
        let Some(id) = attr_of(run, "id") else {
            continue;
        };
        if alive.contains(&name) || owner_alive(run) {
            continue;
        }
        let what = format!("libvirt {uri}: destroy network {name} (run {id})");
        if dry_run {
            out.actions.push(what);
            continue;
        }
        let destroyed = net.is_active().unwrap_or(false).then(|| net.destroy());
        let undefined = net.is_persistent().unwrap_or(false).then(|| net.undefine());
        note_removal(what, [(destroyed, ""), (undefined, "undefine: ")], out);
    }
}

/// Removes the harness's storage pools on `uri` (a remote libvirt host's copies of a run's
/// disks and ISO, named like the run's domain) whose run is not in `alive` and whose domain
/// no longer runs; `only` limits it to one name.
fn collect_pools(
    uri: &str,
    only: Option<&str>,
    alive: &BTreeSet<String>,
    dry_run: bool,
    out: &mut Collected,
) {
    let Some(conn) = connect_noting(uri, out) else {
        return;
    };
    for name in crate::vm::libvirt::storage::leftover_pools(&conn) {
        if only.is_some_and(|o| o != name) || alive.contains(&name) {
            continue;
        }
        let running = conn
            .lookup_domain_by_name(&name)
            .is_ok_and(|d| d.is_active().unwrap_or(false));
        if running {
            continue;
        }
        let what = format!("libvirt {uri}: remove storage pool {name} and its volumes");
        if dry_run {
            out.actions.push(what);
            continue;
        }
        match crate::vm::libvirt::storage::RunPool::adopt(&conn, &name).and_then(|p| p.remove()) {
            Ok(()) => out.actions.push(what),
            Err(e) => out.errors.push(format!("{what}: {e}")),
        }
    }
}

/// A connection to `uri`, or the reason there is none noted in `out`.
fn connect_noting(uri: &str, out: &mut Collected) -> Option<virt::connect::Connect> {
    match crate::vm::libvirt::runtime::connect(uri) {
        Ok(c) => Some(c),
        Err(e) => {
            out.errors.push(format!("libvirt {uri}: {e}"));
            None
        }
    }
}

/// Notes `what` as done, or the error of each step that failed (`None`: not needed). An
/// object libvirt has removed meanwhile is gone, which is what gc wanted: a killed harness's
/// domain is auto-destroyed when libvirtd notices the connection is gone, which can be while
/// gc looks at it.
fn note_removal(
    what: String,
    steps: [(Option<Result<(), virt::error::Error>>, &str); 2],
    out: &mut Collected,
) {
    let mut ok = true;
    for (result, label) in steps {
        if let Some(Err(e)) = result.filter(|r| !r.as_ref().is_err_and(gone)) {
            ok = false;
            out.errors.push(format!("{what}: {label}{e}"));
        }
    }
    if ok {
        out.actions.push(what);
    }
}

/// Whether libvirt says the object no longer exists: what gc came to remove is gone, which is
/// what it wanted (another gc, or libvirt's own auto-destroy, was first).
fn gone(e: &virt::error::Error) -> bool {
    use virt::error::ErrorNumber;
    matches!(
        e.code().known(),
        Some(ErrorNumber::NoDomain | ErrorNumber::NoNetwork | ErrorNumber::NoStoragePool)
    )
}

/// The `<sno:run .../>` element of an object's XML (libvirt keeps the prefix it was given).
fn run_element(xml: &str) -> Option<&str> {
    let start = xml.find("<sno:run ")?;
    let end = xml[start..].find('>')? + start;
    Some(&xml[start..=end])
}

/// Collects one dead run.
fn collect_run(e: &Entry, dry_run: bool, out: &mut Collected) {
    for pid in qemu_processes_of(&e.dir) {
        let what = format!("{}: kill QEMU process {pid}", e.id);
        if !dry_run {
            // SAFETY: plain kill(2) on a pid we just read.
            if unsafe { libc::kill(pid as i32, libc::SIGKILL) } != 0 {
                out.errors
                    .push(format!("{what}: {}", std::io::Error::last_os_error()));
                continue;
            }
        }
        out.actions.push(what);
    }
    if let (Some(uri), Some(domain)) = (&e.uri, &e.domain) {
        collect_domains(uri, Some(domain), &BTreeSet::new(), dry_run, out);
        // The domain may have died with the harness (auto-destroy): its log is still there.
        if !dry_run && crate::vm::libvirt::runtime::take_qemu_log(domain, &e.dir) {
            out.actions.push(format!(
                "{}: move the QEMU log of {domain} into the run",
                e.id
            ));
        }
        // A run's NAT network and (on a remote host) storage pool have its domain's name.
        collect_networks(uri, Some(domain), &BTreeSet::new(), dry_run, out);
        collect_pools(uri, Some(domain), &BTreeSet::new(), dry_run, out);
    }
    if !e.keep {
        for f in disposable_files(&e.dir) {
            let what = format!("{}: remove {}", e.id, f.display());
            if dry_run {
                out.actions.push(what);
            } else {
                match remove(&f) {
                    Ok(()) => out.actions.push(what),
                    Err(err) => out.errors.push(format!("{what}: {err}")),
                }
            }
        }
    }
    let result = e.dir.join("result.json");
    if e.dir.is_dir() && !result.exists() {
        let what = format!("{}: write {} (verdict error)", e.id, result.display());
        if !dry_run {
            let mut r = RunResult::unreached_error(
                &e.id,
                "the harness stopped before the run ended (killed or crashed); `sno-harness gc` collected what it left",
            );
            r.backend = e.backend.clone();
            if let Err(err) = r.write(&e.dir) {
                out.errors.push(format!("{what}: {err}"));
                return;
            }
        }
        out.actions.push(what);
    }
}

/// Collects every dead run in `registry_dir`, then the harness's domains on `uris` that no live
/// run owns.
pub fn collect(registry_dir: &Path, uris: &[String], dry_run: bool) -> Collected {
    let mut out = Collected::default();
    let mut alive_domains = BTreeSet::new();
    for (file, entry) in registry::entries(registry_dir) {
        let e = match entry {
            Ok(e) => e,
            Err(err) => {
                out.errors.push(format!(
                    "{}: unreadable registration ({err}); remove it by hand",
                    file.display()
                ));
                continue;
            }
        };
        if e.owner_alive() {
            out.alive.push(format!("{} (pid {})", e.id, e.pid));
            alive_domains.extend(e.domain.clone());
            continue;
        }
        collect_run(&e, dry_run, &mut out);
        if !dry_run {
            if let Err(err) = fs::remove_file(&file) {
                out.errors.push(format!("{}: {err}", file.display()));
            }
        }
    }
    for uri in uris {
        collect_domains(uri, None, &alive_domains, dry_run, &mut out);
        collect_networks(uri, None, &alive_domains, dry_run, &mut out);
        collect_pools(uri, None, &alive_domains, dry_run, &mut out);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_run_and_its_owner_are_read_from_the_metadata_element() {
        let host = crate::vm::libvirt::domain::host_name();
        let me = std::process::id();
        let start = crate::util::process::process_start(me).unwrap();
        let meta = |pid: u32, start: u64, host: &str| {
            format!(
                r#"<sno:run xmlns:sno="https://x" id="disks&amp;x.nvme" dir="/r" host="{host}" pid="{pid}" pid-start="{start}"/>"#
            )
        };
        assert_eq!(
            attr_of(&meta(me, start, &host), "id").as_deref(),
            Some("disks&x.nvme")
        );
        assert_eq!(attr_of("<other/>", "id"), None);
        assert!(owner_alive(&meta(me, start, &host)), "this process");
        assert!(!owner_alive(&meta(me, start + 1, &host)), "a reused pid");
        assert!(
            !owner_alive(&meta(u32::MAX - 1, 1, &host)),
            "a dead process"
        );
        assert!(
            owner_alive(&meta(u32::MAX - 1, 1, "another-host")),
            "not ours to judge"
        );
    }

    #[test]
    fn a_networks_run_element_is_found_in_its_whole_xml() {
        // As libvirt 9.0 gives a network back: the element keeps its prefix; other elements
        // carry attributes of the same names (`<domain name=...>`, `<host ip=...>`).
        let xml = r#"<network>
  <name>sno-smoke-40022</name>
  <metadata>
    <sno:run xmlns:sno="https://x" id="smoke" dir="/r" host="h" pid="7" pid-start="9"/>
  </metadata>
  <domain name="sno.example.test" localOnly="yes"/>
  <dns><host ip="192.168.126.10"><hostname>api.sno.example.test</hostname></host></dns>
</network>"#;
        let run = run_element(xml).expect("the element");
        assert!(run.starts_with("<sno:run ") && run.ends_with("/>"), "{run}");
        assert_eq!(attr_of(run, "id").as_deref(), Some("smoke"));
        assert_eq!(attr_of(run, "pid").as_deref(), Some("7"));
        assert_eq!(run_element("<network><name>default</name></network>"), None);
    }

    #[test]
    fn a_dead_runs_leftovers_go_and_its_evidence_stays() {
        let reg = tempfile::tempdir().unwrap();
        let run = tempfile::tempdir().unwrap();
        fs::create_dir_all(run.path().join("disks")).unwrap();
        fs::write(run.path().join("disks/install.qcow2"), b"x").unwrap();
        fs::write(run.path().join("live.iso"), b"x").unwrap();
        fs::write(run.path().join("serial.log"), b"evidence").unwrap();
        fs::write(run.path().join("events.jsonl"), b"{}").unwrap();
        // A registration of a process that no longer runs.
        let e = Entry {
            id: "smoke".into(),
            pid: u32::MAX - 1,
            pid_start: 1,
            dir: run.path().to_path_buf(),
            backend: "qemu".into(),
            uri: None,
            domain: None,
            keep: false,
        };
        fs::write(
            reg.path().join("1-smoke.json"),
            serde_json::to_vec(&e).unwrap(),
        )
        .unwrap();

        let dry = collect(reg.path(), &[], true);
        assert!(dry
            .actions
            .iter()
            .any(|a| a.contains("remove") && a.contains("disks")));
        assert!(
            run.path().join("disks").exists(),
            "a dry run changes nothing"
        );

        let done = collect(reg.path(), &[], false);
        assert!(done.errors.is_empty(), "{:?}", done.errors);
        assert!(!run.path().join("disks").exists());
        assert!(!run.path().join("live.iso").exists());
        assert!(run.path().join("serial.log").exists());
        let r: serde_json::Value =
            serde_json::from_slice(&fs::read(run.path().join("result.json")).unwrap()).unwrap();
        assert_eq!(r["verdict"], "error");
        assert!(r["reason"].as_str().unwrap().contains("gc"));
        assert!(registry::entries(reg.path()).is_empty());
        // Nothing left to do.
        assert!(collect(reg.path(), &[], false).actions.is_empty());
    }

    #[test]
    fn a_live_run_is_left_alone() {
        let reg = tempfile::tempdir().unwrap();
        let run = tempfile::tempdir().unwrap();
        fs::create_dir_all(run.path().join("disks")).unwrap();
        let _guard = registry::register(
            reg.path(),
            Entry {
                id: "live".into(),
                pid: 0,
                pid_start: 0,
                dir: run.path().to_path_buf(),
                backend: "qemu".into(),
                uri: None,
                domain: None,
                keep: false,
            },
        )
        .unwrap();
        let c = collect(reg.path(), &[], false);
        assert!(c.actions.is_empty(), "{:?}", c.actions);
        assert_eq!(c.alive.len(), 1);
        assert!(run.path().join("disks").exists());
    }
}
