//! The live system of a multipath install: multipath configured in its Ignition, as the
//! assisted installer configures RHCOS's live system for a multipath disk (assisted-service
//! writes /etc/multipath.conf and enables multipathd.service in the discovery Ignition), so that
//! the installation disk is /dev/mapper/mpatha there. Without it RHCOS's live system (and
//! minisno's) runs no multipathd, the disk is its two paths, and a site's /dev/mapper/mpatha
//! or dm-uuid link does not exist.
//!
//! The installed system needs no such file: `rd.multipath=default` writes the default
//! configuration in its initramfs, which CoreOS copies into the real root
//! (coreos-propagate-multipath-conf).

use serde_json::{json, Value};

use super::dns::{data_url, list_in};
use super::ignition_edit::EditError;
use crate::hw::multipath::LIVE_MULTIPATH_CONF;
use crate::scenario::Scenario;

/// Whether the scenario's installation disk is multipath.
pub fn installs_to_multipath(s: &Scenario) -> bool {
    s.install
        .install_disk_id
        .as_ref()
        .is_some_and(|id| s.disks.iter().any(|d| &d.id == id && d.multipath))
}

/// Adds the multipath configuration and multipathd to the live Ignition of a multipath
/// install; nothing otherwise.
pub fn add_to_live_ignition(ignition: &mut Value, s: &Scenario) -> Result<(), EditError> {
    if !installs_to_multipath(s) {
        return Ok(());
    }
    let root = ignition.as_object_mut().ok_or(EditError::NotAnObject)?;
    let not_files = (EditError::StorageNotAnObject, EditError::FilesNotAList);
    list_in(root, ("storage", "files"), not_files)?.push(json!({
        "path": "/etc/multipath.conf",
        "mode": 0o644,
        "overwrite": true,
        "contents": {"source": data_url(LIVE_MULTIPATH_CONF)}
    }));
    let not_units = (EditError::NoUnits, EditError::NoUnits);
    list_in(root, ("systemd", "units"), not_units)?
        .push(json!({"name": "multipathd.service", "enabled": true}));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scenario(multipath: bool) -> Scenario {
        let bus = if multipath { "scsi" } else { "virtio" };
        let text = format!(
            "name = \"m\"\nprofile = \"fixture\"\n[[disks]]\nid = \"install\"\nsize = \"8GiB\"\nbus = \"{bus}\"\nmultipath = {multipath}\n[install]\ninstallation_disk = {{ by = \"name\", disk = \"install\" }}\n"
        );
        crate::scenario::parse_str(std::path::Path::new("m.toml"), &text).unwrap()
    }

    #[test]
    fn a_multipath_install_configures_the_live_systems_multipathd() {
        let mut ign = json!({"ignition": {"version": "3.2.0"}, "systemd": {"units": []}});
        add_to_live_ignition(&mut ign, &scenario(true)).unwrap();
        let file = &ign["storage"]["files"][0];
        assert_eq!(file["path"], "/etc/multipath.conf");
        let source = file["contents"]["source"].as_str().unwrap();
        assert!(source.contains("user_friendly_names%20yes"), "{source}");
        assert!(source.contains("find_multipaths%20yes"), "{source}");
        assert_eq!(
            ign["systemd"]["units"][0],
            json!({"name": "multipathd.service", "enabled": true})
        );
        let mut plain = json!({"ignition": {"version": "3.2.0"}});
        add_to_live_ignition(&mut plain, &scenario(false)).unwrap();
        assert_eq!(plain, json!({"ignition": {"version": "3.2.0"}}));
    }
}
