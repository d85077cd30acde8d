#!/usr/bin/env python3
"""Puts two sweep runs of the same scenarios side by side.

    scripts/rftr-beside.py NEW.jsonl... --old OLD.jsonl...

Both sides are the JSON lines of `fabroute sweep` (all shards of one row each). The script
checks that they hold the same scenarios (same ids, same fault sequences) and exits 1 if not.
Then it prints % supported on each side and the full-reconfiguration figures from whichever
side has them, so that a `--no-full` run with other RFTR settings (e.g. `--tie-break`) can be
reported beside full reconfiguration without recomputing it.
"""
import json
import sys


def load(paths):
    out = {}
    for p in paths:
        with open(p) as f:
            for n, line in enumerate(f, 1):
                try:
                    x = json.loads(line)
                except json.JSONDecodeError as e:
                    sys.exit(f"{p}:{n}: not a JSON line: {e}")
                out[x["id"]] = x
    return out


def main():
    args = sys.argv[1:]
    if "--old" not in args:
        sys.exit(__doc__)
    i = args.index("--old")
    new, old = load(args[:i]), load(args[i + 1:])
    if not new or new.keys() != old.keys():
        print(f"different scenario ids: {len(new)} new, {len(old)} old", file=sys.stderr)
        sys.exit(1)
    diff = [k for k in new if new[k]["faults"] != old[k]["faults"]]
    if diff:
        print(f"{len(diff)} scenarios differ in their faults, e.g. id {diff[0]}", file=sys.stderr)
        sys.exit(1)
    n = len(new)
    pct = lambda side: 100.0 * sum(x["supported"] for x in side.values()) / n
    res = {"scenarios": n, "new_supported_pct": pct(new), "old_supported_pct": pct(old),
           "new_deadlock_free": sum(x["deadlock_free"] for x in new.values()),
           "old_deadlock_free": sum(x["deadlock_free"] for x in old.values())}
    full = new if all("full" in x for x in new.values()) else old
    if all("full" in x for x in full.values()):
        res["full_supported"] = sum(x["full"]["supported"] for x in full.values())
        res["full_deadlock_free"] = sum(x["full"]["deadlock_free"] for x in full.values())
        res["full_mean_changed_pairs"] = sum(x["full"]["changed_pairs"] for x in full.values()) / n
    print(json.dumps(res, indent=1))


if __name__ == "__main__":
    main()
