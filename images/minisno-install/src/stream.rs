//! `coreos print-stream-json`: CoreOS stream metadata in the real shape, pointing at the
//! fixture's live ISO (and disk images) by `file://` URL.
//!
//! The fixture build places the binary next to its artifacts: `<dir of current_exe>/live.iso`,
//! `metal-512.raw.zst`, `metal-4096.raw.zst`. `MINISNO_LIVE_ISO=/path` overrides the ISO (the
//! disk images are then looked for next to it). A `<file>.sha256` beside a file gives its digest
//! (first token); otherwise the digest is computed.
//!
//! Under the fixture fault `unsigned-loader` (`MINISNO_FAULTS`) the stream names
//! `live-unsigned-loader.iso` beside the live ISO instead: the fixture build's ISO whose EFI boot
//! loader is GRUB as grub-mkrescue builds it, unsigned, where the live ISO boots Debian's signed
//! shim and GRUB (images/recipe/secureboot.sh).

use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};

use serde_json::{json, Map, Value};
use sha2::{Digest, Sha256};

pub const ISO_NAME: &str = "live.iso";
pub const RAW_512: &str = "metal-512.raw.zst";
pub const RAW_4K: &str = "metal-4096.raw.zst";
pub const ISO_ENV: &str = "MINISNO_LIVE_ISO";
/// The live ISO with an unsigned EFI boot loader, beside the live ISO.
pub const UNSIGNED_LOADER_ISO_NAME: &str = "live-unsigned-loader.iso";

/// The ISO the stream names: the live ISO ([`live_iso_path`]), or under the fault
/// `unsigned-loader` the one beside it whose EFI loader is unsigned.
pub fn iso_path() -> Result<PathBuf, String> {
    let options = crate::bip::FixtureOptions::from_env().map_err(|e| {
        format!("invalid minisno fixture options in the environment (MINISNO_FAULTS, MINISNO_SCHEDULE, MINISNO_REBOOT_DELAY_MIN, MINISNO_VERSION): {e}")
    })?;
    let live = live_iso_path()?;
    Ok(iso_for(&live, &options.faults))
}

/// The ISO the stream names for these faults, given the live ISO's path.
pub fn iso_for(live: &Path, faults: &[crate::bip::Fault]) -> PathBuf {
    if faults.contains(&crate::bip::Fault::UnsignedLoader) {
        live.with_file_name(UNSIGNED_LOADER_ISO_NAME)
    } else {
        live.to_path_buf()
    }
}

/// Where the live ISO is: `MINISNO_LIVE_ISO`, else next to the running binary.
pub fn live_iso_path() -> Result<PathBuf, String> {
    if let Some(p) = std::env::var_os(ISO_ENV).filter(|p| !p.is_empty()) {
        return Ok(PathBuf::from(p));
    }
    let exe =
        std::env::current_exe().map_err(|e| format!("cannot locate the running binary: {e}"))?;
    let dir = exe
        .parent()
        .ok_or_else(|| format!("{} has no parent directory", exe.display()))?;
    Ok(dir.join(ISO_NAME))
}

/// A `file://` URL for an absolute path, percent-encoding everything but unreserved characters
/// and `/`.
pub fn file_url(path: &Path) -> String {
    use std::os::unix::ffi::OsStrExt;
    let mut url = String::from("file://");
    for &b in path.as_os_str().as_bytes() {
        if b.is_ascii_alphanumeric() || b"-._~/".contains(&b) {
            url.push(b as char);
        } else {
            url.push_str(&format!("%{b:02X}"));
        }
    }
    url
}

/// The SHA-256 of a file, hex.
pub fn sha256_file(path: &Path) -> std::io::Result<String> {
    let mut f = File::open(path)?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = f.read(&mut buf)?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
    }
    Ok(hex::encode(hasher.finalize()))
}

/// The digest from `<path>.sha256` (first token, 64 hex digits) if that file exists and is
/// well-formed, else computed.
pub fn digest(path: &Path) -> std::io::Result<String> {
    let mut sidecar = path.as_os_str().to_owned();
    sidecar.push(".sha256");
    if let Ok(text) = std::fs::read_to_string(&sidecar) {
        if let Some(tok) = text.split_whitespace().next() {
            if tok.len() == 64 && tok.bytes().all(|b| b.is_ascii_hexdigit()) {
                return Ok(tok.to_ascii_lowercase());
            }
        }
    }
    sha256_file(path)
}

