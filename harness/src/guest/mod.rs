//! Talking to the guest: its serial console, SSH sessions, the followers that watch its
//! status and journal over SSH across reboots, and a multipath install's root probe.

pub mod console;
pub mod console_input;
pub mod follow;
pub mod journal;
pub mod multipath;
pub mod ssh;
