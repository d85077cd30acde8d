#!/usr/bin/env python3
"""How completely `fabroute fault` completes its tables for checkers over VL bases.

    [VLS="2 3"] scripts/completion-coverage.py OUTDIR NEW_BIN [OLD_BIN]

Generates six fabrics, and on each runs `fault` with the VL engines dfsssp, lash, hopvl
and nue as bases, for 3 fault sets of 1-3 random inter-switch cables (seeded, the same
every run). Each output is then checked with `NEW_BIN check` (every (source, LID) walked,
CDG over LFT + SL + SL2VL). Prints one line per run and the totals: runs, pairs not
delivered, runs with credit loops, runs with pairs not delivered. With OLD_BIN, every run
is also made with that binary for comparison. VLS lists `--vls` values to run each case with
(default: `fault`'s own, 8).
"""
import json, os, random, subprocess, sys, zlib

if len(sys.argv) < 3:
    sys.exit(__doc__)
out, new = sys.argv[1], os.path.abspath(sys.argv[2])
old = os.path.abspath(sys.argv[3]) if len(sys.argv) > 3 else None
os.makedirs(out, exist_ok=True)
fabrics = [("torus 4x4 hcas=2", "t44"), ("torus 8x8 hcas=1", "t88"), ("dragonfly 4 2 2", "df"),
           ("randreg 32 6 hcas=2", "rr"), ("torus 4x4x4 hcas=1", "t444"), ("hyperx 4x4 hcas=2", "hx")]
engines = ["dfsssp", "lash", "hopvl", "nue"]
bins = [("new", new)] + ([("old", old)] if old else [])
vls_list = os.environ.get("VLS", "").split() or [None]


def cables(net):
    """Inter-switch cables of an ibsim net file, as `link:SW/PORT`, each once."""
    lines = open(net).read().splitlines()
    sw = {l.split('"')[1] for l in lines if l.startswith("Switch")}
    cur, res = None, []
    for l in lines:
        if l.startswith("Switch"):
            cur = l.split('"')[1]
        elif l.startswith(("Hca", "Ca")):
            cur = None
        elif cur and l.startswith("["):
            port, remote = int(l[1:l.index("]")]), l.split('"')[1]
            if remote in sw and cur < remote:
                res.append(f"link:{cur}/{port}")
    return res


tot = {name: [0, 0, 0, 0] for name, _ in bins}
for spec, tag in fabrics:
    net = os.path.join(out, tag + ".net")
    subprocess.run([new, "gen", *spec.split(), "-o", net], capture_output=True, check=True)
    cs = cables(net)
    for e in engines:
        for seed, vls in ((s, v) for v in vls_list for s in range(3)):
            rnd = random.Random(zlib.crc32(f"{tag}/{e}/{seed}".encode()))
            faults = rnd.sample(cs, rnd.choice([1, 2, 3]))
            row = []
            for name, b in bins:
                d = os.path.join(out, f"{tag}_{e}_{seed}_{vls or 'dflt'}_{name}")
                subprocess.run(["rm", "-rf", d])
                args = [b, "fault", net, "--engine", e, "-o", d]
                if vls:
                    args += ["--vls", vls]
                for f in faults:
                    args += ["--fail", f]
                subprocess.run(args, capture_output=True)
                if not os.path.exists(os.path.join(d, "summary.json")):
                    row.append(f"{name}: fault refused")
                    continue
                c = subprocess.run([new, "--json", "check", d + "/opensm-subnet.lst", "--lfts",
                                    d + "/opensm-lfts.dump", "--sl2vl", d + "/opensm-sl2vl.dump",
                                    "--psl", d + "/opensm-path-sl.psl"], capture_output=True, text=True)
                j = json.loads(c.stdout)
                ok, checked, free = j["pairs"]["ok"], j["pairs"]["checked"], j["deadlock_free"]
                t = tot[name]
                t[0] += 1
                t[1] += checked - ok
                t[2] += 0 if free else 1
                t[3] += 1 if checked != ok else 0
                row.append(f"{name}: {ok}/{checked} delivered, {'no loop' if free else 'CREDIT LOOPS'}")
            print(tag, e, f"--vls {vls}" if vls else "", " ".join(faults), "|", "; ".join(row), flush=True)
for name, t in tot.items():
    print(f"{name}: {t[0]} runs, {t[1]} pairs not delivered, {t[2]} runs with credit loops, {t[3]} runs with pairs not delivered")
