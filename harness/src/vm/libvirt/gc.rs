//! The libvirt half of `sno-harness gc`: the harness's domains, NAT networks and (remote)
//! storage pools whose run is over. Each carries the run's `<sno:run>` metadata element (id,
//! directory, owner host, pid and start time); an object whose owner process on this host is
//! gone is destroyed, one owned from another host is never touched.

use std::collections::BTreeSet;

use super::domain::RUN_XMLNS;

pub use super::collected::Collected;

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
    if host != crate::vm::run_meta::host_name() {
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
pub fn collect_domains(
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
            if super::runtime::take_qemu_log(&name, dir) {
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
pub fn collect_networks(
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
pub fn collect_pools(
    uri: &str,
    only: Option<&str>,
    alive: &BTreeSet<String>,
    dry_run: bool,
    out: &mut Collected,
) {
    let Some(conn) = connect_noting(uri, out) else {
        return;
    };
    for name in super::storage::leftover_pools(&conn) {
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
        match super::storage::RunPool::adopt(&conn, &name).and_then(|p| p.remove()) {
            Ok(()) => out.actions.push(what),
            Err(e) => out.errors.push(format!("{what}: {e}")),
        }
    }
}

/// A connection to `uri`, or the reason there is none noted in `out`.
fn connect_noting(uri: &str, out: &mut Collected) -> Option<virt::connect::Connect> {
    match super::runtime::connect(uri) {
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

/// Sweeps `uri` for what no live run owns: domains, then networks, then pools (a pool's domain
/// must be gone before its disks can go); `only` limits it to one object name.
pub fn sweep(
    uri: &str,
    only: Option<&str>,
    alive: &BTreeSet<String>,
    dry_run: bool,
    out: &mut Collected,
) {
    collect_domains(uri, only, alive, dry_run, out);
    collect_networks(uri, only, alive, dry_run, out);
    collect_pools(uri, only, alive, dry_run, out);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_run_and_its_owner_are_read_from_the_metadata_element() {
        let host = crate::vm::run_meta::host_name();
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
}
