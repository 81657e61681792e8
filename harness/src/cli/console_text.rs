//! What passes between the user's terminal and the guest's serial console in an interactive
//! session: the key that ends it (`--escape`), and which of the guest's bytes reach the
//! terminal.

use std::fmt;
use std::str::FromStr;

/// The key that ends an interactive session: a control character, written `^]` or `^x`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EscapeKey(u8);

impl EscapeKey {
    /// Ctrl-], as virsh console and telnet have it.
    pub const DEFAULT: EscapeKey = EscapeKey(0x1d);

    pub fn byte(self) -> u8 {
        self.0
    }
}

impl Default for EscapeKey {
    fn default() -> Self {
        EscapeKey::DEFAULT
    }
}

impl FromStr for EscapeKey {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let forms = "write it as ^ and a letter or one of @ [ \\ ] ^ _ (^] is Ctrl-], the \
                     default; ^x or ^X is Ctrl-X)";
        let mut chars = s.chars();
        let (Some('^'), Some(c), None) = (chars.next(), chars.next(), chars.next()) else {
            return Err(format!("{s:?} is not a control key: {forms}"));
        };
        let c = c.to_ascii_uppercase();
        if !('@'..='_').contains(&c) {
            return Err(format!("{s:?} is not a control key: {forms}"));
        }
        match c {
            'J' | 'M' => Err(format!(
                "{s:?} is the Enter key: every line typed would end the session; {forms}"
            )),
            '[' => Err(format!(
                "{s:?} is Esc, which starts the arrow keys' sequences; {forms}"
            )),
            _ => Ok(EscapeKey(c as u8 - b'@')),
        }
    }
}

impl fmt::Display for EscapeKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Ctrl-{}", (self.0 + b'@') as char)
    }
}

/// The longest parameter list of a control sequence that is passed on.
const MAX_PARAMS: usize = 16;
/// The control sequences passed on: cursor moves (A-D, G, H), erasing (J, K) and colours (m),
/// with numeric parameters only.
const SAFE_FINALS: &str = "ABCDGHJKm";

/// Where the filter is: in plain text or within an escape sequence.
enum At {
    Plain,
    /// After ESC.
    Escape,
    /// Within `ESC [`: its parameters so far, and whether it may pass.
    Csi {
        params: Vec<u8>,
        safe: bool,
    },
    /// Within a string (OSC, DCS, APC, PM, SOS), which ends at BEL or `ESC \`.
    Str,
    /// ESC within a string.
    StrEscape,
}

/// The guest's output as a terminal may show it. The guest is the system under test, and its
/// escape sequences act on the user's terminal: a title or the clipboard set (OSC), modes that
/// outlive the session (the alternate screen, mouse reporting, `?` private modes), queries
/// whose answers the terminal would type into the guest as if the user had. A shell needs
/// less: printable text (UTF-8), CR, LF, tab and backspace, and the few sequences line editing
/// draws with, cursor moves and erasing, and colours. Those pass with numeric parameters;
/// every other control character (C1 ones included) and sequence is dropped whole.
pub struct GuestText {
    /// An incomplete UTF-8 character at the end of the last chunk (at most 3 bytes).
    partial: Vec<u8>,
    at: At,
}

impl Default for GuestText {
    fn default() -> Self {
        GuestText {
            partial: Vec::new(),
            at: At::Plain,
        }
    }
}

impl GuestText {
    /// The part of `bytes` (the next chunk of the guest's output) the terminal is shown.
    pub fn filter(&mut self, bytes: &[u8]) -> Vec<u8> {
        let mut input = std::mem::take(&mut self.partial);
        input.extend_from_slice(bytes);
        let mut out = Vec::with_capacity(input.len());
        let mut rest = &input[..];
        loop {
            match std::str::from_utf8(rest) {
                Ok(text) => {
                    text.chars().for_each(|c| self.char(c, &mut out));
                    break;
                }
                Err(e) => {
                    let (good, bad) = rest.split_at(e.valid_up_to());
                    std::str::from_utf8(good)
                        .unwrap_or_default()
                        .chars()
                        .for_each(|c| self.char(c, &mut out));
                    match e.error_len() {
                        Some(n) => {
                            self.char(char::REPLACEMENT_CHARACTER, &mut out);
                            rest = &bad[n..];
                        }
                        None => {
                            self.partial = bad.to_vec();
                            break;
                        }
                    }
                }
            }
        }
        out
    }

    fn char(&mut self, c: char, out: &mut Vec<u8>) {
        self.at = match std::mem::replace(&mut self.at, At::Plain) {
            At::Plain => plain(c, out),
            At::Escape => match c {
                '[' => At::Csi {
                    params: Vec::new(),
                    safe: true,
                },
                ']' | 'P' | '_' | '^' | 'X' => At::Str,
                '\u{1b}' => At::Escape,
                // A two-character sequence (a reset, a saved cursor...): dropped.
                _ => At::Plain,
            },
            At::Csi { params, safe } => csi(params, safe, c, out),
            At::Str => match c {
                '\u{7}' => At::Plain,
                '\u{1b}' => At::StrEscape,
                _ => At::Str,
            },
            At::StrEscape => match c {
                '\\' => At::Plain,
                '\u{1b}' => At::StrEscape,
                _ => At::Str,
            },
        };
    }
}

