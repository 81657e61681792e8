//! The bootstrap-in-place flow as data: events from every observer, one state machine that
//! turns them into phases with timeouts, and the phase list of the contract.

pub mod badness;
pub mod disk_write;
pub mod event;
pub mod machine;
pub mod phase;
pub mod release_rules;
