//! The libvirt backend in a build without the `libvirt` feature: the entry points the rest of
//! the harness calls (`runtime`, `gc`, `capacity`), under the modules' own names, none of which
//! reaches libvirt. The command line refuses `--backend libvirt` before any of them is called
//! (`Backend::from_flags`); what a caller past it gets is [`LibvirtError::NotBuiltIn`], and gc
//! says which libvirt objects it did not look at.

/// The running domain and the connection, which this build cannot have.
pub mod runtime {
    use std::convert::Infallible;

    /// No domain was started: nothing to destroy.
    pub fn destroy_outliving() {}
    use std::path::Path;

    use super::super::LibvirtError;
    use crate::flow::event::SignalTx;
    use crate::guest::console::Console;
    use crate::vm::start::{RunMeta, StartOptions};
    use crate::vm::VmSpec;

    pub use super::super::paths::{take_qemu_log, DEFAULT_URI, QEMU_LOG_DIR};

    /// A libvirt domain: none can exist in this build (no value of the type can be made), so
    /// its methods are never reached.
    pub enum LibvirtVm {}

    /// A connection to `uri`: refused.
    pub fn connect(_uri: &str) -> Result<Infallible, LibvirtError> {
        Err(LibvirtError::NotBuiltIn)
    }

    impl LibvirtVm {
        /// Starting a domain: refused.
        pub fn start(
            _uri: &str,
            _spec: &VmSpec,
            _opts: StartOptions<'_>,
            _meta: &RunMeta,
            _dir: &Path,
            _tx: &SignalTx,
        ) -> Result<(LibvirtVm, Console), LibvirtError> {
            Err(LibvirtError::NotBuiltIn)
        }

        pub fn remote_host_context(&self) -> Option<crate::result::HostContext> {
            match *self {}
        }

        pub fn xml(&self) -> &str {
            match *self {}
        }

        pub fn name(&self) -> &str {
            match *self {}
        }

        pub fn local_addr(&self, _addr: std::net::SocketAddr) -> std::net::SocketAddr {
            match *self {}
        }

        pub fn pid(&self) -> Option<u32> {
            match *self {}
        }

        pub fn liveness(&self) -> Result<bool, LibvirtError> {
            match *self {}
        }

        pub fn monitor(
            &self,
            _command: &serde_json::Value,
        ) -> Result<serde_json::Value, LibvirtError> {
            match *self {}
        }

        pub fn disk_written_bytes(&self, _disk_id: &str) -> Result<Option<u64>, LibvirtError> {
            match *self {}
        }

        pub fn screenshot(&self, _png: &Path) -> Result<(), LibvirtError> {
            match *self {}
        }

        pub fn stop(&mut self) {
            match *self {}
        }

        pub fn detach(&mut self) -> Result<u32, LibvirtError> {
            match *self {}
        }

        pub fn set_keep_disks(&mut self, _keep: bool) {
            match *self {}
        }

        pub fn set_device(&self, _xml: &str, _present: bool) -> Result<(), LibvirtError> {
            match *self {}
        }

        pub fn disk_writes(&self, _disk_id: &str) -> Result<Vec<(String, u64)>, LibvirtError> {
            match *self {}
        }
    }
}

/// gc's libvirt half: nothing is looked at, and gc says so.
pub mod gc {
    use std::collections::BTreeSet;

    pub use super::super::collected::Collected;

    /// Why nothing on `uri` was looked at.
    fn skipped(uri: &str, what: &str, out: &mut Collected) {
        out.skipped.push(format!(
            "libvirt {uri}: {what} not looked at: this build of sno-harness has no libvirt support (built without the \"libvirt\" feature); run the gc of a build with it"
        ));
    }

    /// A dead run's domain (`only`), or every harness domain: skipped, and said so once for
    /// the domain, its network and its pool.
    pub fn collect_domains(
        uri: &str,
        only: Option<&str>,
        _alive: &BTreeSet<String>,
        _dry_run: bool,
        out: &mut Collected,
    ) {
        match only {
            Some(name) => skipped(
                uri,
                &format!("the domain {name} (and its network and storage pool)"),
                out,
            ),
            None => skipped(uri, "the harness's domains", out),
        }
    }

    /// Said with the domain (`collect_domains`).
    pub fn collect_networks(
        _uri: &str,
        _only: Option<&str>,
        _alive: &BTreeSet<String>,
        _dry_run: bool,
        _out: &mut Collected,
    ) {
    }

    /// Said with the domain (`collect_domains`).
    pub fn collect_pools(
        _uri: &str,
        _only: Option<&str>,
        _alive: &BTreeSet<String>,
        _dry_run: bool,
        _out: &mut Collected,
    ) {
    }

    /// The sweep of `uri`: skipped, said once.
    pub fn sweep(
        uri: &str,
        _only: Option<&str>,
        _alive: &BTreeSet<String>,
        _dry_run: bool,
        out: &mut Collected,
    ) {
        skipped(
            uri,
            "the harness's domains, NAT networks and storage pools",
            out,
        );
    }
}

/// A libvirt host's room: cannot be asked.
pub mod capacity {
    pub use super::super::host_facts::NodeRoom;

    pub fn probe(_uri: &str) -> Result<NodeRoom, String> {
        Err(super::super::LibvirtError::NotBuiltIn.to_string())
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::gc::{collect_domains, collect_networks, collect_pools, sweep, Collected};

    /// gc does nothing to libvirt and fails nothing: it says, once per URI and once per dead
    /// run's domain, what it did not look at.
    #[test]
    fn gc_says_what_it_skipped_and_counts_no_error() {
        let mut out = Collected::default();
        let none = BTreeSet::new();
        sweep("qemu:///system", None, &none, false, &mut out);
        collect_domains("qemu:///system", Some("sno-x"), &none, false, &mut out);
        collect_networks("qemu:///system", Some("sno-x"), &none, false, &mut out);
        collect_pools("qemu:///system", Some("sno-x"), &none, false, &mut out);
        assert!(out.errors.is_empty() && out.actions.is_empty(), "{out:?}");
        assert_eq!(out.skipped.len(), 2, "{out:?}");
        assert!(out.skipped[0].contains("no libvirt support"), "{out:?}");
        assert!(out.skipped[1].contains("the domain sno-x"), "{out:?}");
    }

    #[test]
    fn no_connection_and_no_host_room_can_be_had() {
        let e = super::runtime::connect("qemu:///system").unwrap_err();
        assert!(matches!(e, super::super::LibvirtError::NotBuiltIn), "{e}");
        let e = super::capacity::probe("qemu:///system").unwrap_err();
        assert!(e.contains("no libvirt support"), "{e}");
    }
}
