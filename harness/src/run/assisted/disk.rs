//! The install device made ready as the assisted agent makes it before coreos-installer
//! (assisted-installer's `src/installer/installer.go` InstallNode, and the cleanup of its
//! vendored `rh-ecosystem-edge/preinstall-utils` `pkg/disk_ops.go`): the name resolved to the
//! kernel's device, then the device's old LVM volume groups and physical volumes removed, its
//! MD RAID arrays stopped and their superblocks zeroed, and its signatures wiped. A disk that
//! arrives with such metadata has it activated by udev on the live system (LVM's
//! autoactivation, mdadm's incremental assembly), and coreos-installer then refuses the disk
//! ("found busy partitions"). As the agent's, a failed step is reported and the install goes
//! on: coreos-installer is the judge of whether the disk can be written.

use crate::flow::event::AssistedStep;
use crate::guest::ssh::SshSession;

use super::guest::{has_program, run, succeed};

/// The kernel's device for `disk` (a `/dev/disk/by-id` or `by-path` link, or the device
/// itself). The agent resolves it since coreos-installer names a busy disk confusingly when
/// given a link (its ops.go EvaluateDiskSymlink, after coreos-installer issue 512).
pub fn resolve(s: &SshSession, disk: &str) -> Result<String, String> {
    let out = succeed(s, &["readlink", "-f", "--", disk])?;
    match out.trim() {
        "" => Err(format!("`readlink -f {disk}` printed nothing")),
        device => Ok(device.to_string()),
    }
}

/// Whether `path` is `device` or one of its partitions (`/dev/vda1`, `/dev/nvme0n1p2`). The
/// agent matches a prefix followed by digits; the exact form keeps `/dev/vdab` out.
pub fn on_device(path: &str, device: &str) -> bool {
    let Some(rest) = path.strip_prefix(device) else {
        return false;
    };
    let digits = rest.strip_prefix('p').unwrap_or(rest);
    rest.is_empty() || (!digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()))
}

/// The volume groups with a physical volume on one of `devices` (or their partitions), from
/// `vgs --noheadings -o vg_name,pv_name`, each once, in order.
pub fn volume_groups(vgs: &str, devices: &[String]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for line in vgs.lines() {
        let mut words = line.split_whitespace();
        let (Some(vg), Some(pv)) = (words.next(), words.next()) else {
            continue;
        };
        if devices.iter().any(|d| on_device(pv, d)) && !out.iter().any(|v| v == vg) {
            out.push(vg.to_string());
        }
    }
    out
}

/// The physical volumes on one of `devices`, from `pvs --noheadings -o pv_name`.
pub fn physical_volumes(pvs: &str, devices: &[String]) -> Vec<String> {
    pvs.lines()
        .map(str::trim)
        .filter(|pv| devices.iter().any(|d| on_device(pv, d)))
        .map(str::to_string)
        .collect()
}

/// An MD array with members on the device: its name and those members.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Array {
    pub name: String,
    pub members: Vec<String>,
}

/// The arrays using `device`, from `mdadm -v --query --detail --scan`: an `ARRAY <name> ...`
/// line, then an indented `devices=<a>,<b>` line.
pub fn arrays(scan: &str, device: &str) -> Vec<Array> {
    let mut out = Vec::new();
    let mut name: Option<&str> = None;
    for line in scan.lines().map(str::trim) {
        if let Some(rest) = line.strip_prefix("ARRAY ") {
            name = rest.split_whitespace().next();
        } else if let (Some(n), Some(list)) = (name, line.strip_prefix("devices=")) {
            let members: Vec<String> = list
                .split(',')
                .filter(|m| on_device(m, device))
                .map(str::to_string)
                .collect();
            if !members.is_empty() {
                out.push(Array {
                    name: n.to_string(),
                    members,
                });
            }
            name = None;
        }
    }
    out
}

/// The partitions of the device, from `lsblk -nlpo NAME,TYPE <device>` (which also lists
/// what sits on them: LVM volumes, arrays).
pub fn partitions(lsblk: &str, device: &str) -> Vec<String> {
    lsblk
        .lines()
        .filter_map(|l| {
            let mut w = l.split_whitespace();
            match (w.next(), w.next()) {
                (Some(name), Some("part")) if on_device(name, device) => Some(name.to_string()),
                _ => None,
            }
        })
        .collect()
}

/// Cleans `device` step by step, each step's result reported through `say`.
pub fn clean(s: &SshSession, device: &str, say: &dyn Fn(AssistedStep)) {
    let report = |step: &str, r: Result<String, String>, ok: fn(String) -> AssistedStep| {
        say(match r {
            Ok(detail) => ok(detail),
            Err(detail) => AssistedStep::CleanupFailed {
                what: step.to_string(),
                detail,
            },
        })
    };
    // The arrays are looked up first: volume groups on them go before they are stopped.
    let found = find_arrays(s, device);
    let array_names: Vec<String> = match &found {
        Ok(Some(a)) => a.iter().map(|a| a.name.clone()).collect(),
        _ => Vec::new(),
    };
    report("LVM", clean_lvm(s, device, &array_names), |detail| {
        AssistedStep::LvmCleaned { detail }
    });
    report("MD RAID", clean_raid(s, device, found), |detail| {
        AssistedStep::RaidCleaned { detail }
    });
    report("wipefs", wipe(s, device), |detail| {
        AssistedStep::SignaturesWiped { detail }
    });
}

/// The arrays using the device; None when mdadm is not on the live system.
fn find_arrays(s: &SshSession, device: &str) -> Result<Option<Vec<Array>>, String> {
    if !has_program(s, "mdadm")? {
        return Ok(None);
    }
    let ran = run(s, &["mdadm", "-v", "--query", "--detail", "--scan"])?;
    // With no array at all mdadm prints nothing and may exit non-zero.
    Ok(Some(arrays(&ran.output, device)))
}

