//! What `analyze` reads at most: evidence comes from elsewhere and may be hostile (an archive
//! of a million members, a member that never ends, a gzip bomb), so every read has a bound and
//! going past one is bad input naming the file, the member and the limit.

/// The bounds of one analysis.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Members of one archive, of any type.
    pub members: usize,
    /// One archive member as its header declares it (what is kept is read into memory).
    pub member_bytes: u64,
    /// Everything one archive decompresses to, members skipped included: a gzip bomb ends here.
    pub total_bytes: u64,
    /// One plain file given as a PATH (a serial log, a journal export), decompressed.
    pub file_bytes: u64,
    /// Records of one file (journal entries, events.jsonl lines).
    pub records: usize,
    /// One line or field: longer ones are cut, and the cut is said.
    pub line_bytes: usize,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            members: 200_000,
            member_bytes: 256 << 20,
            total_bytes: 4 << 30,
            file_bytes: 1 << 30,
            records: 5_000_000,
            line_bytes: 64 << 10,
        }
    }
}

/// Bytes in words, for a limit's message.
pub fn size(bytes: u64) -> String {
    match bytes {
        b if b >= 1 << 30 && b % (1 << 30) == 0 => format!("{} GiB", b >> 30),
        b if b >= 1 << 20 && b % (1 << 20) == 0 => format!("{} MiB", b >> 20),
        b if b >= 1 << 10 && b % (1 << 10) == 0 => format!("{} KiB", b >> 10),
        b => format!("{b} bytes"),
    }
}

/// `text` cut to `max` bytes at a character boundary, and whether it was cut.
pub fn cut(text: &str, max: usize) -> (&str, bool) {
    if text.len() <= max {
        return (text, false);
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    (&text[..end], true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_as_their_unit_and_cuts_keep_whole_characters() {
        assert_eq!(size(256 << 20), "256 MiB");
        assert_eq!(size(4 << 30), "4 GiB");
        assert_eq!(size(1000), "1000 bytes");
        assert_eq!(cut("héllo", 2), ("h", true));
        assert_eq!(cut("hello", 5), ("hello", false));
    }
}
