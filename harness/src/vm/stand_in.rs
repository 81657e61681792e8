//! A stand-in backend, for tests only: a "VM" that runs nothing, whose console is one end of a
//! socket pair and which ends when stopped. It exists to keep the promise of `backend.rs`: a
//! new backend is added in `backend.rs` (its variant, name and capabilities), in `running.rs`
//! (its running VM's verbs), in `mod.rs` (its module) and in a module of its own, and nowhere
//! else (harness/tests/backend_seam.rs counts the files; the compiler finds every match that
//! must handle it).

use std::os::unix::net::UnixStream;
use std::path::Path;

use crate::guest::console::Console;

/// The line its console prints once started.
pub const HELLO: &str = "stand-in VM: started";

pub struct StandInVm {
    running: bool,
    /// The console's other end, held so that the console stays open while the "VM" runs.
    peer: Option<UnixStream>,
}

impl StandInVm {
    /// Starts it, its console logged into `dir/serial.log` as a real VM's.
    pub fn start(dir: &Path) -> std::io::Result<(StandInVm, Console)> {
        let (mut peer, ours) = UnixStream::pair()?;
        let console = Console::attach(ours, &dir.join("serial.log"))?;
        std::io::Write::write_all(&mut peer, format!("{HELLO}\n").as_bytes())?;
        Ok((
            StandInVm {
                running: true,
                peer: Some(peer),
            },
            console,
        ))
    }

    pub fn is_running(&self) -> bool {
        self.running
    }

    /// Stops it: its console's stream ends.
    pub fn stop(&mut self) {
        self.running = false;
        self.peer = None;
    }
}

#[cfg(test)]
mod tests {
    use crate::vm::running::{Liveness, RunningVm, VmQuery};
    use crate::vm::start::{RunMeta, StartOptions};
    use crate::vm::{Backend, VmError};

    #[tokio::test]
    async fn a_stand_in_vm_starts_shows_its_console_and_ends_and_says_what_it_cannot_do() {
        let dir = tempfile::tempdir().unwrap();
        let backend = Backend::StandIn;
        assert!(!backend.can().qmp && !backend.can().saved_state && backend.can().console);
        let spec = crate::run::vm_spec(
            &crate::scenario::parse_str(
                &dir.path().join("s.toml"),
                "name = \"s\"\nprofile = \"fixture\"\n[[disks]]\nid = \"install\"\nsize = \"1GiB\"\n",
            )
            .unwrap(),
            dir.path(),
            &dir.path().join("live.iso"),
            crate::hw::Accel::Tcg,
            1,
            2,
        );
        let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
        let opts = StartOptions {
            network: None,
            reach: &[],
            keep_disks: false,
            incoming: false,
            may_outlive: false,
        };
        let meta = RunMeta::for_this_process("s".into(), dir.path().into());
        let (mut vm, console) = RunningVm::start(&backend, &spec, opts, &meta, dir.path(), &tx)
            .await
            .unwrap();
        console
            .wait_for_text(super::HELLO, std::time::Duration::from_secs(10))
            .unwrap();
        assert_eq!(vm.liveness(), Liveness::Running);
        let e = vm.handle().query(VmQuery::Status).await.unwrap_err();
        assert!(matches!(e, VmError::NotOnThisBackend { .. }), "{e}");
        assert!(vm.detach().is_err());
        vm.stop();
        assert_eq!(vm.liveness(), Liveness::Gone);
    }
}
