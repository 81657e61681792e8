//! The bootstrap-in-place flow as data: events from every observer, one state machine that
//! turns them into phases with timeouts, the phase list of the contract, the post-reboot
//! script's wait loops as its journal shows them, and a multipath install's evidence.

pub mod badness;
pub mod disk_write;
pub mod event;
pub mod machine;
pub mod multipath;
pub mod phase;
pub mod post_reboot;
pub mod release_rules;
