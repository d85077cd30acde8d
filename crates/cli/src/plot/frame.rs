//! What every chart shares: the SVG header and title, the plot area's geometry, axes with
//! "nice" ticks, and the legend.

use super::escape;
use std::fmt::Write;

/// Tick positions covering `lo..=hi` with about `n` steps of 1, 2 or 5 × 10^k.
pub(super) fn nice_ticks(lo: f64, hi: f64, n: usize) -> Vec<f64> {
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
pub(super) fn tick_label(v: f64) -> String {
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

/// Plot area geometry shared by both chart kinds.
pub(super) struct Frame {
    pub(super) w: f64,
    pub(super) h: f64,
    pub(super) left: f64,
    pub(super) right: f64,
    pub(super) top: f64,
    pub(super) bottom: f64,
    pub(super) x0: f64,
    pub(super) x1: f64,
    pub(super) y0: f64,
    pub(super) y1: f64,
}

impl Frame {
    pub(super) fn px(&self, x: f64) -> f64 {
        self.left + (x - self.x0) / (self.x1 - self.x0) * (self.w - self.left - self.right)
    }
    pub(super) fn py(&self, y: f64) -> f64 {
        self.h
            - self.bottom
            - (y - self.y0) / (self.y1 - self.y0) * (self.h - self.top - self.bottom)
    }
}

pub(super) fn header(out: &mut String, w: f64, h: f64, title: &str) {
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
pub(super) fn title_size(w: f64, title: &str) -> f64 {
    let chars = title.chars().count().max(1) as f64;
    (15.0f64).min((w - 20.0) / (0.65 * chars)).max(9.0)
}

/// Axes, grid, ticks and axis labels; `x_ticks` gives (value, label) pairs.
pub(super) fn axes(
    out: &mut String,
    fr: &Frame,
    x_ticks: &[(f64, String)],
    x_label: &str,
    y_label: &str,
) {
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
pub(super) fn legend(out: &mut String, fr: &Frame, entries: &[(String, bool, String)], band: f64) {
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
