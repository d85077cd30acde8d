//! Line charts: several series over a numeric x axis, vertical markers and a legend.

use super::frame::{axes, header, legend, nice_ticks, tick_label, Frame};
use super::{escape, PALETTE};
use std::fmt::Write;

/// One line of a [`LineChart`].
#[derive(Clone, Debug)]
pub struct Series {
    pub name: String,
    pub points: Vec<(f64, f64)>,
    /// `None`: the next colour of [`PALETTE`].
    pub color: Option<String>,
    pub dashed: bool,
    /// Draw a dot at every point.
    pub dots: bool,
    pub width: f64,
}

impl Series {
    /// A solid line without dots.
    pub fn line(name: impl Into<String>, points: Vec<(f64, f64)>) -> Self {
        Series {
            name: name.into(),
            points,
            color: None,
            dashed: false,
            dots: false,
            width: 1.8,
        }
    }
    /// A line with a dot at every point.
    pub fn with_dots(mut self) -> Self {
        self.dots = true;
        self
    }
    pub fn dashed(mut self) -> Self {
        self.dashed = true;
        self
    }
    pub fn color(mut self, c: impl Into<String>) -> Self {
        self.color = Some(c.into());
        self
    }
}

/// A vertical line at `x` with a label at its top.
#[derive(Clone, Debug)]
pub struct Marker {
    pub x: f64,
    pub label: String,
    pub color: String,
}

impl Marker {
    pub fn new(x: f64, label: impl Into<String>) -> Self {
        Marker {
            x,
            label: label.into(),
            color: "#B00020".into(),
        }
    }
}

/// A line chart. See the module documentation.
#[derive(Clone, Debug)]
pub struct LineChart {
    pub title: String,
    pub x_label: String,
    pub y_label: String,
    pub series: Vec<Series>,
    pub markers: Vec<Marker>,
    /// Fixed axis ranges; `None`: from the data (y from 0 when the data are non-negative).
    pub x_range: Option<(f64, f64)>,
    pub y_range: Option<(f64, f64)>,
    /// Only whole numbers on the x axis (counts such as faults).
    pub integer_x: bool,
    pub width: f64,
    pub height: f64,
}

impl LineChart {
    pub fn new(
        title: impl Into<String>,
        x_label: impl Into<String>,
        y_label: impl Into<String>,
    ) -> Self {
        LineChart {
            title: title.into(),
            x_label: x_label.into(),
            y_label: y_label.into(),
            series: Vec::new(),
            markers: Vec::new(),
            x_range: None,
            y_range: None,
            integer_x: false,
            width: 760.0,
            height: 440.0,
        }
    }
    pub fn series(mut self, s: Series) -> Self {
        self.series.push(s);
        self
    }
    pub fn marker(mut self, m: Marker) -> Self {
        self.markers.push(m);
        self
    }
    pub fn x_range(mut self, lo: f64, hi: f64) -> Self {
        self.x_range = Some((lo, hi));
        self
    }
    pub fn y_range(mut self, lo: f64, hi: f64) -> Self {
        self.y_range = Some((lo, hi));
        self
    }

    fn data_range(&self, pick: fn(&(f64, f64)) -> f64) -> Option<(f64, f64)> {
        let mut it = self
            .series
            .iter()
            .flat_map(|s| s.points.iter())
            .filter(|p| p.0.is_finite() && p.1.is_finite())
            .map(pick);
        let first = it.next()?;
        Some(it.fold((first, first), |(a, b), v| (a.min(v), b.max(v))))
    }

