//! Talking to the guest: its serial console and SSH.

pub mod console;
pub mod follow;
pub mod ssh;
