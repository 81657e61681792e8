//! SHA-256 of files, and the memo stamp that lets a verified file skip the hash until it
//! changes: what the fixture cache and the ISO cache both check before use.

use std::fs::Metadata;
use std::io::{self, Read};

use sha2::{Digest, Sha256};

/// The SHA-256 of everything `r` yields, as lower-case hex.
pub fn sha256_of(mut r: impl Read) -> io::Result<String> {
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = r.read(&mut buf)?;
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
    }
    Ok(hex::encode(h.finalize()))
}

/// What a memo of a verified file keeps: its size and modification time (nanoseconds), a line
/// each. A file truncated or rewritten since gets another stamp, and is hashed again.
pub fn stamp(meta: &Metadata) -> String {
    let mtime = meta
        .modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_nanos());
    format!("{}\n{mtime}\n", meta.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_digest_is_sha256_in_hex() {
        assert_eq!(
            sha256_of(&b"abc"[..]).unwrap(),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    #[test]
    fn a_stamp_changes_with_the_size() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("f");
        std::fs::write(&p, b"1234").unwrap();
        let a = stamp(&std::fs::metadata(&p).unwrap());
        assert!(a.starts_with("4\n"), "{a}");
        std::fs::write(&p, b"12").unwrap();
        assert_ne!(a, stamp(&std::fs::metadata(&p).unwrap()));
    }
}
