#!/usr/bin/env python3
"""Multicast trees of fabroute sm and OpenSM side by side, on ibsim, with the same groups.

    scripts/bench-mcast-opensm.py OUT [--gen "ktree 8 3"] [--groups 100] [--seed 1]
                                      [--engine updn] [--roots GUID,...]
                                      [--fabroute target/release/fabroute]

For each SM in turn: ibsim on the generated fabric, the SM on the first HCA, then every
host joins its groups through the SA with `fabroute join` (one client process per host,
hosts in the same order for both SMs), then every switch's multicast forwarding table is
read back with `ibroute -M` and measured:

  - members reached: of every (group, member), the share whose switch port is in the
    group's mask (a check that the groups were programmed, not a quality figure);
  - link load: groups whose tree uses each switch-to-switch cable (both ends' masks name
    its ports): the maximum, the mean over cables used, and the cables used;
  - depth: per group the longest path in its tree between two switches with members
    (switch hops): the maximum and the mean over groups;
  - MFT blocks: non-empty (switch, block of 32 MLIDs, position of 16 ports) blocks, what an
    SM sends to program them;
  - `fabroute check` of the SM's LFTs with the MFTs read back and the groups joined:
    whether every group reaches exactly its members once from every sender (delivered),
    the credit loops of unicast alone (strongly connected components) and those multicast
    adds (unicast and multicast dependencies together, one VL).

Group members: group k has a size drawn uniformly from 2 .. hosts/2 (seeded), members drawn
without replacement. Needs ibsim-utils, libumad2sim0, infiniband-diags and opensm
(scripts/install-test-deps.sh). Writes OUT/<sm>/ (logs, dumps, read-back) and
OUT/summary.json; prints a Markdown table.
"""
import argparse
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import time
from collections import defaultdict

PRELOAD = "/usr/lib/x86_64-linux-gnu/umad2sim/libumad2sim.so"
SIDE = re.compile(r"\{ (CA|SW|Rt)(?:-SM)? Ports:\w+ SystemGUID:\w+ NodeGUID:\w+ "
                  r"PortGUID:(\w+) .*?\{(.*?)\} LID:(\w+) PN:(\w+) \}")


def client_env(sock, host):
    e = dict(os.environ)
    e.update(IBSIM_SOCKNAME=sock, SIM_HOST=host, LD_PRELOAD=PRELOAD)
    return e


def wait_for(what, secs, done):
    t = time.time()
    while not done():
        if time.time() - t > secs:
            sys.exit(f"timed out after {secs} s waiting for {what}")
        time.sleep(0.1)


def read(p):
    try:
        with open(p) as f:
            return f.read()
    except OSError:
        return ""


def parse_lst(text):
    """Switch (guid, name, lid), switch-switch cables and host attachments."""
    switches = {}
    cables = set()
    hosts = {}
    for line in text.splitlines():
        sides = SIDE.findall(line)
        if len(sides) != 2:
            continue
        (ta, ga, na, la, pa), (tb, gb, nb, lb, pb) = sides
        ga, gb, pa, pb = int(ga, 16), int(gb, 16), int(pa, 16), int(pb, 16)
        if ta == "SW":
            switches[ga] = (na, int(la, 16))
        if ta == "SW" and tb == "SW":
            cables.add(tuple(sorted([(ga, pa), (gb, pb)])))
        elif ta == "SW":
            hosts[nb] = (ga, pa)
    return switches, sorted(cables), hosts


def ibroute_mft(text):
    """MLID -> ports of `ibroute -M`: a 'Ports:' header, then a row per MLID with an x
    under each port in the mask."""
    cols = []
    out = {}
    for line in text.splitlines():
        i = line.find("Ports:")
        if i >= 0:
            # Ports 10 and up show only their last digit here (the tens are on the line
            # above): the n-th number is port n.
            cols = [(m.start() + i + 6, n)
                    for n, m in enumerate(re.finditer(r"\d+", line[i + 6:]))]
            continue
        m = re.match(r"\s*0x([0-9a-fA-F]+)\s", line)
        if not m or not cols:
            continue
        ports = [p for at, p in cols if at < len(line) and line[at] == "x"]
        out[int(m.group(1), 16)] = ports
    return out


def tree_depth(edges, members):
    """Longest path (hops) in a forest between two member switches."""
    adj = defaultdict(list)
    for a, b in edges:
        adj[a].append(b)
        adj[b].append(a)
    best = 0
    for s in members:
        dist = {s: 0}
        todo = [s]
        while todo:
            v = todo.pop()
            for w in adj[v]:
                if w not in dist:
                    dist[w] = dist[v] + 1
                    todo.append(w)
        best = max([best] + [dist[m] for m in members if m in dist])
    return best


