//! What a libvirt host has room for, asked of its libvirtd: the admission of a matrix spread
//! over several hosts weighs each host by its own memory, CPUs and storage, not this
//! machine's.
//!
//! - Memory: the node's free memory plus its buffers and page cache (`virNodeGetMemoryStats`),
//!   which the kernel gives back when a guest needs it; `virNodeGetFreeMemory` alone would
//!   call a host with a warm cache full.
//! - CPUs: the node's active CPUs (`virNodeGetInfo`).
//! - Storage: the space left in the pool whose target is the runs' pool base, or, when no
//!   pool has that target, in a transient pool made there for the question and gone after it.

use std::ffi::CStr;

use virt::connect::Connect;
use virt::sys;

pub use super::host_facts::NodeRoom;

/// The room on the libvirt host at `uri` now, over a connection of its own (closed after):
/// its runs' pools go under [`REMOTE_POOL_BASE`](super::paths::REMOTE_POOL_BASE).
pub fn probe(uri: &str) -> Result<NodeRoom, String> {
    let conn = super::runtime::connect(uri).map_err(|e| e.to_string())?;
    node_room(&conn, super::paths::REMOTE_POOL_BASE)
}

/// The room on the host behind `conn`, for runs whose pools go under `pool_base`.
pub fn node_room(conn: &Connect, pool_base: &str) -> Result<NodeRoom, String> {
    let info = conn
        .node_info()
        .map_err(|e| format!("libvirt's node info: {e}"))?;
    let mem_available = match memory_stats(conn) {
        Some(stats) => available_of(&stats),
        None => None,
    };
    let mem_available = match mem_available {
        Some(m) => m,
        None => conn
            .free_memory()
            .map_err(|e| format!("libvirt's free memory: {e}"))?,
    };
    Ok(NodeRoom {
        mem_available,
        cpus: info.cpus,
        disk_free: pool_available(conn, pool_base)?,
    })
}

/// `free + buffers + cached`, in bytes, from the node's memory statistics (KiB); `None` when
/// `free` is missing.
fn available_of(stats: &[(String, u64)]) -> Option<u64> {
    let get = |k: &str| stats.iter().find(|(n, _)| n == k).map(|(_, v)| *v);
    let kib = get("free")? + get("buffers").unwrap_or(0) + get("cached").unwrap_or(0);
    Some(kib * 1024)
}

/// The node's memory statistics over all cells; `None` when the host does not give them.
fn memory_stats(conn: &Connect) -> Option<Vec<(String, u64)>> {
    let cell = sys::VIR_NODE_MEMORY_STATS_ALL_CELLS;
    let mut n: std::os::raw::c_int = 0;
    // SAFETY: the first call, with no buffer, only writes the number of fields to `n`.
    let r =
        unsafe { sys::virNodeGetMemoryStats(conn.as_ptr(), cell, std::ptr::null_mut(), &mut n, 0) };
    if r < 0 || n <= 0 || n > 64 {
        return None;
    }
    let mut fields = vec![
        sys::virNodeMemoryStats {
            field: [0; 80],
            value: 0
        };
        n as usize
    ];
    // SAFETY: `fields` holds `n` entries, the number the call was told it may fill.
    let r =
        unsafe { sys::virNodeGetMemoryStats(conn.as_ptr(), cell, fields.as_mut_ptr(), &mut n, 0) };
    if r < 0 {
        return None;
    }
    let filled = (n.max(0) as usize).min(fields.len());
    Some(
        fields[..filled]
            .iter()
            .map(|f| {
                // SAFETY: libvirt NUL-terminates the field name within its 80 bytes; the last
                // byte is forced to NUL so a buggy server cannot make this read past it.
                let mut name = f.field;
                name[79] = 0;
                let name = unsafe { CStr::from_ptr(name.as_ptr()) };
                (name.to_string_lossy().into_owned(), f.value)
            })
            .collect(),
    )
}

/// Bytes left in the pool at `base`, or in a transient pool made there to ask.
fn pool_available(conn: &Connect, base: &str) -> Result<u64, String> {
    if let Ok(pool) = conn.lookup_storage_pool_by_target_path(base) {
        let _ = pool.refresh(0);
        if let Ok(info) = pool.info() {
            return Ok(info.available);
        }
    }
    // Not named `sno-...`: `gc` removes those pools with their directories, and this one's
    // directory is libvirt's own. Destroying a transient dir pool leaves its directory.
    let name = format!("capacity-probe-{}", std::process::id());
    let xml = format!(
        "<pool type='dir'><name>{name}</name><target><path>{}</path></target></pool>",
        xml_text(base)
    );
    let pool = conn
        .create_storage_pool_xml(&xml, 0)
        .map_err(|e| format!("asking the free space at {base} (a transient pool): {e}"))?;
    let info = pool.info();
    let _ = pool.destroy();
    info.map(|i| i.available)
        .map_err(|e| format!("the free space at {base}: {e}"))
}

fn xml_text(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('\'', "&apos;")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn available_memory_counts_the_cache_the_kernel_gives_back() {
        let stats = |v: &[(&str, u64)]| -> Vec<(String, u64)> {
            v.iter().map(|(k, n)| (k.to_string(), *n)).collect()
        };
        let s = stats(&[
            ("total", 24_000_000),
            ("free", 1_000_000),
            ("buffers", 500_000),
            ("cached", 10_000_000),
        ]);
        assert_eq!(available_of(&s), Some(11_500_000 * 1024));
        assert_eq!(available_of(&stats(&[("free", 4)])), Some(4096));
        assert_eq!(available_of(&stats(&[("total", 4)])), None);
        assert_eq!(xml_text("/a<b>&'c"), "/a&lt;b&gt;&amp;&apos;c");
    }

    /// Against the host's libvirtd: the room it reports is this machine's, as /proc and
    /// statvfs see it, and asking leaves no pool behind.
    #[test]
    fn the_host_libvirtd_reports_this_machines_room_and_keeps_no_pool() {
        let conn = crate::vm::libvirt::runtime::connect(crate::vm::libvirt::DEFAULT_URI)
            .unwrap_or_else(|e| panic!("this test needs the host's libvirtd: {e}"));
        let base = tempfile::Builder::new()
            .prefix("sno-capacity-")
            .tempdir()
            .unwrap();
        let base_path = base.path().to_str().unwrap();
        let room = node_room(&conn, base_path).unwrap();
        let cpus = std::thread::available_parallelism().unwrap().get() as u32;
        assert_eq!(room.cpus, cpus, "{room:?}");
        let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap();
        let total_kib: u64 = meminfo
            .lines()
            .next()
            .unwrap()
            .split_whitespace()
            .nth(1)
            .unwrap()
            .parse()
            .unwrap();
        assert!(
            room.mem_available > 0 && room.mem_available <= total_kib * 1024,
            "{room:?}"
        );
        assert!(room.disk_free > 0, "{room:?}");
        let pools = conn.list_all_storage_pools(0).unwrap();
        let names: Vec<String> = pools.iter().filter_map(|p| p.name().ok()).collect();
        assert!(
            !names.iter().any(|n| n.starts_with("capacity-probe-")),
            "{names:?}"
        );
        assert!(conn.lookup_storage_pool_by_target_path(base_path).is_err());
    }
}
