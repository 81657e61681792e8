//! `minisno-ignition apply [--root DIR] CONFIG.json` / `minisno-ignition check CONFIG.json`

fn main() {
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    let code = minisno_ignition::cli(&args, &mut std::io::stdout(), &mut std::io::stderr());
    std::process::exit(code);
}
