//! OpenSM's `torus-2QoS.conf` for the torus-2QoS engine: radices (`torus`/`mesh`), seed
//! links (`xp_link` … `zm_link`), datelines, `next_seed` and `port_order`, parsed with the
//! line of each error.

use std::fmt;

/// torus-2QoS's settings: OpenSM's `torus-2QoS.conf`, parsed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TorusSettings {
    pub config: Option<TorusConfig>,
}

/// OpenSM's `torus-2QoS.conf`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TorusConfig {
    /// Radix per dimension (x, y, z); 1 = the dimension is absent.
    pub radix: [u32; 3],
    /// Mesh (no wrap) per dimension. Radix 2 is always a mesh (two cables, not a ring).
    pub mesh: [bool; 3],
    /// Seeds in file order; the first whose switches are all present is used.
    pub seeds: Vec<Seed>,
    /// `port_order`: the order a destination switch's own ports (port 0, end ports) are
    /// visited in; ports not listed follow in increasing order.
    pub port_order: Vec<u8>,
    /// `portgroup_max_ports`: most parallel links (or local ports) one direction may have.
    pub portgroup_max_ports: u32,
}

/// One seed: per dimension the `+` and `-` seed links (from switch GUID, to switch GUID)
/// and the dateline.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Seed {
    pub links: [[Option<(u64, u64)>; 2]; 3],
    pub dateline: [i32; 3],
}

/// A `torus-2QoS.conf` error: the line (1-based) and what was expected.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigError {
    pub line: usize,
    pub msg: String,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: {}", self.line, self.msg)
    }
}
impl std::error::Error for ConfigError {}

/// C's `strtoul(s, 0)`: `0x` hex, a leading `0` octal, else decimal; the whole token.
fn number(tok: &str) -> Option<u64> {
    let (digits, radix) = if let Some(h) = tok.strip_prefix("0x").or(tok.strip_prefix("0X")) {
        (h, 16)
    } else if tok.len() > 1 && tok.starts_with('0') {
        (&tok[1..], 8)
    } else {
        (tok, 10)
    };
    u64::from_str_radix(digits, radix).ok()
}

/// Parses OpenSM's `torus-2QoS.conf` (see `man torus-2QoS.conf`). A token starting with `#`
/// starts a comment; unknown keywords, bad numbers, missing arguments, a second `torus`
/// line, datelines outside `-radix < n < radix` or before the `torus` line are errors.
pub fn parse_config(text: &str) -> Result<TorusConfig, ConfigError> {
    let mut c = TorusConfig {
        radix: [0; 3],
        portgroup_max_ports: 16,
        ..TorusConfig::default()
    };
    let mut have_size = false;
    let mut seed = Seed::default();
    let mut seed_used = false;
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        let err = |msg: String| ConfigError { line, msg };
        let toks: Vec<&str> = raw
            .split_whitespace()
            .take_while(|t| !t.starts_with('#'))
            .collect();
        let Some(&kw) = toks.first() else { continue };
        let args = &toks[1..];
        let need = |n: usize| {
            if args.len() < n {
                Err(err(format!(
                    "{kw} needs {n} value(s), found {}",
                    args.len()
                )))
            } else {
                Ok(())
            }
        };
        let num = |t: &str| number(t).ok_or_else(|| err(format!("{t:?} is not a number")));
        match kw {
            "torus" | "mesh" => {
                need(3)?;
                if have_size {
                    return Err(err("a second torus/mesh line".into()));
                }
                have_size = true;
                for d in 0..3 {
                    let t = args[d];
                    let (n, suffix) = match t.char_indices().last() {
                        Some((k, ch)) if ch.is_ascii_alphabetic() && !t.starts_with("0x") => {
                            (&t[..k], Some(ch.to_ascii_lowercase()))
                        }
                        _ => (t, None),
                    };
                    let r = num(n)?;
                    if r == 0 || r > 1024 {
                        return Err(err(format!("radix {t} is not in 1..=1024")));
                    }
                    c.radix[d] = r as u32;
                    c.mesh[d] = match suffix {
                        Some('t') => false,
                        Some('m') => true,
                        None => kw == "mesh",
                        Some(x) => {
                            return Err(err(format!("radix suffix {x:?}: expected t or m")))
                        }
                    } || r == 2;
                }
            }
            "xp_link" | "xm_link" | "yp_link" | "ym_link" | "zp_link" | "zm_link" => {
                need(2)?;
                let d = (kw.as_bytes()[0] - b'x') as usize;
                let m = usize::from(kw.as_bytes()[1] == b'm');
                seed.links[d][m] = Some((num(args[0])?, num(args[1])?));
                seed_used = true;
            }
            "x_dateline" | "y_dateline" | "z_dateline" => {
                need(1)?;
                let d = (kw.as_bytes()[0] - b'x') as usize;
                if !have_size {
                    return Err(err(format!("{kw} before the torus line")));
                }
                let (neg, t) = match args[0].strip_prefix('-') {
                    Some(t) => (true, t),
                    None => (false, args[0]),
                };
                let v = num(t)? as i64 * if neg { -1 } else { 1 };
                let r = c.radix[d] as i64;
                if v <= -r || v >= r {
                    return Err(err(format!("{kw} {v}: expected -{r} < n < {r}")));
                }
                seed.dateline[d] = v as i32;
                seed_used = true;
            }
            "next_seed" => {
                if seed_used {
                    c.seeds.push(std::mem::take(&mut seed));
                    seed_used = false;
                }
            }
            "portgroup_max_ports" => {
                need(1)?;
                c.portgroup_max_ports = num(args[0])?.min(u32::MAX as u64) as u32;
            }
            "port_order" => {
                for t in args {
                    let p = num(t)?;
                    if p > 254 {
                        return Err(err(format!("port {p} is not in 0..=254")));
                    }
                    if !c.port_order.contains(&(p as u8)) {
                        c.port_order.push(p as u8);
                    }
                }
            }
            "max_changes" => {
                need(1)?;
                num(args[0])?;
            }
            _ => {
                return Err(err(format!(
                    "unknown keyword {kw:?} (expected torus, mesh, xp_link … zm_link, x_dateline … z_dateline, next_seed, portgroup_max_ports, port_order, max_changes)"
                )))
            }
        }
    }
    if seed_used {
        c.seeds.push(seed);
    }
    if !have_size {
        return Err(ConfigError {
            line: text.lines().count().max(1),
            msg: "no torus or mesh line (the radices)".into(),
        });
    }
    if c.seeds.is_empty() {
        return Err(ConfigError {
            line: text.lines().count().max(1),
            msg: "no seed links (xp_link …)".into(),
        });
    }
    Ok(c)
}
