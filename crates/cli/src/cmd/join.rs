//! `fabroute join MGID… [--leave] [--cycles N]`: joins (or leaves) multicast groups through
//! the SA from the port this process is attached to, as a host's IPoIB or MPI library does.
//! A test client for any SM (`fabroute sm` or OpenSM): under ibsim, run it with
//! `LD_PRELOAD=libumad2sim.so SIM_HOST=<HCA>` like `saquery`.

use anyhow::{Context, Result};
use mad::records::join_state;
use serde_json::json;
use sm::client::SaClient;
use std::process::ExitCode;
use std::time::{Duration, Instant};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Group MGIDs, in IPv6 notation (`ff12:601b:ffff::1`) or as one hex number (`0xff12…`).
    #[arg(required = true)]
    pub mgids: Vec<String>,
    /// Leave the groups instead of joining them.
    #[arg(long, conflicts_with = "cycles")]
    pub leave: bool,
    /// Join every group, then leave every group, this many times (each answer checked).
    #[arg(long)]
    pub cycles: Option<u32>,
    /// Membership asked for: full, non (non-member) or send-only (send-only non-member).
    #[arg(long, default_value = "full")]
    pub state: String,
    /// umad device of the port to join from.
    #[arg(long, default_value = "/dev/infiniband/umad0")]
    pub device: String,
    /// Milliseconds before a request is sent again.
    #[arg(long, default_value_t = 500)]
    pub timeout_ms: u64,
    /// Times a request is sent again before the command gives up.
    #[arg(long, default_value_t = 4)]
    pub retries: u32,
}

/// An MGID in IPv6 notation or as a hex number; it must be a multicast GID (first byte 0xFF).
pub fn parse_mgid(s: &str) -> Result<u128> {
    let v = match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(h) => u128::from_str_radix(h, 16).ok(),
        None => s.parse::<std::net::Ipv6Addr>().ok().map(u128::from),
    };
    let Some(v) = v else {
        crate::usage_bail!(
            "MGID {s:?}: expected IPv6 notation (ff12:601b:ffff::1) or a hex number (0xff12...)"
        );
    };
    if v >> 120 != 0xff {
        crate::usage_bail!("MGID {s}: a multicast GID starts with 0xff");
    }
    Ok(v)
}

fn parse_state(s: &str) -> Result<u8> {
    Ok(match s {
        "full" => join_state::FULL,
        "non" => join_state::NON,
        "send-only" => join_state::SEND_ONLY_NON,
        _ => crate::usage_bail!("--state {s:?}: expected full, non or send-only"),
    })
}

pub fn run(a: Args) -> Result<ExitCode> {
    let mgids = a
        .mgids
        .iter()
        .map(|s| parse_mgid(s))
        .collect::<Result<Vec<_>>>()?;
    let state = parse_state(&a.state)?;
    if a.timeout_ms == 0 {
        crate::usage_bail!("--timeout-ms must be at least 1");
    }
    let port = crate::cmd::sm::attach(&a.device, None)?;
    let mut c = SaClient::attach(port, Duration::from_millis(a.timeout_ms), a.retries)
        .context("asking the own port who it is")?;
    let me = c.me();
    crate::say!(
        "port {:#018x} (port {}, LID {}), SM at LID {}",
        me.port_guid,
        me.port_num,
        me.lid,
        me.sm_lid
    );
    let start = Instant::now();
    let name = |g: u128| std::net::Ipv6Addr::from(g).to_string();
    let mut groups = Vec::new();
    let mut cycles_done = 0u32;
    let mut mlids_seen = std::collections::BTreeSet::new();
    match a.cycles {
        None => {
            for &g in &mgids {
                let r = if a.leave {
                    c.leave(g, state)?
                } else {
                    c.join(g, state)?
                };
                crate::say!(
                    "{} {}: MLID {:#06x}, join state now {:#x}",
                    if a.leave { "left" } else { "joined" },
                    name(g),
                    r.mlid,
                    r.join_state
                );
                groups.push(json!({
                    "mgid": name(g),
                    "mlid": r.mlid,
                    "join_state": r.join_state,
                }));
            }
        }
        Some(n) => {
            let mut first = Vec::new();
            for i in 0..n {
                for &g in &mgids {
                    let r = c.join(g, state)?;
                    mlids_seen.insert(r.mlid);
                    if i == 0 {
                        first.push((g, r.mlid));
                    }
                }
                for &g in &mgids {
                    c.leave(g, state)?;
                }
                cycles_done += 1;
            }
            for (g, m) in first {
                groups.push(json!({ "mgid": name(g), "mlid": m }));
            }
            crate::say!(
                "{n} cycles of {} joins and leaves: {} requests, every one answered with status 0; MLIDs used: {}",
                mgids.len(),
                2 * n as usize * mgids.len(),
                mlids_seen
                    .iter()
                    .map(|m| format!("{m:#06x}"))
                    .collect::<Vec<_>>()
                    .join(" ")
            );
        }
    }
    let secs = start.elapsed().as_secs_f64();
    crate::say!("{} MADs sent in {secs:.2} s", c.sent);
    if crate::out::json() {
        crate::out::document(&json!({
            "command": "join",
            "port_guid": format!("{:#018x}", me.port_guid),
            "lid": me.lid,
            "sm_lid": me.sm_lid,
            "groups": groups,
            "cycles": cycles_done,
            "mlids_seen": mlids_seen,
            "mads_sent": c.sent,
            "seconds": secs,
        }))?;
    }
    Ok(crate::out::Status::Clean.into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mgids_parse_in_both_notations_and_must_be_multicast() {
        let a = parse_mgid("ff12:601b:ffff::1").unwrap();
        assert_eq!(a >> 112, 0xff12);
        assert_eq!(a & 0xffff, 1);
        assert_eq!(parse_mgid("0xff12601bffff00000000000000000001").unwrap(), a);
        let e = parse_mgid("fe80::1").unwrap_err().to_string();
        assert!(e.contains("starts with 0xff"), "{e}");
        let e = parse_mgid("ff12::zz").unwrap_err().to_string();
        assert!(e.contains("IPv6 notation"), "{e}");
    }
}
