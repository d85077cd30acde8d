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
//!
//! One file per chart kind (`line.rs`, `bar.rs`, `hbar.rs`, `cycle.rs`, `stack.rs`), with
//! what they share in `frame.rs`; the palette and text escaping are here.

mod bar;
mod cycle;
mod frame;
mod hbar;
mod line;
mod stack;

pub use bar::BarChart;
pub use cycle::{CycleDiagram, CyclePanel};
pub use hbar::HBarChart;
pub use line::{LineChart, Marker, Series};
pub use stack::stack;

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

#[cfg(test)]
pub(crate) mod tests {
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
    fn the_checker_refuses_malformed_documents() {
        let decl = r#"<?xml version="1.0" encoding="UTF-8"?>"#;
        assert!(well_formed(&format!("{decl}<svg><g></svg>")).is_err());
        assert!(well_formed(&format!("{decl}<svg a=1/>")).is_err());
        assert!(well_formed(&format!("{decl}<svg>&nbsp;</svg>")).is_err());
        assert!(well_formed(&format!("{decl}<svg/><svg/>")).is_err());
    }
}