/// A character outside any sequence.
fn plain(c: char, out: &mut Vec<u8>) -> At {
    match c {
        '\u{1b}' => return At::Escape,
        '\r' | '\n' | '\t' | '\u{8}' => out.push(c as u8),
        c if c.is_control() => {}
        c => {
            let mut b = [0u8; 4];
            out.extend_from_slice(c.encode_utf8(&mut b).as_bytes());
        }
    }
    At::Plain
}

/// A character within `ESC [`: a parameter, the final byte, or what breaks the sequence off.
fn csi(mut params: Vec<u8>, mut safe: bool, c: char, out: &mut Vec<u8>) -> At {
    match c {
        '0'..='9' | ';' => {
            if params.len() < MAX_PARAMS {
                params.push(c as u8);
            } else {
                safe = false;
            }
            At::Csi { params, safe }
        }
        // Private markers and intermediates: a sequence that does not pass.
        ' '..='?' => At::Csi {
            params,
            safe: false,
        },
        '@'..='~' => {
            if safe && SAFE_FINALS.contains(c) {
                out.extend_from_slice(b"\x1b[");
                out.extend_from_slice(&params);
                out.push(c as u8);
            }
            At::Plain
        }
        '\u{1b}' => At::Escape,
        // Anything else cancels the sequence (as CAN and SUB do on a terminal).
        _ => At::Plain,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escape_keys_are_read_in_caret_form_and_the_rest_refused_naming_the_forms() {
        assert_eq!("^]".parse::<EscapeKey>(), Ok(EscapeKey::DEFAULT));
        assert_eq!(EscapeKey::DEFAULT.byte(), 0x1d);
        assert_eq!("^x".parse::<EscapeKey>().unwrap().byte(), 0x18);
        assert_eq!("^X".parse::<EscapeKey>().unwrap().byte(), 0x18);
        assert_eq!("^@".parse::<EscapeKey>().unwrap().byte(), 0);
        assert_eq!("^_".parse::<EscapeKey>().unwrap().byte(), 0x1f);
        assert_eq!(EscapeKey::DEFAULT.to_string(), "Ctrl-]");
        assert_eq!("^q".parse::<EscapeKey>().unwrap().to_string(), "Ctrl-Q");
        for bad in ["", "]", "^", "x", "^]]", "ctrl-]", "^1", "^é", "^{"] {
            let e = bad.parse::<EscapeKey>().unwrap_err();
            assert!(e.contains("^ and a letter"), "{bad:?}: {e}");
        }
        assert!("^m".parse::<EscapeKey>().unwrap_err().contains("Enter"));
        assert!("^J".parse::<EscapeKey>().unwrap_err().contains("Enter"));
        assert!("^[".parse::<EscapeKey>().unwrap_err().contains("Esc"));
    }

    fn shown(chunks: &[&[u8]]) -> String {
        let mut f = GuestText::default();
        let out: Vec<u8> = chunks.iter().flat_map(|c| f.filter(c)).collect();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn a_shells_text_and_line_editing_pass() {
        let prompt = "\x1b[1;32mroot@minisno\x1b[0m:~# ls\x08\x08\x1b[K\r\nd\u{e9}j\u{e0}\tvu\r\n";
        assert_eq!(shown(&[prompt.as_bytes()]), prompt);
        assert_eq!(shown(&[b"\x1b[3D\x1b[2J\x1b[H"]), "\x1b[3D\x1b[2J\x1b[H");
    }

    #[test]
    fn sequences_that_act_on_the_terminal_and_other_controls_are_dropped_whole() {
        let hostile: &[&[u8]] = &[
            b"a\x1b]0;owned title\x07b",     // window title (OSC, BEL)
            b"c\x1b]52;c;ZXZpbA==\x1b\\d",   // the clipboard (OSC, ST)
            b"e\x1b[?1049hf",                // the alternate screen
            b"g\x1b[6nh",                    // a query the terminal would answer as typed
            b"i\x1bcj",                      // a full reset
            b"k\x1bP+q544e\x1b\\l",          // DCS
            b"m\x07\x00\x7fn",               // BEL, NUL, DEL
            "o\u{9b}\u{90}p".as_bytes(),     // C1 controls (CSI, DCS)
            b"q\x1b[11111111111111111111mr", // parameters past the bound
        ];
        assert_eq!(shown(hostile), "abcdefghijklmnopqr");
    }

    #[test]
    fn a_sequence_or_a_character_split_across_chunks_is_taken_whole() {
        assert_eq!(shown(&[b"x\x1b", b"]0;t", b"itle\x07y"]), "xy");
        assert_eq!(shown(&[b"\x1b[", b"1;3", b"1m"]), "\x1b[1;31m");
        let e_acute = "\u{e9}".as_bytes();
        assert_eq!(shown(&[&e_acute[..1], &e_acute[1..]]), "\u{e9}");
        assert_eq!(shown(&[b"a\xffb"]), "a\u{fffd}b");
    }
}
