//! What the host must provide for scenarios to run, who needs each thing, and how to install
//! it: the one list that `doctor` and the run's preflight both check, so that the two say the
//! same thing about a missing program. ci/host-programs.txt is the wider list (the fixture
//! build, the tests, the CI scripts); harness/tests/host_programs.rs keeps every entry here
//! named there, with the package its hint installs.

use super::firmware::{Firmware, OVMF_CODE, OVMF_CODE_SECBOOT, OVMF_VARS, OVMF_VARS_MS};

/// Who needs an entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Need {
    /// Every run, on either backend: the live ISO gets its Ignition through
    /// coreos-installer, and qemu-img makes the disks.
    EveryRun,
    /// Runs on the QEMU backend (libvirtd starts QEMU from its own installation).
    QemuBackend,
    /// Scenarios with `firmware = "uefi"`, on either backend.
    Uefi,
    /// Scenarios with `firmware = "uefi-secure"`, on either backend.
    UefiSecure,
    /// Building minisno (images/recipe/build.sh); cached builds run without it.
    FixtureBuild,
    /// Nothing the harness runs: the API tests.
    ApiTests,
}

impl Need {
    /// Who, in words, for a missing file's message.
    pub fn who(self) -> &'static str {
        match self {
            Need::EveryRun => "every run",
            Need::QemuBackend => "the QEMU backend",
            Need::Uefi => "firmware = \"uefi\"",
            Need::UefiSecure => "firmware = \"uefi-secure\"",
            Need::FixtureBuild => "building minisno",
            Need::ApiTests => "the API tests",
        }
    }
}

/// One program (looked up on PATH) or file (an absolute path) of the host.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HostProgram {
    pub name: &'static str,
    pub need: Need,
    /// How to get it, as the messages say it.
    pub install: &'static str,
    /// The arguments that make the program print its version (what `doctor` shows of it);
    /// None for a file, and for a program `doctor` shows by its path.
    pub version_args: Option<&'static [&'static str]>,
}

impl HostProgram {
    /// A file the host must have, rather than a program on PATH.
    pub fn is_file(&self) -> bool {
        self.name.starts_with('/')
    }

    /// What is said of it when it is missing, with how to install it.
    pub fn missing(&self) -> String {
        if self.is_file() {
            format!(
                "{} is missing, and {} needs it ({})",
                self.name,
                self.need.who(),
                self.install
            )
        } else {
            format!("{} is not on PATH ({})", self.name, self.install)
        }
    }
}

/// The QEMU the harness starts on its own backend.
pub const QEMU: &str = "qemu-system-x86_64";

const VERSION: Option<&[&str]> = Some(&["--version"]);

const fn program(
    name: &'static str,
    need: Need,
    install: &'static str,
    version_args: Option<&'static [&'static str]>,
) -> HostProgram {
    HostProgram {
        name,
        need,
        install,
        version_args,
    }
}

const fn fixture_tool(name: &'static str, install: &'static str) -> HostProgram {
    program(name, Need::FixtureBuild, install, None)
}

