//! Direct QEMU: the command line (every argument lives in `argv`) and the process.

pub mod argv;
pub mod process;

pub use argv::qemu_argv;
pub use process::{QemuError, QemuProcess};

/// The QEMU system emulator binary.
pub const QEMU_BINARY: &str = "qemu-system-x86_64";
