//! Reader for ibsim net files (`ibsim/sim_net.c`), with ibsim's own GUID rules.
//!
//! ```text
//! Switch    6 "S_0_0"        # "leaf 0" enhanced port 0 lid 3 lmc 0
//! [1]    "H_0_0_0"[1]
//! [3]    "S_1_0"[4]    w=2 s=4
//!
//! Hca    1 "H_0_0_0"
//! [1]    "S_0_0"        # remote port defaults to 1
//! ```
//!
//! - Node names are the quoted ids; descriptions come from the `# …` comment (else the id).
//! - GUIDs are never taken from the ids or parentheses: switches get 0x200000, 0x200001, …;
//!   CAs (`Hca`/`Ca`) start at 0x100000 and advance by ports + 1, with port GUID = node GUID +
//!   port; routers (`Rt`) advance the same way from ibsim's router base, which is 0.
//!   `switchguid=`, `caguid=`/`hcaguids=`, `rtguid=` set the next GUID of that kind: `=N` sets
//!   the base absolutely, `+N` means base + N.
//! - `vendid=` and `sysimgguid=` apply to the next node only, `devid=` to all following nodes.
//! - Port options anywhere after the remote id: `w=` width mask (1=1x, 2=4x, 4=8x, 8=12x,
//!   16=2x), `s=` speed mask (1=SDR, 2=DDR, 4=QDR; 0 = QDR), `e=` extended speed mask (1=FDR,
//!   2=EDR, 4=HDR, 8=NDR); an ibnetdiscover-style `# … lid N 4xEDR` comment sets them too.
//!   `width=`, `speed=`, `extspeed=` set the defaults (4x, SDR, none). A link runs at the
//!   highest width and speed both ends enable; none in common is an error (ibsim aborts).
//! - `include "file"` goes through the caller's resolver (cycles and depth are guarded; errors
//!   name the included file and line); `do …`, `pdebug=`, `module=` are ignored (the latter
//!   with a warning); `@alias` lines are not supported and skipped with a warning.

use super::diag::Loc;
use super::records::{Combined, Records};
use super::syntax::{node_header, parse_header_rest, parse_port_comment};
use super::text::{
    decode, excerpt, is_shell_prompt, is_tool_noise, parse_num, port_num, trim, Cursor, Lines,
};
use super::{IncludeResolver, Loaded, ParseError};
use crate::builder::BuildOptions;
use crate::model::{NodeId, NodeKind, Speed, Width};

/// Maximum include depth (ibsim allows 9 levels).
const MAX_DEPTH: usize = 16;

/// Enabled widths and speeds of one port, as ibsim keeps them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Masks {
    width: u8,
    speed: u8,
    ext: u8,
    fdr10: bool,
}

impl Masks {
    /// What an ibnetdiscover `4xEDR` token enables (as ibsim's parse_port_connection_data).
    fn apply_token(&mut self, w: Width, s: Speed) {
        match w {
            Width::X12 => self.width = 1 | 2 | 8,
            Width::X8 => self.width = 4,
            Width::X4 => self.width = 1 | 2,
            Width::X2 => self.width = 16,
            Width::X1 => self.width = 1,
            Width::Unknown => {}
        }
        match s {
            Speed::Sdr => self.speed = 1,
            Speed::Ddr => self.speed = 3,
            Speed::Qdr => self.speed = 7,
            Speed::Fdr10 => {
                self.speed = 7;
                self.fdr10 = true;
            }
            Speed::Fdr => {
                self.speed = 7;
                self.ext = 1;
                self.fdr10 = true;
            }
            Speed::Edr => {
                self.speed = 7;
                self.ext = 3;
                self.fdr10 = true;
            }
            Speed::Hdr => {
                self.speed = 7;
                self.ext = 7;
                self.fdr10 = true;
            }
            // ibsim has no XDR bit: XDR enables what NDR does
            Speed::Ndr | Speed::Xdr => {
                self.speed = 7;
                self.ext = 15;
                self.fdr10 = true;
            }
            Speed::Unknown => {}
        }
    }
}

