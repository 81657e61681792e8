//! The EFI boot entry the assisted agent creates after the install on UEFI firmware
//! (assisted-installer's `src/ops/ops.go` SetBootOrder): the installed disk's EFI system
//! partition (partition 2, as the CoreOS layout has it) is mounted to find the loader's
//! directory, and `efibootmgr -c` adds an entry labelled "Red Hat Enterprise Linux" for it,
//! first in the boot order. The agent looks for `\EFI\redhat` (then `\EFI\centos`) and names
//! `shimx64.efi` there; minisno's ESP has only the removable-media path
//! `\EFI\BOOT\BOOTX64.EFI`, which RHCOS's has too, so that is the last choice. A failure is
//! reported and the install goes on, as the agent's does.

use crate::guest::ssh::SshSession;

use super::guest::{has_program, succeed};

/// The label the agent gives the entry.
pub const LABEL: &str = "Red Hat Enterprise Linux";
/// The partition the agent names: the ESP of the CoreOS disk layout (and of minisno's).
const ESP_PARTITION: &str = "2";

/// The loader to boot, as efibootmgr wants it (backslashes, from the ESP's root), from the
/// ESP's `.efi` files as `find EFI -iname '*.efi'` lists them (relative, slashes).
pub fn loader(efi_files: &str) -> Option<String> {
    let files: Vec<&str> = efi_files.lines().map(str::trim).collect();
    let pick = |want: &str| files.iter().find(|f| f.eq_ignore_ascii_case(want)).copied();
    let found = pick("EFI/redhat/shimx64.efi")
        .or_else(|| pick("EFI/centos/shimx64.efi"))
        .or_else(|| pick("EFI/BOOT/BOOTX64.EFI"))?;
    Some(format!("\\{}", found.replace('/', "\\")))
}

/// The ESP of `device`: its partition 2, from `lsblk -nlpo NAME,TYPE`.
pub fn esp(lsblk: &str, device: &str) -> Option<String> {
    super::disk::partitions(lsblk, device)
        .into_iter()
        .find(|p| p.strip_prefix(device).map(|r| r.trim_start_matches('p')) == Some(ESP_PARTITION))
}

/// The efibootmgr arguments for the entry.
pub fn efibootmgr_args(device: &str, loader: &str) -> Vec<String> {
    [
        "efibootmgr",
        "-v",
        "-c",
        "-d",
        device,
        "-p",
        ESP_PARTITION,
        "-L",
        LABEL,
        "-l",
        loader,
    ]
    .map(String::from)
    .to_vec()
}

/// What became of the entry.
pub enum Outcome {
    /// Created, with this command.
    Set(String),
    /// Not created, and why.
    NotSet(String),
}

/// Creates the entry for the installed `device`.
pub fn set(s: &SshSession, device: &str) -> Outcome {
    match try_set(s, device) {
        Ok(o) => o,
        Err(why) => Outcome::NotSet(why),
    }
}

fn try_set(s: &SshSession, device: &str) -> Result<Outcome, String> {
    if !has_program(s, "efibootmgr")? {
        return Ok(Outcome::NotSet(
            "efibootmgr is not on the live system".into(),
        ));
    }
    if succeed(s, &["test", "-d", "/sys/firmware/efi"]).is_err() {
        return Ok(Outcome::NotSet(
            "the live system did not boot through UEFI (no /sys/firmware/efi)".into(),
        ));
    }
    let lsblk = succeed(s, &["lsblk", "-nlpo", "NAME,TYPE", device])?;
    let part = esp(&lsblk, device).ok_or_else(|| {
        format!("{device} has no partition {ESP_PARTITION} (the EFI system partition)")
    })?;
    let files = succeed(
        s,
        &[
            "sh",
            "-c",
            // A private read-only mount, gone whatever happens.
            "d=$(mktemp -d) && mount -o ro \"$1\" \"$d\" && (cd \"$d\" && find EFI -maxdepth 2 -iname '*.efi'); r=$?; umount \"$d\" 2>/dev/null; rmdir \"$d\"; exit $r",
            "sh",
            &part,
        ],
    )?;
    let loader = loader(&files).ok_or_else(|| {
        format!(
            "{part} has no EFI/redhat/shimx64.efi, EFI/centos/shimx64.efi or EFI/BOOT/BOOTX64.EFI"
        )
    })?;
    let args = efibootmgr_args(device, &loader);
    let words: Vec<&str> = args.iter().map(String::as_str).collect();
    succeed(s, &words)?;
    Ok(Outcome::Set(words.join(" ")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_agents_directories_come_before_the_removable_media_path() {
        let rhcos = "EFI/BOOT/BOOTX64.EFI\nEFI/BOOT/fbx64.efi\nEFI/redhat/shimx64.efi\nEFI/redhat/grubx64.efi\n";
        assert_eq!(loader(rhcos).as_deref(), Some(r"\EFI\redhat\shimx64.efi"));
        assert_eq!(
            loader("EFI/centos/shimx64.efi\nEFI/BOOT/BOOTX64.EFI").as_deref(),
            Some(r"\EFI\centos\shimx64.efi")
        );
        // minisno's ESP (images/recipe/build.sh).
        assert_eq!(
            loader("EFI/BOOT/BOOTX64.EFI\n").as_deref(),
            Some(r"\EFI\BOOT\BOOTX64.EFI")
        );
        assert_eq!(loader("EFI/other/x.efi\n"), None);
    }

    #[test]
    fn the_esp_is_partition_2() {
        let lsblk =
            "/dev/vda disk\n/dev/vda1 part\n/dev/vda2 part\n/dev/vda3 part\n/dev/vda4 part\n";
        assert_eq!(esp(lsblk, "/dev/vda").as_deref(), Some("/dev/vda2"));
        let nvme = "/dev/nvme0n1 disk\n/dev/nvme0n1p1 part\n/dev/nvme0n1p2 part\n";
        assert_eq!(esp(nvme, "/dev/nvme0n1").as_deref(), Some("/dev/nvme0n1p2"));
        assert_eq!(esp("/dev/vda disk\n/dev/vda1 part\n", "/dev/vda"), None);
    }

    #[test]
    fn the_entry_is_the_agents() {
        assert_eq!(
            efibootmgr_args("/dev/vda", r"\EFI\BOOT\BOOTX64.EFI").join(" "),
            r"efibootmgr -v -c -d /dev/vda -p 2 -L Red Hat Enterprise Linux -l \EFI\BOOT\BOOTX64.EFI"
        );
    }
}
