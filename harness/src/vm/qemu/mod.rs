//! Direct QEMU: the command line (every argument lives in `argv`), the process, and the QMP
//! client (`qmp`).

pub mod argv;
pub mod process;
pub mod qmp;
pub mod state_file;

pub use argv::{qemu_argv, qemu_argv_started};
pub use process::{QemuError, QemuProcess};
pub use qmp::{BlockStats, Qmp, QmpError, QmpEvent};

/// The QEMU system emulator binary (the one the host programs list names).
pub const QEMU_BINARY: &str = crate::hw::host_programs::QEMU;
