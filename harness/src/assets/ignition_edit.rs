//! Why the installer's live Ignition cannot take the harness's additions (the install hold of
//! `--save-state`, the masked install-to-disk.service of an assisted install, the node's DNS
//! records): one error for the three edits, naming the part of the config that is not as
//! Ignition spec 3.x has it.

/// What is wrong with the config.
#[derive(Debug, thiserror::Error)]
pub enum EditError {
    #[error("{0}")]
    NotJson(#[source] serde_json::Error),
    #[error("the Ignition is not a JSON object")]
    NotAnObject,
    #[error("the Ignition's storage is not an object")]
    StorageNotAnObject,
    #[error("the Ignition's storage.files is not a list")]
    FilesNotAList,
    #[error("the Ignition has no systemd.units")]
    NoUnits,
    /// The unit the edit is for is not among the units; `to` says what the edit would do.
    #[error("the Ignition has no {unit} to {to}")]
    NoUnit {
        unit: &'static str,
        to: &'static str,
    },
    #[error("{unit} in the Ignition is not an object")]
    UnitNotAnObject { unit: &'static str },
    #[error("{unit}'s dropins in the Ignition are not a list")]
    DropinsNotAList { unit: &'static str },
}
