"""How long a release's removed executors stay alive, and how slow the supersteps after it run,
in recorded Pareto sessions. No Spark; seconds.

    .venv/bin/python experiments/release_transients.py stop38w stop38w2 stop39w stop39w2

For every scale-in of an adaptive run in ``experiments/results/pareto_<TAG>_supersteps.csv``:
the supersteps after it during which Spark's event log still saw more executors alive than the
run kept (``eventlog_executors`` > ``executors``: the decommissioned ones moving their blocks),
and each of the next supersteps' wall time over the session's static runs' median at that size
and superstep. Per session: releases, alive supersteps (median / mean / max), the first and
second supersteps' ratio (medians).

Stop 39: the long transients (2-5x static for 4-5 supersteps) came with removed executors alive
for 4-5 supersteps; without the stale blocks of earlier runs (``RunResult.release``), stop39w2's
releases had them gone within one superstep (mean 0.37, max 1; the three sessions before: mean
0.68-0.94, max 4-5) and the first superstep after a release ran 1.6x static (2.3-2.55x before).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd

RESULTS = Path(__file__).resolve().parent / "results"


def releases(steps: pd.DataFrame) -> list[dict]:
    """One row per scale-in of the table's adaptive runs (see the module docstring)."""
    static = steps[steps["policy"].str.startswith("static")]
    ref = static.groupby(["executors", "superstep"])["wall_seconds"].median()
    out = []
    for _, g in steps[~steps["policy"].str.startswith("static")].groupby("run_id", sort=False):
        g = g.sort_values("superstep").reset_index(drop=True)
        for i in range(1, len(g)):
            if g.executors[i] >= g.executors[i - 1]:
                continue
            alive, ratios = 0, []
            for k in range(i, len(g)):
                if g.executors[k] != g.executors[i]:
                    break
                if alive == k - i and g.eventlog_executors[k] > g.executors[k]:
                    alive += 1
                r = ref.get((g.executors[k], g.superstep[k]))
                if len(ratios) < 6:
                    ratios.append(g.wall_seconds[k] / r if r else np.nan)
            out.append({"policy": g.policy[0], "at": int(g.superstep[i]), "alive": alive, "ratios": ratios,
                        "change": f"{g.executors[i - 1]}->{g.executors[i]}"})
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("tags", nargs="+")
    args = ap.parse_args()
    for tag in args.tags:
        path = RESULTS / f"pareto_{tag}_supersteps.csv"
        if not path.exists():
            print(f"error: {path}: no such table", file=sys.stderr)
            return 2
        steps = pd.read_csv(path, low_memory=False)
        if "eventlog_executors" not in steps:
            print(f"{tag}: no event-log executor counts recorded")
            continue
        rows = releases(steps)
        if not rows:
            print(f"{tag}: no release")
            continue
        alive = np.array([r["alive"] for r in rows])
        first = [r["ratios"][0] for r in rows if r["ratios"]]
        second = [r["ratios"][1] for r in rows if len(r["ratios"]) > 1]
        print(f"{tag}: {len(rows)} releases; removed executors alive for {np.median(alive):.1f} supersteps "
              f"(mean {alive.mean():.2f}, max {alive.max()}); first superstep after {np.nanmedian(first):.2f}x "
              f"static, second {np.nanmedian(second):.2f}x")
        for r in rows:
            if r["alive"] >= 2:
                print(f"   {r['policy']} {r['change']} at {r['at']}: alive {r['alive']}, "
                      + " ".join(f"{x:.1f}" for x in r["ratios"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
