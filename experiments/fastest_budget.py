"""Did ``fastest`` overspend because its budget read the baseline high? Every recorded Pareto
session's ``fastest`` runs, their budget at each barrier (from the reasons) against what the
baseline's static run of the session measured (no Spark).

    .venv/bin/python experiments/fastest_budget.py [--tags stop68all,...] [--over 5] [--out results/fastest_budget.txt]

Why: the budget is ``share`` x the baseline's executor-seconds, its rest *predicted* at this
run's level -- stop68all's WCC run, slow at 2 executors, read static-1's rest 21.0 s where
static-1 ran it in 17.0 s and spent 1.39x static-1's executor-seconds on a 1.2x budget. Since
stop 69 the budget is at most ``share`` x the measured run less what was spent
(:meth:`~iterflow.policies.fastest.FastestPolicy._bounded`). Per run: the newest static
run at the baseline before it of the same length (none: the run is left out), the largest excess
of the budget the run read over that bound at any barrier, and the run's executor-seconds over
the median of the baseline's static runs in the session (before and after). Summary: of the runs
whose budget read more than ``--over`` executor-seconds above the bound, how many ended over their
share; of the others, how many.

The bound is computed as the policy computes it (:func:`~iterflow.loop.records.executor_seconds`
of the records: the barrier's rescale pause counted, not the span the experiments measure from
outside, and at each barrier what was spent before its rescale); the run's ratio to the static
median is the table's, as the Pareto reports it.
"""
from __future__ import annotations

import re
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from common import session_parser, session_tag, superstep_tables, write_result

from iterflow.loop.records import executor_seconds, records

COLS = ["job", "policy", "run_id", "superstep", "executors", "executor_seconds", "reason", "wall_seconds"]
PAUSE = ["barrier_seconds", "actuation_seconds", "relayout_seconds", "executors_active", "executors_requested"]
BUDGET = re.compile(r"executor-second budget (-?\d+) for ~\d+ supersteps \((?:([\d.]+)x )?baseline (\d+):")


def own_seconds(run: pd.DataFrame) -> tuple[float, list[float]]:
    """The run's executor-seconds as the policy counts them, and at each barrier what was spent
    before its rescale (the policy's ``spent``: the barrier's own record is not actuated yet)."""
    rec = records(run)
    each = [executor_seconds(r) for r in rec]
    before = np.concatenate([[0.0], np.cumsum(each)[:-1]])
    return float(sum(each)), [float(b + executor_seconds(r.with_(actuated=None))) for b, r in zip(before, rec)]


def runs(path: Path) -> list[dict]:
    """One session's ``fastest`` runs that have a static run at their baseline before them."""
    df = pd.read_csv(path, usecols=lambda c: c in COLS or c in PAUSE, low_memory=False)  # older tables: no pause
    if set(COLS) - set(df.columns):
        return []
    out = []
    for job, dj in df.groupby("job", sort=False):
        order = list(dj.groupby("run_id", sort=False))
        for k, (_, run) in enumerate(order):
            if run.policy.iloc[0] != "fastest":
                continue
            read = [(int(m.group(1)), float(m.group(2) or 1.0), int(m.group(3)), spent)
                    for m, spent in zip(map(BUDGET.search, run.reason.astype(str)), own_seconds(run)[1]) if m]
            if not read:
                continue
            share, base = read[0][1], read[0][2]
            static = [g for _, g in order if g.policy.iloc[0] == f"static-{base}" and len(g) == len(run)]
            before = [g for _, g in order[:k] if g.policy.iloc[0] == f"static-{base}" and len(g) == len(run)]
            if not before:
                continue
            cost = own_seconds(before[-1])[0]
            over = max(b - (share * cost - spent) for b, _, _, spent in read)
            ratio = float(run.executor_seconds.sum()) / float(np.median([g.executor_seconds.sum() for g in static]))
            out.append({"job": job, "share": share, "over": over, "ratio": ratio,
                        "path": "-".join(map(str, run.executors.tolist()))})
    return out


def main(argv: list[str] | None = None) -> int:
    ap = session_parser(__doc__, "fastest_budget.py")
    ap.add_argument("--over", type=float, default=5.0, help="executor-seconds above the measured bound that count")
    a = ap.parse_args(argv)
    paths = superstep_tables(a.tags, "fastest_budget.py")
    rows = [{"session": session_tag(p), **r}
            for p in paths for r in runs(p)]
    if not rows:
        print("fastest_budget.py: no fastest run with a static run at its baseline before it", file=sys.stderr)
        return 1
    t = pd.DataFrame(rows)
    high = t.over > a.over
    spent_over = t.ratio > t.share
    lines = ["per fastest run: the largest excess of its budget over share x the baseline's measured static run "
             "less what was spent (executor-seconds), its executor-seconds over the baseline's static median",
             *(f"  {r.session:<22} {r.job:<9} {r.share:g}x  budget over the measured bound {r.over:+6.1f}  "
               f"run {r.ratio:.2f}x  [{r.path[:47]}]" for r in t.itertuples()),
             f"over {len(t)} runs in {t.session.nunique()} sessions: budget read > {a.over:g} executor-seconds above the "
             f"measured bound in {int(high.sum())} runs, {int((high & spent_over).sum())} of them over their share; "
             f"the other {int((~high).sum())} runs: {int((~high & spent_over).sum())} over their share"]
    write_result(a.out, "fastest_budget.py", argv, lines)
    return 0


if __name__ == "__main__":
    sys.exit(main())
