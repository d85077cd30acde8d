#!/usr/bin/env python3
"""A robustness hunt over `fabroute fault`: does `check` on what `fault` writes agree with it?

    [SEED=11] [OPTIONS=1] [VERBOSE=1] [FABRICS=F1,F2...] scripts/fault-hunt.py OUTDIR BIN

Generates nine fabrics (tori, a mesh, a Dragonfly, a random regular graph, a HyperX, a k-ary
n-tree, a Slim Fly), or reads the FABRICS files (real dumps, say: every base is tried), and
runs `BIN fault` over each of their RFTR bases at 2, 3, 4 and 8 VLs,
with 4 random fault sets each (1-3 inter-switch cables; the last two also a switch), drawn
from SEED. With OPTIONS=1 every run also gets random `--lmc`, `--repair-vls`,
`--virtual-lids-only`, `--tie-break` and `--sls`. Each output is checked with `BIN check`
(every (source, LID) walked, CDG over LFT + SL + SL2VL). Prints each run that is flagged
(credit loops in what `fault` wrote, `fault` and `check` exit statuses that differ, a panic
or an exit status above 3), with VERBOSE=1 also each refusal (exit 2 or 3) with its message,
and a last line: runs, flagged, and `fault`'s exit statuses per engine.
"""
import json, os, random, subprocess, sys

if len(sys.argv) < 3:
    sys.exit(__doc__)
out, B = sys.argv[1], os.path.abspath(sys.argv[2])
os.makedirs(out, exist_ok=True)
with_options = os.environ.get("OPTIONS") == "1"
fabrics = [
    ("torus 4x4 hcas=2", ["updn", "dnup", "dfsssp", "lash", "hopvl", "nue", "torus-2QoS"]),
    ("torus 8x8 hcas=1", ["updn", "dfsssp", "lash", "nue", "torus-2QoS"]),
    ("torus 4x4x4 hcas=1", ["updn", "lash", "nue", "torus-2QoS"]),
    ("mesh 3x5 hcas=1", ["updn", "dor", "nue", "lash", "torus-2QoS"]),
    ("dragonfly 4 2 2", ["updn", "dfsssp", "lash", "hopvl", "nue"]),
    ("randreg 24 5 hcas=2 seed=3", ["updn", "dnup", "dfsssp", "lash", "nue"]),
    ("hyperx 4x4 hcas=2", ["updn", "dfsssp", "lash", "hopvl", "nue"]),
    ("ktree 4 3", ["updn", "ftree", "dfsssp", "nue"]),
    ("slimfly 5", ["updn", "hopvl", "nue", "lash"]),
]


def switches_and_cables(net):
    """Switch names and inter-switch cables (`link:SW/PORT`, each once) of an ibsim file."""
    lines = open(net).read().splitlines()
    sw = [l.split('"')[1] for l in lines if l.startswith("Switch")]
    names, cur, cables = set(sw), None, []
    for l in lines:
        if l.startswith("Switch"):
            cur = l.split('"')[1]
        elif l.startswith(("Hca", "Ca")):
            cur = None
        elif cur and l.startswith("["):
            port, remote = int(l[1:l.index("]")]), l.split('"')[1]
            if remote in names and cur < remote:
                cables.append(f"link:{cur}/{port}")
    return sw, cables


if os.environ.get("FABRICS"):
    # fabric files instead (e.g. real dumps): every base, cables and switches from the file
    fabrics = [(path, ["updn", "dnup", "ftree", "dfsssp", "lash", "hopvl", "nue"])
               for path in os.environ["FABRICS"].split(",")]
rnd = random.Random(int(os.environ.get("SEED", "11")))
runs, flagged, status = 0, 0, {}
for spec, engines in fabrics:
    net = os.path.join(out, os.path.basename(spec).replace(" ", "_").replace("=", "") + ".net")
    if os.path.exists(spec):
        # as an ibsim file, for the cable and switch names (`fault` reads the original)
        subprocess.run([B, "convert", spec, "-o", net, "--to", "ibsim", "--lossy"], capture_output=True, check=True)
        sw, cables = switches_and_cables(net)
        net = spec
    else:
        subprocess.run([B, "gen", *spec.split(), "-o", net], capture_output=True, check=True)
        sw, cables = switches_and_cables(net)
    for e in engines:
        for vls in ["2", "3", "4", "8"]:
            for t in range(4):
                args = []
                for c in rnd.sample(cables, min(len(cables), rnd.choice([1, 2, 3]))):
                    args += ["--fail", c]
                if t >= 2 or not args:
                    args += ["--fail", "switch:" + rnd.choice(sw)]
                if with_options:
                    args += ["--lmc", rnd.choice(["1", "2", "3"])]
                    if int(vls) > 2 and rnd.random() < 0.5:
                        args += ["--repair-vls", "2"]
                    if rnd.random() < 0.4:
                        args += ["--virtual-lids-only"]
                    if rnd.random() < 0.3:
                        args += ["--tie-break", "lowest-switch"]
                    if rnd.random() < 0.3:
                        args += ["--sls", rnd.choice(["4", "8"])]
                what = f"{spec} | {e} --vls {vls} {' '.join(args)}"
                runs += 1
                o = os.path.join(out, "run")
                subprocess.run(["rm", "-rf", o])
                p = subprocess.run([B, "--json", "fault", net, "--engine", e, "--vls", vls, *args, "-o", o],
                                   capture_output=True, text=True)
                status[(e, p.returncode)] = status.get((e, p.returncode), 0) + 1
                if p.returncode > 3 or "panicked" in p.stderr:
                    print("PANIC", what, p.returncode, p.stderr[-300:], flush=True)
                    flagged += 1
                    continue
                if p.returncode in (2, 3):
                    if os.environ.get("VERBOSE") == "1":
                        print("refused", what, "| exit", p.returncode, "|", (p.stderr.strip().splitlines() or [""])[-1],
                              flush=True)
                    continue
                c = subprocess.run([B, "--json", "check", o + "/opensm-subnet.lst", "--lfts", o + "/opensm-lfts.dump",
                                    "--sl2vl", o + "/opensm-sl2vl.dump", "--psl", o + "/opensm-path-sl.psl"],
                                   capture_output=True, text=True)
                try:
                    cj = json.loads(c.stdout)
                except ValueError:
                    print("CHECK FAILED", what, c.returncode, c.stderr[-300:], flush=True)
                    flagged += 1
                    continue
                if not cj["deadlock_free"]:
                    print("CREDIT LOOPS", what, "| fault exit", p.returncode, flush=True)
                    flagged += 1
                if c.returncode != p.returncode:
                    print("DISAGREE", what, "| fault exit", p.returncode, "check exit", c.returncode, cj["pairs"],
                          flush=True)
                    flagged += 1
print(f"{runs} runs, {flagged} flagged; fault's exit statuses:",
      ", ".join(f"{e} {rc}: {n}" for (e, rc), n in sorted(status.items())))
