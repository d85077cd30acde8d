//! The record syntax ibnetdiscover dumps and ibsim net files share: node headers
//! (`Switch 36 "S-…" # "desc" enhanced port 0 lid 3 lmc 0`), port-line comments
//! (`# lid 5 lmc 0 "remote" lid 3 4xEDR`) and width/speed tokens.

use super::text::{excerpt, is_ws, parse_num, port_num, trim, Cursor};
use crate::model::{Speed, Width};

/// Reads the start of a node header after its keyword `word`: the port count and the quoted
/// node id (`Switch 36 "S-…"`). `example_id` shows the expected id form in the message.
pub fn node_header<'a>(
    c: &mut Cursor<'a>,
    word: &str,
    example: &str,
) -> Result<(u8, &'a str), String> {
    c.skip_ws();
    let nports = match c.number() {
        Some(v) => match port_num(v) {
            Some(0) | None => {
                return Err(format!(
                    "port count {v} of this {word} is out of range 1..=254"
                ))
            }
            Some(p) => p,
        },
        None => {
            return Err(format!(
                "expected the port count after {word:?} (e.g. {word} {example})"
            ))
        }
    };
    c.skip_ws();
    match c.quoted() {
        Ok(Some(id)) => Ok((nports, id)),
        Ok(None) => Err(format!(
            "record cut short: expected the quoted node id after \"{word} {nports}\""
        )),
        Err(()) => Err("record cut short: the node id has no closing quote".to_string()),
    }
}

/// A node keyword glued to its port count, as in a dump whose tabs were lost when it was
/// copied from a terminal (`Switch41` for `Switch<TAB>41`): the keyword, when `word` is one
/// of `Switch`, `Ca`, `Hca`, `Rt` followed by decimal digits only.
pub fn glued_keyword(word: &str) -> Option<&'static str> {
    ["Switch", "Hca", "Ca", "Rt"].into_iter().find(|kw| {
        word.strip_prefix(kw)
            .is_some_and(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()))
    })
}

/// Width and speed from an ibnetdiscover token such as `4xEDR`, `12xQDR`, `4x???`, `?????`.
pub fn parse_width_speed(tok: &str) -> Option<(Width, Speed)> {
    let (w, s) = if let Some(rest) = tok.strip_prefix("??") {
        (Width::Unknown, rest)
    } else {
        let x = tok.find(['x', 'X'])?;
        let (w, s) = (tok.get(..=x)?, tok.get(x + 1..)?);
        (Width::parse(w)?, s)
    };
    Some((w, Speed::parse(s)?))
}

impl PortComment<'_> {
    /// The error for a malformed width and speed token, if the comment has one.
    pub fn width_speed_error(&self) -> Option<String> {
        self.bad_width_speed.map(|bad| {
            format!(
                "expected the link's width and speed after its LID, like 4xEDR (width 1x, 2x, 4x, 8x or 12x; speed SDR to XDR), got {:?}",
                super::text::excerpt(bad)
            )
        })
    }
}

/// `<something>x<something>` with a number-like width part (`65536xQDR`, `1e9xFDR10`,
/// `4xABC`): a width and speed token that does not parse, as opposed to other text.
fn looks_like_width_speed(tok: &str) -> bool {
    tok.find(['x', 'X']).is_some_and(|i| {
        let (w, s) = (&tok[..i], &tok[i + 1..]);
        !w.is_empty()
            && !s.is_empty()
            && w.starts_with(|c: char| c.is_ascii_digit())
            && w.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"+-.".contains(&b))
    })
}

/// What the `# …` comment of an ibnetdiscover port line says:
/// CA side `lid 5 lmc 0 "remote desc" lid 3 4xEDR`, switch side `"remote desc" lid 3 4xEDR`
/// (possibly followed by ` s=4 w=2 v=4` with `-f`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PortComment<'a> {
    /// The line's own port LID and LMC (CA and router port lines only).
    pub own_lid: Option<(u64, u64)>,
    /// The LID printed for the far end.
    pub remote_lid: Option<u64>,
    pub width_speed: Option<(Width, Speed)>,
    /// The token where the width and speed belong (after `lid N`) when it looks like one
    /// (`<width>x<speed>`) but is not: `65536xQDR`, `1e9xFDR10`, `4xABC`. Readers make it an
    /// error naming the line, not an unknown width.
    pub bad_width_speed: Option<&'a str>,
}

