"""Cut one job of a Pareto session's superstep table into a test fixture (no Spark):

    .venv/bin/python experiments/cut_fixture.py --tag stop65all --job wcc --out tests/fixtures/pareto_stop65all_wcc.csv

Every run of the job is kept -- the static passes before and after the adaptive runs (a replay's
warm start, and the session's own repeats: the noise a replay is judged against) and every
adaptive run -- with its decisions and the first 40 characters of each reason (``converged``
says a run stopped on its tolerance, not at its bound: ``simulate.cluster.plan_of``); the
per-partition lists, event-log columns and the reasons' rest are dropped, floats kept to 4
places. Why refresh: a fixture replayed to check the simulator must be made by the policies
as committed -- a run made by an earlier rule decides as that rule did, not as the replay does.
"""
from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd

RESULTS = Path(__file__).resolve().parent / "results"
DROP = ("partition_records", "partition_seconds", "actuation_note", "executors_lost_ids", "eventlog_executors",
        "eventlog_executors_start", "eventlog_task_executors", "experiment", "main_stage")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tag", required=True, help="the session: results/pareto_<TAG>_supersteps.csv")
    ap.add_argument("--job", required=True, help="the job to keep (wcc, pagerank, kmeans)")
    ap.add_argument("--out", required=True, type=Path)
    args = ap.parse_args()
    table = RESULTS / f"pareto_{args.tag}_supersteps.csv"
    if not table.is_file():
        raise SystemExit(f"--tag {args.tag}: no table {table}")
    d = pd.read_csv(table)
    d = d[d.job == args.job]
    if d.empty:
        raise SystemExit(f"--job {args.job}: no such job in {table} (it has {sorted(set(pd.read_csv(table).job))})")
    d = d.drop(columns=[c for c in DROP if c in d.columns])
    d["reason"] = d.reason.str.slice(0, 40)
    d.round(4).to_csv(args.out, index=False)
    print(f"{args.out}: {len(d)} supersteps, runs per policy {d.groupby('policy').run_id.nunique().to_dict()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
