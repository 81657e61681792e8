//! A scenario's `[network]` on the node, as a bare-metal site puts it there:
//! - the NetworkManager keyfiles ([`super::keyfiles`]) written into the run's private
//!   directory, for `coreos-installer iso network embed` (the live ISO, full or minimal) and
//!   `coreos-installer pxe network wrap` (a PXE boot's extra initramfs). The live system's
//!   initramfs copies them into NetworkManager's directory (fedora-coreos-config's
//!   `coreos-copy-firstboot-network`), and the installer's install-to-disk carries them to the
//!   installed system with `coreos-installer install -n` (`--copy-network`).
//! - the node's hostname when its addresses are static. No DHCP names the node then, and the
//!   networks the harness makes have no reverse record for it (RHCOS would otherwise take its
//!   name from reverse DNS): the harness names it `<cluster>-master-0` in `/etc/hostname`, as
//!   assisted-service does for a host whose name the user set, in the live Ignition for the
//!   live system and as a MachineConfig (through `create manifests`) for the installed one.

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use super::ignition_edit::EditError;
use super::keyfiles::{self, Keyfile};
use super::AssetsError;
use crate::scenario::model::NetworkMode;
use crate::scenario::Scenario;

/// Where the keyfiles are written, under the run's private directory.
pub const KEYFILE_DIR: &str = "network";
/// The hostname MachineConfig's name, under openshift/ of the installer's directory.
pub const HOSTNAME_MACHINE_CONFIG: &str = "99-sno-harness-hostname-master";

/// The keyfiles the node gets: none without `[network]`, or for plain DHCP.
pub fn keyfiles_of(s: &Scenario) -> Vec<Keyfile> {
    s.network
        .as_ref()
        .map(keyfiles::keyfiles)
        .unwrap_or_default()
}

/// The keyfiles' connection ids: the profiles NetworkManager must bring the node up with.
pub fn profile_ids(s: &Scenario) -> Vec<String> {
    keyfiles_of(s).into_iter().map(|k| k.id).collect()
}

/// Writes the keyfiles into `private_dir/network/` (owner-only, as NetworkManager wants them)
/// and returns their paths, in the order the profiles are listed; none for a scenario without
/// any. A directory left by an earlier attempt is replaced whole.
pub fn write_keyfiles(private_dir: &Path, s: &Scenario) -> Result<Vec<PathBuf>, AssetsError> {
    let files = keyfiles_of(s);
    if files.is_empty() {
        return Ok(Vec::new());
    }
    let dir = private_dir.join(KEYFILE_DIR);
    let _ = std::fs::remove_dir_all(&dir);
    crate::util::private::create_dir_with_mode(&dir, crate::util::private::PRIVATE_DIR)
        .map_err(|e| AssetsError::io(format!("creating {}", dir.display()), e))?;
    keyfiles::write_keyfiles(&dir, &files).map_err(|e| {
        AssetsError::io(
            format!("writing the keyfiles into {}", dir.display()),
            e.into(),
        )
    })
}

/// The hostname the harness writes for a node with static addresses, if it does.
pub fn static_hostname(s: &Scenario) -> Option<String> {
    let n = s.network.as_ref()?;
    (n.mode == NetworkMode::Static).then(|| crate::hw::nat::node_hostname(&s.install.cluster))
}

/// `/etc/hostname` as an Ignition file entry.
fn hostname_file(name: &str) -> Value {
    json!({
        "path": "/etc/hostname",
        "mode": 0o644,
        "overwrite": true,
        "contents": {"source": super::dns::data_url(&format!("{name}\n"))}
    })
}

/// The MachineConfig that names the installed system, when the harness names the node.
pub fn hostname_machine_config(s: &Scenario) -> Option<Value> {
    let name = static_hostname(s)?;
    Some(super::dns::master_machine_config(
        HOSTNAME_MACHINE_CONFIG,
        json!({"storage": {"files": [hostname_file(&name)]}}),
    ))
}

/// Writes the hostname MachineConfig into `dir/openshift/`, after `create manifests`, when
/// there is one.
pub fn write_hostname_machine_config(dir: &Path, s: &Scenario) -> Result<(), AssetsError> {
    match hostname_machine_config(s) {
        Some(mc) => super::dns::write_manifest(dir, HOSTNAME_MACHINE_CONFIG, &mc),
        None => Ok(()),
    }
}

/// Names the live system in its Ignition, when the harness names the node.
pub fn add_hostname_to_live_ignition(ignition: &mut Value, s: &Scenario) -> Result<(), EditError> {
    let Some(name) = static_hostname(s) else {
        return Ok(());
    };
    let root = ignition.as_object_mut().ok_or(EditError::NotAnObject)?;
    let not_files = (EditError::StorageNotAnObject, EditError::FilesNotAList);
    super::dns::list_in(root, ("storage", "files"), not_files)?.push(hostname_file(&name));
    Ok(())
}

#[cfg(test)]
mod tests;