    /// The chart as an SVG document.
    pub fn to_svg(&self) -> String {
        let (mut x0, mut x1) = self
            .x_range
            .or_else(|| self.data_range(|p| p.0))
            .unwrap_or((0.0, 1.0));
        for m in &self.markers {
            if self.x_range.is_none() && m.x.is_finite() {
                x0 = x0.min(m.x);
                x1 = x1.max(m.x);
            }
        }
        let (mut y0, mut y1) = self.y_range.unwrap_or_else(|| {
            let (a, b) = self.data_range(|p| p.1).unwrap_or((0.0, 1.0));
            let lo = if a >= 0.0 { 0.0 } else { a };
            (lo, b + (b - lo) * 0.08)
        });
        if x1 <= x0 {
            x1 = x0 + 1.0;
        }
        if y1 <= y0 {
            y1 = y0 + 1.0;
        }
        if self.y_range.is_none() {
            // Round the top up to a tick.
            if let Some(&t) = nice_ticks(y0, y1, 6).last() {
                if t < y1 {
                    let step = nice_ticks(y0, y1, 6)
                        .windows(2)
                        .next()
                        .map(|w| w[1] - w[0])
                        .unwrap_or(0.0);
                    y1 = t + step;
                }
            }
            if y0 < 0.0 && y1 <= y0 {
                y0 -= 1.0;
            }
        }
        // The legend goes under the axis label, one row per series, so it covers no curve.
        let legend_h = if self.series.is_empty() {
            0.0
        } else {
            12.0 + 18.0 * self.series.len() as f64
        };
        let fr = Frame {
            w: self.width,
            h: self.height + legend_h,
            left: 70.0,
            right: 20.0,
            top: 36.0,
            bottom: 50.0 + legend_h,
            x0,
            x1,
            y0,
            y1,
        };
        let mut out = String::new();
        header(&mut out, fr.w, fr.h, &self.title);
        let ticks: Vec<(f64, String)> = nice_ticks(x0, x1, 8)
            .into_iter()
            .filter(|x| !self.integer_x || x.fract() == 0.0)
            .map(|x| (x, tick_label(x)))
            .collect();
        axes(&mut out, &fr, &ticks, &self.x_label, &self.y_label);
        let _ = writeln!(
            out,
            r#"<clipPath id="plot"><rect x="{:.1}" y="{:.1}" width="{:.1}" height="{:.1}"/></clipPath>
<g clip-path="url(#plot)">"#,
            fr.left,
            fr.top,
            fr.w - fr.left - fr.right,
            fr.h - fr.top - fr.bottom
        );
        let mut entries = Vec::new();
        for (i, s) in self.series.iter().enumerate() {
            let color = s
                .color
                .clone()
                .unwrap_or_else(|| PALETTE[i % PALETTE.len()].to_string());
            let pts: Vec<String> = s
                .points
                .iter()
                .filter(|p| p.0.is_finite() && p.1.is_finite())
                .map(|&(x, y)| format!("{:.2},{:.2}", fr.px(x), fr.py(y)))
                .collect();
            let dash = if s.dashed {
                r#" stroke-dasharray="6 3""#
            } else {
                ""
            };
            if pts.len() > 1 {
                let _ = writeln!(
                    out,
                    r#"<polyline fill="none" stroke="{}" stroke-width="{}" stroke-linejoin="round"{dash} points="{}"/>"#,
                    escape(&color),
                    s.width,
                    pts.join(" ")
                );
            }
            if s.dots || pts.len() == 1 {
                for p in &pts {
                    let (x, y) = p.split_once(',').unwrap_or(("0", "0"));
                    let _ = writeln!(
                        out,
                        r#"<circle cx="{x}" cy="{y}" r="3.2" fill="{}"/>"#,
                        escape(&color)
                    );
                }
            }
            entries.push((color, s.dashed, s.name.clone()));
        }
        out.push_str("</g>\n");
        for m in &self.markers {
            if !m.x.is_finite() {
                continue;
            }
            let px = fr.px(m.x);
            let _ = writeln!(
                out,
                r#"<line x1="{px:.1}" y1="{:.1}" x2="{px:.1}" y2="{:.1}" stroke="{}" stroke-width="1.5" stroke-dasharray="4 3"/>
<text x="{:.1}" y="{:.1}" fill="{}" font-size="11">{}</text>"#,
                fr.top,
                fr.h - fr.bottom,
                escape(&m.color),
                px + 4.0,
                fr.h - fr.bottom - 6.0,
                escape(&m.color),
                escape(&m.label)
            );
        }
        legend(&mut out, &fr, &entries, legend_h);
        out.push_str("</svg>\n");
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plot::tests::well_formed;

    #[test]
    fn charts_are_well_formed_and_escape_text() {
        let svg = LineChart::new("a < b & \"c\"", "x", "y")
            .series(Series::line(
                "s1 <1>",
                vec![(0.0, 0.1), (1.0, 0.5), (2.0, f64::NAN)],
            ))
            .series(Series::line("s2", vec![(0.0, 0.3)]).dashed().with_dots())
            .marker(Marker::new(1.5, "fail & repair"))
            .to_svg();
        let names = well_formed(&svg).unwrap();
        assert!(names.contains(&"polyline".to_string()));
        assert!(names.contains(&"circle".to_string()));
        assert!(svg.contains("a &lt; b &amp; &quot;c&quot;"));
        assert!(!svg.contains("NaN"));
        let empty = LineChart::new("empty", "x", "y").to_svg();
        well_formed(&empty).unwrap();
    }
}
