//! The bootstrap-in-place flow as data: events from every observer, one state machine that
//! turns them into phases with timeouts, the phase list of the contract, and the post-reboot
//! script's wait loops as its journal shows them.

pub mod badness;
pub mod disk_write;
pub mod event;
pub mod machine;
pub mod phase;
pub mod post_reboot;
pub mod release_rules;
