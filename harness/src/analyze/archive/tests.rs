//! Hostile archives, built here with the tar crate (raw headers where its builder refuses a
//! name): each is refused naming the member and what a bundle may hold.

use super::*;
use std::io::Write;

/// A gzip-compressed tar of `(name, type, data)` members; names are written raw.
fn archive(members: &[(&str, tar::EntryType, &[u8])]) -> Vec<u8> {
    let mut b = tar::Builder::new(Vec::new());
    for (name, kind, data) in members {
        let mut h = tar::Header::new_gnu();
        let raw = &mut h.as_old_mut().name;
        raw[..name.len()].copy_from_slice(name.as_bytes());
        h.set_entry_type(*kind);
        h.set_size(data.len() as u64);
        h.set_mode(0o644);
        h.set_mtime(1_795_996_800);
        if matches!(kind, tar::EntryType::Symlink | tar::EntryType::Link) {
            h.set_link_name("/etc/shadow").unwrap();
        }
        h.set_cksum();
        b.append(&h, *data).unwrap();
    }
    gzip(&b.into_inner().unwrap())
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(bytes).unwrap();
    gz.finish().unwrap()
}

fn read_bytes(bytes: &[u8], limits: &Limits) -> Result<Vec<Member>, AnalyzeError> {
    read_from(Path::new("bundle.tar.gz"), bytes, limits, |_| true)
}

const REG: tar::EntryType = tar::EntryType::Regular;

#[test]
fn regular_members_are_kept_in_memory_with_their_time_and_directories_pass() {
    let a = archive(&[
        ("log-bundle-x/", tar::EntryType::Directory, b""),
        ("log-bundle-x/bootstrap/services/bootkube.json", REG, b"[]"),
        ("log-bundle-x/rendered-assets/a.yaml", REG, b"kind: x"),
    ]);
    let kept = read_from(Path::new("b"), &a[..], &Limits::default(), |n| {
        n.ends_with(".json")
    })
    .unwrap();
    assert_eq!(kept.len(), 1);
    assert_eq!(
        kept[0].name,
        "log-bundle-x/bootstrap/services/bootkube.json"
    );
    assert_eq!(kept[0].bytes, b"[]");
    assert_eq!(kept[0].mtime, 1_795_996_800);
}

#[test]
fn each_hostile_member_is_refused_naming_it_and_what_would_be_valid() {
    let cases: [(&str, tar::EntryType, &str); 7] = [
        ("../x", REG, "`..`"),
        ("log-bundle/../../x", REG, "`..`"),
        ("/etc/x", REG, "an absolute name"),
        (
            "log-bundle/link",
            tar::EntryType::Symlink,
            "a symbolic link to \"/etc/shadow\"",
        ),
        (
            "log-bundle/hard",
            tar::EntryType::Link,
            "a hard link to \"/etc/shadow\"",
        ),
        ("log-bundle/tty", tar::EntryType::Char, "a character device"),
        ("log-bundle/pipe", tar::EntryType::Fifo, "a FIFO"),
    ];
    for (name, kind, says) in cases {
        let a = archive(&[("log-bundle/ok.txt", REG, b"fine"), (name, kind, b"")]);
        let e = read_bytes(&a, &Limits::default()).unwrap_err();
        let text = e.to_string();
        assert!(
            matches!(&e, AnalyzeError::Member { member, .. } if member == name),
            "{name}: {text}"
        );
        assert!(text.contains(says), "{name}: {text}");
        assert!(
            text.contains("regular files and directories only"),
            "{name}: {text}"
        );
    }
    // A block device too.
    let a = archive(&[("log-bundle/sda", tar::EntryType::Block, b"")]);
    assert!(read_bytes(&a, &Limits::default())
        .unwrap_err()
        .to_string()
        .contains("a block device"));
}

#[test]
fn a_member_larger_than_its_limit_is_refused_before_it_is_read() {
    let limits = Limits {
        member_bytes: 16,
        ..Limits::default()
    };
    let a = archive(&[("log-bundle/big.log", REG, &[b'x'; 17])]);
    let text = read_bytes(&a, &limits).unwrap_err().to_string();
    assert!(
        text.contains("\"log-bundle/big.log\"")
            && text.contains("declares 17 bytes, more than the limit of 16 bytes"),
        "{text}"
    );
    // Skipped members are held to it as well: the limit is the bundle's, not the reader's.
    let e = read_from(Path::new("b"), &a[..], &limits, |_| false).unwrap_err();
    assert!(matches!(e, AnalyzeError::Member { .. }));
}

#[test]
fn too_many_members_are_refused() {
    let limits = Limits {
        members: 3,
        ..Limits::default()
    };
    let names: Vec<String> = (0..5).map(|i| format!("log-bundle/{i}.txt")).collect();
    let members: Vec<(&str, tar::EntryType, &[u8])> =
        names.iter().map(|n| (n.as_str(), REG, &b"x"[..])).collect();
    let text = read_bytes(&archive(&members), &limits)
        .unwrap_err()
        .to_string();
    assert!(text.contains("more than 3 members"), "{text}");
}

#[test]
fn a_gzip_bomb_stops_at_the_total_limit() {
    // 16 MiB of zeros compress to some 16 KiB; the limit is 1 MiB of decompressed bytes.
    let zeros = vec![0u8; 16 << 20];
    let a = archive(&[("log-bundle/zeros", REG, &zeros)]);
    assert!(a.len() < 1 << 20, "the bomb is small: {} bytes", a.len());
    let limits = Limits {
        total_bytes: 1 << 20,
        ..Limits::default()
    };
    let text = read_from(Path::new("bomb.tar.gz"), &a[..], &limits, |_| false)
        .unwrap_err()
        .to_string();
    assert!(
        text.contains("more than the limit of 1 MiB (a gzip bomb?)"),
        "{text}"
    );
}

#[test]
fn what_is_not_a_gzip_tar_is_said() {
    let text = read_bytes(b"plain text", &Limits::default())
        .unwrap_err()
        .to_string();
    assert!(
        text.contains("not a readable gzip-compressed tar archive"),
        "{text}"
    );
    let text = read_bytes(&gzip(&[7u8; 600]), &Limits::default())
        .unwrap_err()
        .to_string();
    assert!(
        text.contains("not a readable gzip-compressed tar archive"),
        "{text}"
    );
}
