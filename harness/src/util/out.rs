//! Printing that never panics. `println!` panics when stdout is a closed pipe
//! (`sno-harness plan ... | head -1`), and `eprintln!` when stderr is: a run would then stop
//! half-way for a reader that went away. Here a write that fails ends that stream's output,
//! never the process, so every run still cleans up and exits with its own code. Whatever is
//! printed also goes to the harness's log (util::harness_log), even once the reader is gone.

use std::fmt;
use std::io::{self, Write};
use std::sync::atomic::{AtomicBool, Ordering};

use super::harness_log::{self, Stream};

static STDOUT_GONE: AtomicBool = AtomicBool::new(false);
static STDERR_GONE: AtomicBool = AtomicBool::new(false);

fn write_to(w: &mut dyn Write, gone: &AtomicBool, args: fmt::Arguments, newline: bool) {
    if gone.load(Ordering::Relaxed) {
        return;
    }
    let written = w
        .write_fmt(args)
        .and_then(|()| if newline { w.write_all(b"\n") } else { Ok(()) })
        .and_then(|()| w.flush());
    if written.is_err() {
        gone.store(true, Ordering::Relaxed);
    }
}

/// `text` with its control characters (but newlines and tabs) shown as `\xNN`: lines carry
/// what guests and files said (journal messages, console lines, reasons quoting them), and an
/// escape sequence in them must not reach the terminal as one (it could retitle, clear or
/// rewrite the screen, or hide what is printed after it).
pub fn printable(text: &str) -> std::borrow::Cow<'_, str> {
    let bad = |c: char| c.is_control() && c != '\n' && c != '\t';
    if !text.chars().any(bad) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if bad(c) {
            out.push_str(&format!("\\x{:02x}", c as u32));
        } else {
            out.push(c);
        }
    }
    std::borrow::Cow::Owned(out)
}

/// `print!`/`println!` to stdout, as the macros `out!` and `outln!` call it.
pub fn stdout(args: fmt::Arguments, newline: bool) {
    let text = printable(&args.to_string()).into_owned();
    write_to(
        &mut io::stdout().lock(),
        &STDOUT_GONE,
        format_args!("{text}"),
        newline,
    );
    harness_log::printed(Stream::Stdout, &text);
}

/// `eprintln!` to stderr, as the macro `errln!` calls it.
pub fn stderr(args: fmt::Arguments, newline: bool) {
    let text = printable(&args.to_string()).into_owned();
    write_to(
        &mut io::stderr().lock(),
        &STDERR_GONE,
        format_args!("{text}"),
        newline,
    );
    harness_log::printed(Stream::Stderr, &text);
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Closed(usize);
    impl Write for Closed {
        fn write(&mut self, _: &[u8]) -> io::Result<usize> {
            self.0 += 1;
            Err(io::ErrorKind::BrokenPipe.into())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn control_characters_are_shown_not_sent() {
        assert_eq!(printable("plain\tline\nnext"), "plain\tline\nnext");
        assert_eq!(
            printable("\u{1b}]0;owned\u{7}\u{1b}[2Jx\r"),
            "\\x1b]0;owned\\x07\\x1b[2Jx\\x0d"
        );
        assert_eq!(printable("\u{9b}31m"), "\\x9b31m");
    }

    #[test]
    fn a_closed_stream_ends_the_output_without_a_panic() {
        let gone = AtomicBool::new(false);
        let mut w = Closed(0);
        write_to(&mut w, &gone, format_args!("first {}", 1), true);
        assert!(gone.load(Ordering::Relaxed));
        write_to(&mut w, &gone, format_args!("second"), true);
        assert_eq!(w.0, 1, "nothing more is tried once the reader is gone");
    }

    #[test]
    fn an_open_stream_gets_every_line() {
        let gone = AtomicBool::new(false);
        let mut buf = Vec::new();
        write_to(&mut buf, &gone, format_args!("a {}", 1), true);
        write_to(&mut buf, &gone, format_args!("b"), false);
        assert_eq!(buf, b"a 1\nb");
        assert!(!gone.load(Ordering::Relaxed));
    }
}
