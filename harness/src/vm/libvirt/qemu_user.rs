//! Giving a local libvirtd's QEMU user a file libvirt does not relabel, without opening it to
//! everyone. libvirt runs QEMU as its own user (`libvirt-qemu` on Debian and Ubuntu, `qemu` on
//! Fedora and RHEL) and, with its default `dynamic_ownership`, chowns to that user the disks and
//! the ISO its domain XML names while the domain runs. NVMe disks reach QEMU through the
//! command-line passthrough (`<qemu:commandline>`, see `domain`), which libvirt does not
//! relabel: the harness gives that one user read and write on them itself, and nobody else.
//!
//! As root it does what libvirt does (chown to the user). Otherwise it adds that user to the
//! file's POSIX ACL (a file's owner may, on every filesystem with ACLs: ext4, XFS, btrfs,
//! tmpfs); `ls -l` then shows the ACL's mask in the group bits (`-rw-rw----+`) while the
//! owning group itself has nothing. A group would not do: the harness's user is rarely in
//! the QEMU user's group, and chgrp to a group one is not in is refused.

use std::ffi::{CStr, CString};
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// The user a local libvirtd runs QEMU as.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QemuUser {
    pub name: String,
    pub uid: u32,
    pub gid: u32,
}

/// Where libvirt's QEMU driver is configured (root-only readable on some distributions).
const QEMU_CONF: &str = "/etc/libvirt/qemu.conf";

/// The distributions' defaults, in the order they are tried when qemu.conf does not say.
const DEFAULT_USERS: [&str; 2] = ["libvirt-qemu", "qemu"];

/// `user = "..."` of a qemu.conf, if set (a `+N` is a uid).
pub fn configured_user(qemu_conf: &str) -> Option<String> {
    qemu_conf.lines().find_map(|l| {
        let (key, value) = l.split_once('=')?;
        if key.trim() != "user" || l.trim_start().starts_with('#') {
            return None;
        }
        let v = value.trim().trim_matches('"').trim();
        (!v.is_empty()).then(|| v.to_string())
    })
}

/// The QEMU user: qemu.conf's when readable, else the first default user this host has.
pub fn qemu_user() -> Result<QemuUser, String> {
    let configured = std::fs::read_to_string(QEMU_CONF)
        .ok()
        .and_then(|t| configured_user(&t));
    let candidates: Vec<String> = match configured {
        Some(u) => vec![u],
        None => DEFAULT_USERS.iter().map(|u| u.to_string()).collect(),
    };
    candidates
        .iter()
        .find_map(|u| lookup(u))
        .ok_or_else(|| {
            format!(
                "none of the users libvirt runs QEMU as ({}) exists on this host ({QEMU_CONF} says which)",
                candidates.join(", ")
            )
        })
}

/// A user by name (or `+uid`), from the user database.
fn lookup(user: &str) -> Option<QemuUser> {
    if let Some(uid) = user.strip_prefix('+').and_then(|n| n.parse::<u32>().ok()) {
        // libvirt's `+N` form: the group is then the user's own.
        let pw = passwd(|buf, pwd, res| unsafe {
            libc::getpwuid_r(uid, pwd, buf.as_mut_ptr(), buf.len(), res)
        })?;
        return Some(QemuUser {
            name: user.to_string(),
            uid,
            gid: pw.1,
        });
    }
    let name = CString::new(user).ok()?;
    let (uid, gid) = passwd(|buf, pwd, res| unsafe {
        libc::getpwnam_r(name.as_ptr(), pwd, buf.as_mut_ptr(), buf.len(), res)
    })?;
    Some(QemuUser {
        name: user.to_string(),
        uid,
        gid,
    })
}

/// Runs a `getpw*_r` call; the entry's uid and gid.
fn passwd(
    call: impl Fn(&mut [libc::c_char], *mut libc::passwd, *mut *mut libc::passwd) -> libc::c_int,
) -> Option<(u32, u32)> {
    let mut buf = vec![0 as libc::c_char; 16 * 1024];
    // SAFETY: a zeroed passwd is a valid value for the call to fill in.
    let mut pwd: libc::passwd = unsafe { std::mem::zeroed() };
    let mut res: *mut libc::passwd = std::ptr::null_mut();
    if call(&mut buf, &mut pwd, &mut res) != 0 || res.is_null() {
        return None;
    }
    Some((pwd.pw_uid, pwd.pw_gid))
}

/// Lets `user` read and write `path`, and nobody else but its owner.
pub fn grant(path: &Path, user: &QemuUser) -> io::Result<()> {
    crate::util::private::set_mode(path, crate::util::private::PRIVATE_FILE)?;
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        std::os::unix::fs::chown(path, Some(user.uid), Some(user.gid))
    } else {
        grant_by_acl(path, user.uid)
    }
}

