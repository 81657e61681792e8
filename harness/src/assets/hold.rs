//! The install hold of a run that saves the VM (`--save-state`): a drop-in on
//! install-to-disk.service, added to the live ISO's Ignition, that keeps the unit from running
//! install-to-disk.sh until the harness creates a file on the guest.
//!
//! Why in the Ignition: install-to-disk.service starts together with bootkube.service
//! (`After=` only orders the start) and its script runs coreos-installer as soon as
//! `/opt/openshift/.bootkube.done` appears. The harness first reaches the guest when SSH answers,
//! and on a fast bootstrap (the fixture's) bootkube is done by then, so nothing done over SSH
//! could stop the install in time. A drop-in delivered with the Ignition is in place from the
//! first boot, for real OpenShift and the fixture alike; the unit's own definition is not
//! touched.

use std::path::Path;

use serde_json::{json, Value};

use super::ignition_edit::EditError;
use super::{write_private, AssetsError};

/// The Ignition embedded instead of the installer's, in the run's assets/.
pub const HELD_IGNITION_FILE: &str = "bootstrap-in-place-for-live-iso.held.ign";
pub const HELD_UNIT: &str = "install-to-disk.service";
pub const DROPIN_NAME: &str = "50-sno-harness-hold.conf";
/// Created on the guest to let the install go.
pub const RELEASE_FILE: &str = "/run/sno-harness/release-install";

/// The drop-in. `TimeoutStartSec=infinity`: the wait is part of starting the unit, and a real
/// bootkube takes far longer than systemd's default start timeout of 90 s.
pub fn dropin() -> String {
    format!(
        "# sno-harness --save-state: install-to-disk waits until the harness has saved the VM.\n\
         [Service]\n\
         TimeoutStartSec=infinity\n\
         ExecStartPre=/bin/sh -c 'until [ -e {RELEASE_FILE} ]; do sleep 1; done'\n"
    )
}

/// install-to-disk.service's entry in an Ignition config's systemd.units; `to` says what the
/// caller meant to do with it, for the error.
pub fn install_to_disk_unit<'a>(
    ignition: &'a mut Value,
    to: &'static str,
) -> Result<&'a mut Value, EditError> {
    let units = ignition
        .pointer_mut("/systemd/units")
        .and_then(Value::as_array_mut)
        .ok_or(EditError::NoUnits)?;
    units
        .iter_mut()
        .find(|u| u.get("name").and_then(Value::as_str) == Some(HELD_UNIT))
        .ok_or(EditError::NoUnit {
            unit: HELD_UNIT,
            to,
        })
}

/// Adds the drop-in to install-to-disk.service in an Ignition config (spec 3.x).
pub fn add_hold(ignition: &mut Value) -> Result<(), EditError> {
    let unit = install_to_disk_unit(ignition, "hold")?
        .as_object_mut()
        .ok_or(EditError::UnitNotAnObject { unit: HELD_UNIT })?;
    let dropins = unit.entry("dropins").or_insert_with(|| json!([]));
    let dropins = dropins
        .as_array_mut()
        .ok_or(EditError::DropinsNotAList { unit: HELD_UNIT })?;
    dropins.retain(|d| d.get("name").and_then(Value::as_str) != Some(DROPIN_NAME));
    dropins.push(json!({ "name": DROPIN_NAME, "contents": dropin() }));
    Ok(())
}

/// Writes `from` with the hold added to `to` (owner-only: an Ignition carries secrets).
pub fn write_held_ignition(from: &Path, to: &Path) -> Result<(), AssetsError> {
    let text = std::fs::read_to_string(from)
        .map_err(|e| AssetsError::io(format!("reading {}", from.display()), e))?;
    let bad = |source| AssetsError::Hold {
        file: from.to_path_buf(),
        source,
    };
    let mut ign: Value = serde_json::from_str(&text).map_err(|e| bad(EditError::NotJson(e)))?;
    add_hold(&mut ign).map_err(bad)?;
    write_private(to, ign.to_string().as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ignition() -> Value {
        json!({
            "ignition": {"version": "3.2.0"},
            "systemd": {"units": [
                {"name": "bootkube.service", "enabled": true, "contents": "[Unit]\n"},
                {"name": "install-to-disk.service", "enabled": true, "contents": "[Unit]\nDescription=Install to disk\n"}
            ]}
        })
    }

    #[test]
    fn the_hold_is_a_dropin_on_install_to_disk_only() {
        let mut ign = ignition();
        add_hold(&mut ign).unwrap();
        let units = ign["systemd"]["units"].as_array().unwrap();
        assert!(units[0].get("dropins").is_none());
        let d = &units[1]["dropins"];
        assert_eq!(d.as_array().unwrap().len(), 1);
        assert_eq!(d[0]["name"], DROPIN_NAME);
        let contents = d[0]["contents"].as_str().unwrap();
        assert!(contents.contains("[Service]\nTimeoutStartSec=infinity\n"));
        assert!(contents.contains(&format!("until [ -e {RELEASE_FILE} ]")));
        // The unit's own definition is untouched.
        assert_eq!(
            units[1]["contents"],
            "[Unit]\nDescription=Install to disk\n"
        );
        // Adding it twice leaves one.
        add_hold(&mut ign).unwrap();
        assert_eq!(
            ign["systemd"]["units"][1]["dropins"]
                .as_array()
                .unwrap()
                .len(),
            1
        );
    }

    #[test]
    fn existing_dropins_are_kept() {
        let mut ign = ignition();
        ign["systemd"]["units"][1]["dropins"] = json!([{"name": "10-env.conf", "contents": "x"}]);
        add_hold(&mut ign).unwrap();
        let names: Vec<&str> = ign["systemd"]["units"][1]["dropins"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["10-env.conf", DROPIN_NAME]);
    }

    #[test]
    fn an_ignition_without_the_unit_says_so() {
        let mut ign = json!({"ignition": {"version": "3.2.0"}});
        assert_eq!(
            add_hold(&mut ign).unwrap_err().to_string(),
            "the Ignition has no systemd.units"
        );
        let mut ign = json!({"systemd": {"units": [{"name": "bootkube.service"}]}});
        let e = add_hold(&mut ign).unwrap_err();
        assert!(matches!(e, EditError::NoUnit { to: "hold", .. }), "{e:?}");
        assert!(e.to_string().contains("no install-to-disk.service"), "{e}");
    }

    #[test]
    fn the_held_copy_is_owner_only_and_the_original_untouched() {
        use std::os::unix::fs::PermissionsExt;
        let d = tempfile::tempdir().unwrap();
        let (from, to) = (d.path().join("a.ign"), d.path().join("held.ign"));
        let original = ignition().to_string();
        std::fs::write(&from, &original).unwrap();
        write_held_ignition(&from, &to).unwrap();
        assert_eq!(std::fs::read_to_string(&from).unwrap(), original);
        let held: Value = serde_json::from_str(&std::fs::read_to_string(&to).unwrap()).unwrap();
        assert_eq!(
            held["systemd"]["units"][1]["dropins"][0]["name"],
            DROPIN_NAME
        );
        let mode = std::fs::metadata(&to).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        std::fs::write(&from, "not json").unwrap();
        assert!(matches!(
            write_held_ignition(&from, &to),
            Err(AssetsError::Hold {
                source: EditError::NotJson(_),
                ..
            })
        ));
    }
}
