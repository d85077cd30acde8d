//! RFTR's choices, shared by `fault`, `sweep`, `sim` and `sm`.

use anyhow::Result;
use fabric::Fabric;
use routing::engines::RouteOptions;
use routing::fault::RftrConfig;

/// How RFTR breaks ties between equally ranked candidates (`RftrConfig::deviate_late`,
/// `RftrConfig::prefer_base_lid`).
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum TieBreak {
    /// Leave the broken path next to the failure, then prefer a candidate that keeps the
    /// destination's base LID.
    NearFailure,
    /// Prefer a candidate that keeps the destination's base LID.
    BaseLid,
    /// The lowest join switch.
    LowestSwitch,
}

/// RFTR's choices that `fault` and `sweep` share.
#[derive(clap::Args, Debug, Clone, Copy)]
pub struct RepairArgs {
    /// Data VLs available in all. Over a turn-rule base (updn, dnup, ftree, dor) repaired
    /// paths change VL at forbidden turns (transitions allowed = VLs - 1; default 2); over a
    /// VL engine (dfsssp, lash, hopvl, nue, torus-2QoS) they go on VLs above the base's
    /// (default 8).
    #[arg(long, value_parser = clap::value_parser!(u8).range(1..=15))]
    pub vls: Option<u8>,
    /// Over a VL engine: VLs kept free for repaired paths; the base engine routes within
    /// the others.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u8).range(1..=14))]
    pub repair_vls: u8,
    /// Give every new path a virtual LID, as in the RFTR paper (default: a new path without a
    /// VL transition may keep the base LID where the entries it needs are dead).
    #[arg(long)]
    pub virtual_lids_only: bool,
    /// How RFTR breaks ties between candidates with as few transitions and hops:
    /// `near-failure` first tries those that follow the broken path to the switch before
    /// the failure and leave it there (one entry rewritten for every source behind it),
    /// then as `base-lid`; `base-lid` prefers one that keeps the destination's base LID
    /// (fabroute before 2026-12-04); `lowest-switch` takes the lowest join switch (before
    /// 2026-11-30).
    #[arg(long, value_enum, default_value_t = TieBreak::NearFailure)]
    pub tie_break: TieBreak,
    /// Most GB RFTR's reachability tables may take: a fabric whose tables would take more
    /// (projected from the first base paths walked, before the memory is filled) is refused
    /// with the estimate. They hold every (switch with end ports, end port) path, about 13
    /// bytes per hop and 22 per path, and 4 bytes per (end port, switch): 3.5 GB on a
    /// 16x16x8 torus, 1.2 GB on a 24-ary 3-tree.
    /// Default: 70 % of the memory available when the command starts (the rest is for the
    /// check and full reconfiguration beside them; no limit where that is unknown).
    #[arg(long, value_name = "GB")]
    pub memory_limit: Option<f64>,
}

impl RepairArgs {
    /// The data VLs in all, and the base engine's options: over a VL engine its VL budget
    /// leaves `repair_vls` VLs free for RFTR, and its SL budget as many of the `max_sls`
    /// SLs (repaired paths take SLs above the base's: one per repair VL at least; before,
    /// `fault --sls 4` over nue routed the base on 7 SLs and then refused it).
    pub fn plan(
        &self,
        f: &Fabric,
        engine: &dyn routing::engines::Engine,
        opts: &RouteOptions,
        max_sls: u8,
    ) -> Result<(u8, RouteOptions)> {
        let fresh = matches!(engine.rftr_base(f, opts), Ok(routing::turn::Base::FreshVls));
        let vls = self.vls.unwrap_or(if fresh { 8 } else { 2 });
        let mut o = opts.clone();
        if fresh {
            if self.repair_vls == 0 || self.repair_vls >= vls {
                crate::usage_bail!(
                    "--repair-vls {} must leave the base engine at least one of the {vls} VLs",
                    self.repair_vls
                );
            }
            o.budget.vls = vls - self.repair_vls;
            if max_sls <= self.repair_vls {
                crate::usage_bail!(
                    "--sls {max_sls} must leave the base engine at least one SL beside one for each of the {} repair VLs",
                    self.repair_vls
                );
            }
            o.budget.sls = o.budget.sls.min(max_sls - self.repair_vls);
        }
        Ok((vls, o))
    }

    /// The RFTR settings for these choices, `vls` data VLs and `max_sls` SLs.
    pub fn config(&self, vls: u8, max_sls: u8) -> RftrConfig {
        RftrConfig {
            vls,
            max_sls,
            reuse_dead_base: !self.virtual_lids_only,
            prefer_base_lid: self.tie_break != TieBreak::LowestSwitch,
            deviate_late: self.tie_break == TieBreak::NearFailure,
            keep_sl2vl: false,
            memory_limit: match self.memory_limit {
                Some(gb) => Some((gb.max(0.0) * 1e9) as u64),
                None => available_memory().map(|b| b / 10 * 7),
            },
        }
    }

    /// The tie-break as written on the command line (for the summary files).
    pub fn tie_break_name(&self) -> String {
        use clap::ValueEnum as _;
        let v = self.tie_break.to_possible_value();
        v.expect("no skipped variants").get_name().to_string()
    }
}

/// Bytes of memory available now (`MemAvailable` of `/proc/meminfo`; None elsewhere).
fn available_memory() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}
