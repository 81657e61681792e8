//! The apiserver's log lines. Apart from the server (which logs its milestones) because the
//! app's simulated kubelet logs too, and the server is built on the app.

/// Prints one log line (stdout, so the journal gets it).
pub fn log(line: impl AsRef<str>) {
    println!("minisno-apiserver: {}", line.as_ref());
}
