//! Tests of `storage`.

//! Against the host's libvirtd (`qemu:///system`), in a temporary base directory.

use super::*;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::time::{SystemTime, UNIX_EPOCH};

use rand_core::RngCore;

const MIB: u64 = 1 << 20;

fn connect() -> Connect {
    crate::vm::libvirt::runtime::connect(crate::vm::libvirt::DEFAULT_URI)
        .unwrap_or_else(|e| panic!("these tests need the host's libvirtd: {e}"))
}

fn run_id(what: &str) -> String {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .subsec_nanos();
    format!("test-{what}-{}-{nanos}", std::process::id())
}

/// A base directory libvirtd (root) and its QEMU user can use.
fn base_dir() -> tempfile::TempDir {
    let dir = tempfile::Builder::new()
        .prefix("sno-storage-test")
        .tempdir()
        .unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    dir
}

fn pool_names(conn: &Connect) -> Vec<String> {
    conn.list_all_storage_pools(0)
        .unwrap()
        .iter()
        .map(|p| p.name().unwrap())
        .collect()
}

/// Whatever a failed test leaves of pool `name` goes (the directory goes with the base).
struct Guard {
    conn: Connect,
    name: String,
}

impl Drop for Guard {
    fn drop(&mut self) {
        if let Ok(pool) = self.conn.lookup_storage_pool_by_name(&self.name) {
            if pool.is_active().unwrap_or(false) {
                let _ = pool.destroy();
            }
            if pool.is_persistent().unwrap_or(false) {
                let _ = pool.undefine();
            }
        }
    }
}

fn random_file(path: &Path, len: usize) -> Vec<u8> {
    let mut data = vec![0u8; len];
    rand_core::OsRng.fill_bytes(&mut data);
    std::fs::write(path, &data).unwrap();
    data
}

#[test]
fn a_run_pool_holds_volumes_moves_bytes_both_ways_and_goes_away() {
    let conn = connect();
    let base = base_dir();
    let local = tempfile::tempdir().unwrap();
    let id = run_id("roundtrip");
    let _guard = Guard {
        conn: connect(),
        name: format!("sno-{id}"),
    };
    let pool = RunPool::create(&conn, &id, &base.path().display().to_string()).unwrap();
    let dir = base.path().join(format!("sno-{id}"));
    assert_eq!(pool.name(), format!("sno-{id}"));
    assert_eq!(Path::new(pool.dir()), dir);
    assert!(dir.is_dir());
    assert!(leftover_pools(&conn).contains(&format!("sno-{id}")));
    let transient = conn.lookup_storage_pool_by_name(pool.name()).unwrap();
    assert!(!transient.is_persistent().unwrap());

    // A sparse raw volume of 64 MiB, libvirt's QEMU user's alone, in a directory others may
    // only traverse.
    let raw = pool
        .create_volume("disk0.raw", 64 * MIB, VolumeFormat::Raw)
        .unwrap();
    assert_eq!(raw, dir.join("disk0.raw"));
    assert_eq!(pool.path("disk0.raw").unwrap(), raw);
    let meta = std::fs::metadata(&raw).unwrap();
    assert_eq!(meta.len(), 64 * MIB);
    assert_eq!(meta.permissions().mode() & 0o777, 0o600);
    let qemu = qemu_owner(&conn.capabilities().unwrap()).expect("the host's QEMU user");
    assert_eq!((meta.uid(), meta.gid()), qemu);
    assert_eq!(
        std::fs::metadata(&dir).unwrap().permissions().mode() & 0o777,
        0o711
    );
    let info = pool.volume("disk0.raw").unwrap().info().unwrap();
    assert_eq!(info.capacity, 64 * MIB);
    // A qcow2 one: libvirt formats it (qemu-img).
    let qcow = pool
        .create_volume("disk1.qcow2", 1 << 30, VolumeFormat::Qcow2)
        .unwrap();
    let mut magic = [0u8; 4];
    File::open(&qcow).unwrap().read_exact(&mut magic).unwrap();
    assert_eq!(&magic, b"QFI\xfb");
    assert_eq!(
        pool.volume("disk1.qcow2").unwrap().info().unwrap().capacity,
        1 << 30
    );

    // Up: 5 MiB (and a bit, not a whole chunk) at the start of the raw volume.
    let up = local.path().join("up.bin");
    let data = random_file(&up, (5 * MIB + 4097) as usize);
    assert_eq!(pool.upload("disk0.raw", &up).unwrap(), data.len() as u64);
    let on_disk = std::fs::read(&raw).unwrap();
    assert_eq!(on_disk.len() as u64, 64 * MIB);
    assert!(
        on_disk[..data.len()] == data[..],
        "the uploaded bytes differ"
    );
    assert!(on_disk[data.len()..].iter().all(|&b| b == 0));

    // Down: the whole volume, its empty tail a hole again.
    let down = local.path().join("down.raw");
    assert_eq!(pool.download("disk0.raw", &down).unwrap(), 64 * MIB);
    let back = std::fs::read(&down).unwrap();
    assert!(back == on_disk, "the downloaded bytes differ");
    let allocated = std::fs::metadata(&down).unwrap().blocks() * 512;
    assert!(
        allocated < 16 * MIB,
        "the download is not sparse: {allocated} bytes"
    );

    // Too big for the volume, bad names, unknown volumes: errors, not panics.
    let big = local.path().join("big.bin");
    random_file(&big, (64 * MIB + 1) as usize);
    let err = pool.upload("disk0.raw", &big).unwrap_err();
    assert!(matches!(err, StorageError::TooLarge { .. }), "{err}");
    for bad in ["", "../x", "a/b", ".hidden", "sp ace"] {
        let err = pool.create_volume(bad, MIB, VolumeFormat::Raw).unwrap_err();
        assert!(matches!(err, StorageError::Name { .. }), "{bad:?}: {err}");
    }
    let err = pool.path("missing.raw").unwrap_err();
    assert!(err.to_string().contains("missing.raw"), "{err}");

    pool.remove().unwrap();
    assert!(!pool_names(&conn).contains(&format!("sno-{id}")));
    assert!(!dir.exists(), "{} is still there", dir.display());
}

