//! Bar charts: one bar per category, or a histogram over numeric bins.

use super::frame::{axes, header, nice_ticks, tick_label, Frame};
use super::{escape, PALETTE};
use std::fmt::Write;

/// A bar chart: one bar per category (a label and a value), or a histogram when the labels
/// are bin edges. Values must be non-negative.
#[derive(Clone, Debug)]
pub struct BarChart {
    pub title: String,
    pub x_label: String,
    pub y_label: String,
    pub bars: Vec<(String, f64)>,
    pub color: String,
    pub width: f64,
    pub height: f64,
}

impl BarChart {
    pub fn new(
        title: impl Into<String>,
        x_label: impl Into<String>,
        y_label: impl Into<String>,
    ) -> Self {
        BarChart {
            title: title.into(),
            x_label: x_label.into(),
            y_label: y_label.into(),
            bars: Vec::new(),
            color: PALETTE[0].into(),
            width: 760.0,
            height: 440.0,
        }
    }
    pub fn bar(mut self, label: impl Into<String>, value: f64) -> Self {
        self.bars.push((label.into(), value));
        self
    }
    /// A histogram: `counts[i]` for the bin starting at `edges[i]` (labels are the edges).
    pub fn histogram(mut self, edges: &[f64], counts: &[f64]) -> Self {
        for (e, c) in edges.iter().zip(counts) {
            self.bars.push((tick_label(*e), *c));
        }
        self
    }

    pub fn to_svg(&self) -> String {
        let top = self
            .bars
            .iter()
            .map(|b| b.1)
            .filter(|v| v.is_finite())
            .fold(0.0, f64::max);
        let ticks = nice_ticks(0.0, top.max(1e-12) * 1.08, 6);
        let y1 = ticks
            .last()
            .copied()
            .unwrap_or(1.0)
            .max(top * 1.08)
            .max(1e-12);
        let n = self.bars.len().max(1) as f64;
        let fr = Frame {
            w: self.width,
            h: self.height,
            left: 70.0,
            right: 20.0,
            top: 36.0,
            bottom: 50.0,
            x0: 0.0,
            x1: n,
            y0: 0.0,
            y1,
        };
        let mut out = String::new();
        header(&mut out, fr.w, fr.h, &self.title);
        // As many labels along the axis as fit side by side (about 7 px per character).
        let widest = self
            .bars
            .iter()
            .map(|b| b.0.chars().count())
            .max()
            .unwrap_or(1) as f64;
        let room = (fr.w - fr.left - fr.right) / (widest * 7.0 + 10.0);
        let every = ((self.bars.len() as f64 / room.max(1.0)).ceil() as usize).max(1);
        let labels: Vec<(f64, String)> = self
            .bars
            .iter()
            .enumerate()
            .filter(|(i, _)| i % every == 0)
            .map(|(i, b)| (i as f64 + 0.5, b.0.clone()))
            .collect();
        axes(&mut out, &fr, &labels, &self.x_label, &self.y_label);
        let bw = (fr.px(1.0) - fr.px(0.0)) * 0.8;
        for (i, (_, v)) in self.bars.iter().enumerate() {
            if !v.is_finite() || *v <= 0.0 {
                continue;
            }
            let x = fr.px(i as f64 + 0.1);
            let y = fr.py(*v);
            let _ = writeln!(
                out,
                r#"<rect x="{x:.2}" y="{y:.2}" width="{bw:.2}" height="{:.2}" fill="{}"/>"#,
                fr.py(0.0) - y,
                escape(&self.color)
            );
        }
        out.push_str("</svg>\n");
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plot::tests::well_formed;

    #[test]
    fn histograms_are_well_formed() {
        let bars = BarChart::new("h", "bin", "count")
            .histogram(&[0.0, 10.0, 20.0], &[3.0, 0.0, 7.0])
            .to_svg();
        let names = well_formed(&bars).unwrap();
        assert_eq!(names.iter().filter(|n| *n == "rect").count(), 1 + 1 + 2);
    }
}
