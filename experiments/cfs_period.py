"""The emulated nodes' CFS period: how it moves a job's speed and its run-to-run noise.

    .venv/bin/python experiments/cfs_period.py [--job pagerank] [--sizes 1,2,4] [--periods 100,10] [--reps 3] [--tag T]

A worker's cpu share is a cgroup v1 quota, ``share x period`` of CPU time every period
(:mod:`iterflow.cluster.cpushare`, 100 ms so far): a node at 0.5 core runs flat out for 50 ms,
then waits 50 ms. A superstep's tasks are 20-500 ms, so where a task starts in the period
decides whether it waits -- noise a real half-core node would not add. On one emulated cluster
(4 workers at ``--cpu-share``), the job's ``static`` runs at each size of ``--sizes``, with every
worker's period set in place to each of ``--periods`` (ms) in an order rotated by rep (the share
unchanged), after one untimed run on every executor. Printed per period and size: the job's
median seconds and its spread over the reps (max/min), the steady supersteps' coefficient of
variation within a run (median over the reps), and the speedup over the smallest size. The input
is the Pareto experiment's (PageRank R-MAT 18, 1M edges, 14 supersteps; WCC R-MAT 20, 2.4M
edges and a 30-vertex tail; k-means 500k points, k = 5, 14 supersteps).
"""
from __future__ import annotations

import time

import numpy as np
import pandas as pd

from harness import Collector, cluster, parse_args, warm_up, write_table
from tasks_per_core import program

from iterflow.cluster.cpushare import PERIOD_US, set_period
from iterflow.policies import StaticPolicy

NAME = "cfs_period"
STEADY = 3  # supersteps from the third: past the first (cold) ones


def ints(text: str, what: str) -> list[int]:
    try:
        out = [int(v) for v in text.split(",")]
    except ValueError:
        raise SystemExit(f"--{what} {text!r}: expected integers, comma-separated")
    if not out:
        raise SystemExit(f"--{what}: give at least one")
    return out


def main() -> int:
    args = parse_args(__doc__, NAME, lambda ap: (
        ap.add_argument("--job", default="pagerank"),
        ap.add_argument("--sizes", default="1,2,4", help="executor counts, comma-separated"),
        ap.add_argument("--periods", default="100,10", help="CFS periods in ms, comma-separated (1-1000)"),
        ap.add_argument("--tag", default="")), quick_reps=3, partitions=None)
    sizes, periods = ints(args.sizes, "sizes"), ints(args.periods, "periods")
    if any(not 1 <= e <= args.workers for e in sizes):
        raise SystemExit(f"--sizes {args.sizes}: executors in 1..{args.workers} (--workers)")
    if any(not 1 <= p <= 1000 for p in periods) or min(periods) * args.cpu_share < 1:
        raise SystemExit(f"--periods {args.periods}: 1-1000 ms each, and share x period >= 1 ms (the kernel's least quota)")
    t0, runs, rows = time.time(), Collector(), []
    with cluster(args) as (c, spark, note):
        paths = c.info().cgroups
        if not paths:
            raise SystemExit(f"no cpu share applied ({note}): nothing to vary")
        make = program(spark, args.job, wcc_graph=(20, 2_400_000))
        warm_up(spark, make(), args)
        try:
            for rep in range(args.reps):
                for period in periods[rep % len(periods):] + periods[:rep % len(periods)]:
                    set_period(paths, args.cpu_share, period * 1000)
                    for e in sizes:
                        run = runs.run(spark, StaticPolicy(), make(), args=args, start=e, verbose=False,
                                       labels={"experiment": NAME, "job": args.job, "policy": f"static-{e}",
                                               "period_ms": period, "rep": rep})
                        t = run.table
                        steady = t.loc[t.superstep >= STEADY, "wall_seconds"]
                        row = {"period_ms": period, "executors": e, "rep": rep, "job_seconds": run.job_seconds,
                               "steady_median": float(steady.median()),
                               "steady_cv": float(steady.std() / steady.mean()) if len(steady) > 1 else float("nan")}
                        rows.append(row)
                        print(f"  period {period} ms, {e} executor(s), rep {rep}: job {row['job_seconds']:.1f}s, steady "
                              f"superstep {row['steady_median']:.3f}s (cv {row['steady_cv']:.0%})", flush=True)
                        run.release()
        finally:
            set_period(paths, args.cpu_share, PERIOD_US)
    df = pd.DataFrame(rows)
    out = [f"== {NAME} {args.job}: {note}; {args.reps} reps, periods rotated by rep; the default period {PERIOD_US // 1000} ms"]
    for period in periods:
        mine = df[df.period_ms == period]
        base = mine[mine.executors == min(sizes)].job_seconds.median()
        for e in sizes:
            g = mine[mine.executors == e]
            out.append(f"  period {period:>4} ms, {e} executor(s): job {g.job_seconds.median():.1f}s "
                       f"[{g.job_seconds.min():.1f}-{g.job_seconds.max():.1f}], spread {g.job_seconds.max() / g.job_seconds.min():.2f}x; "
                       f"steady superstep {g.steady_median.median():.3f}s, cv within a run {g.steady_cv.median():.0%}; "
                       f"speedup over {min(sizes)}: {base / g.job_seconds.median():.2f}x")
        spread = mine.groupby("executors").job_seconds.agg(lambda s: s.max() / s.min() - 1)
        out.append(f"  period {period:>4} ms: median spread over sizes {np.median(spread):.0%}, "
                   f"median cv within a run {mine.steady_cv.median():.0%}")
    out.append(f"{time.time() - t0:.0f}s")
    write_table(NAME, args.job + (f"_{args.tag}" if args.tag else ""), df, out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
