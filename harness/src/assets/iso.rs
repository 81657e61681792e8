//! The live ISO named by stream metadata: a file URL or an http(s) download, verified against
//! its sha256 and kept in a cache by digest.

use std::fs::{self, File};
use std::io::{BufReader, Read, Write};
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

#[derive(Debug, thiserror::Error)]
pub enum IsoError {
    #[error("the ISO at {location} is missing: {source}")]
    Missing {
        location: String,
        #[source]
        source: std::io::Error,
    },
    #[error("the ISO at {location} has sha256 {actual}, but the stream metadata says {expected}")]
    Digest {
        location: String,
        expected: String,
        actual: String,
    },
    #[error("downloading {location}: {message}")]
    Download { location: String, message: String },
    #[error("unsupported ISO location {0:?} (file://, http:// or https:// URLs)")]
    Scheme(String),
    #[error("{what}: {source}")]
    Io {
        what: String,
        #[source]
        source: std::io::Error,
    },
}

fn sha256_of(mut r: impl Read) -> std::io::Result<String> {
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

/// Percent-decoding of a file URL's path.
fn file_url_path(url: &str) -> Option<PathBuf> {
    let rest = url.strip_prefix("file://")?;
    let bytes = rest.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            if let Ok(b) = u8::from_str_radix(std::str::from_utf8(&bytes[i + 1..i + 3]).ok()?, 16) {
                out.push(b);
                i += 3;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    Some(PathBuf::from(String::from_utf8(out).ok()?))
}

/// Returns a local, verified copy of the ISO at `location`. File URLs are used in place (their
/// verification is remembered by size and modification time); downloads land in
/// `cache/<sha256>.iso`.
pub fn fetch_iso(location: &str, sha256: &str, cache: &Path) -> Result<PathBuf, IsoError> {
    let io = |what: String| move |source| IsoError::Io { what, source };
    fs::create_dir_all(cache).map_err(io(format!("creating {}", cache.display())))?;
    if let Some(path) = file_url_path(location) {
        let meta = fs::metadata(&path).map_err(|source| IsoError::Missing {
            location: location.into(),
            source,
        })?;
        let mtime = meta
            .modified()
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        let stamp = format!("{}\n{}\n{}\n", path.display(), meta.len(), mtime);
        let memo = cache.join(format!("{sha256}.verified"));
        if fs::read_to_string(&memo).ok().as_deref() == Some(stamp.as_str()) {
            return Ok(path);
        }
        let f = File::open(&path).map_err(|source| IsoError::Missing {
            location: location.into(),
            source,
        })?;
        let actual =
            sha256_of(BufReader::new(f)).map_err(io(format!("reading {}", path.display())))?;
        if actual != sha256 {
            return Err(IsoError::Digest {
                location: location.into(),
                expected: sha256.into(),
                actual,
            });
        }
        let _ = fs::write(&memo, stamp);
        return Ok(path);
    }
    if !(location.starts_with("http://") || location.starts_with("https://")) {
        return Err(IsoError::Scheme(location.into()));
    }
    let dest = cache.join(format!("{sha256}.iso"));
    if dest.is_file() {
        return Ok(dest);
    }
    let tmp = cache.join(format!(".{sha256}.iso.partial-{}", std::process::id()));
    let result = download(location, &tmp).and_then(|actual| {
        if actual == sha256 {
            fs::rename(&tmp, &dest).map_err(io(format!("moving {}", dest.display())))
        } else {
            Err(IsoError::Digest {
                location: location.into(),
                expected: sha256.into(),
                actual,
            })
        }
    });
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result.map(|()| dest)
}

/// Downloads to `to`, returning the sha256 of what was written.
fn download(location: &str, to: &Path) -> Result<String, IsoError> {
    let err = |message: String| IsoError::Download {
        location: location.into(),
        message,
    };
    let mut resp = ureq::get(location).call().map_err(|e| err(e.to_string()))?;
    let mut reader = resp.body_mut().as_reader();
    let mut out = File::create(to).map_err(|e| err(format!("creating {}: {e}", to.display())))?;
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = reader.read(&mut buf).map_err(|e| err(e.to_string()))?;
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
        out.write_all(&buf[..n])
            .map_err(|e| err(format!("writing {}: {e}", to.display())))?;
    }
    out.sync_all().map_err(|e| err(e.to_string()))?;
    Ok(hex::encode(h.finalize()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_urls_are_verified_and_the_verification_remembered() {
        let d = tempfile::tempdir().unwrap();
        let iso = d.path().join("my iso.iso");
        fs::write(&iso, b"not really an ISO").unwrap();
        let digest = sha256_of(&b"not really an ISO"[..]).unwrap();
        let url = format!("file://{}", iso.display()).replace(' ', "%20");
        let cache = d.path().join("cache");
        assert_eq!(fetch_iso(&url, &digest, &cache).unwrap(), iso);
        assert!(cache.join(format!("{digest}.verified")).is_file());
        assert_eq!(fetch_iso(&url, &digest, &cache).unwrap(), iso);

        let e = fetch_iso(&url, &"0".repeat(64), &cache).unwrap_err();
        assert!(matches!(e, IsoError::Digest { .. }), "{e}");
        let e = fetch_iso("file:///nonexistent.iso", &digest, &cache).unwrap_err();
        assert!(matches!(e, IsoError::Missing { .. }), "{e}");
        assert!(matches!(
            fetch_iso("ftp://x/y.iso", &digest, &cache),
            Err(IsoError::Scheme(_))
        ));
    }
}
