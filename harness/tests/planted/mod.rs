//! For tests that the harness, writing a file at a path a user chose, follows no symbolic link
//! planted beside it: a victim file (standing for root's or another user's), links to it, and
//! the check that it is unchanged.
// Each test binary uses what it needs of it.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

const UNTOUCHED: &str = "the victim's own content\n";

pub struct Victim {
    path: PathBuf,
}

impl Victim {
    /// A file `victim` in `dir`.
    pub fn new(dir: &Path) -> Victim {
        let path = dir.join("victim");
        std::fs::write(&path, UNTOUCHED).unwrap();
        Victim { path }
    }

    /// A symbolic link at `at` to the victim.
    pub fn link_at(&self, at: &Path) {
        std::os::unix::fs::symlink(&self.path, at).unwrap();
    }

    /// Links at the temporary names earlier versions wrote `target` through: `.NAME.tmp`.
    pub fn link_beside(&self, target: &Path) {
        let name = target.file_name().unwrap().to_str().unwrap();
        self.link_at(&target.with_file_name(format!(".{name}.tmp")));
    }

    pub fn assert_untouched(&self) {
        assert_eq!(
            std::fs::read_to_string(&self.path).unwrap(),
            UNTOUCHED,
            "written through a planted link"
        );
    }
}
