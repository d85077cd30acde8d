//! Small SVG charts, drawn as plain strings (no dependencies): line charts with several
//! series, axes with "nice" ticks, a legend and vertical markers, bar charts (one bar per
//! category, or a histogram over numeric bins), horizontal bar charts with named rows, and
//! credit-loop diagrams (each witness cycle on a circle of its switches).
//!
//! ```ignore
//! let svg = LineChart::new("Accepted traffic", "time (µs)", "accepted (fraction of link rate)")
//!     .series(Series::line("rftr", points))
//!     .marker(Marker::new(1000.0, "link fails"))
//!     .y_range(0.0, 1.0)
//!     .to_svg();
//! ```
//!
//! Every chart is a self-contained SVG 1.1 document (`width` × `height` pixels, white
//! background, sans-serif text). Text is XML-escaped; non-finite points are skipped; an empty
//! chart still draws its axes. Colours cycle through [`PALETTE`] unless a series sets its own.

use std::fmt::Write;

/// Default series colours (colour-blind friendly, Okabe–Ito).
pub const PALETTE: [&str; 8] = [
    "#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000", "#F0E442",
];

/// Escapes text for SVG content and attribute values.
pub fn escape(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&apos;"),
            c if (c as u32) < 0x20 && c != '\n' && c != '\t' => o.push(' '),
            c => o.push(c),
        }
    }
    o
}

/// Tick positions covering `lo..=hi` with about `n` steps of 1, 2 or 5 × 10^k.
pub fn nice_ticks(lo: f64, hi: f64, n: usize) -> Vec<f64> {
    if !(lo.is_finite() && hi.is_finite()) || hi <= lo {
        return vec![lo];
    }
    let raw = (hi - lo) / n.max(1) as f64;
    let mag = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|&s| s >= raw)
        .unwrap_or(10.0 * mag);
    // Multiples of the step, rounded to its decimals (0.6, not 0.6000000000000001).
    let digits = (-step.log10().floor()).max(0.0) as i32;
    let scale = 10f64.powi(digits);
    let mut v = Vec::new();
    let mut k = (lo / step).ceil() as i64;
    while (k as f64) * step <= hi + step * 1e-9 {
        v.push(((k as f64) * step * scale).round() / scale);
        k += 1;
    }
    v
}

/// A tick label: few digits, no trailing zeros.
pub fn tick_label(v: f64) -> String {
    if v == 0.0 {
        return "0".into();
    }
    let a = v.abs();
    let s = if !(1e-3..1e6).contains(&a) {
        format!("{v:.1e}")
    } else if a >= 100.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.3}")
    };
    if s.contains('.') && !s.contains('e') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

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

/// Plot area geometry shared by both chart kinds.
struct Frame {
    w: f64,
    h: f64,
    left: f64,
    right: f64,
    top: f64,
    bottom: f64,
    x0: f64,
    x1: f64,
    y0: f64,
    y1: f64,
}

impl Frame {
    fn px(&self, x: f64) -> f64 {
        self.left + (x - self.x0) / (self.x1 - self.x0) * (self.w - self.left - self.right)
    }
    fn py(&self, y: f64) -> f64 {
        self.h
            - self.bottom
            - (y - self.y0) / (self.y1 - self.y0) * (self.h - self.top - self.bottom)
    }
}

fn header(out: &mut String, w: f64, h: f64, title: &str) {
    let size = title_size(w, title);
    let _ = writeln!(
        out,
        r#"<?xml version="1.0" encoding="UTF-8"?>
<svg xmlns="http://www.w3.org/2000/svg" version="1.1" width="{w}" height="{h}" viewBox="0 0 {w} {h}" font-family="DejaVu Sans, Helvetica, Arial, sans-serif" font-size="12">
<title>{}</title>
<rect x="0" y="0" width="{w}" height="{h}" fill="white"/>
<text x="{}" y="22" text-anchor="middle" font-size="{size:.1}" font-weight="bold">{}</text>"#,
        escape(title),
        w / 2.0,
        escape(title)
    );
}

