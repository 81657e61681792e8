//! The type of an OpenSSH authorized key, read from the key's own wire data the way
//! golang.org/x/crypto/ssh does (the name in front of it is not trusted). Only the shape of the
//! data is checked (its length-prefixed fields), not the mathematics of the key.

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;

/// `ssh: no key found`, the parser's answer for anything it cannot read.
const NO_KEY: &str = "ssh: no key found";

/// How many length-prefixed fields the wire form of each key type has, the name included.
fn field_count(key_type: &str) -> Option<usize> {
    Some(match key_type {
        "ssh-ed25519" => 2,
        "ssh-rsa" => 3,
        "ssh-dss" => 5,
        "ecdsa-sha2-nistp256" | "ecdsa-sha2-nistp384" | "ecdsa-sha2-nistp521" => 3,
        "sk-ssh-ed25519@openssh.com" => 3,
        "sk-ecdsa-sha2-nistp256@openssh.com" => 4,
        _ => return None,
    })
}

/// The length-prefixed fields of a wire-format key; `None` unless they fill it exactly.
fn wire_fields(mut data: &[u8]) -> Option<Vec<&[u8]>> {
    let mut fields = Vec::new();
    while !data.is_empty() {
        let (len, rest) = data.split_at_checked(4)?;
        let len = u32::from_be_bytes(len.try_into().ok()?) as usize;
        let (field, rest) = rest.split_at_checked(len)?;
        fields.push(field);
        data = rest;
    }
    Some(fields)
}

fn type_of_blob(b64: &str) -> Option<String> {
    let blob = B64.decode(b64).ok()?;
    let fields = wire_fields(&blob)?;
    let key_type = std::str::from_utf8(fields.first()?).ok()?;
    if field_count(key_type)? != fields.len() {
        return None;
    }
    if key_type == "ssh-ed25519" && fields[1].len() != 32 {
        return None;
    }
    Some(key_type.to_string())
}

/// One authorized-keys line: `[options] type base64 [comment]`.
fn type_of_line(line: &str) -> Option<String> {
    let words: Vec<&str> = line.split_whitespace().collect();
    let at = words
        .iter()
        .take(2)
        .position(|w| field_count(w).is_some())?;
    type_of_blob(words.get(at + 1)?)
}

/// The type of the first key in `text` (lines that are empty or comments skipped).
pub fn key_type(text: &str) -> Result<String, String> {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .find_map(type_of_line)
        .ok_or_else(|| NO_KEY.to_string())
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A well-formed ed25519 key (32 bytes of key data).
    pub const ED25519: &str =
        "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGk5bdDTTIeqOsjCEdBq5CG0ab7A7+Ukh9Q3JqgkS7G6 user@host";

    fn blob(fields: &[&[u8]]) -> String {
        let mut out = Vec::new();
        for f in fields {
            out.extend_from_slice(&(f.len() as u32).to_be_bytes());
            out.extend_from_slice(f);
        }
        B64.encode(out)
    }

    #[test]
    fn types_come_from_the_key_data() {
        assert_eq!(key_type(ED25519).unwrap(), "ssh-ed25519");
        let ecdsa = format!(
            "ecdsa-sha2-nistp256 {} me",
            blob(&[b"ecdsa-sha2-nistp256", b"nistp256", &[4; 65]])
        );
        assert_eq!(key_type(&ecdsa).unwrap(), "ecdsa-sha2-nistp256");
        let rsa = format!(
            "no-pty ssh-rsa {}",
            blob(&[b"ssh-rsa", &[1, 0, 1], &[7; 257]])
        );
        assert_eq!(key_type(&format!("# keys\n\n{rsa}\n")).unwrap(), "ssh-rsa");
    }

    #[test]
    fn malformed_keys_are_not_found() {
        for bad in [
            "",
            "ssh-ed25519",
            "ssh-ed25519 !!!",
            // a key too short for its type
            "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFakeKeyForTests test@host",
        ] {
            assert_eq!(key_type(bad).unwrap_err(), "ssh: no key found", "{bad:?}");
        }
    }
}