/// Deactivates and removes the volume groups with a physical volume on the device (or on an
/// array using it), then removes its physical volumes (the agent's RemoveVG, RemovePV).
fn clean_lvm(s: &SshSession, device: &str, arrays: &[String]) -> Result<String, String> {
    if !has_program(s, "vgs")? {
        return Ok(format!(
            "lvm2's tools are not on the live system: no LVM metadata looked for on {device}"
        ));
    }
    let mut devices = vec![device.to_string()];
    devices.extend(arrays.iter().cloned());
    let vgs = succeed(s, &["vgs", "--noheadings", "-o", "vg_name,pv_name"])?;
    let groups = volume_groups(&vgs, &devices);
    for vg in &groups {
        succeed(s, &["vgchange", "-an", vg])?;
        succeed(s, &["vgremove", "-f", "-y", vg])?;
    }
    let pvs = succeed(s, &["pvs", "--noheadings", "-o", "pv_name"])?;
    let volumes = physical_volumes(&pvs, &devices);
    for pv in &volumes {
        succeed(s, &["pvremove", "-ff", "-y", pv])?;
    }
    Ok(match (groups.is_empty(), volumes.is_empty()) {
        (true, true) => format!("no LVM volume group or physical volume on {device}"),
        _ => format!(
            "LVM on {device}: volume groups [{}] deactivated and removed, physical volumes [{}] removed",
            groups.join(", "),
            volumes.join(", ")
        ),
    })
}

/// Stops each array using the device and zeroes the superblocks of its members there (the
/// agent's CleanRaidMembership).
fn clean_raid(
    s: &SshSession,
    device: &str,
    found: Result<Option<Vec<Array>>, String>,
) -> Result<String, String> {
    let Some(arrays) = found? else {
        return Ok(format!(
            "mdadm is not on the live system: no MD RAID membership looked for on {device}"
        ));
    };
    if arrays.is_empty() {
        return Ok(format!("no MD RAID array uses {device}"));
    }
    let mut done = Vec::new();
    for a in &arrays {
        succeed(s, &["mdadm", "--stop", &a.name])?;
        for m in &a.members {
            succeed(s, &["mdadm", "--zero-superblock", m])?;
        }
        done.push(format!("{} (members {})", a.name, a.members.join(", ")));
    }
    Ok(format!(
        "MD RAID on {device}: stopped {} and zeroed their superblocks",
        done.join(", ")
    ))
}

/// Erases the signatures of the device's partitions, then of the device (its partition
/// table). The agent wipes the device only; its partitions first, so that an old signature
/// inside one is gone too, not merely out of reach of the new partition table.
fn wipe(s: &SshSession, device: &str) -> Result<String, String> {
    let lsblk = succeed(s, &["lsblk", "-nlpo", "NAME,TYPE", device])?;
    let mut targets = partitions(&lsblk, device);
    targets.push(device.to_string());
    let mut erased = 0;
    for t in &targets {
        // wipefs prints one line per signature it erased.
        erased += succeed(s, &["wipefs", "-a", "-f", t])?.lines().count();
    }
    Ok(format!(
        "wipefs erased {erased} signature(s) from {}",
        targets.join(", ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_partition_is_on_its_device_and_a_longer_name_is_not() {
        assert!(on_device("/dev/vda", "/dev/vda"));
        assert!(on_device("/dev/vda2", "/dev/vda"));
        assert!(on_device("/dev/nvme0n1p3", "/dev/nvme0n1"));
        assert!(!on_device("/dev/vdab", "/dev/vda"));
        assert!(!on_device("/dev/vdb1", "/dev/vda"));
        assert!(!on_device("/dev/vdap", "/dev/vda"));
    }

    #[test]
    fn volume_groups_and_volumes_of_the_device_only() {
        let vgs = "  old-vg   /dev/vda1\n  old-vg   /dev/vdb1\n  keep     /dev/vdb2\n  onraid   /dev/md127\n";
        let devices = ["/dev/vda".to_string(), "/dev/md127".to_string()];
        assert_eq!(volume_groups(vgs, &devices), ["old-vg", "onraid"]);
        let pvs = "  /dev/vda1\n  /dev/vdb1\n  /dev/md127\n";
        assert_eq!(
            physical_volumes(pvs, &devices[..1]),
            ["/dev/vda1".to_string()]
        );
        assert!(volume_groups("", &devices).is_empty());
    }

    #[test]
    fn arrays_with_members_on_the_device_and_only_those_members() {
        let scan = "ARRAY /dev/md/stale level=raid1 num-devices=2 metadata=1.2 name=any:stale UUID=1:2:3:4\n   devices=/dev/vda2,/dev/vdb2\nARRAY /dev/md1 level=raid1 num-devices=1 metadata=1.2 UUID=5:6:7:8\n   devices=/dev/vdb3\n";
        assert_eq!(
            arrays(scan, "/dev/vda"),
            [Array {
                name: "/dev/md/stale".into(),
                members: vec!["/dev/vda2".into()]
            }]
        );
        assert!(arrays(scan, "/dev/vdc").is_empty());
        assert!(arrays("", "/dev/vda").is_empty());
    }

    #[test]
    fn partitions_are_the_part_lines_of_the_device() {
        let lsblk = "/dev/vda disk\n/dev/vda1 part\n/dev/mapper/old--vg-lv lvm\n/dev/vda2 part\n/dev/md127 raid1\n";
        assert_eq!(partitions(lsblk, "/dev/vda"), ["/dev/vda1", "/dev/vda2"]);
    }
}