/// The title's font size: 15, smaller for a title that would not fit the width (bold
/// DejaVu Sans is about 0.65 em per character), never below 9.
fn title_size(w: f64, title: &str) -> f64 {
    let chars = title.chars().count().max(1) as f64;
    (15.0f64).min((w - 20.0) / (0.65 * chars)).max(9.0)
}

/// Axes, grid, ticks and axis labels; `x_ticks` gives (value, label) pairs.
fn axes(out: &mut String, fr: &Frame, x_ticks: &[(f64, String)], x_label: &str, y_label: &str) {
    let (l, r, t, b) = (fr.left, fr.w - fr.right, fr.top, fr.h - fr.bottom);
    for y in nice_ticks(fr.y0, fr.y1, 6) {
        let py = fr.py(y);
        let _ = writeln!(
            out,
            r##"<line x1="{l:.1}" y1="{py:.1}" x2="{r:.1}" y2="{py:.1}" stroke="#e4e4e4" stroke-width="1"/>
<text x="{:.1}" y="{:.1}" text-anchor="end">{}</text>"##,
            l - 6.0,
            py + 4.0,
            escape(&tick_label(y))
        );
    }
    for (x, label) in x_ticks {
        let px = fr.px(*x);
        let _ = writeln!(
            out,
            r##"<line x1="{px:.1}" y1="{b:.1}" x2="{px:.1}" y2="{:.1}" stroke="#444" stroke-width="1"/>
<text x="{px:.1}" y="{:.1}" text-anchor="middle">{}</text>"##,
            b + 5.0,
            b + 18.0,
            escape(label)
        );
    }
    let _ = writeln!(
        out,
        r##"<rect x="{l:.1}" y="{t:.1}" width="{:.1}" height="{:.1}" fill="none" stroke="#444" stroke-width="1"/>
<text x="{:.1}" y="{:.1}" text-anchor="middle">{}</text>
<text transform="translate({:.1},{:.1}) rotate(-90)" text-anchor="middle">{}</text>"##,
        r - l,
        b - t,
        (l + r) / 2.0,
        b + 40.0,
        escape(x_label),
        16.0,
        (t + b) / 2.0,
        escape(y_label)
    );
}

