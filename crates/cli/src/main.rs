//! `fabroute`: generate, inspect, convert, route and check InfiniBand fabrics.
//!
//! This crate is the only place that parses arguments, touches the file system, prints and
//! draws. Each subcommand lives in `cmd/<name>.rs` and turns validated settings into calls on
//! the `fabric` and `routing` libraries.

use clap::{Parser, Subcommand};
use std::process::ExitCode;

/// jemalloc, built to back its memory with transparent huge pages (`thp:always`, set in
/// `.cargo/config.toml`): the simulator and the engines read large tables at random, and with
/// 4 KB pages most of those reads also miss the TLB. It also keeps the pages it frees
/// (`dirty_decay_ms:-1`): by default it returns them to the system after 10 s, and a
/// subnet manager's repair, seconds after subnet up, then paid page faults for the memory it
/// allocates (22-ary 3-tree on ibsim: 14-45 ms of compute instead of about 7 ms).
/// The default feature `jemalloc`; the tests build without it (its C build takes minutes)
/// and run on the system allocator.
#[cfg(all(feature = "jemalloc", target_os = "linux", not(target_env = "musl")))]
#[global_allocator]
static ALLOC: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

mod args;
mod cmd;
mod mcast;
mod names;
mod out;
mod plot;
mod render;
mod util;

#[derive(Parser, Debug)]
#[command(
    name = "fabroute",
    version,
    about = "Routing brain for InfiniBand fabrics",
    after_help = "EXIT STATUS (every command):
  0  done; the tables (if any) are complete and free of credit loops
  1  done, but the tables have credit loops or pairs they do not deliver (route, fault,
     check; stats: pairs not delivered), or some repairs were not supported; trace: the packet is not delivered;
     diff: the two table sets differ
  2  usage error: unknown options (clap), option values out of range or contradicting
     each other (e.g. the same --fail twice)
  3  bad input or I/O error, or no engine of the chain applies to the fabric (e.g. ftree
     on a torus): nothing trustworthy was produced

With --json every command prints one JSON document on stdout (its summary) and its human
text on stderr. A reader that goes away (a broken pipe) ends the output quietly."
)]
struct Cli {
    /// Number of worker threads (default: all cores).
    #[arg(long, global = true)]
    threads: Option<usize>,
    /// Print one JSON document (the command's summary) on stdout; human text goes to stderr.
    #[arg(long, global = true)]
    json: bool,
    /// No progress: no spinners or bars on a terminal, no progress lines in a log (errors,
    /// warnings and the command's own output still appear).
    #[arg(long, short = 'q', global = true)]
    quiet: bool,
    /// Largest input file read (K, M, G suffixes); larger inputs are refused before they are
    /// read. Any input file may be `-` for standard input (once per run).
    #[arg(long, global = true, value_name = "SIZE", default_value = "4G", value_parser = util::parse_size)]
    max_input: u64,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Generate a synthetic fabric.
    Gen(cmd::gen::Args),
    /// Print a fabric's figures (counts, degrees, diameter).
    Info(cmd::info::Args),
    /// Convert a fabric between formats (input format detected from the content).
    Convert(cmd::convert::Args),
    /// Route a fabric with an engine (or a chain) and write OpenSM's files plus summary.json.
    Route(cmd::route::Args),
    /// Verify tables: every pair delivered, no credit loops (exit 0 only then).
    Check(cmd::check::CheckArgs),
    /// Route metrics of given tables: hops, link loads, effective bisection bandwidth.
    Stats(cmd::stats::StatsArgs),
    /// The path of one packet through the tables, hop by hop (switch, GUID, in and out port,
    /// SL, VL), or where and why it is lost (exit 1).
    Trace(cmd::trace::Args),
    /// What differs between two table sets of one fabric: LFT entries and the 64-LID blocks
    /// to send, SL2VL entries, path SLs (exit 0 identical, 1 different, like diff(1)).
    Diff(cmd::diff::Args),
    /// Fail links or switches and repair with RFTR (full reconfiguration beside it).
    Fault(cmd::fault::Args),
    /// Sweep fault scenarios (exhaustive or sampled, sharded) with RFTR and full reconfiguration.
    Sweep(cmd::sweep::Args),
    /// Merge sweep shards (idempotent).
    Merge(cmd::sweep::MergeArgs),
    /// Draw figures from earlier runs (the fault-tolerance curves of sweeps).
    Plot(cmd::plot::Args),
    /// Simulate packets through the tables: throughput, latency, deadlocks, a failure and
    /// its repair (RFTR, full reconfiguration), with SVG pictures.
    Sim(Box<cmd::sim::Args>),
    /// Run as the subnet manager of a live fabric (ibsim through libumad2sim, or a umad
    /// device): discover, route, program, and repair failed links with RFTR.
    Sm(Box<cmd::sm::Args>),
    /// Join or leave multicast groups through the SA from this host's port, as IPoIB does
    /// (a test client for any SM; under ibsim with libumad2sim like saquery).
    Join(cmd::join::Args),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    out::set_json(cli.json);
    out::set_quiet(cli.quiet);
    util::set_max_input(cli.max_input);
    // The worker pool is built here, before any work, so that its start-up (a few threads)
    // is not charged to the first engine or check that happens to use it. 0 = all cores.
    // (The error, a pool already built, cannot happen here.)
    let _ = rayon::ThreadPoolBuilder::new()
        .num_threads(cli.threads.unwrap_or(0))
        .build_global();
    rayon::broadcast(|_| ());
    let result = match cli.command {
        Command::Gen(a) => cmd::gen::run(a),
        Command::Info(a) => cmd::info::run(a),
        Command::Convert(a) => cmd::convert::run(a),
        Command::Route(a) => cmd::route::run(a),
        Command::Check(a) => cmd::check::check(a),
        Command::Stats(a) => cmd::stats::stats(a),
        Command::Trace(a) => cmd::trace::run(a),
        Command::Diff(a) => cmd::diff::run(a),
        Command::Fault(a) => cmd::fault::run(a),
        Command::Sweep(a) => cmd::sweep::run(a),
        Command::Merge(a) => cmd::sweep::merge(a),
        Command::Sim(a) => cmd::sim::run(*a),
        Command::Sm(a) => cmd::sm::run(*a),
        Command::Plot(a) => cmd::plot::run(a),
        Command::Join(a) => cmd::join::run(a),
    };
    match result {
        Ok(code) => code,
        Err(e) => out::fail(&e).into(),
    }
}
