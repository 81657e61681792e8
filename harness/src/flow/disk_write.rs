//! The disk write of install-to-disk as the machine follows it: bytes from QMP block stats,
//! coreos-installer's own percent, and the deadline that adapts to the write's projected end.

use std::time::Duration;

/// The disk write of install-to-disk, from QMP block stats.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DiskWriteStats {
    /// Bytes written when coreos-installer started (the write counter's baseline).
    pub base_bytes: Option<u64>,
    pub last_bytes: u64,
    pub start_ms: Option<u64>,
    pub end_ms: Option<u64>,
    /// When the written byte count last grew.
    pub last_growth_ms: u64,
    /// How far coreos-installer says it is through the image, in percent, from its own
    /// progress lines ("Read disk 43.0 MiB/86.8 MiB (49%)"), which the real installer prints
    /// into install-to-disk's journal too.
    pub image_percent: Option<f64>,
    /// When `image_percent` last changed: the projection's basis.
    pub image_percent_ms: Option<u64>,
}

impl DiskWriteStats {
    pub fn written(&self) -> u64 {
        self.base_bytes
            .map(|b| self.last_bytes.saturating_sub(b))
            .unwrap_or(0)
    }

    pub fn duration_ms(&self) -> Option<u64> {
        Some(self.end_ms?.saturating_sub(self.start_ms?))
    }

    pub fn mib_per_s(&self) -> Option<f64> {
        let ms = self.duration_ms()?;
        (ms > 0).then(|| self.written() as f64 / 1048576.0 / (ms as f64 / 1000.0))
    }

    /// Throughput so far, while the write runs (or over the whole write once it ended).
    pub fn rate_mib_per_s(&self, now_ms: u64) -> Option<f64> {
        let start = self.start_ms?;
        let ms = self.end_ms.unwrap_or(now_ms).saturating_sub(start);
        (ms >= 1000).then(|| self.written() as f64 / 1048576.0 / (ms as f64 / 1000.0))
    }

    /// One line for heartbeats and the live status: percent of the image, bytes, throughput.
    pub fn describe(&self, now_ms: u64) -> Option<String> {
        self.start_ms?;
        let mut parts = Vec::new();
        if let Some(p) = self.image_percent {
            parts.push(format!("{p:.0}% of the image"));
        }
        parts.push(format!(
            "{:.0} MiB written",
            self.written() as f64 / 1048576.0
        ));
        if let Some(r) = self.rate_mib_per_s(now_ms) {
            parts.push(format!("{r:.1} MiB/s"));
        }
        Some(parts.join(", "))
    }
}

/// How the install-to-disk deadline follows the disk write: once coreos-installer has reported
/// some progress, the end of the write is projected from it, and the deadline becomes that
/// projection stretched by `margin`, plus `slack` for what the installer does after the last
/// byte, kept between `min` and `max` after the phase started. A slow disk (writes of 30
/// minutes and more on real hardware) gets the time it needs, up to `max`; a fast write that
/// then hangs fails long before the nominal timeout.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AdaptiveDeadline {
    pub min: Duration,
    pub max: Duration,
    pub margin: f64,
    pub slack: Duration,
}

impl AdaptiveDeadline {
    /// For a nominal install-to-disk timeout: at least 2 minutes, at most six times the
    /// nominal, the write's projected length times 1.5, plus 2 minutes.
    pub fn around(nominal: Duration) -> AdaptiveDeadline {
        AdaptiveDeadline {
            min: Duration::from_secs(120).min(nominal),
            max: nominal * 6,
            margin: 1.5,
            slack: Duration::from_secs(120),
        }
    }
}

/// The write's projected end and the deadline it gives, in the machine's milliseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Projection {
    /// When the last byte of the image should be written.
    pub write_end_ms: u64,
    /// The phase's deadline now.
    pub deadline_ms: u64,
    /// The deadline the scenario's timeout alone gives.
    pub nominal_deadline_ms: u64,
}

/// The percentage in a coreos-installer progress line: `Read disk 43.0 MiB/86.8 MiB (49%)`, as
/// it appears in a journal (on a terminal the line starts with `> ` and ends with `\r`).
pub fn installer_progress_percent(message: &str) -> Option<f64> {
    let m = message.trim().trim_start_matches("> ");
    if !m.starts_with("Read ") || !m.ends_with("%)") {
        return None;
    }
    let open = m.rfind('(')?;
    let p: f64 = m[open + 1..m.len() - 2].trim().parse().ok()?;
    (0.0..=100.0).contains(&p).then_some(p)
}

/// How much of the image coreos-installer says it has read, in bytes: the `43.0 MiB` of `Read
/// disk 43.0 MiB/86.8 MiB (49%)`. What stands for the disk's write counter on a backend that
/// has none: the image read is written behind it, the last of it held in the page cache.
pub fn installer_progress_bytes(message: &str) -> Option<u64> {
    installer_progress_percent(message)?;
    let m = message.trim().trim_start_matches("> ");
    let rest = m.strip_prefix("Read ")?;
    let (done, _) = rest.split_once('/')?;
    let mut words = done.split_whitespace().rev();
    let unit = words.next()?;
    let number: f64 = words.next()?.parse().ok()?;
    let scale = match unit {
        "B" => 1.0,
        "KiB" => 1024.0,
        "MiB" => 1048576.0,
        "GiB" => 1073741824.0,
        "TiB" => 1099511627776.0,
        _ => return None,
    };
    (number.is_finite() && number >= 0.0).then_some((number * scale) as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bytes_read_come_from_coreos_installers_progress_lines() {
        assert_eq!(
            installer_progress_bytes("Read disk 512.0 KiB/98.9 MiB (0%)"),
            Some(512 * 1024)
        );
        assert_eq!(
            installer_progress_bytes("> Read disk 42.5 MiB/98.9 MiB (42%)\r"),
            Some((42.5 * 1048576.0) as u64)
        );
        assert_eq!(
            installer_progress_bytes("Read disk 1.5 GiB/16.0 GiB (9%)"),
            Some((1.5 * 1073741824.0) as u64)
        );
        for not_progress in [
            "Install complete.",
            "Read disk 42.5 parsecs/98.9 MiB (42%)",
            "Read disk 42.5 MiB (42%)",
            "Writing Ignition config",
        ] {
            assert_eq!(
                installer_progress_bytes(not_progress),
                None,
                "{not_progress}"
            );
        }
    }
}