/// The active width and speed of a link between ports with these enables.
fn active(a: &Masks, b: &Masks) -> Result<(Width, Speed), String> {
    let w = a.width & b.width;
    let width = if w & 8 != 0 {
        Width::X12
    } else if w & 4 != 0 {
        Width::X8
    } else if w & 2 != 0 {
        Width::X4
    } else if w & 16 != 0 {
        Width::X2
    } else if w & 1 != 0 {
        Width::X1
    } else {
        return Err(format!(
            "the two ends have no link width in common (w={} vs w={})",
            a.width, b.width
        ));
    };
    let s = a.speed & b.speed;
    let base = if s & 4 != 0 {
        Speed::Qdr
    } else if s & 2 != 0 {
        Speed::Ddr
    } else if s & 1 != 0 {
        Speed::Sdr
    } else {
        return Err(format!(
            "the two ends have no link speed in common (s={} vs s={})",
            a.speed, b.speed
        ));
    };
    let e = a.ext & b.ext;
    let speed = if e & 8 != 0 {
        Speed::Ndr
    } else if e & 4 != 0 {
        Speed::Hdr
    } else if e & 2 != 0 {
        Speed::Edr
    } else if e & 1 != 0 {
        Speed::Fdr
    } else if a.fdr10 && b.fdr10 {
        Speed::Fdr10
    } else {
        base
    };
    Ok((width, speed))
}

const SW: usize = 0;
const CA: usize = 1;
const RT: usize = 2;

struct Sim<'r, 'i> {
    rec: Records<Masks>,
    include: &'r mut IncludeResolver<'i>,
    /// Next GUID and base per kind (switch, CA, router), as ibsim's `guids`/`absguids`.
    next: [u64; 3],
    base: [u64; 3],
    vendid: u64,
    devid: u64,
    sysimgguid: u64,
    defaults: Masks,
    stack: Vec<String>,
}

/// Reads an ibsim net file; `include` resolves `include "file"` lines.
pub fn read(
    bytes: &[u8],
    file: &str,
    include: &mut IncludeResolver<'_>,
    opts: BuildOptions,
) -> Result<Loaded, ParseError> {
    let start = [0x200000, 0x100000, 0];
    let mut rec = Records::new(file, opts);
    rec.undefined_far_is_error = true;
    let mut sim = Sim {
        rec,
        include,
        next: start,
        base: start,
        vendid: 0,
        devid: 0,
        sysimgguid: 0,
        defaults: Masks {
            width: 2,
            speed: 1,
            ext: 0,
            fdr10: false,
        },
        stack: vec![file.to_string()],
    };
    sim.parse(bytes, 0)?;
    let far_default = sim.defaults;
    sim.rec.finish(
        |a, b| active(a, b.unwrap_or(&far_default)).map(|(w, s)| Combined::agreed(w, s)),
        "no nodes: expected ibsim net records (Switch/Hca/Ca/Rt)",
    )
}

