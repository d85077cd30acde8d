//! Credit-loop diagrams: each witness cycle on a circle of its switches.

use super::escape;
use super::frame::header;
use std::fmt::Write;

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
mod tests {
    use super::*;
    use crate::plot::tests::well_formed;

    #[test]
    fn cycle_diagrams_are_well_formed() {
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
