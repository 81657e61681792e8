//! The node's network as NetworkManager brings it up, for a scenario with static networking:
//! each system must activate the scenario's keyfile profiles and nothing else on its NICs.
//!
//! NetworkManager logs every activation in its journal as `device (DEV): Activation: starting
//! connection 'ID' (UUID)` (src/core/devices/nm-device.c; the words are the same in RHCOS's
//! 1.46 and Debian 12's 1.42). A NIC no profile matches gets NetworkManager's automatic DHCP
//! profile, `Wired connection N`: in the live system, the keyfiles were not embedded
//! (`coreos-installer iso network embed` / `pxe network wrap`); in the installed system, the
//! install did not carry them (`coreos-installer install -n`, `--copy-network`). On a site
//! without DHCP that node has no network at all; where DHCP answers it comes up at another
//! address, or at the same one by luck. Either way it will not come right by waiting.

use super::*;

/// The profile NetworkManager 1.42+ makes for the loopback device itself.
const LOOPBACK_PROFILE: &str = "lo";

/// The connection id of an activation line, if `message` is one.
pub fn activated_profile(message: &str) -> Option<(&str, &str)> {
    let rest = &message[message.find("device (")? + "device (".len()..];
    let (device, rest) = rest.split_once("): Activation: starting connection '")?;
    let (id, _) = rest.rsplit_once('\'')?;
    Some((device, id))
}

impl Machine {
    /// The keyfile profiles the node must bring its NICs up with (none: no check).
    pub fn expect_network_profiles(&mut self, ids: Vec<String>) {
        self.network_profiles = ids;
    }

    /// Fails the run when a system brought a NIC up with a profile that is not the
    /// scenario's, naming the system, the device and what was not carried there.
    pub(super) fn on_network_manager(
        &mut self,
        (unit, message, boot_id): (&str, &str, &str),
        now: u64,
        out: &mut Vec<Action>,
    ) {
        if self.network_profiles.is_empty() || unit != "NetworkManager.service" {
            return;
        }
        let Some((device, id)) = activated_profile(message) else {
            return;
        };
        if id == LOOPBACK_PROFILE || device == LOOPBACK_PROFILE {
            return;
        }
        if self.network_profiles.iter().any(|p| p == id) {
            return;
        }
        let installed = self
            .live_boot_id
            .as_deref()
            .is_some_and(|live| live != boot_key(boot_id));
        let wanted = self.network_profiles.join(", ");
        let (system, cause) = if installed {
            (
                "the installed system",
                "the live system's keyfiles did not reach the installed system: the install \
                 copies them only with `coreos-installer install -n` (--copy-network)",
            )
        } else {
            (
                "the live system",
                "the keyfiles did not reach the live system: they go into the ISO with \
                 `coreos-installer iso network embed` (a PXE boot: `pxe network wrap`)",
            )
        };
        let reason = format!(
            "{system} brought up {device} with NetworkManager's profile '{id}', not the \
             scenario's static profiles ({wanted}): {cause} (NetworkManager: {message:?})"
        );
        self.fail(now, reason, out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_activation_line_gives_the_device_and_the_profile() {
        assert_eq!(
            activated_profile("<info>  [1733472000.1234] device (enp0s2): Activation: starting connection 'nic0' (6b1f0c2e-8d4f-8a57-9b1e-0c3a2f4d5e6f)"),
            Some(("enp0s2", "nic0"))
        );
        assert_eq!(
            activated_profile(
                "device (enp0s2): Activation: starting connection 'Wired connection 1' (uuid)"
            ),
            Some(("enp0s2", "Wired connection 1"))
        );
        assert_eq!(
            activated_profile("device (enp0s2): state change: prepare -> config"),
            None
        );
        assert_eq!(activated_profile("Activation: starting connection"), None);
    }
}
