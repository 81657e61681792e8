//! Sizes ("8GiB") and durations ("20m") as scenario files write them.

/// Why a size does not read; each says how one is written. The text is quoted as given.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SizeError {
    #[error("{0:?} is not a size (examples: \"8GiB\", \"512MiB\")")]
    NotANumber(String),
    #[error("unknown size unit {unit:?} in {text:?} (use B, KiB, MiB, GiB, TiB)")]
    UnknownUnit { text: String, unit: String },
    /// Zero, or more bytes than a u64 holds.
    #[error("{0:?} is not a usable size")]
    OutOfRange(String),
}

/// A duration that does not read, quoted as given, with how one is written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0:?} is not a duration: write {DURATION_FORMS}")]
pub struct NotADuration(pub String);

/// Parses a byte size: a number with an optional binary (KiB, MiB, GiB, TiB) or decimal
/// (K, M, G, T, KB, MB, GB, TB) suffix. A bare number is bytes.
pub fn parse_size(s: &str) -> Result<u64, SizeError> {
    let t = s.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let value: f64 = num
        .parse()
        .map_err(|_| SizeError::NotANumber(s.to_string()))?;
    let mult: u64 = match unit.trim() {
        "" | "B" => 1,
        "KiB" => 1 << 10,
        "MiB" => 1 << 20,
        "GiB" => 1 << 30,
        "TiB" => 1 << 40,
        "K" | "KB" => 1_000,
        "M" | "MB" => 1_000_000,
        "G" | "GB" => 1_000_000_000,
        "T" | "TB" => 1_000_000_000_000,
        other => {
            return Err(SizeError::UnknownUnit {
                text: s.to_string(),
                unit: other.to_string(),
            })
        }
    };
    let bytes = value * mult as f64;
    if !(bytes.is_finite() && bytes >= 1.0 && bytes < u64::MAX as f64) {
        return Err(SizeError::OutOfRange(s.to_string()));
    }
    Ok(bytes as u64)
}

/// How a duration is written, as `parse_duration` reads it (humantime's syntax).
pub const DURATION_FORMS: &str =
    "numbers each followed by a unit (s, m, h, d or w), such as \"90s\", \"15m\" or \"1h30m\"";

/// Parses a duration such as "20m", "90s", "1h30m". The error says how one is written, not
/// where humantime's parser stopped ("expected number at 0").
pub fn parse_duration(s: &str) -> Result<std::time::Duration, NotADuration> {
    humantime::parse_duration(s.trim()).map_err(|_| NotADuration(s.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("8GiB").unwrap(), 8 << 30);
        assert_eq!(parse_size("512MiB").unwrap(), 512 << 20);
        assert_eq!(parse_size("120G").unwrap(), 120_000_000_000);
        assert_eq!(parse_size("4096").unwrap(), 4096);
        assert_eq!(
            parse_size("8 gallons").unwrap_err().to_string(),
            "unknown size unit \"gallons\" in \"8 gallons\" (use B, KiB, MiB, GiB, TiB)"
        );
        assert_eq!(parse_size("GiB"), Err(SizeError::NotANumber("GiB".into())));
        assert_eq!(parse_size("0"), Err(SizeError::OutOfRange("0".into())));
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("20m").unwrap().as_secs(), 1200);
        assert_eq!(parse_duration("1h30m").unwrap().as_secs(), 5400);
        assert_eq!(
            parse_duration("soon").unwrap_err().to_string(),
            format!("\"soon\" is not a duration: write {DURATION_FORMS}")
        );
    }
}
