use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt};

use super::*;

fn mode(p: &Path) -> u32 {
    fs::symlink_metadata(p).unwrap().permissions().mode() & 0o777
}

fn fifo(p: &Path) {
    rustix::fs::mknodat(
        rustix::fs::CWD,
        p,
        FileType::Fifo,
        Mode::from_raw_mode(0o600),
        0,
    )
    .unwrap();
}

/// A permutation directory with evidence, and with everything a copy must leave out.
fn shard_run(root: &Path, outside: &Path) -> PathBuf {
    let run = root.join("a.virtio");
    fs::create_dir_all(run.join("gather/live")).unwrap();
    fs::write(run.join("result.json"), "{}").unwrap();
    fs::write(run.join("gather/live/journal.txt"), "journal").unwrap();
    fs::set_permissions(run.join("gather"), fs::Permissions::from_mode(0o700)).unwrap();
    fs::write(run.join("install-config.yaml"), "redacted").unwrap();
    fs::set_permissions(
        run.join("install-config.yaml"),
        fs::Permissions::from_mode(0o600),
    )
    .unwrap();
    fs::create_dir_all(run.join("disks")).unwrap();
    fs::write(run.join("disks/install.qcow2"), vec![0u8; 1000]).unwrap();
    fs::create_dir_all(run.join("assets/auth")).unwrap();
    fs::write(run.join("assets/auth/kubeconfig"), "secret").unwrap();
    fs::write(run.join("live.ISO"), vec![0u8; 10]).unwrap();
    fs::write(run.join("OVMF_VARS.fd"), "").unwrap();
    fs::write(run.join("rootfs.img"), "").unwrap();
    fs::write(run.join("run.lock"), "").unwrap();
    std::os::unix::fs::symlink(outside, run.join("gather/escape")).unwrap();
    std::os::unix::fs::symlink("result.json", run.join("inside")).unwrap();
    fifo(&run.join("console.fifo"));
    let _sock = std::os::unix::net::UnixListener::bind(run.join("qmp.sock")).unwrap();
    run
}

#[test]
fn evidence_is_copied_and_links_specials_images_and_assets_are_left_out_and_named() {
    let d = tempfile::tempdir().unwrap();
    let outside = d.path().join("outside");
    fs::create_dir(&outside).unwrap();
    let run = shard_run(d.path(), &outside);
    let out = d.path().join("out");
    fs::create_dir(&out).unwrap();
    let mut skipped = copy_run_dir(&run, &out, "a.virtio").unwrap();
    skipped.sort_by(|a, b| (a.why, &a.path).cmp(&(b.why, &b.path)));
    let got: Vec<(&str, Why, u64)> = skipped
        .iter()
        .map(|s| (s.path.to_str().unwrap(), s.why, s.bytes))
        .collect();
    assert_eq!(
        got,
        [
            ("a.virtio/OVMF_VARS.fd", Why::Withheld, 0),
            ("a.virtio/assets", Why::Withheld, 6),
            ("a.virtio/disks", Why::Withheld, 1000),
            ("a.virtio/live.ISO", Why::Withheld, 10),
            ("a.virtio/rootfs.img", Why::Withheld, 0),
            ("a.virtio/run.lock", Why::Withheld, 0),
            ("a.virtio/gather/escape", Why::Link, 0),
            ("a.virtio/inside", Why::Link, 0),
            ("a.virtio/console.fifo", Why::Special, 0),
            ("a.virtio/qmp.sock", Why::Special, 0),
        ]
    );
    let copy = out.join("a.virtio");
    assert_eq!(fs::read_to_string(copy.join("result.json")).unwrap(), "{}");
    assert_eq!(
        fs::read_to_string(copy.join("gather/live/journal.txt")).unwrap(),
        "journal"
    );
    assert_eq!(mode(&copy.join("install-config.yaml")), 0o600);
    assert_eq!(mode(&copy.join("gather")), 0o700);
    assert_eq!(mode(&copy), mode(&run));
    // A shard's directory the owner could not write is still the owner's in the copy.
    fs::set_permissions(run.join("gather/live"), fs::Permissions::from_mode(0o500)).unwrap();
    let again = d.path().join("again");
    fs::create_dir(&again).unwrap();
    copy_run_dir(&run, &again, "a.virtio").unwrap();
    assert_eq!(mode(&again.join("a.virtio/gather/live")), 0o700);
    fs::remove_dir_all(&again).unwrap();
    let mut names: Vec<String> = fs::read_dir(&copy)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    assert_eq!(names, ["gather", "install-config.yaml", "result.json"]);
    assert_eq!(fs::read_dir(&outside).unwrap().count(), 0);
}