def run_one(kind, a, out, netf, sizes, hcas, groups_of_host):
    d = os.path.join(out, kind)
    # A log or event file of an earlier run would say "up" before this SM is.
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    sock = f"mcb{os.getpid()}{kind}"
    procs = []
    try:
        sim_log = os.path.join(d, "ibsim.log")
        procs.append(subprocess.Popen(["ibsim", "-s", *sizes, netf], cwd=d,
                                      env=dict(os.environ, IBSIM_SOCKNAME=sock),
                                      stdin=subprocess.PIPE, stdout=open(sim_log, "w"),
                                      stderr=subprocess.DEVNULL))
        wait_for("ibsim", 30, lambda: "simulator ready" in read(sim_log))
        sm_host = hcas[0]
        if kind == "fabroute":
            ev = os.path.join(d, "events.jsonl")
            tables = os.path.join(d, "tables")
            procs.append(subprocess.Popen(
                [a.fabroute, "sm", "-R", a.engine, "--lmc", "0", "--max-seconds", "3600",
                 "--events", ev, "-o", tables]
                + (["--roots", a.roots_file] if a.roots_file else []),
                cwd=d, env=client_env(sock, sm_host),
                stdout=subprocess.DEVNULL, stderr=open(os.path.join(d, "sm.log"), "w")))
            wait_for("subnet up", 600, lambda: '"subnet_up"' in read(ev))
            lst_path = os.path.join(tables, "opensm-subnet.lst")
        else:
            conf = os.path.join(d, "opensm.conf")
            with open(conf, "w") as f:
                f.write("force_log_flush TRUE\n")
            log = os.path.join(d, "opensm.log")
            procs.append(subprocess.Popen(
                ["opensm", "-F", conf, "-f", log, "-D", "0x43", "--dump_files_dir", d,
                 "-R", a.engine + ",no_fallback"]
                + (["-a", a.roots_file] if a.roots_file else []),
                cwd=d, env=client_env(sock, sm_host),
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
            wait_for("OpenSM's SUBNET UP", 600, lambda: "SUBNET UP" in read(log))
            lst_path = os.path.join(d, "opensm-subnet.lst")
        t = time.time()
        joins = 0
        mlid_of = {}
        for h in hcas:
            ks = groups_of_host.get(h, [])
            if not ks:
                continue
            r = subprocess.run([a.fabroute, "--json", "join", *[mgid(k) for k in ks]],
                               cwd=d, env=client_env(sock, h), capture_output=True, text=True)
            if r.returncode != 0:
                sys.exit(f"{kind}: fabroute join on {h} failed:\n{r.stdout}{r.stderr}")
            doc = json.loads(r.stdout)
            for k, g in zip(ks, doc["groups"]):
                mlid_of.setdefault(k, g["mlid"])
                if mlid_of[k] != g["mlid"]:
                    sys.exit(f"{kind}: group {k} answered two MLIDs")
            joins += len(ks)
        join_s = time.time() - t
        if kind == "fabroute":
            wait_for("the join events", 600, lambda: read(ev).count('"mcast_join"') >= joins)
        else:
            # OpenSM answers a join before its multicast manager programs the switches.
            time.sleep(5)
        switches, cables, hosts = parse_lst(read(lst_path))
        reader = hcas[-1]
        mft = {}
        for g, (name, lid) in switches.items():
            r = subprocess.run(["ibroute", "-M", str(lid)], cwd=d, env=client_env(sock, reader),
                               capture_output=True, text=True)
            if r.returncode != 0:
                sys.exit(f"{kind}: ibroute -M {lid}: {r.stderr}")
            with open(os.path.join(d, f"mft-{name}.txt"), "w") as f:
                f.write(r.stdout)
            mft[g] = ibroute_mft(r.stdout)
        r = measure(kind, mft, cables, hosts, groups_of_host, mlid_of, joins, join_s)
        r.update(check(a, d, kind, lst_path, switches, mft, groups_of_host, mlid_of))
        return r
    finally:
        for p in reversed(procs):
            p.send_signal(signal.SIGTERM)
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                p.kill()


def check(a, d, kind, lst_path, switches, mft, groups_of_host, mlid_of):
    """`fabroute check` of the SM's LFTs with the MFTs read back and the groups joined:
    every group delivered to exactly its members from every sender, and the channel
    dependencies of unicast and multicast together acyclic."""
    mc = os.path.join(d, "readback.mcfdbs")
    with open(mc, "w") as f:
        for g in sorted(mft):
            f.write(f"\nSwitch 0x{g:016x}\nLID    : Out Port(s)\n")
            for m in sorted(mft[g]):
                if mft[g][m]:
                    f.write(f"0x{m:04X} :" + "".join(f" 0x{p:03X} " for p in mft[g][m]) + "\n")
    members = defaultdict(list)
    for h, ks in groups_of_host.items():
        for k in ks:
            members[k].append(h)
    gf = os.path.join(d, "groups.txt")
    with open(gf, "w") as f:
        for k in sorted(members):
            f.write(f"0x{mlid_of[k]:04X} mgid={mgid(k)} {' '.join(members[k])}\n")
    lfts = os.path.join(os.path.dirname(lst_path), "opensm-lfts.dump")
    r = subprocess.run([a.fabroute, "check", lst_path, "--lfts", lfts, "--mcfdbs", mc,
                        "--mcast", gf, "--lmc", "0"], capture_output=True, text=True)
    with open(os.path.join(d, "check.txt"), "w") as f:
        f.write(r.stdout + r.stderr)
    text = r.stdout + r.stderr
    uni = re.search(r"CREDIT LOOPS: (\d+) strongly connected", text)
    mc_loops = re.search(r"(\d+) CREDIT LOOP\(S\) with unicast", text)
    return {
        "check_exit": r.returncode,
        "delivered": "every receiver reached once" in text,
        "unicast_loops": int(uni.group(1)) if uni else 0,
        "mcast_loops": int(mc_loops.group(1)) if mc_loops else 0,
    }


def measure(kind, mft, cables, hosts, groups_of_host, mlid_of, joins, join_s):
    members = defaultdict(list)
    for h, ks in groups_of_host.items():
        for k in ks:
            members[k].append(h)
    load = defaultdict(int)
    depths = []
    reached = total = 0
    for k, hs in members.items():
        m = mlid_of[k]
        edges = []
        for (ga, pa), (gb, pb) in cables:
            if pa in mft.get(ga, {}).get(m, []) and pb in mft.get(gb, {}).get(m, []):
                edges.append((ga, gb))
                load[((ga, pa), (gb, pb))] += 1
        msw = set()
        for h in hs:
            sw, port = hosts[h]
            total += 1
            reached += port in mft.get(sw, {}).get(m, [])
            msw.add(sw)
        depths.append(tree_depth(edges, msw))
    blocks = set()
    for g, rows in mft.items():
        for m, ports in rows.items():
            for p in ports:
                blocks.add((g, (m - 0xC000) // 32, p // 16))
    used = list(load.values())
    return {
        "sm": kind,
        "groups": len(members),
        "joins": joins,
        "join_seconds": round(join_s, 2),
        "members_reached_pct": round(100.0 * reached / max(total, 1), 2),
        "max_link_load": max(used, default=0),
        "mean_link_load": round(sum(used) / max(len(used), 1), 2),
        "cables_used": len(used),
        "cables": len(cables),
        "max_depth": max(depths, default=0),
        "mean_depth": round(sum(depths) / max(len(depths), 1), 2),
        "tree_links": sum(used),
        "mft_blocks": len(blocks),
    }


def mgid(k):
    return f"ff12:1234::{k:x}"


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out")
    ap.add_argument("--gen", default="ktree 8 3")
    ap.add_argument("--groups", type=int, default=100)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--engine", default="updn")
    ap.add_argument("--fabroute", default="target/release/fabroute")
    ap.add_argument("--sms", default="fabroute,opensm")
    ap.add_argument("--roots", default="",
                    help="root switch GUIDs (comma-separated) for both SMs' updn / ftree "
                         "(OpenSM's updn without roots on a fabric that is no fat tree falls "
                         "back to minhop)")
    a = ap.parse_args()
    a.fabroute = os.path.abspath(a.fabroute)
    out = os.path.abspath(a.out)
    os.makedirs(out, exist_ok=True)
    netf = os.path.join(out, "fabric.net")
    subprocess.run([a.fabroute, "gen", *a.gen.split(), "-o", netf, "--no-companions"],
                   check=True, capture_output=True)
    text = read(netf)
    sizes = re.search(r"# ibsim needs at least: (.*?) \(", text).group(1).split()
    hcas = re.findall(r'^(?:Hca|Ca)\s+\d+\s+"([^"]+)"', text, re.M)
    rng = random.Random(a.seed)
    # Hosts other than the SM's; group k's members.
    pool = hcas[1:]
    groups_of_host = defaultdict(list)
    for k in range(1, a.groups + 1):
        n = rng.randint(2, max(2, len(pool) // 2))
        for h in rng.sample(pool, n):
            groups_of_host[h].append(k)
    a.roots_file = None
    if a.roots:
        a.roots_file = os.path.join(out, "roots.txt")
        with open(a.roots_file, "w") as f:
            f.write("".join(f"0x{int(g, 16):016x}\n" for g in a.roots.split(",")))
    rows = []
    for kind in a.sms.split(","):
        t = time.time()
        r = run_one(kind, a, out, netf, sizes, hcas, groups_of_host)
        r["run_seconds"] = round(time.time() - t, 1)
        print(json.dumps(r), file=sys.stderr)
        rows.append(r)
    with open(os.path.join(out, "summary.json"), "w") as f:
        json.dump({"gen": a.gen, "groups": a.groups, "seed": a.seed, "engine": a.engine,
                   "roots": a.roots, "rows": rows}, f, indent=2)
    keys = ["delivered", "unicast_loops", "mcast_loops", "members_reached_pct", "max_link_load", "mean_link_load", "cables_used",
            "max_depth", "mean_depth", "tree_links", "mft_blocks", "join_seconds"]
    roots = f", roots {a.roots}" if a.roots else ""
    print(f"fabric `{a.gen}`, {a.groups} groups (seed {a.seed}), -R {a.engine}{roots}\n")
    print("| SM | " + " | ".join(keys) + " |")
    print("|---" * (len(keys) + 1) + "|")
    for r in rows:
        print(f"| {r['sm']} | " + " | ".join(str(r[k]) for k in keys) + " |")


if __name__ == "__main__":
    main()
