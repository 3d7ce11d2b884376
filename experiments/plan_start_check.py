"""What ``efficiency``'s (or ``fastest``'s) start plan predicts from a Pareto session's static runs, beside what they measured.

    .venv/bin/python experiments/plan_start_check.py --table pareto_stop52w20b_supersteps.csv [--job wcc] [--policy fastest]

No Spark: the session's first static run at each size (the ``before`` pass) planned on as
``pareto.start_plan`` does for the session's ``efficiency`` or ``fastest`` (the model warm-started on them, the
rescales priced from the session's cluster profile, ``pareto_<tag>_cluster_profile.json``, where
it is there), then the whole run predicted at each size as a repeat of the last run
(:meth:`EfficiencyPolicy.plan_start`'s forecast) next to the runs' own seconds, and the start it
plans. Why: stop 52's second WCC session started ``efficiency`` at 1 executor on a forecast of
27.5 s for a run static-1 had just taken 43 s to do.
"""
from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pandas as pd

from harness import RESULTS
from pareto import BUDGET, start_plan

from iterflow.simulate.calibrate import load_profile
from iterflow.policies import EfficiencyPolicy, FastestPolicy, Predictor


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--table", required=True, help="a pareto_<tag>_supersteps.csv (in experiments/results or a path)")
    ap.add_argument("--job", default="wcc")
    ap.add_argument("--policy", choices=("efficiency", "fastest"), default="efficiency",
                    help="whose start plan: efficiency (from the maximum) or fastest (baseline 1, 1.2x, as pareto.py)")
    args = ap.parse_args()
    path = Path(args.table) if args.table.startswith(("/", ".")) else RESULTS / args.table
    if not path.is_file():
        raise SystemExit(f"--table {args.table}: no such file ({path})")
    t = pd.read_csv(path)
    t = t[(t["job"] == args.job) & t["policy"].str.startswith("static-")]
    if t.empty:
        raise SystemExit(f"--table {args.table}: no static runs of job {args.job!r}")
    by_size: dict[int, pd.DataFrame] = {}
    for _, g in t.groupby("run_id", sort=False):  # in run order: each size's first run is kept
        by_size.setdefault(int(g["executors"].iloc[0]), g)
    first = [by_size[e] for e in sorted(by_size)]
    prof = path.with_name(path.name.replace("_supersteps.csv", "_cluster_profile.json"))
    cluster = load_profile(prof).records() if prof != path and prof.is_file() else []
    W = max(by_size)
    policy = (EfficiencyPolicy(max_executors=W, start_executors=W) if args.policy == "efficiency"
              else FastestPolicy(1, budget=BUDGET, max_executors=W, start_executors=1))
    want, model, past = start_plan(policy, first, True, cluster)
    S = Predictor(past, model, 1.0).seconds(np.arange(1, W + 1), policy._repeat_works(None, extend=True))
    print(f"{path}: {args.job}, the past: the first static run at each size; the last run: static-{W}; "
          f"rescales priced from {prof.name if cluster else 'the priors (no cluster profile beside the table)'}")
    for g, s in zip(first, S):
        real = float(g["wall_seconds"].sum())
        print(f"  static-{int(g['executors'].iloc[0])}: measured {real:5.1f}s, predicted as a repeat {s.sum():5.1f}s "
              f"({s.sum() / real:.2f}x); first supersteps measured "
              f"{np.round(g['wall_seconds'].to_numpy()[:5], 2).tolist()}, predicted {np.round(s[:5], 2).tolist()}")
    print(f"  {policy.name} start plan: {want.reason if want else f'none (starts as configured, {policy.start_executors})'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
