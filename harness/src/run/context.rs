//! What every step of a run works on (`Run`): the scenario and options, the state machine
//! and its timeline, the terminal, and what the steps have made so far. The steps themselves
//! live in `drive`, `session` and `gather_step`.

use std::collections::BTreeMap;
use std::time::Instant;

use super::progress::Progress;
use super::RunOptions;
use crate::flow::event::{EventLog, Signal, Source};
use crate::flow::machine::{Action, Machine};
use crate::hw::Accel;
use crate::netboot::FileServer;
use crate::result::{AssetsUsed, HostContext};
use crate::scenario::Scenario;

/// What every step works on.
pub struct Run<'a> {
    pub s: &'a Scenario,
    pub opts: &'a RunOptions,
    /// The run's private directory (`private_dir`): the secrets and what only the VM needs,
    /// outside the published run directory.
    pub private: std::path::PathBuf,
    pub machine: Machine,
    pub log: EventLog,
    pub ui: &'a mut Progress,
    /// Artifact name -> file in the run directory, for result.json.
    pub artifacts: &'a mut BTreeMap<String, String>,
    pub started: Instant,
    pub accel: Accel,
    /// What the machine did and the session has not shown yet.
    pub pending: Vec<Action>,
    /// The host the VM ran on, when not this one (a remote libvirtd).
    pub vm_host: Option<HostContext>,
    /// The installer and the live ISO, for result.json.
    pub assets_used: Option<AssetsUsed>,
    /// The harness's server of what the guest fetches while it boots, for a boot that does;
    /// it lives as long as the run.
    pub boot_server: Option<BootServer>,
}

/// The boot server of a run.
pub struct BootServer {
    pub server: FileServer,
    /// The host as the guest reaches it: QEMU's user network's host (forwarded to the
    /// server's loopback address), or a NAT network's host address on its bridge (where the
    /// server listens too, once the network exists).
    pub guest_sees_host_at: std::net::Ipv4Addr,
    /// Whom its listeners answer: anyone on the user network (the per-run paths keep others
    /// out), the node's address alone on a NAT network.
    pub peers: crate::netboot::Peers,
    /// On a remote libvirt host: how the guest's requests get from that host to the server.
    pub reverse: Option<ReverseForward>,
}

/// The SSH connection to a remote libvirt host whose remote forward takes the guest's
/// requests from `port` on that host's loopback to the boot server here; it closes with
/// the run.
pub struct ReverseForward {
    /// Held only: dropping it closes the forward.
    pub _tunnel: crate::vm::libvirt::Tunnel,
    pub port: u16,
}

impl BootServer {
    /// The port the guest fetches from: the server's own, or the remote forward's.
    pub fn guest_port(&self) -> u16 {
        self.reverse
            .as_ref()
            .map_or(self.server.addr().port(), |r| r.port)
    }

    /// Where the guest fetches its root filesystem (the run's token in its path).
    pub fn rootfs_url(&self) -> String {
        format!(
            "http://{}:{}{}",
            self.guest_sees_host_at,
            self.guest_port(),
            self.server.path_of(crate::netboot::ROOTFS_NAME)
        )
    }

    /// The root filesystem's URL as the reports show it: the token left out (the run's
    /// published files never name its server's paths).
    pub fn rootfs_url_shown(&self) -> String {
        format!(
            "http://{}:{}/<token>/{}",
            self.guest_sees_host_at,
            self.guest_port(),
            crate::netboot::ROOTFS_NAME
        )
    }
}

impl Run<'_> {
    /// Milliseconds since the run started: the timeline's clock.
    pub fn now(&self) -> u64 {
        self.started.elapsed().as_millis() as u64
    }

    /// Records a signal in the timeline and feeds it to the state machine.
    pub fn handle(&mut self, source: Source, signal: Signal) {
        let actions = match self.log.record(source, signal) {
            Ok(ev) => self.machine.on_event(&ev),
            Err(e) => self.machine.error(0, format!("writing events.jsonl: {e}")),
        };
        self.pending.extend(actions);
    }
}
