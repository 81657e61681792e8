//! `--filter GLOB`: which permutations to run, by id.

/// Whether `id` matches the glob `pattern`: `*` matches any run of characters (dots too),
/// `?` any one character, anything else itself; `a,b` matches what `a` or `b` matches.
pub fn matches_filter(id: &str, pattern: &str) -> bool {
    // Permutation ids never contain a comma: "a,b" is a list of globs, any of which may match.
    pattern.split(',').any(|glob| matches_glob(id, glob))
}

fn matches_glob(id: &str, pattern: &str) -> bool {
    let id: Vec<char> = id.chars().collect();
    let pat: Vec<char> = pattern.chars().collect();
    // Iterative matching with one backtrack point: the last '*' and where it resumed.
    let (mut i, mut p) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while i < id.len() {
        match pat.get(p) {
            Some('*') => {
                star = Some((p, i));
                p += 1;
            }
            Some(&c) if c == '?' || c == id[i] => {
                i += 1;
                p += 1;
            }
            _ => match star {
                Some((sp, si)) => {
                    // Let the last '*' swallow one more character.
                    star = Some((sp, si + 1));
                    p = sp + 1;
                    i = si + 1;
                }
                None => return false,
            },
        }
    }
    pat[p..].iter().all(|&c| c == '*')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_comma_separates_alternatives() {
        let id = "nvme.4k.uefi.by-name.1";
        assert!(matches_filter(id, "virtio.*,nvme.4k.*"));
        assert!(matches_filter(id, "nvme.4k.uefi.by-name.1,sata.*"));
        assert!(!matches_filter(id, "virtio.*,sata.*"));
        assert!(!matches_filter(id, ","));
    }

    #[test]
    fn filters_are_globs_over_the_whole_id() {
        let id = "virtio.4k.uefi.by-id";
        assert!(matches_filter(id, id));
        assert!(matches_filter(id, "*"));
        assert!(matches_filter(id, "virtio.*"));
        assert!(matches_filter(id, "*.uefi.*"));
        assert!(matches_filter(id, "virtio.?k.*.by-id"));
        assert!(matches_filter(id, "*by-id"));
        assert!(!matches_filter(id, "virtio"));
        assert!(!matches_filter(id, "nvme.*"));
        assert!(!matches_filter(id, "*.bios.*"));
        assert!(!matches_filter(id, "virtio.?.*"));
        assert!(matches_filter("", "*"));
        assert!(!matches_filter("", "?"));
        assert!(matches_filter("a.b.a.b.c", "*a.b.c"));
    }
}