/// Legend entries (colour, dashed, name) in the top-right (or bottom-left) corner of the plot
/// area.
/// The legend in the band of height `band` under the axis label: one row per entry.
fn legend(out: &mut String, fr: &Frame, entries: &[(String, bool, String)], band: f64) {
    if entries.is_empty() {
        return;
    }
    let longest = entries
        .iter()
        .map(|e| e.2.chars().count())
        .max()
        .unwrap_or(0) as f64;
    let bw = (34.0 + longest * 7.0).min(fr.w - fr.left - 8.0);
    let bh = 8.0 + 18.0 * entries.len() as f64;
    let (x, y) = (fr.left, fr.h - band);
    let _ = writeln!(
        out,
        r##"<rect x="{x:.1}" y="{y:.1}" width="{bw:.1}" height="{bh:.1}" fill="white" fill-opacity="0.85" stroke="#bbb"/>"##
    );
    for (i, (color, dashed, name)) in entries.iter().enumerate() {
        let ly = y + 14.0 + 18.0 * i as f64;
        let dash = if *dashed {
            r#" stroke-dasharray="6 3""#
        } else {
            ""
        };
        let _ = writeln!(
            out,
            r#"<line x1="{:.1}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="{}" stroke-width="2.5"{dash}/>
<text x="{:.1}" y="{:.1}">{}</text>"#,
            x + 6.0,
            ly - 4.0,
            x + 26.0,
            ly - 4.0,
            escape(color),
            x + 30.0,
            ly,
            escape(name)
        );
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

/// Several charts stacked top to bottom in one SVG document (each chart a nested `<svg>`),
/// under a common title. Used for small multiples (one histogram per link class).
pub fn stack(title: &str, charts: &[String]) -> String {
    let size = |doc: &str, attr: &str| -> f64 {
        doc.split_once(&format!(" {attr}=\""))
            .and_then(|(_, r)| r.split_once('"'))
            .and_then(|(v, _)| v.parse().ok())
            .unwrap_or(0.0)
    };
    let w = charts
        .iter()
        .map(|c| size(c, "width"))
        .fold(0.0, f64::max)
        .max(200.0);
    let mut y = 34.0;
    let mut body = String::new();
    for c in charts {
        let h = size(c, "height");
        let inner = c
            .split_once("?>")
            .map_or(c.as_str(), |(_, r)| r.trim_start());
        let inner = inner.replacen("<svg ", &format!("<svg x=\"0\" y=\"{y:.1}\" "), 1);
        body.push_str(&inner);
        y += h;
    }
    let mut out = String::new();
    header(&mut out, w, y, title);
    out.push_str(&body);
    out.push_str("</svg>\n");
    out
}

/// One credit loop to draw: its title and its hops in order, each `(switch, out port, VL,
/// next switch's in port)`; the last hop leads back to the first switch.
#[derive(Clone, Debug)]
pub struct CyclePanel {
    pub title: String,
    pub hops: Vec<(String, u8, u8, u8)>,
}

/// Credit loops drawn as small multiples: in each panel the switches of one witness cycle sit
/// on a circle in cycle order, joined by arrows labelled with the output port and VL
/// (`p3 VL0`), so the loop can be followed with a finger.
#[derive(Clone, Debug)]
pub struct CycleDiagram {
    pub title: String,
    pub panels: Vec<CyclePanel>,
    /// A line under the title (e.g. "the first 12 of 40 loops").
    pub note: Option<String>,
}

impl CycleDiagram {
    pub fn to_svg(&self) -> String {
        let n = self.panels.len().max(1);
        let cols = if n == 1 { 1 } else { 2 };
        let rows = n.div_ceil(cols);
        let (pw, ph) = (560.0, 520.0);
        let top = if self.note.is_some() { 56.0 } else { 40.0 };
        let w = pw * cols as f64;
        let h = top + ph * rows as f64;
        let mut out = String::new();
        header(&mut out, w, h, &self.title);
        if let Some(note) = &self.note {
            let _ = writeln!(
                out,
                r##"<text x="{:.1}" y="42" text-anchor="middle" fill="#555">{}</text>"##,
                w / 2.0,
                escape(note)
            );
        }
        let _ = writeln!(
            out,
            r##"<defs><marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse"><path d="M 0 0 L 10 5 L 0 10 z" fill="#D55E00"/></marker></defs>"##
        );
        for (i, p) in self.panels.iter().enumerate() {
            let ox = pw * (i % cols) as f64;
            let oy = top + ph * (i / cols) as f64;
            let _ = writeln!(
                out,
                r##"<rect x="{:.1}" y="{:.1}" width="{:.1}" height="{:.1}" fill="none" stroke="#ccc"/>
<text x="{:.1}" y="{:.1}" text-anchor="middle" font-weight="bold">{}</text>"##,
                ox + 4.0,
                oy + 4.0,
                pw - 8.0,
                ph - 8.0,
                ox + pw / 2.0,
                oy + 24.0,
                escape(&p.title)
            );
            let k = p.hops.len().max(1);
            let (cx, cy) = (ox + pw / 2.0, oy + ph / 2.0 + 12.0);
            let rad = 190.0;
            let small = k > 16;
            let pos = |j: usize| {
                let a = -std::f64::consts::FRAC_PI_2 + std::f64::consts::TAU * j as f64 / k as f64;
                (cx + rad * a.cos(), cy + rad * a.sin())
            };
            let node_r = if small { 5.0 } else { 9.0 };
            for (j, (_, port, vl, in_port)) in p.hops.iter().enumerate() {
                let (x0, y0) = pos(j);
                let (x1, y1) = pos((j + 1) % k);
                let (dx, dy) = (x1 - x0, y1 - y0);
                let len = (dx * dx + dy * dy).sqrt().max(1e-9);
                let (ux, uy) = (dx / len, dy / len);
                let (ax, ay) = (x0 + ux * (node_r + 2.0), y0 + uy * (node_r + 2.0));
                let (bx, by) = (x1 - ux * (node_r + 3.0), y1 - uy * (node_r + 3.0));
                let _ = writeln!(
                    out,
                    r##"<line x1="{ax:.1}" y1="{ay:.1}" x2="{bx:.1}" y2="{by:.1}" stroke="#D55E00" stroke-width="2" marker-end="url(#arrow)"/>"##
                );
                if !small {
                    // Label outside the circle, at the middle of the chord.
                    let (mx, my) = ((x0 + x1) / 2.0, (y0 + y1) / 2.0);
                    let (ox2, oy2) = (mx - cx, my - cy);
                    let ol = (ox2 * ox2 + oy2 * oy2).sqrt().max(1e-9);
                    let (lx, ly) = (mx + ox2 / ol * 16.0, my + oy2 / ol * 16.0);
                    let anchor = if ox2 > 20.0 {
                        "start"
                    } else if ox2 < -20.0 {
                        "end"
                    } else {
                        "middle"
                    };
                    let _ = writeln!(
                        out,
                        r##"<text x="{lx:.1}" y="{:.1}" text-anchor="{anchor}" font-size="10" fill="#8a3a00">p{port}→p{in_port} VL{vl}</text>"##,
                        ly + 3.0
                    );
                }
            }
            for (j, (name, ..)) in p.hops.iter().enumerate() {
                let (x, y) = pos(j);
                let (dx, dy) = (x - cx, y - cy);
                let dl = (dx * dx + dy * dy).sqrt().max(1e-9);
                let inward = if small { 0.0 } else { 1.0 };
                let (tx, ty) = (x - dx / dl * 26.0 * inward, y - dy / dl * 26.0 * inward);
                let _ = writeln!(
                    out,
                    r##"<circle cx="{x:.1}" cy="{y:.1}" r="{node_r}" fill="#0072B2"/>"##
                );
                if !small || j % (k / 16 + 1) == 0 {
                    let _ = writeln!(
                        out,
                        r#"<text x="{tx:.1}" y="{:.1}" text-anchor="middle" font-size="{}">{}</text>"#,
                        ty + 4.0,
                        if small { 9 } else { 11 },
                        escape(name)
                    );
                }
            }
        }
        out.push_str("</svg>\n");
        out
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A minimal XML well-formedness check: one root, balanced tags, quoted attributes, no
    /// stray `<` or `&` in text. Returns the element names seen.
    pub fn well_formed(doc: &str) -> Result<Vec<String>, String> {
        let body = doc
            .strip_prefix(r#"<?xml version="1.0" encoding="UTF-8"?>"#)
            .ok_or("no XML declaration")?;
        let mut stack: Vec<String> = Vec::new();
        let mut seen = Vec::new();
        let mut roots = 0;
        let b = body.as_bytes();
        let mut i = 0;
        while i < b.len() {
            match b[i] {
                b'<' => {
                    let end = body[i..].find('>').ok_or("unclosed tag")? + i;
                    let tag = &body[i + 1..end];
                    if let Some(name) = tag.strip_prefix('/') {
                        let open = stack.pop().ok_or("close without open")?;
                        if open != name.trim() {
                            return Err(format!("</{name}> closes <{open}>"));
                        }
                    } else {
                        let self_closing = tag.ends_with('/');
                        let t = tag.trim_end_matches('/');
                        let name: String = t.chars().take_while(|c| !c.is_whitespace()).collect();
                        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric()) {
                            return Err(format!("bad element name in <{tag}>"));
                        }
                        // Attributes: name="value" pairs.
                        let mut rest = t[name.len()..].trim();
                        while !rest.is_empty() {
                            let eq = rest
                                .find('=')
                                .ok_or(format!("attribute without value in <{tag}>"))?;
                            let after = &rest[eq + 1..];
                            let q = after.chars().next().ok_or("empty attribute")?;
                            if q != '"' {
                                return Err(format!("unquoted attribute in <{tag}>"));
                            }
                            let close = after[1..].find('"').ok_or("unterminated attribute")?;
                            let val = &after[1..1 + close];
                            if val.contains('<') {
                                return Err("< in attribute".into());
                            }
                            rest = after[close + 2..].trim();
                        }
                        if stack.is_empty() {
                            roots += 1;
                        }
                        seen.push(name.clone());
                        if !self_closing {
                            stack.push(name);
                        }
                    }
                    i = end + 1;
                }
                b'&' => {
                    let semi = body[i..].find(';').ok_or("bare &")?;
                    let ent = &body[i + 1..i + semi];
                    if !["amp", "lt", "gt", "quot", "apos"].contains(&ent) {
                        return Err(format!("unknown entity &{ent};"));
                    }
                    i += semi + 1;
                }
                _ => i += 1,
            }
        }
        if !stack.is_empty() {
            return Err(format!("unclosed {stack:?}"));
        }
        if roots != 1 {
            return Err(format!("{roots} root elements"));
        }
        Ok(seen)
    }

    #[test]
    fn ticks_are_nice_and_cover_the_range() {
        assert_eq!(nice_ticks(0.0, 1.0, 5), vec![0.0, 0.2, 0.4, 0.6, 0.8, 1.0]);
        assert_eq!(
            nice_ticks(0.0, 3000.0, 6),
            vec![0.0, 500.0, 1000.0, 1500.0, 2000.0, 2500.0, 3000.0]
        );
        let t = nice_ticks(0.13, 0.91, 4);
        assert!(t.first().unwrap() >= &0.13 && t.last().unwrap() <= &0.91);
        assert_eq!(tick_label(0.30000000000000004), "0.3");
        assert_eq!(tick_label(1500.0), "1500");
        assert_eq!(tick_label(0.0), "0");
    }

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
        let bars = BarChart::new("h", "bin", "count")
            .histogram(&[0.0, 10.0, 20.0], &[3.0, 0.0, 7.0])
            .to_svg();
        let names = well_formed(&bars).unwrap();
        assert_eq!(names.iter().filter(|n| *n == "rect").count(), 1 + 1 + 2);
        let decl = r#"<?xml version="1.0" encoding="UTF-8"?>"#;
        assert!(well_formed(&format!("{decl}<svg><g></svg>")).is_err());
        assert!(well_formed(&format!("{decl}<svg a=1/>")).is_err());
        assert!(well_formed(&format!("{decl}<svg>&nbsp;</svg>")).is_err());
        assert!(well_formed(&format!("{decl}<svg/><svg/>")).is_err());
    }

    #[test]
    fn horizontal_bars_and_cycle_diagrams_are_well_formed() {
        let h = HBarChart::new("hot <links>", "routes")
            .bar("S_0_0[3] -> S_1_0[4]", 120.0, 0)
            .bar("S_1_0[4] -> S_2_0[4]", 60.0, 1)
            .legend_entry(0, "torus")
            .to_svg();
        let names = well_formed(&h).unwrap();
        // Background, two bars, the frame, the legend box.
        assert_eq!(names.iter().filter(|n| *n == "rect").count(), 5);
        assert!(h.contains("S_0_0[3] -&gt; S_1_0[4]"));
        for k in [2usize, 5, 40] {
            let panel = CyclePanel {
                title: format!("loop of {k}"),
                hops: (0..k)
                    .map(|i| (format!("S_{i}"), 3, (i % 2) as u8, 4))
                    .collect(),
            };
            let d = CycleDiagram {
                title: "credit loops".into(),
                panels: vec![panel.clone(), panel],
                note: Some("2 of 2 & more".into()),
            };
            let svg = d.to_svg();
            let names = well_formed(&svg).unwrap();
            // One arrow per hop, one dot per switch, in each of the two panels.
            assert_eq!(names.iter().filter(|n| *n == "line").count(), 2 * k);
            assert_eq!(names.iter().filter(|n| *n == "circle").count(), 2 * k);
            if k <= 16 {
                assert_eq!(svg.matches("p3→p4 VL").count(), 2 * k);
            }
        }
    }
}
