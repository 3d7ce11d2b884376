"""How long the policies' own rescales stalled their barriers (issue 13, item 3), pooled over
Pareto sessions.

    .venv/bin/python experiments/rescale_stalls.py --tags stop56all,stop57all,...

Per rescale a policy decided (``up`` / ``down``) in the sessions' ``results/pareto_<tag>_supersteps.csv``:
its barrier's stall (``pause_seconds``: securing the state, the actuator's wait, any relayout)
and, for a scale-out that did not wait, the stalls of the barriers up to the one that saw its
executors and re-laid out onto them (:func:`stall_of`). Printed by kind -- a release to one executor
(nothing rebuilt), another release (cached inputs rebuilt), a scale-out -- as median [min-max]
(n), and all together. ``make stall`` measures the same on a scripted schedule at a fixed
partition count; this is what the policies' runs met, the count following the cores. No Spark.
"""
from __future__ import annotations

import argparse
import sys

import numpy as np
import pandas as pd

from pareto_pool import session

from iterflow.loop.records import SuperstepRecord, records
from iterflow.loop.rescales import light_release


def stall_of(history: list[SuperstepRecord], k: int) -> float:
    """The barrier stall of the rescale decided at ``history[k]``: its own pause, and for a
    scale-out whose executors were still coming, the pauses up to the barrier that saw them."""
    act = history[k].actuated
    stall = act.pause_seconds or 0.0
    for nxt in history[k + 1:]:
        if not act.executors_pending:
            break
        act = nxt.actuated
        if act is None:
            break
        stall += act.pause_seconds or 0.0
    return stall


def kind(r: SuperstepRecord) -> str:
    if r.decided.decision == "up":
        return "scale-out"
    return "release to one" if light_release(r.executors, r.actuated.executors_requested) else "other release"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0], epilog=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tags", required=True, help="comma-separated Pareto session tags")
    args = ap.parse_args()
    rows = []
    for tag in args.tags.split(","):
        t = session(tag, "_supersteps")
        for run, g in t.groupby("run_id", sort=False):
            h = records(g.sort_values("superstep"))
            for k, r in enumerate(h):
                if r.decided is not None and r.decided.decision in ("up", "down") and r.actuated is not None:
                    rows.append({"tag": tag, "job": g["job"].iloc[0], "kind": kind(r), "stall": stall_of(h, k)})
    if not rows:
        print("no rescale in these sessions")
        return 1
    d = pd.DataFrame(rows)
    fmt = lambda s: f"{np.median(s):.2f} s [{s.min():.2f}-{s.max():.2f}] ({len(s)})"  # noqa: E731
    print(f"barrier stall per rescale over {d['tag'].nunique()} sessions (median [min-max] (n)):")
    for (k, job), s in d.groupby(["kind", "job"])["stall"]:
        print(f"  {k:15s} {job:9s} {fmt(s)}")
    for k, s in d.groupby("kind")["stall"]:
        print(f"  {k:15s} {'all':9s} {fmt(s)}")
    print(f"  {'every rescale':15s} {'all':9s} {fmt(d['stall'])}; within 1 s: {(d['stall'] <= 1).mean():.0%}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
