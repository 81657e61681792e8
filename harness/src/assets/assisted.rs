//! The live Ignition of an assisted-style install (`[install] mode = "assisted"`):
//! install-to-disk.service is masked, since the harness, like the assisted installer's agent,
//! runs coreos-installer itself once bootkube has written `/opt/openshift/master.ign`.
//!
//! The unit's entry is replaced by a masked one without contents: Ignition masks a unit by
//! linking it to /dev/null, and a masked entry that also carried contents or `enabled` would
//! ask for two things at one path.

use serde_json::{json, Value};

use super::hold::{install_to_disk_unit, HELD_UNIT};
use super::ignition_edit::EditError;

/// Masks install-to-disk.service in an Ignition config (spec 3.x).
pub fn mask_install_to_disk(ignition: &mut Value) -> Result<(), EditError> {
    let unit = install_to_disk_unit(ignition, "mask")?;
    *unit = json!({ "name": HELD_UNIT, "mask": true });
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_unit_becomes_a_masked_entry_and_the_others_stay() {
        let mut ign = json!({"systemd": {"units": [
            {"name": "bootkube.service", "enabled": true, "contents": "[Unit]\n"},
            {"name": "install-to-disk.service", "enabled": true, "contents": "[Unit]\n",
             "dropins": [{"name": "x.conf", "contents": ""}]}
        ]}});
        mask_install_to_disk(&mut ign).unwrap();
        let units = ign["systemd"]["units"].as_array().unwrap();
        assert_eq!(units[0]["contents"], "[Unit]\n");
        assert_eq!(
            units[1],
            json!({"name": "install-to-disk.service", "mask": true})
        );
    }

    #[test]
    fn an_ignition_without_the_unit_says_so() {
        let mut ign = json!({"ignition": {"version": "3.2.0"}});
        assert_eq!(
            mask_install_to_disk(&mut ign).unwrap_err().to_string(),
            "the Ignition has no systemd.units"
        );
        let mut ign = json!({"systemd": {"units": [{"name": "bootkube.service"}]}});
        assert!(mask_install_to_disk(&mut ign)
            .unwrap_err()
            .to_string()
            .contains("no install-to-disk.service to mask"));
    }
}
