//! Where a table set comes from (`check`, `stats`, `trace`, `diff`).

use std::path::PathBuf;

/// Where the tables come from.
#[derive(clap::Args, Debug, Clone)]
pub struct Tables {
    /// Fabric (use OpenSM's opensm-subnet.lst to check OpenSM's tables: it carries its LIDs),
    /// or a table set's directory (`route -o`, `fault -o`, `sm -o`, OpenSM's dump directory):
    /// its opensm-subnet.lst, opensm-lfts.dump, opensm-sl2vl.dump and opensm-path-sl.psl.
    pub fabric: PathBuf,
    /// LFTs: opensm-lfts.dump / -U file / ibroute output, or opensm.fdbs. Default: the set
    /// directory's opensm-lfts.dump.
    #[arg(long)]
    pub lfts: Option<PathBuf>,
    /// SL2VL tables (opensm-sl2vl.dump). Default: the set's, when the LFTs belong to one
    /// (a directory given as FABRIC, or a summary.json beside the LFTs that lists it), else
    /// identity.
    #[arg(long)]
    pub sl2vl: Option<PathBuf>,
    /// Path SLs in ibdmchk's PSL format. Default: the set's (as for --sl2vl), else SL 0
    /// everywhere.
    #[arg(long)]
    pub psl: Option<PathBuf>,
    /// LMC of the end ports (opensm-subnet.lst lists base LIDs only). Default: the LMC that
    /// the summary.json beside the LFT file records, else 0.
    #[arg(long, value_parser = clap::value_parser!(u8).range(0..=7))]
    pub lmc: Option<u8>,
    /// Refuse table files that leave part of the fabric out: a path-SL file without some
    /// (source, DLID) pairs, an SL2VL dump without some switches' or ports' tables (by
    /// default a warning says how many, and they are taken as SL 0 / identity).
    #[arg(long)]
    pub strict: bool,
}
