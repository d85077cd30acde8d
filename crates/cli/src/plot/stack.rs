//! Several charts stacked in one SVG document under a common title (small multiples).

use super::frame::header;

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