/// Parses a port-line comment (the text after `#`). Never fails: parts it cannot read are
/// `None`. The remote description is skipped by taking everything up to the last `"`, so a
/// description may contain `#`, quotes or trailing spaces.
pub fn parse_port_comment(comment: &str) -> PortComment<'_> {
    let mut out = PortComment::default();
    let mut c = Cursor::new(comment);
    c.skip_ws();
    let save = c;
    if c.eat_str("lid") && c.skip_ws() {
        if let Some(lid) = c.number() {
            let mut lmc = 0;
            let save2 = c;
            c.skip_ws();
            if c.eat_str("lmc") && c.skip_ws() {
                match c.number() {
                    Some(v) => lmc = v,
                    None => c = save2,
                }
            } else {
                c = save2;
            }
            out.own_lid = Some((lid, lmc));
        } else {
            c = save;
        }
    } else {
        c = save;
    }
    let rest = c.rest();
    let tail = match rest.rfind('"') {
        Some(i) => rest.get(i + 1..).unwrap_or(""),
        None => rest,
    };
    let mut toks = tail
        .split(|ch: char| ch.is_ascii() && is_ws(ch as u8))
        .filter(|t| !t.is_empty());
    while let Some(t) = toks.next() {
        if t == "lid" {
            let Some(v) = toks.next() else { break };
            out.remote_lid = parse_num(v);
            if let Some(ws) = toks.next() {
                out.width_speed = parse_width_speed(ws);
                if out.width_speed.is_none() && looks_like_width_speed(ws) {
                    out.bad_width_speed = Some(ws);
                }
            }
            break;
        } else if let Some(ws) = parse_width_speed(t) {
            out.width_speed = Some(ws);
            break;
        }
    }
    out
}

/// What the `# …` part of a node header line says: `# "desc" enhanced port 0 lid 3 lmc 0`
/// (ibsim also accepts an unquoted description ending before ` enhanced port `, ` base port `,
/// ` lid ` or ` lmc `).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HeaderComment<'a> {
    pub desc: Option<&'a str>,
    /// `Some(true)` for `enhanced port 0`, `Some(false)` for `base port 0`.
    pub enhanced: Option<bool>,
    pub lid: Option<u64>,
    pub lmc: Option<u64>,
}

/// Parses the text after a header's node id. Errors: text before `#`, or a description whose
/// closing quote is missing (a line cut short).
pub fn parse_header_rest(rest: &str) -> Result<HeaderComment<'_>, String> {
    let mut out = HeaderComment::default();
    let mut c = Cursor::new(rest);
    c.skip_ws();
    if c.at_end() {
        return Ok(out);
    }
    if !c.eat(b'#') {
        return Err(format!(
            "unexpected text {:?} after the node id (expected a # comment)",
            excerpt(c.rest())
        ));
    }
    c.skip_ws();
    let body = c.rest();
    let after = if let Some(q) = body.strip_prefix('"') {
        let Some(e) = q.rfind('"') else {
            return Err("record cut short: the node description has no closing quote".into());
        };
        out.desc = Some(q.get(..e).unwrap_or(""));
        q.get(e + 1..).unwrap_or("")
    } else {
        let cut = [" enhanced port ", " base port ", " lid ", " lmc "]
            .iter()
            .filter_map(|k| body.find(k))
            .min()
            .unwrap_or(body.len());
        let d = trim(body.get(..cut).unwrap_or(""));
        if !d.is_empty() {
            out.desc = Some(d);
        }
        body.get(cut..).unwrap_or("")
    };
    let toks: Vec<&str> = after
        .split(|ch: char| ch.is_ascii() && is_ws(ch as u8))
        .filter(|t| !t.is_empty())
        .collect();
    let mut i = 0;
    while i < toks.len() {
        match toks[i] {
            "enhanced" | "base"
                if toks.get(i + 1) == Some(&"port") && toks.get(i + 2) == Some(&"0") =>
            {
                out.enhanced = Some(toks[i] == "enhanced");
                i += 3;
            }
            "lid" | "lmc" => {
                let v = toks.get(i + 1).and_then(|t| parse_num(t));
                let Some(v) = v else {
                    return Err(format!(
                        "expected a number after {:?} in the node header",
                        toks[i]
                    ));
                };
                if toks[i] == "lid" {
                    out.lid = Some(v);
                } else {
                    out.lmc = Some(v);
                }
                i += 2;
            }
            _ => i += 1,
        }
    }
    Ok(out)
}