#[test]
fn a_second_pool_for_the_same_run_is_refused_and_leaves_the_first_alone() {
    let conn = connect();
    let base = base_dir();
    let base_str = base.path().display().to_string();
    let id = run_id("twice");
    let _guard = Guard {
        conn: connect(),
        name: format!("sno-{id}"),
    };
    let first = RunPool::create(&conn, &id, &base_str).unwrap();
    let disk = first
        .create_volume("disk.raw", MIB, VolumeFormat::Raw)
        .unwrap();
    let err = RunPool::create(&conn, &id, &base_str)
        .err()
        .expect("refused");
    assert!(
        matches!(err, StorageError::Exists { ref name } if *name == format!("sno-{id}")),
        "{err}"
    );
    // Elsewhere, the same name clashes too.
    let other_base = base_dir();
    let err = RunPool::create(&conn, &id, &other_base.path().display().to_string())
        .err()
        .expect("refused");
    assert!(matches!(err, StorageError::Exists { .. }), "{err}");
    let pool = conn.lookup_storage_pool_by_name(first.name()).unwrap();
    assert!(pool.is_active().unwrap());
    assert!(disk.exists());
    assert_eq!(first.path("disk.raw").unwrap(), disk);
    // Dropped, not removed: still cleaned up.
    let dir = PathBuf::from(first.dir());
    drop(first);
    assert!(!pool_names(&conn).contains(&format!("sno-{id}")));
    assert!(!dir.exists(), "{} is still there", dir.display());
}

#[test]
fn run_ids_and_bases_are_checked_before_libvirt_sees_them() {
    let conn = connect();
    for bad in ["", "a/b", "../up", ".x", "a b", "ä"] {
        let err = RunPool::create(&conn, bad, "/var/lib/libvirt/images")
            .err()
            .expect(bad);
        assert!(matches!(err, StorageError::Name { .. }), "{bad:?}: {err}");
    }
    let err = RunPool::create(&conn, "ok", "relative/dir")
        .err()
        .expect("relative");
    assert!(matches!(err, StorageError::Base(_)), "{err}");
}

#[test]
fn the_qemu_user_is_read_from_the_dac_security_model() {
    let caps = "<capabilities><host>\n<secmodel>\n<model>none</model>\n<doi>0</doi>\n</secmodel>\n\
        <secmodel>\n<model>dac</model>\n<doi>0</doi>\n\
        <baselabel type='kvm'>+64055:+994</baselabel>\n<baselabel type='qemu'>+64055:+994</baselabel>\n\
        </secmodel>\n</host></capabilities>";
    assert_eq!(qemu_owner(caps), Some((64055, 994)));
    for no_user in [
        "<capabilities><host><secmodel><model>none</model></secmodel></host></capabilities>",
        "<secmodel><model>dac</model><baselabel type='kvm'>+x:+1</baselabel></secmodel>",
        "<secmodel><model>dac</model><baselabel type='kvm'>",
        "",
    ] {
        assert_eq!(qemu_owner(no_user), None, "{no_user}");
    }
}

#[test]
fn pool_and_volume_xml_say_what_libvirt_needs() {
    let pool = pool_xml("sno-r1", "/var/lib/libvirt/images/sno-r1").unwrap();
    assert_eq!(
        pool,
        "<pool type=\"dir\">\n  <name>sno-r1</name>\n  <target>\n    <path>/var/lib/libvirt/images/sno-r1</path>\n    <permissions>\n      <mode>0711</mode>\n    </permissions>\n  </target>\n</pool>\n"
    );
    let vol = volume_xml("live.iso", 123, VolumeFormat::Raw, Some((64055, 64056))).unwrap();
    for needle in [
        "<name>live.iso</name>",
        "<capacity unit=\"bytes\">123</capacity>",
        "<allocation unit=\"bytes\">0</allocation>",
        "<format type=\"raw\"/>",
        "<mode>0600</mode>",
        "<owner>64055</owner>",
        "<group>64056</group>",
    ] {
        assert!(vol.contains(needle), "{needle} missing:\n{vol}");
    }
    // A host without a DAC driver names no QEMU user: the one mode that works there.
    let open = volume_xml("d", 1, VolumeFormat::Raw, None).unwrap();
    assert!(
        open.contains("<mode>0666</mode>") && !open.contains("<owner>"),
        "{open}"
    );
    assert!(volume_xml("d", 1, VolumeFormat::Qcow2, None)
        .unwrap()
        .contains("<format type=\"qcow2\"/>"));
}
