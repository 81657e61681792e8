//! Talking to the guest: its serial console, SSH sessions, and the followers that watch its
//! status and journal over SSH across reboots.

pub mod console;
pub mod console_input;
pub mod follow;
pub mod journal;
pub mod ssh;
