//! Horizontal bar charts: one named bar per row ("hottest links").

use super::frame::{header, nice_ticks, tick_label, Frame};
use super::{escape, PALETTE};
use std::fmt::Write;

/// A horizontal bar chart: one named bar per row, longest names on the left, largest value
/// first if the caller sorts so. Used for "hottest links".
#[derive(Clone, Debug)]
pub struct HBarChart {
    pub title: String,
    pub x_label: String,
    /// (name, value, colour index into [`PALETTE`]).
    pub bars: Vec<(String, f64, usize)>,
    /// Legend: (colour index, name).
    pub legend: Vec<(usize, String)>,
    pub width: f64,
}

impl HBarChart {
    pub fn new(title: impl Into<String>, x_label: impl Into<String>) -> Self {
        HBarChart {
            title: title.into(),
            x_label: x_label.into(),
            bars: Vec::new(),
            legend: Vec::new(),
            width: 900.0,
        }
    }
    pub fn bar(mut self, name: impl Into<String>, value: f64, color: usize) -> Self {
        self.bars.push((name.into(), value, color));
        self
    }
    pub fn legend_entry(mut self, color: usize, name: impl Into<String>) -> Self {
        self.legend.push((color, name.into()));
        self
    }

    pub fn to_svg(&self) -> String {
        let row = 20.0;
        let longest = self
            .bars
            .iter()
            .map(|b| b.0.chars().count())
            .max()
            .unwrap_or(0) as f64;
        let left = (longest * 6.6 + 16.0).clamp(80.0, self.width * 0.55);
        // The legend: only colours some bar has, in rows that fit the width.
        let shown: Vec<&(usize, String)> = self
            .legend
            .iter()
            .filter(|(c, _)| self.bars.iter().any(|b| b.2 == *c))
            .collect();
        let mut spots: Vec<(f64, usize)> = Vec::with_capacity(shown.len());
        let (mut lx, mut lrow) = (left, 0usize);
        for (_, name) in &shown {
            let wdt = 30.0 + 7.0 * name.chars().count() as f64;
            if lx > left && lx + wdt > self.width - 8.0 {
                lx = left;
                lrow += 1;
            }
            spots.push((lx, lrow));
            lx += wdt;
        }
        let legend_h = if shown.is_empty() {
            0.0
        } else {
            24.0 * (lrow + 1) as f64
        };
        let h = 36.0 + 50.0 + legend_h + row * self.bars.len().max(1) as f64;
        let top = self
            .bars
            .iter()
            .map(|b| b.1)
            .filter(|v| v.is_finite())
            .fold(0.0, f64::max);
        let ticks = nice_ticks(0.0, top.max(1e-12) * 1.05, 6);
        let x1 = ticks.last().copied().unwrap_or(1.0).max(top).max(1e-12);
        let fr = Frame {
            w: self.width,
            h,
            left,
            right: 64.0,
            top: 36.0,
            bottom: 50.0 + legend_h,
            x0: 0.0,
            x1,
            y0: 0.0,
            y1: self.bars.len().max(1) as f64,
        };
        let mut out = String::new();
        header(&mut out, fr.w, fr.h, &self.title);
        let (l, r, t, b) = (fr.left, fr.w - fr.right, fr.top, fr.h - fr.bottom);
        for x in &ticks {
            let px = fr.px(*x);
            let _ = writeln!(
                out,
                r##"<line x1="{px:.1}" y1="{t:.1}" x2="{px:.1}" y2="{b:.1}" stroke="#e4e4e4" stroke-width="1"/>
<text x="{px:.1}" y="{:.1}" text-anchor="middle">{}</text>"##,
                b + 18.0,
                escape(&tick_label(*x))
            );
        }
        for (i, (name, v, c)) in self.bars.iter().enumerate() {
            let y = t + row * i as f64;
            let color = PALETTE[c % PALETTE.len()];
            if v.is_finite() && *v > 0.0 {
                let _ = writeln!(
                    out,
                    r#"<rect x="{l:.1}" y="{:.1}" width="{:.1}" height="{:.1}" fill="{color}"/>"#,
                    y + 3.0,
                    fr.px(*v) - l,
                    row - 6.0
                );
            }
            let _ = writeln!(
                out,
                r#"<text x="{:.1}" y="{:.1}" text-anchor="end">{}</text>
<text x="{:.1}" y="{:.1}" font-size="10">{}</text>"#,
                l - 6.0,
                y + row - 6.0,
                escape(name),
                r + 6.0,
                y + row - 7.0,
                escape(&tick_label(*v))
            );
        }
        let _ = writeln!(
            out,
            r##"<rect x="{l:.1}" y="{t:.1}" width="{:.1}" height="{:.1}" fill="none" stroke="#444" stroke-width="1"/>
<text x="{:.1}" y="{:.1}" text-anchor="middle">{}</text>"##,
            r - l,
            b - t,
            (l + r) / 2.0,
            b + 38.0,
            escape(&self.x_label)
        );
        // The legend, under the axis label.
        for ((c, name), &(x, row_i)) in shown.iter().zip(&spots) {
            let y = fr.h - legend_h + 24.0 * row_i as f64;
            let _ = writeln!(
                out,
                r#"<rect x="{x:.1}" y="{:.1}" width="12" height="12" fill="{}"/>
<text x="{:.1}" y="{:.1}">{}</text>"#,
                y + 2.0,
                PALETTE[c % PALETTE.len()],
                x + 16.0,
                y + 12.0,
                escape(name)
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
    fn horizontal_bars_are_well_formed() {
        let h = HBarChart::new("hot <links>", "routes")
            .bar("S_0_0[3] -> S_1_0[4]", 120.0, 0)
            .bar("S_1_0[4] -> S_2_0[4]", 60.0, 1)
            .legend_entry(0, "torus")
            .to_svg();
        let names = well_formed(&h).unwrap();
        // Background, two bars, the frame, the legend box.
        assert_eq!(names.iter().filter(|n| *n == "rect").count(), 5);
        assert!(h.contains("S_0_0[3] -&gt; S_1_0[4]"));
    }
}
