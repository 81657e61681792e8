fn main() {
    std::process::exit(minisno_install::cli::run(std::env::args_os()));
}