/// The ACL of an owner-only file with `uid` added for read and write: owner rw, that user rw,
/// the owning group nothing, others nothing, mask rw.
pub fn acl_rw_for(uid: u32) -> Vec<u8> {
    // linux/posix_acl_xattr.h: a version, then (tag, perm, id) entries sorted by tag.
    const VERSION: u32 = 2;
    const USER_OBJ: u16 = 0x01;
    const USER: u16 = 0x02;
    const GROUP_OBJ: u16 = 0x04;
    const MASK: u16 = 0x10;
    const OTHER: u16 = 0x20;
    const UNDEFINED_ID: u32 = u32::MAX;
    const RW: u16 = 6;
    let mut acl = VERSION.to_le_bytes().to_vec();
    for (tag, perm, id) in [
        (USER_OBJ, RW, UNDEFINED_ID),
        (USER, RW, uid),
        (GROUP_OBJ, 0, UNDEFINED_ID),
        (MASK, RW, UNDEFINED_ID),
        (OTHER, 0, UNDEFINED_ID),
    ] {
        acl.extend_from_slice(&tag.to_le_bytes());
        acl.extend_from_slice(&perm.to_le_bytes());
        acl.extend_from_slice(&id.to_le_bytes());
    }
    acl
}

const ACL_XATTR: &CStr = c"system.posix_acl_access";

/// Sets [`acl_rw_for`] as `path`'s access ACL (which also sets its group bits to the mask).
pub fn grant_by_acl(path: &Path, uid: u32) -> io::Result<()> {
    let c_path = CString::new(path.as_os_str().as_bytes())?;
    let acl = acl_rw_for(uid);
    // SAFETY: both strings are NUL-terminated and the value is `acl.len()` bytes.
    let rc = unsafe {
        libc::setxattr(
            c_path.as_ptr(),
            ACL_XATTR.as_ptr(),
            acl.as_ptr().cast(),
            acl.len(),
            0,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn qemu_conf_says_the_user_when_it_is_set() {
        assert_eq!(configured_user("#user = \"libvirt-qemu\"\n"), None);
        assert_eq!(
            configured_user("# x\nuser = \"qemu\"\ngroup = \"qemu\"\n").as_deref(),
            Some("qemu")
        );
        assert_eq!(configured_user("user=\"+107\"").as_deref(), Some("+107"));
        assert_eq!(configured_user("username = \"x\"\n"), None);
    }

    #[test]
    fn users_are_found_by_name_and_by_uid() {
        let root = lookup("root").unwrap();
        assert_eq!((root.uid, root.gid), (0, 0));
        assert_eq!(lookup("+0").unwrap().uid, 0);
        assert_eq!(lookup("no-such-user-sno-harness"), None);
    }

    fn read_acl(path: &Path) -> Vec<u8> {
        let c_path = CString::new(path.as_os_str().as_bytes()).unwrap();
        let mut buf = vec![0u8; 256];
        // SAFETY: NUL-terminated strings; `buf` is `buf.len()` writable bytes.
        let n = unsafe {
            libc::getxattr(
                c_path.as_ptr(),
                ACL_XATTR.as_ptr(),
                buf.as_mut_ptr().cast(),
                buf.len(),
            )
        };
        assert!(n > 0, "{}", io::Error::last_os_error());
        buf.truncate(n as usize);
        buf
    }

    #[test]
    fn the_acl_gives_that_user_alone_read_and_write() {
        let d = tempfile::tempdir().unwrap();
        let disk = d.path().join("nvme.qcow2");
        std::fs::write(&disk, "").unwrap();
        crate::util::private::set_mode(&disk, 0o600).unwrap();
        grant_by_acl(&disk, 65534).unwrap();
        assert_eq!(read_acl(&disk), acl_rw_for(65534));
        let mode = std::fs::metadata(&disk).unwrap().permissions().mode() & 0o777;
        // The group bits show the mask; others have nothing.
        assert_eq!(mode, 0o660);
        assert_eq!(acl_rw_for(65534).len(), 4 + 5 * 8);
    }

    #[test]
    fn grant_never_opens_the_file_to_others() {
        let d = tempfile::tempdir().unwrap();
        let disk = d.path().join("nvme.qcow2");
        std::fs::write(&disk, "").unwrap();
        crate::util::private::set_mode(&disk, 0o666).unwrap();
        let me = lookup(&format!("+{}", unsafe { libc::geteuid() })).unwrap();
        grant(&disk, &me).unwrap();
        let mode = std::fs::metadata(&disk).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode & 0o007, 0, "{mode:o}");
    }
}
