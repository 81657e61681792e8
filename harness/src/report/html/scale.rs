//! Linear scales and "nice" axis ticks (1, 2 or 5 times a power of ten) for the charts.

/// Maps `0..=max` onto `0..=width` pixels.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Scale {
    pub max: f64,
    pub width: f64,
}

impl Scale {
    /// A scale whose domain ends on a tick at or beyond `max`, so the last tick is at the edge.
    /// An empty or invalid `max` gets a domain of 1.
    pub fn covering(max: f64, width: f64, target_ticks: usize) -> Scale {
        let max = if max.is_finite() && max > 0.0 {
            max
        } else {
            1.0
        };
        let step = nice_step(max, target_ticks);
        Scale {
            max: (max / step).ceil() * step,
            width,
        }
    }

    /// Pixels from the origin for `v` (clamped to the scale).
    pub fn px(&self, v: f64) -> f64 {
        (v.clamp(0.0, self.max) / self.max) * self.width
    }

    /// Tick values from 0 to the end of the domain.
    pub fn ticks(&self, target_ticks: usize) -> Vec<f64> {
        let step = nice_step(self.max, target_ticks);
        let n = (self.max / step).round() as usize;
        (0..=n).map(|i| i as f64 * step).collect()
    }
}

/// The 1-2-5 step giving about `target` intervals over `0..max`.
pub fn nice_step(max: f64, target: usize) -> f64 {
    let raw = max / target.max(1) as f64;
    if !(raw.is_finite() && raw > 0.0) {
        return 1.0;
    }
    let magnitude = 10f64.powf(raw.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|m| m * magnitude)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * magnitude)
}

/// A tick label for milliseconds: seconds, with decimals only when the step needs them.
pub fn seconds_label(ms: f64, step_ms: f64) -> String {
    let s = ms / 1000.0;
    if step_ms >= 1000.0 {
        format!("{s:.0} s")
    } else if step_ms >= 100.0 {
        format!("{s:.1} s")
    } else {
        format!("{s:.2} s")
    }
}

/// Where a horizontal axis goes: its plot area (x from `left`, `width` wide), the top of the
/// grid lines and the axis line's y.
pub struct AxisPlace {
    pub left: f64,
    pub width: f64,
    pub top: f64,
    pub axis_y: f64,
}

/// A horizontal axis under a chart: the axis line, a grid line and a label per tick. Both the
/// Gantt charts and the throughput chart use it; `label` formats a tick's value.
pub fn horizontal_axis(
    scale: Scale,
    at: AxisPlace,
    ticks: usize,
    label: impl Fn(f64) -> String,
) -> super::markup::Element {
    use super::colors;
    use super::markup::{el, num};
    let mut g = el("g").attr("class", "axis").child(
        el("line")
            .attr("x1", num(at.left))
            .attr("x2", num(at.left + at.width))
            .attr("y1", num(at.axis_y))
            .attr("y2", num(at.axis_y))
            .attr("stroke", colors::AXIS),
    );
    for t in scale.ticks(ticks) {
        let x = at.left + scale.px(t);
        g = g
            .child(
                el("line")
                    .attr("class", "grid")
                    .attr("x1", num(x))
                    .attr("x2", num(x))
                    .attr("y1", num(at.top))
                    .attr("y2", num(at.axis_y + 4.0))
                    .attr("stroke", colors::GRID),
            )
            .child(
                el("text")
                    .attr("class", "tick")
                    .attr("x", num(x))
                    .attr("y", num(at.axis_y + 17.0))
                    .attr("text-anchor", "middle")
                    .text(label(t)),
            );
    }
    g
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nice_steps_and_covering_domain() {
        assert_eq!(nice_step(123_280.0, 8), 20_000.0);
        assert_eq!(nice_step(100.0, 10), 10.0);
        assert_eq!(nice_step(7.0, 8), 1.0);
        assert_eq!(nice_step(0.0, 8), 1.0);
        let s = Scale::covering(123_280.0, 800.0, 8);
        assert_eq!(s.max, 140_000.0);
        assert_eq!(s.ticks(8).len(), 8);
        assert_eq!(*s.ticks(8).last().unwrap(), 140_000.0);
        assert_eq!(s.px(70_000.0), 400.0);
        assert_eq!(s.px(1e9), 800.0);
        assert_eq!(Scale::covering(f64::NAN, 10.0, 4).max, 1.0);
        assert_eq!(seconds_label(40_000.0, 20_000.0), "40 s");
        assert_eq!(seconds_label(500.0, 100.0), "0.5 s");
    }
}
