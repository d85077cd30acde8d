#!/usr/bin/env python3
"""Assembles fault-tolerance table rows from sharded `fabroute sweep` runs.

    scripts/rftr-table-assemble.py DIR [--log DIR/worker.log]

DIR holds one `NAME.jsonl` + `NAME.jsonl.summary.json` per shard, named
`{s|x}{torus}_n{faults}.s{i}` (s = sampled, x = exhaustive), as written by
`fabroute sweep ... --shard i/N -o DIR/NAME.jsonl`. A row is printed once every shard 0..N-1
of it is there; rows still missing shards are listed on stderr. The optional log (lines
"HH:MM:SS end NAME rc=0 SECONDS s") gives the core-seconds column.
"""
import glob
import json
import os
import re
import sys
from collections import defaultdict

NAME = re.compile(r"^([sx])(.+)_n(\d+)\.s(\d+)\.jsonl\.summary\.json$")
ORDER = {"4x4": 0, "8x8": 1, "3x3x3": 2, "4x4x4": 3}


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    d = sys.argv[1]
    log = sys.argv[3] if len(sys.argv) > 3 and sys.argv[2] == "--log" else None
    secs = defaultdict(float)
    if log:
        for line in open(log):
            m = re.match(r"\S+ end (\S+) rc=0 (\d+) s", line)
            if m:
                secs[m.group(1)] += float(m.group(2))
    rows = defaultdict(dict)
    for p in glob.glob(os.path.join(d, "*.jsonl.summary.json")):
        m = NAME.match(os.path.basename(p))
        if not m:
            continue
        mode, torus, n, i = m.group(1), m.group(2), int(m.group(3)), int(m.group(4))
        s = json.load(open(p))
        rows[(torus, n, mode)][i] = (s, os.path.basename(p)[: -len(".jsonl.summary.json")])
    print("| torus | n | scenarios | mode | % supported (RFTR) | max SLs | max virtual LIDs/dest "
          "| max transitions | RFTR deadlock-free | full reconf. supported "
          "| full reconf. deadlock-free | mean pairs changed (full) | core s |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for (torus, n, mode) in sorted(rows, key=lambda k: (ORDER.get(k[0], 9), k[1], k[2])):
        shards = rows[(torus, n, mode)]
        total = int(next(iter(shards.values()))[0]["shard"].split("/")[1])
        missing = [i for i in range(total) if i not in shards]
        if missing:
            print(f"{torus} n={n} {mode}: missing shards {missing} of {total}", file=sys.stderr)
            continue
        agg = defaultdict(int)
        skipped = 0
        changed = 0.0
        maxes = defaultdict(int)
        core = 0.0
        for s, name in shards.values():
            x = s["summary"]
            for k in ("scenarios", "supported", "deadlock_free", "full_scenarios",
                      "full_supported", "full_deadlock_free"):
                agg[k] += x[k]
            for k in ("max_sls", "max_virtual_lids", "max_transitions"):
                maxes[k] = max(maxes[k], x[k])
            changed += x["full_mean_changed_pairs"] * x["full_scenarios"]
            skipped += s["skipped_disconnected"]
            core += secs.get(name, 0.0)
        first = next(iter(shards.values()))[0]
        if mode == "x":
            label = "exhaustive"
            assert agg["scenarios"] + skipped == first["space"], (torus, n, "space not covered")
        else:
            label = f"sampled (seed {first.get('seed', 1)})"
        sc = agg["scenarios"]
        pct = 100.0 * agg["supported"] / sc
        fs = agg["full_scenarios"]
        full = f'{agg["full_supported"]}/{fs}' if fs else "-"
        fdf = f'{agg["full_deadlock_free"]}/{fs}' if fs else "-"
        mean = changed / fs if fs else 0.0
        print(f"| {torus} | {n} | {sc} (+{skipped} disconnected) | {label} | {pct:.3f} "
              f"| {maxes['max_sls']} | {maxes['max_virtual_lids']} | {maxes['max_transitions']} "
              f"| {agg['deadlock_free']}/{sc} | {full} | {fdf} | {mean:.0f} "
              f"| {core:.0f} |")


if __name__ == "__main__":
    main()