// ---------------------------------------------------------------------------------------------

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn glued_keywords() {
        assert_eq!(glued_keyword("Switch41"), Some("Switch"));
        assert_eq!(glued_keyword("Ca2"), Some("Ca"));
        assert_eq!(glued_keyword("Hca1"), Some("Hca"));
        assert_eq!(glued_keyword("Rt8"), Some("Rt"));
        assert_eq!(glued_keyword("Switch"), None);
        assert_eq!(glued_keyword("Switch4x"), None);
        assert_eq!(glued_keyword("Cable3"), None);
    }

    #[test]
    fn width_speed_tokens() {
        assert_eq!(parse_width_speed("4xEDR"), Some((Width::X4, Speed::Edr)));
        assert_eq!(
            parse_width_speed("12xFDR10"),
            Some((Width::X12, Speed::Fdr10))
        );
        assert_eq!(
            parse_width_speed("4x???"),
            Some((Width::X4, Speed::Unknown))
        );
        assert_eq!(
            parse_width_speed("?????"),
            Some((Width::Unknown, Speed::Unknown))
        );
        assert_eq!(
            parse_width_speed("??HDR"),
            Some((Width::Unknown, Speed::Hdr))
        );
        assert_eq!(parse_width_speed("3xEDR"), None);
        assert_eq!(parse_width_speed("lid"), None);
    }

    #[test]
    fn port_comments() {
        let c = parse_port_comment(r#" lid 5 lmc 1 "leaf #1 "big" " lid 3 4xEDR s=4 w=2 v=4"#);
        assert_eq!(c.own_lid, Some((5, 1)));
        assert_eq!(c.remote_lid, Some(3));
        assert_eq!(c.width_speed, Some((Width::X4, Speed::Edr)));
        let c = parse_port_comment(r#" "node01 HCA-1" lid 65535 12x???"#);
        assert_eq!(c.own_lid, None);
        assert_eq!(c.remote_lid, Some(65535));
        assert_eq!(c.width_speed, Some((Width::X12, Speed::Unknown)));
        let c = parse_port_comment(r#" "cut short"#);
        assert_eq!(c.width_speed, None);
        assert_eq!(parse_port_comment("").width_speed, None);
    }

    #[test]
    fn header_comments() {
        let h =
            parse_header_rest("\t\t# \"MF0;leaf \"01\"  \" enhanced port 0 lid 3 lmc 2").unwrap();
        assert_eq!(h.desc, Some("MF0;leaf \"01\"  "));
        assert_eq!((h.enhanced, h.lid, h.lmc), (Some(true), Some(3), Some(2)));
        let h = parse_header_rest(" # plain desc base port 0 lid 0x10").unwrap();
        assert_eq!(h.desc, Some("plain desc"));
        assert_eq!((h.enhanced, h.lid, h.lmc), (Some(false), Some(16), None));
        assert_eq!(parse_header_rest("").unwrap(), HeaderComment::default());
        assert!(parse_header_rest(" junk")
            .unwrap_err()
            .contains("unexpected text"));
        assert!(parse_header_rest(" # \"open")
            .unwrap_err()
            .contains("record cut short"));
        assert!(parse_header_rest(" # \"d\" lid x")
            .unwrap_err()
            .contains("expected a number"));
    }
}