/// An empty permutation directory `run` and an empty merged directory `out`.
fn run_and_out() -> (tempfile::TempDir, PathBuf, PathBuf) {
    let d = tempfile::tempdir().unwrap();
    let (run, out) = (d.path().join("run"), d.path().join("out"));
    fs::create_dir(&run).unwrap();
    fs::create_dir(&out).unwrap();
    (d, run, out)
}

#[test]
fn a_sparse_file_stays_sparse() {
    let (_d, run, out) = run_and_out();
    let big = fs::File::create(run.join("serial.log")).unwrap();
    big.set_len(256 << 20).unwrap();
    big.write_all_at(b"data in the middle", 100 << 20).unwrap();
    drop(big);
    assert_eq!(copy_run_dir(&run, &out, "run").unwrap(), []);
    let copy = out.join("run/serial.log");
    let meta = fs::metadata(&copy).unwrap();
    assert_eq!(meta.len(), 256 << 20);
    assert!(
        meta.blocks() * 512 < 4 << 20,
        "{} bytes allocated for 18 bytes of data",
        meta.blocks() * 512
    );
    let mut buf = [0u8; 18];
    fs::File::open(&copy)
        .unwrap()
        .read_exact_at(&mut buf, 100 << 20)
        .unwrap();
    assert_eq!(&buf, b"data in the middle");
}

#[test]
fn extents_are_copied_whole_with_a_trailing_hole() {
    let d = tempfile::tempdir().unwrap();
    let (a, b) = (d.path().join("a"), d.path().join("b"));
    let from = fs::File::create(&a).unwrap();
    let data: Vec<u8> = (0..300_000u32).map(|i| i as u8).collect();
    from.write_all_at(&data, 0).unwrap();
    from.set_len(8 << 20).unwrap();
    let to = fs::File::create(&b).unwrap();
    copy_extents(&fs::File::open(&a).unwrap(), &to, 8 << 20).unwrap();
    assert_eq!(fs::read(&a).unwrap(), fs::read(&b).unwrap());
}

#[test]
fn a_link_planted_at_the_destination_is_not_followed() {
    let (d, run, out) = run_and_out();
    fs::write(run.join("authorized_keys"), "attacker's key").unwrap();
    let victim = d.path().join("ssh");
    fs::create_dir(&victim).unwrap();
    std::os::unix::fs::symlink(&victim, out.join("run")).unwrap();
    let e = copy_run_dir(&run, &out, "run").unwrap_err();
    assert_eq!(e.source.kind(), io::ErrorKind::AlreadyExists, "{e}");
    assert_eq!(fs::read_dir(&victim).unwrap().count(), 0);
}

#[test]
fn a_linked_permutation_directory_is_not_followed() {
    let d = tempfile::tempdir().unwrap();
    let secrets = d.path().join("secrets");
    fs::create_dir(&secrets).unwrap();
    fs::write(secrets.join("id_ed25519"), "key").unwrap();
    let run = d.path().join("run");
    std::os::unix::fs::symlink(&secrets, &run).unwrap();
    let out = d.path().join("out");
    fs::create_dir(&out).unwrap();
    let e = copy_run_dir(&run, &out, "run").unwrap_err();
    assert!(e.to_string().contains("run"), "{e}");
    assert!(!out.join("run/id_ed25519").exists());
}

#[test]
fn directories_too_deep_are_left_out() {
    let (_d, run, out) = run_and_out();
    let mut deep = run.clone();
    for _ in 0..=MAX_DEPTH {
        deep.push("d");
    }
    fs::create_dir_all(&deep).unwrap();
    let skipped = copy_run_dir(&run, &out, "run").unwrap();
    assert_eq!(skipped.len(), 1, "{skipped:?}");
    assert_eq!(skipped[0].why, Why::TooDeep);
    assert_eq!(skipped[0].path.components().count(), MAX_DEPTH + 2);
}

#[test]
fn what_was_left_out_is_counted_and_links_are_named() {
    let s = |path: &str, why, bytes| Skipped {
        path: path.into(),
        why,
        bytes,
    };
    assert!(left_out_lines(&[]).is_empty());
    let lines = left_out_lines(&[
        s("a/disks", Why::Withheld, 3 << 30),
        s("a/live.iso", Why::Withheld, 1 << 29),
        s("a/x", Why::Link, 0),
        s("a/qmp.sock", Why::Special, 0),
    ]);
    assert_eq!(
        lines,
        [
            "left out of the copies: 2 withheld (3.5 GiB: disk images, ISOs, firmware, locks, disks/ and assets/ directories); 1 symbolic link; 1 socket, FIFO or device",
            "not copied, a symbolic link: a/x",
        ]
    );
    let many: Vec<Skipped> = (0..25)
        .map(|i| s(&format!("a/{i}"), Why::Link, 0))
        .collect();
    let lines = left_out_lines(&many);
    assert_eq!(lines.len(), 1 + LISTED + 1);
    assert_eq!(lines.last().unwrap(), "and 5 more not copied");
}