/// Everything, in the order `doctor` shows it.
pub const ALL: &[HostProgram] = &[
    program(
        QEMU,
        Need::QemuBackend,
        "QEMU is not installed: Debian and Ubuntu: apt-get install qemu-system-x86; \
         Fedora: dnf install qemu-system-x86-core",
        VERSION,
    ),
    program(
        "qemu-img",
        Need::EveryRun,
        "Debian and Ubuntu: apt-get install qemu-utils; Fedora: dnf install qemu-img",
        VERSION,
    ),
    program(
        "coreos-installer",
        Need::EveryRun,
        "cargo install coreos-installer --locked, or ci/install-host-deps.sh",
        VERSION,
    ),
    program(OVMF_CODE, Need::Uefi, "apt-get install ovmf", None),
    program(OVMF_VARS, Need::Uefi, "apt-get install ovmf", None),
    program(
        OVMF_CODE_SECBOOT,
        Need::UefiSecure,
        "apt-get install ovmf",
        None,
    ),
    program(OVMF_VARS_MS, Need::UefiSecure, "apt-get install ovmf", None),
    program(
        "kubectl",
        Need::ApiTests,
        "optional, for the API tests: apt-get install kubernetes-client",
        Some(&["version", "--client"]),
    ),
    fixture_tool(
        "mmdebstrap",
        "apt-get install mmdebstrap, or ci/install-host-deps.sh",
    ),
    fixture_tool(
        "mksquashfs",
        "apt-get install squashfs-tools, or ci/install-host-deps.sh",
    ),
    fixture_tool(
        "grub-mkrescue",
        "apt-get install grub-common, or ci/install-host-deps.sh",
    ),
    fixture_tool(
        "xorriso",
        "apt-get install xorriso, or ci/install-host-deps.sh",
    ),
    fixture_tool(
        "sfdisk",
        "apt-get install fdisk, or ci/install-host-deps.sh",
    ),
    fixture_tool(
        "mkfs.vfat",
        "apt-get install dosfstools, or ci/install-host-deps.sh",
    ),
    fixture_tool(
        "mcopy",
        "apt-get install mtools, or ci/install-host-deps.sh",
    ),
];

/// The entries `need` names, in the list's order.
pub fn needed_by(need: Need) -> impl Iterator<Item = &'static HostProgram> {
    ALL.iter().filter(move |p| p.need == need)
}

/// The firmware files a VM of this firmware boots from (none for SeaBIOS, QEMU's own).
pub fn firmware_files(firmware: Firmware) -> impl Iterator<Item = &'static HostProgram> {
    let need = match firmware {
        Firmware::Bios => None,
        Firmware::Uefi => Some(Need::Uefi),
        Firmware::UefiSecure => Some(Need::UefiSecure),
    };
    ALL.iter().filter(move |p| Some(p.need) == need)
}

/// The programs a run on the QEMU backend (`qemu_backend`) or on libvirt starts itself.
pub fn for_a_run(qemu_backend: bool) -> impl Iterator<Item = &'static HostProgram> {
    ALL.iter().filter(move |p| match p.need {
        Need::EveryRun => true,
        Need::QemuBackend => qemu_backend,
        _ => false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_program_and_a_missing_file_say_how_to_get_them() {
        let img = ALL.iter().find(|p| p.name == "qemu-img").unwrap();
        assert_eq!(
            img.missing(),
            "qemu-img is not on PATH (Debian and Ubuntu: apt-get install qemu-utils; Fedora: dnf install qemu-img)"
        );
        let code = needed_by(Need::Uefi).next().unwrap();
        assert_eq!(
            code.missing(),
            format!(
                "{OVMF_CODE} is missing, and firmware = \"uefi\" needs it (apt-get install ovmf)"
            )
        );
    }

    #[test]
    fn each_firmware_needs_its_own_ovmf_files() {
        let names = |f| firmware_files(f).map(|p| p.name).collect::<Vec<_>>();
        assert!(names(Firmware::Bios).is_empty());
        assert_eq!(names(Firmware::Uefi), [OVMF_CODE, OVMF_VARS]);
        assert_eq!(
            names(Firmware::UefiSecure),
            [OVMF_CODE_SECBOOT, OVMF_VARS_MS]
        );
    }

    #[test]
    fn the_libvirt_backend_starts_no_qemu_of_ours() {
        let names = |qemu| for_a_run(qemu).map(|p| p.name).collect::<Vec<_>>();
        assert_eq!(names(true), [QEMU, "qemu-img", "coreos-installer"]);
        assert_eq!(names(false), ["qemu-img", "coreos-installer"]);
    }

    #[test]
    fn every_name_is_listed_once_and_only_files_are_paths() {
        let mut names: Vec<&str> = ALL.iter().map(|p| p.name).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), ALL.len());
        for p in ALL {
            let firmware = matches!(p.need, Need::Uefi | Need::UefiSecure);
            assert_eq!(p.is_file(), firmware, "{p:?}");
            assert!(!(p.is_file() && p.version_args.is_some()), "{p:?}");
        }
    }
}
