//! Writing assets (new files, 0600, in directories made 0750) and removing the consumed ones.

use std::fs;
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::Path;

/// Writes `data` to `dir/rel`, which must not exist yet.
pub fn write_new(dir: &Path, rel: &str, data: &[u8]) -> Result<(), String> {
    let path = dir.join(rel);
    if let Some(parent) = path.parent() {
        if !parent.exists() {
            fs::DirBuilder::new()
                .recursive(true)
                .mode(0o750)
                .create(parent)
                .map_err(|e| format!("failed to create {}: {e}", parent.display()))?;
        }
    }
    let mut f = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&path)
        .map_err(|e| format!("failed to write {}: {e}", path.display()))?;
    f.write_all(data)
        .map_err(|e| format!("failed to write {}: {e}", path.display()))
}

/// Removes a consumed file, and its directory once that is empty (as the real tool purges).
pub fn remove_consumed(dir: &Path, rel: &str) -> Result<(), String> {
    let path = dir.join(rel);
    match fs::remove_file(&path) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(format!("failed to remove file: {e}")),
    }
    if let Some(parent) = path.parent().filter(|p| *p != dir) {
        let empty = fs::read_dir(parent).is_ok_and(|mut d| d.next().is_none());
        if empty {
            fs::remove_dir(parent).map_err(|e| format!("failed to remove directory: {e}"))?;
        }
    }
    Ok(())
}

/// The files directly in `dir/sub` whose names end in one of `extensions`, sorted, as paths
/// relative to `dir`.
pub fn list(dir: &Path, sub: &str, extensions: &[&str]) -> Result<Vec<String>, String> {
    let entries = match fs::read_dir(dir.join(sub)) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(format!("failed to read {}: {e}", dir.join(sub).display())),
    };
    let mut out: Vec<String> = entries
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|n| extensions.iter().any(|x| n.ends_with(x)))
        .map(|n| format!("{sub}/{n}"))
        .collect();
    out.sort();
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn write_list_and_remove() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        write_new(d, "manifests/b.yaml", b"b").unwrap();
        write_new(d, "manifests/a.yml", b"a").unwrap();
        write_new(d, "manifests/c.txt", b"c").unwrap();
        assert!(write_new(d, "manifests/a.yml", b"again").is_err());
        let mode = |p: &str| fs::metadata(d.join(p)).unwrap().permissions().mode() & 0o777;
        assert_eq!((mode("manifests"), mode("manifests/a.yml")), (0o750, 0o600));
        assert_eq!(
            list(d, "manifests", &[".yaml", ".yml"]).unwrap(),
            ["manifests/a.yml", "manifests/b.yaml"]
        );
        assert_eq!(
            list(d, "nothing", &[".yaml"]).unwrap(),
            Vec::<String>::new()
        );
        for f in ["manifests/a.yml", "manifests/b.yaml"] {
            remove_consumed(d, f).unwrap();
        }
        assert!(d.join("manifests").exists(), "c.txt keeps it");
        remove_consumed(d, "manifests/c.txt").unwrap();
        assert!(!d.join("manifests").exists());
        write_new(d, "top.json", b"{}").unwrap();
        remove_consumed(d, "top.json").unwrap();
        assert!(d.exists());
    }
}