impl Sim<'_, '_> {
    fn parse(&mut self, bytes: &[u8], file: usize) -> Result<(), ParseError> {
        let text = decode(bytes);
        let mut cur: Option<NodeId> = None;
        for line in Lines::new(&text) {
            let at = Loc::new(file, line.no);
            let t = trim(line.text);
            if t.is_empty() {
                cur = None;
                continue;
            }
            if t.starts_with('#') {
                continue;
            }
            if t.starts_with('[') || t.starts_with('@') {
                if let Some(n) = cur {
                    self.port_line(n, t, at)?;
                } else if is_shell_prompt(t) {
                    self.rec.warn(at, format!("ignored {:?}", excerpt(t)));
                } else {
                    return Err(self.rec.err(
                        at,
                        format!(
                            "port line outside a node record: {:?} (expected a Switch/Hca/Rt header line before the port lines)",
                            excerpt(t)
                        ),
                    ));
                }
                continue;
            }
            cur = None;
            let mut c = Cursor::new(t);
            let word = c.take_while(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
            let kind = match word {
                "Switch" => Some(NodeKind::Switch),
                "Hca" | "Ca" => Some(NodeKind::Ca),
                "Rt" => Some(NodeKind::Router),
                _ => None,
            };
            if let Some(kind) = kind {
                if c.peek()
                    .is_some_and(|b| b == b' ' || b == b'\t' || b.is_ascii_digit())
                {
                    cur = Some(self.header(kind, word, c, at)?);
                    continue;
                }
            }
            match word {
                "switchguid" | "caguid" | "caguids" | "hcaguid" | "hcaguids" | "rtguid" => {
                    let k = match word {
                        "switchguid" => SW,
                        "rtguid" => RT,
                        _ => CA,
                    };
                    self.guid_base(k, word, c, at)?;
                }
                "vendid" | "devid" | "sysimgguid" | "width" | "speed" | "extspeed" => {
                    self.assign(word, c, at)?;
                }
                "include" => self.include_file(c, at)?,
                "do" if c.at_end() || c.peek().is_some_and(|b| b == b' ' || b == b'\t') => {}
                "pdebug" => {}
                "module" => self.rec.warn(
                    at,
                    "module= (node-id prefixes) is not supported; ids are used as written",
                ),
                "Chassis" | "Non-Chassis" | "Hostname" => {} // ibnetdiscover -g grouping lines
                _ if is_tool_noise(t) || is_shell_prompt(t) => {
                    self.rec.warn(at, format!("ignored {:?}", excerpt(t)));
                }
                _ => {
                    return Err(self.rec.err(
                        at,
                        format!(
                            "unexpected line {:?}: expected a node header (Switch/Hca/Ca/Rt), a port line, \
                             switchguid=/caguid=/rtguid=, vendid=/devid=/sysimgguid=, width=/speed=, include, do, \
                             a # comment or a blank line",
                            excerpt(t)
                        ),
                    ))
                }
            }
        }
        Ok(())
    }

    /// `=` value (or `+` value when `plus_ok`), returning (relative?, value).
    fn value(
        &self,
        word: &str,
        mut c: Cursor<'_>,
        plus_ok: bool,
        at: Loc,
    ) -> Result<(bool, u64), ParseError> {
        c.skip_ws();
        let rel = if c.eat(b'=') {
            false
        } else if plus_ok && c.eat(b'+') {
            true
        } else {
            return Err(self.rec.err(
                at,
                format!(
                    "bad assignment: expected {word}=<number>{}",
                    if plus_ok { " or +<number>" } else { "" }
                ),
            ));
        };
        c.skip_ws();
        let Some(v) = c.number() else {
            return Err(self.rec.err(
                at,
                format!(
                    "expected a number after {word}{}",
                    if rel { "+" } else { "=" }
                ),
            ));
        };
        // ibnetdiscover's switchguid=0x…(portguid) and trailing comments are fine.
        if c.eat(b'(') {
            let _ = c.hex();
            if !c.eat(b')') {
                return Err(self
                    .rec
                    .err(at, format!("record cut short: unclosed '(' after {word}=")));
            }
        }
        c.skip_ws();
        if !(c.at_end() || c.peek() == Some(b'#')) {
            return Err(self.rec.err(
                at,
                format!("unexpected text {:?} after {word}=", excerpt(c.rest())),
            ));
        }
        Ok((rel, v))
    }

    fn guid_base(
        &mut self,
        k: usize,
        word: &str,
        c: Cursor<'_>,
        at: Loc,
    ) -> Result<(), ParseError> {
        let (rel, v) = self.value(word, c, true, at)?;
        if rel {
            self.next[k] = self.base[k].wrapping_add(v);
        } else {
            self.base[k] = v;
            self.next[k] = v;
        }
        Ok(())
    }

    fn assign(&mut self, word: &str, c: Cursor<'_>, at: Loc) -> Result<(), ParseError> {
        let (_, v) = self.value(word, c, false, at)?;
        let bad = |what: &str| {
            self.rec
                .err(at, format!("{word}={v} is out of range: {what}"))
        };
        match word {
            "vendid" => self.vendid = v,
            "devid" => self.devid = v,
            "sysimgguid" => self.sysimgguid = v,
            "width" => {
                if !(1..=31).contains(&v) {
                    return Err(bad(
                        "expected a width mask 1..=31 (1=1x, 2=4x, 4=8x, 8=12x, 16=2x)",
                    ));
                }
                self.defaults.width = v as u8;
            }
            "speed" => {
                if !(1..=7).contains(&v) {
                    return Err(bad("expected a speed mask 1..=7 (1=SDR, 2=DDR, 4=QDR)"));
                }
                self.defaults.speed = v as u8;
            }
            _ => {
                if v > 15 {
                    return Err(bad(
                        "expected an extended speed mask 0..=15 (1=FDR, 2=EDR, 4=HDR, 8=NDR)",
                    ));
                }
                self.defaults.ext = v as u8;
            }
        }
        Ok(())
    }

    fn include_file(&mut self, mut c: Cursor<'_>, at: Loc) -> Result<(), ParseError> {
        c.skip_ws();
        let name = match c.quoted() {
            Ok(Some(n)) if !n.is_empty() => n,
            _ => {
                return Err(self
                    .rec
                    .err(at, "bad include: expected include \"<file name>\""))
            }
        };
        if self.stack.len() > MAX_DEPTH {
            return Err(self.rec.err(
                at,
                format!("include {name:?}: includes are nested more than {MAX_DEPTH} deep"),
            ));
        }
        let (display, bytes) = match (self.include)(name) {
            Ok(x) => x,
            Err(m) => return Err(self.rec.err(at, format!("cannot include {name:?}: {m}"))),
        };
        if self.stack.contains(&display) {
            let mut chain = self.stack.join(" -> ");
            chain.push_str(" -> ");
            chain.push_str(&display);
            return Err(self.rec.err(at, format!("include cycle: {chain}")));
        }
        let idx = self.rec.files.len();
        self.rec.files.push(display.clone());
        self.rec.parents.push(Some(at));
        self.stack.push(display);
        let r = self.parse(&bytes, idx);
        self.stack.pop();
        r
    }

    fn header(
        &mut self,
        kind: NodeKind,
        word: &str,
        mut c: Cursor<'_>,
        at: Loc,
    ) -> Result<NodeId, ParseError> {
        let (nports, id) =
            node_header(&mut c, word, "8 \"name\"").map_err(|m| self.rec.err(at, m))?;
        if id.is_empty() || id.contains(['#', '@']) {
            return Err(self.rec.err(
                at,
                format!("bad node id {id:?}: it must be non-empty, and '#' and '@' are reserved"),
            ));
        }
        let hc = parse_header_rest(c.rest()).map_err(|m| self.rec.err(at, m))?;
        let k = match kind {
            NodeKind::Switch => SW,
            NodeKind::Ca => CA,
            NodeKind::Router => RT,
        };
        let guid = self.next[k];
        self.next[k] = if kind == NodeKind::Switch {
            guid.wrapping_add(1)
        } else {
            guid.wrapping_add(nports as u64 + 1)
        };
        let n = self
            .rec
            .add_node(kind, nports, guid, id, hc.desc.unwrap_or(id), at)?;
        {
            let node = self.rec.b.node_mut(n);
            node.sys_guid = if self.sysimgguid != 0 {
                self.sysimgguid
            } else {
                guid
            };
            node.vendor_id = self.vendid as u32;
            node.device_id = self.devid as u32;
            node.enhanced_sp0 = kind == NodeKind::Switch && hc.enhanced == Some(true);
        }
        self.vendid = 0;
        self.sysimgguid = 0;
        if kind == NodeKind::Switch {
            if guid != 0 {
                self.rec.set_port_guid(n, 0, guid, at)?;
            }
            if hc.lid.is_some() || hc.lmc.is_some() {
                self.rec
                    .set_lid(n, 0, hc.lid.unwrap_or(0), hc.lmc.unwrap_or(0), at)?;
            }
        } else {
            for p in 1..=nports {
                self.rec
                    .set_port_guid(n, p, guid.wrapping_add(p as u64), at)?;
            }
        }
        Ok(n)
    }

    fn port_line(&mut self, n: NodeId, t: &str, at: Loc) -> Result<(), ParseError> {
        if t.starts_with('@') {
            self.rec
                .warn(at, "alias definitions (@…) are not supported; line ignored");
            return Ok(());
        }
        let mut c = Cursor::new(t);
        let lp = self.rec.local_port(&mut c, n, t, at)?;
        // ibsim ignores parenthesised GUIDs: its own rules give the port GUIDs.
        skip_paren(&mut c);
        c.skip_ws();
        let remote = self.rec.remote_id(&mut c, lp, false, at)?;
        if remote.contains('@') {
            self.rec.warn(
                at,
                format!("alias reference {remote:?} is not supported; line ignored"),
            );
            return Ok(());
        }
        let rp = if c.eat(b'[') {
            match c.number().and_then(port_num) {
                Some(p) if p > 0 && c.eat(b']') => p,
                _ => {
                    return Err(self.rec.err(
                        at,
                        format!("invalid remote port after \"{remote}\": expected [1..254]"),
                    ))
                }
            }
        } else {
            1
        };
        let mut m = self.defaults;
        let mut own_lid: Option<(u64, u64)> = None;
        let mut comment = None;
        loop {
            c.skip_ws();
            if c.at_end() {
                break;
            }
            if c.eat(b'#') {
                comment = Some(c.rest());
                break;
            }
            let save = c;
            if skip_paren(&mut c) {
                continue;
            }
            c = save;
            if c.eat_str("[ext") {
                c.skip_ws();
                if c.number().is_some() && c.eat(b']') {
                    continue;
                }
                return Err(self.rec.err(at, "record cut short: expected [ext N]"));
            }
            let tok = c.take_while(|b| !super::text::is_ws(b) && b != b'#');
            if let Some((key, val)) = tok.split_once('=') {
                let v = parse_num(val);
                match key {
                    "w" => match v {
                        Some(v @ 1..=31) => m.width = v as u8,
                        _ => {
                            return Err(self.rec.err(
                                at,
                                format!("bad port option w={val}: expected a width mask 1..=31 (1=1x, 2=4x, 4=8x, 8=12x, 16=2x)"),
                            ))
                        }
                    },
                    "s" => match v {
                        Some(0) => m.speed = 4,
                        Some(v @ 1..=7) => m.speed = v as u8,
                        _ => {
                            return Err(self.rec.err(
                                at,
                                format!("bad port option s={val}: expected a speed mask 1..=7 (1=SDR, 2=DDR, 4=QDR)"),
                            ))
                        }
                    },
                    "e" => match v {
                        Some(v @ 0..=15) => m.ext = v as u8,
                        _ => {
                            return Err(self.rec.err(
                                at,
                                format!("bad port option e={val}: expected an extended speed mask 0..=15"),
                            ))
                        }
                    },
                    _ => {} // ibsim ignores other options
                }
                continue;
            }
            if tok == "lid" || tok == "lmc" {
                c.skip_ws();
                let Some(v) = c.number() else {
                    return Err(self.rec.err(at, format!("expected a number after {tok:?}")));
                };
                let e = own_lid.get_or_insert((0, 0));
                if tok == "lid" {
                    e.0 = v;
                } else {
                    e.1 = v;
                }
                continue;
            }
            return Err(self.rec.err(
                at,
                format!(
                    "unexpected text {:?} on a port line (expected w=, s=, e= options or a # comment)",
                    excerpt(if tok.is_empty() { c.rest() } else { tok })
                ),
            ));
        }
        if let Some(cm) = comment {
            let pc = parse_port_comment(cm);
            if let Some(m) = pc.width_speed_error() {
                return Err(self.rec.err(at, m));
            }
            if let Some((w, s)) = pc.width_speed {
                m.apply_token(w, s);
            }
            if own_lid.is_none() {
                own_lid = pc.own_lid;
            }
        }
        let kind = self.rec.b.node(n).kind;
        if kind != NodeKind::Switch && lp > 0 && lp <= self.rec.b.node(n).nports {
            if let Some((lid, lmc)) = own_lid {
                self.rec.set_lid(n, lp, lid, lmc, at)?;
            }
        }
        self.rec.add_port_line(n, lp, remote, rp, 0, m, at)
    }
}

/// Skips `(hex)` (optionally after blanks); false (cursor unchanged) if there is none.
fn skip_paren(c: &mut Cursor<'_>) -> bool {
    let save = *c;
    c.skip_ws();
    if c.eat(b'(') && c.hex().is_some() && c.eat(b')') {
        return true;
    }
    *c = save;
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn active_width_and_speed() {
        let d = Masks {
            width: 2,
            speed: 1,
            ext: 0,
            fdr10: false,
        };
        assert_eq!(active(&d, &d), Ok((Width::X4, Speed::Sdr)));
        let mut a = d;
        a.apply_token(Width::X4, Speed::Edr);
        assert_eq!(active(&a, &a), Ok((Width::X4, Speed::Edr)));
        // EDR on one end only: ibsim falls back to the common base speed.
        assert_eq!(active(&a, &d), Ok((Width::X4, Speed::Sdr)));
        let w1 = Masks { width: 1, ..d };
        assert!(active(&w1, &d)
            .unwrap_err()
            .contains("no link width in common"));
        let twelve = Masks {
            width: 11,
            speed: 7,
            ..d
        };
        assert_eq!(active(&twelve, &twelve), Ok((Width::X12, Speed::Qdr)));
    }
}
