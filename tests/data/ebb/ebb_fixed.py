#!/usr/bin/env python3
"""Per-run EBB of fixed pattern files, computed with shared/tools/orcs_ebb.py's own parsers and
route construction (parse_subnet, parse_lfts, build_routes) and its per-run formula.

usage: ebb_fixed.py ORCS_EBB_PY SUBNET_LST LFTS_DUMP PATTERN
Pattern: one flow "SRC DST" (host names) per line; runs separated by blank lines or "run";
"#" starts a comment.  Prints one per-run value per line (repr, exact round trip).
"""
import collections
import importlib.util
import sys


def main():
    spec = importlib.util.spec_from_file_location("orcs_ebb", sys.argv[1])
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    nodes, link = m.parse_subnet(sys.argv[2])
    lft = m.parse_lfts(sys.argv[3])
    cas, routes, bad, _ = m.build_routes(nodes, link, lft)
    if bad:
        sys.exit("%d unroutable pairs" % bad)
    by_name = {nodes[g]["name"]: g for g in cas}
    runs, cur = [], []
    with open(sys.argv[4]) as f:
        for raw in f:
            line = raw.split("#")[0].strip()
            if raw.lstrip().startswith("#"):
                continue
            if not line or line == "run":
                if cur:
                    runs.append(cur)
                    cur = []
                continue
            a, b = line.split()
            cur.append((by_name[a], by_name[b]))
    if cur:
        runs.append(cur)
    for flows in runs:
        # the body of orcs_ebb.ebb() for one run
        load = collections.Counter()
        paths = [routes[fl] for fl in flows]
        for p in paths:
            for e in p:
                load[e] += 1
        tot = 0.0
        for p in paths:
            w = max(load[e] for e in p)
            tot += 1.0 / w
        print(repr(tot / len(paths)))


if __name__ == "__main__":
    main()
