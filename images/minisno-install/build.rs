//! Records the git commit the fixture was built from, for `minisno-install version`.
//! `MINISNO_BUILD_COMMIT` at build time wins; otherwise `git rev-parse HEAD`; else "unknown".

use std::process::Command;

fn main() {
    println!("cargo:rerun-if-env-changed=MINISNO_BUILD_COMMIT");
    let commit = std::env::var("MINISNO_BUILD_COMMIT")
        .ok()
        .filter(|c| !c.trim().is_empty())
        .or_else(git_head)
        .unwrap_or_else(|| "unknown".into());
    if let Some(git_dir) = git_output(&["rev-parse", "--absolute-git-dir"]) {
        println!("cargo:rerun-if-changed={git_dir}/HEAD");
        println!("cargo:rerun-if-changed={git_dir}/logs/HEAD");
    }
    println!("cargo:rustc-env=MINISNO_GIT_COMMIT={}", commit.trim());
}

fn git_head() -> Option<String> {
    git_output(&["rev-parse", "HEAD"])
}

fn git_output(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    if !out.status.success() {
        return None;
    }
    let s = String::from_utf8(out.stdout).ok()?;
    let s = s.trim();
    (!s.is_empty()).then(|| s.to_string())
}
