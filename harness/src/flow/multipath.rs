//! A multipath install's evidence: what the installed system's root and boot filesystems are
//! on and the state of the multipath paths, as the harness reads them over SSH after the
//! pivot (`guest::multipath` runs [`PROBE_SCRIPT`]), and the path the harness took away during
//! the write to disk. Pure: parsing and judging, unit-tested on recorded output.
//!
//! The check is kola's (`mantle/kola/tests/misc/multipath.go` verifyMultipath, and the
//! iso-offline-install.mpath test's "Verify Multipathed Root" unit): the mounted root (and
//! /boot) must sit on a device-mapper multipath map, here read as lsblk's chain of devices under
//! the filesystem, and every path of that map must be active, as multipathd reports them (its
//! dm state `active`, its checker `ready`).

use serde::Serialize;

/// Runs as root on the guest; each line one fact, `|`-separated:
/// `boot|<boot id>|<1 live, 0 installed>`, then for each mounted filesystem labelled `root` or
/// `boot` `fs|<label>|<mount point>|<device>|<kname:type,...>` (lsblk's chain from the
/// filesystem down to the disks), then multipathd's maps `map|<name>|<wwid>|<dm>` and paths
/// `path|<wwid>|<device>|<dm state>|<checker state>`. The same commands answer on RHCOS, whose
/// root is mounted at /sysroot (minisno's at /run/minisno/rw, under its overlay).
pub const PROBE_SCRIPT: &str = r#"l=0; [ -e /run/ostree-live ] && l=1
echo "boot|$(cat /proc/sys/kernel/random/boot_id)|$l"
findmnt -rnv -o SOURCE,TARGET | while read -r src tgt; do
  case "$src" in /dev/*) ;; *) continue ;; esac
  lab=$(blkid -s LABEL -o value "$src" 2>/dev/null)
  case "$lab" in root|boot) ;; *) continue ;; esac
  echo "fs|$lab|$tgt|$src|$(lsblk -nrs -o KNAME,TYPE "$src" 2>/dev/null | tr ' \n' ':,')"
done
multipathd show maps raw format "%n %w %d" 2>/dev/null | sed 's/^/map|/; s/ /|/g'
multipathd show paths raw format "%w %d %t %T" 2>/dev/null | sed 's/^/path|/; s/ /|/g'
true"#;

/// A filesystem the installed system boots from, and the devices under it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct FsOnDisk {
    /// `root` or `boot`.
    pub label: String,
    pub mounted_at: String,
    pub device: String,
    /// lsblk's chain from the filesystem's device to the disks, each `kname` and `type`.
    pub chain: Vec<(String, String)>,
}

impl FsOnDisk {
    /// The multipath map the filesystem is on (its kernel name), if it is on one.
    pub fn map(&self) -> Option<&str> {
        self.chain
            .iter()
            .find(|(_, t)| t == "mpath")
            .map(|(k, _)| k.as_str())
    }

    /// The disks at the bottom of the chain.
    fn disks(&self) -> Vec<&str> {
        self.chain
            .iter()
            .filter(|(_, t)| t == "disk")
            .map(|(k, _)| k.as_str())
            .collect()
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct MapSeen {
    pub name: String,
    pub wwid: String,
    pub dm: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct PathSeen {
    pub wwid: String,
    pub device: String,
    /// The kernel's view of the path in the map: `active` or `failed`.
    pub dm_state: String,
    /// multipathd's path checker: `ready`, `faulty`, `ghost`, ...
    pub checker: String,
}

impl PathSeen {
    pub fn active(&self) -> bool {
        self.dm_state == "active" && self.checker == "ready"
    }
}

/// One answer of the probe.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Default, serde::Deserialize)]
pub struct RootDevices {
    pub boot_id: String,
    pub live: bool,
    pub filesystems: Vec<FsOnDisk>,
    pub maps: Vec<MapSeen>,
    pub paths: Vec<PathSeen>,
}

/// What the answer says of the installed system.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Judged {
    /// Root (or /boot) is not on the multipath map: it will not be by waiting.
    NotMultipath(String),
    /// On the map, but not every path is active yet (multipathd may still be reinstating).
    Waiting(String),
    /// On the map with every path active.
    Good(String),
}

impl RootDevices {
    /// Parses the probe's output; None without its `boot` line (the command did not run).
    pub fn parse(output: &str) -> Option<RootDevices> {
        let mut r = RootDevices::default();
        let mut booted = false;
        for line in output.lines() {
            let f: Vec<&str> = line.trim().split('|').collect();
            match f.as_slice() {
                ["boot", id, live] => {
                    r.boot_id = id.to_string();
                    r.live = *live == "1";
                    booted = true;
                }
                ["fs", label, at, dev, chain] => {
                    // A filesystem mounted at several places (bind mounts) counts once.
                    if r.filesystems.iter().any(|f| f.label == *label) {
                        continue;
                    }
                    r.filesystems.push(FsOnDisk {
                        label: label.to_string(),
                        mounted_at: at.to_string(),
                        device: dev.to_string(),
                        chain: chain
                            .split(',')
                            .filter_map(|p| p.split_once(':'))
                            .map(|(k, t)| (k.to_string(), t.to_string()))
                            .collect(),
                    });
                }
                ["map", name, wwid, dm] => r.maps.push(MapSeen {
                    name: name.to_string(),
                    wwid: wwid.to_string(),
                    dm: dm.to_string(),
                }),
                ["path", wwid, dev, dm_state, checker] => r.paths.push(PathSeen {
                    wwid: wwid.to_string(),
                    device: dev.to_string(),
                    dm_state: dm_state.to_string(),
                    checker: checker.to_string(),
                }),
                _ => {}
            }
        }
        booted.then_some(r)
    }

    /// The paths of the map whose dm name is `dm`.
    pub fn paths_of(&self, dm: &str) -> Vec<&PathSeen> {
        let Some(map) = self.maps.iter().find(|m| m.dm == dm) else {
            return Vec::new();
        };
        self.paths.iter().filter(|p| p.wwid == map.wwid).collect()
    }

    /// Root and /boot on the multipath map with `expected` paths, all active.
    pub fn judge(&self, expected: u8) -> Judged {
        let Some(root) = self.filesystems.iter().find(|f| f.label == "root") else {
            return Judged::Waiting("no mounted filesystem labelled root was found".into());
        };
        let Some(dm) = root.map() else {
            return Judged::NotMultipath(format!(
                "the root filesystem is not on the multipath device: it is mounted from {} on {} ({}), a single path of the installation disk; the installed system did not assemble the multipath map at boot (its kernel arguments need rd.multipath=default root=/dev/disk/by-label/dm-mpath-root)",
                root.device,
                root.disks().join(", "),
                root.mounted_at
            ));
        };
        if let Some(boot) = self
            .filesystems
            .iter()
            .find(|f| f.label == "boot" && f.map() != Some(dm))
        {
            return Judged::NotMultipath(format!(
                "/boot is not on the root's multipath device {dm}: it is mounted from {} on {}",
                boot.device,
                boot.disks().join(", ")
            ));
        }
        let map = self.maps.iter().find(|m| m.dm == dm);
        let paths = self.paths_of(dm);
        let active = paths.iter().filter(|p| p.active()).count();
        let listed: Vec<String> = paths
            .iter()
            .map(|p| format!("{} {}/{}", p.device, p.dm_state, p.checker))
            .collect();
        let name = map.map_or(dm.to_string(), |m| {
            format!("{} ({dm}, WWID {})", m.name, m.wwid)
        });
        let said = format!(
            "the root filesystem ({}) is on multipath device {name}: {active} of {expected} paths active ({})",
            root.device,
            if listed.is_empty() {
                "multipathd lists none".to_string()
            } else {
                listed.join(", ")
            }
        );
        if active >= usize::from(expected) {
            Judged::Good(said)
        } else {
            Judged::Waiting(said)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The probe's answer on minisno's installed system booted with the multipath kernel
    /// arguments (recorded, boot id shortened).
    const ON_MULTIPATH: &str = "boot|7f3a|0
fs|root|/run/minisno/rw|/dev/mapper/mpatha-part4|dm-4:part,dm-0:mpath,sda:disk,sdb:disk,
fs|boot|/boot|/dev/mapper/mpatha-part3|dm-3:part,dm-0:mpath,sda:disk,sdb:disk,
map|mpatha|35a1b2c3d4e5f6071|dm-0
path|35a1b2c3d4e5f6071|sdb|active|ready
path|35a1b2c3d4e5f6071|sda|active|ready
";

    /// Without the arguments: root found by its label on one path, no multipathd.
    const ON_ONE_PATH: &str = "boot|7f3a|0
fs|root|/run/minisno/rw|/dev/sdb4|sdb4:part,sdb:disk,
fs|boot|/boot|/dev/sda3|sda3:part,sda:disk,
";

    #[test]
    fn a_root_on_the_map_with_both_paths_active_is_good() {
        let r = RootDevices::parse(ON_MULTIPATH).unwrap();
        assert!(!r.live);
        assert_eq!(r.filesystems[0].map(), Some("dm-0"));
        match r.judge(2) {
            Judged::Good(s) => assert_eq!(
                s,
                "the root filesystem (/dev/mapper/mpatha-part4) is on multipath device mpatha (dm-0, WWID 35a1b2c3d4e5f6071): 2 of 2 paths active (sdb active/ready, sda active/ready)"
            ),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_failed_path_is_waited_for() {
        let text = ON_MULTIPATH.replace("sda|active|ready", "sda|failed|faulty");
        let r = RootDevices::parse(&text).unwrap();
        assert!(
            matches!(r.judge(2), Judged::Waiting(ref s) if s.contains("1 of 2 paths active")),
            "{:?}",
            r.judge(2)
        );
    }

    #[test]
    fn a_root_on_a_single_path_is_named_as_such() {
        let r = RootDevices::parse(ON_ONE_PATH).unwrap();
        match r.judge(2) {
            Judged::NotMultipath(s) => {
                assert!(s.starts_with("the root filesystem is not on the multipath device: it is mounted from /dev/sdb4 on sdb"), "{s}");
                assert!(s.contains("rd.multipath=default"), "{s}");
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn boot_off_the_map_is_named_and_output_without_a_boot_line_is_none() {
        let text = ON_MULTIPATH.replace(
            "fs|boot|/boot|/dev/mapper/mpatha-part3|dm-3:part,dm-0:mpath,sda:disk,sdb:disk,",
            "fs|boot|/boot|/dev/sda3|sda3:part,sda:disk,",
        );
        let r = RootDevices::parse(&text).unwrap();
        assert!(
            matches!(r.judge(2), Judged::NotMultipath(ref s) if s.starts_with("/boot is not on"))
        );
        assert_eq!(RootDevices::parse("sudo: a password is required\n"), None);
    }

    #[test]
    fn the_probe_script_is_plain_sh() {
        let out = std::process::Command::new("sh")
            .args(["-n", "-c", PROBE_SCRIPT])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}