fn disk_entry(path: &Path) -> Result<Value, String> {
    let sha = digest(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    Ok(json!({"disk": {"location": file_url(path), "sha256": sha}}))
}

/// The CoreOS stream architecture name of this machine.
pub fn arch() -> &'static str {
    match std::env::consts::ARCH {
        "x86_64" => "x86_64",
        "aarch64" => "aarch64",
        "powerpc64" => "ppc64le",
        "s390x" => "s390x",
        other => other,
    }
}

/// Builds the stream metadata for the ISO at `iso`.
pub fn stream_json(iso: &Path) -> Result<Value, String> {
    let iso =
        std::path::absolute(iso).map_err(|e| format!("cannot resolve {}: {e}", iso.display()))?;
    let meta = std::fs::metadata(&iso).map_err(|e| {
        format!(
            "the fixture's live ISO {} is missing or unreadable ({e}); build it next to minisno-install or set {ISO_ENV}",
            iso.display()
        )
    })?;
    if !meta.is_file() {
        return Err(format!(
            "the fixture's live ISO {} is not a file",
            iso.display()
        ));
    }
    let modified = meta
        .modified()
        .map(time::OffsetDateTime::from)
        .map(crate::log::rfc3339)
        .unwrap_or_else(|_| crate::log::now_rfc3339());

    let mut formats = Map::new();
    formats.insert("iso".into(), disk_entry(&iso)?);
    let dir = iso.parent().unwrap_or(Path::new("/"));
    for (key, name) in [("raw.zst", RAW_512), ("4k.raw.zst", RAW_4K)] {
        let p = dir.join(name);
        if p.is_file() {
            formats.insert(key.into(), disk_entry(&p)?);
        }
    }

    Ok(json!({
        "stream": "minisno",
        "metadata": {
            "last-modified": modified,
            "generator": "minisno-install (a test fixture standing in for openshift-install; not OpenShift)",
        },
        "architectures": {
            arch(): {
                "artifacts": {
                    "metal": {
                        "release": crate::RELEASE,
                        "formats": formats,
                    }
                }
            }
        }
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_encoded() {
        assert_eq!(file_url(Path::new("/a/b c.iso")), "file:///a/b%20c.iso");
        assert_eq!(file_url(Path::new("/x/live.iso")), "file:///x/live.iso");
    }

    #[test]
    fn digest_computed_and_from_sidecar() {
        let dir = tempfile::tempdir().unwrap();
        let iso = dir.path().join("live.iso");
        std::fs::write(&iso, b"abc").unwrap();
        assert_eq!(
            digest(&iso).unwrap(),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        let fake = "0".repeat(64);
        std::fs::write(
            dir.path().join("live.iso.sha256"),
            format!("{fake}  live.iso\n"),
        )
        .unwrap();
        assert_eq!(digest(&iso).unwrap(), fake);
    }

    #[test]
    fn shape_with_disk_images() {
        let dir = tempfile::tempdir().unwrap();
        let iso = dir.path().join("live.iso");
        std::fs::write(&iso, b"iso").unwrap();
        std::fs::write(dir.path().join(RAW_4K), b"4k").unwrap();
        let v = stream_json(&iso).unwrap();
        let metal = &v["architectures"][arch()]["artifacts"]["metal"];
        assert_eq!(metal["release"], crate::RELEASE);
        assert_eq!(metal["formats"]["iso"]["disk"]["location"], file_url(&iso));
        assert!(metal["formats"]["4k.raw.zst"]["disk"]["sha256"].is_string());
        assert!(metal["formats"].get("raw.zst").is_none());
        assert_eq!(v["stream"], "minisno");
    }

    #[test]
    fn the_unsigned_loader_fault_names_the_iso_beside_the_live_one() {
        let live = Path::new("/cache/entry/live.iso");
        assert_eq!(iso_for(live, &[]), live);
        let faults = [crate::bip::Fault::NoDns, crate::bip::Fault::UnsignedLoader];
        assert_eq!(
            iso_for(live, &faults),
            Path::new("/cache/entry/live-unsigned-loader.iso")
        );
    }

    #[test]
    fn missing_iso_is_an_error() {
        let e = stream_json(Path::new("/nonexistent/live.iso")).unwrap_err();
        assert!(e.contains("/nonexistent/live.iso"), "{e}");
    }
}
