//! A reader that goes away (`sno-harness plan ... | head -1`) ends the output, not the
//! process: no panic, and the command's own exit code.

use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};

fn plan_with_stdout_closed(file: &str) -> (Option<i32>, String) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(file);
    let mut child = Command::new(env!("CARGO_BIN_EXE_sno-harness"))
        .arg("plan")
        .arg(path)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The reader leaves before the first line is written.
    drop(child.stdout.take());
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    (child.wait().unwrap().code(), stderr)
}

#[test]
fn plan_into_a_closed_pipe_exits_0_without_a_panic() {
    for file in ["scenarios/smoke.toml", "scenarios/disks.toml"] {
        let (code, stderr) = plan_with_stdout_closed(file);
        assert!(!stderr.contains("panicked"), "{file}: {stderr}");
        assert_eq!(code, Some(0), "{file}: {stderr}");
    }
}
