"""A scale-out's relayout built beside the supersteps against at the barrier (issue 13, items 3 and 6).

    .venv/bin/python experiments/scaleout_relayout.py [--jobs pagerank,kmeans] [--reps 2] [--cpu-share 0.45]

On the emulated cluster, each job starts at 1 executor (1 partition) and a scripted policy asks
for 4 at barrier 2, as the issue-13 scenario's ``target`` does; 14 supersteps. Two ways, in
alternating order each repetition (:data:`iterflow.loop.reconfigure.PREPARE_AHEAD`):

* ``ahead`` (off by default): once the executors are seen, the inputs at 4
  partitions are built in the background while the next supersteps run on the old layout; the
  first barrier after it is done adopts them and re-places only the state;
* ``barrier`` (iterflow's default): the relayout (inputs and state) runs at the barrier that saw
  the executors;
* ``laid-out``: the run starts at 1 executor on the 4 partitions of the size it scales to, so
  the scale-out re-lays out nothing: the new executors' tasks read their cached blocks from
  the first executor;
* ``uncompressed``: as ``barrier``, every cache the run builds in Spark's columnar format
  without compression (``spark.sql.inMemoryColumnarStorage.compressed=false``): the relayout's
  re-cache on the new executors' cold JVMs was most of its time (``--breakdown``).

Per run: the job's seconds (the driver's run, superstep 1 to the last barrier), the barrier
stalls of the scale-out (request, arrival, adoption: ``pause_seconds``), the background
relayout's seconds, the superstep the new layout started in, and every superstep checked in
Spark's event log. Results: ``experiments/results/scaleout_relayout*`` (stop 63, 4 reps over two sessions: ahead 1.09x /
1.02x the job of barrier for PageRank / k-means, stall 0.95 s / 0.03 s against 5.9 s / 5.2 s;
laid-out 1.13x / 1.07x).
"""
from __future__ import annotations

import time
from typing import Any

import pandas as pd

from harness import (cluster, eventlog_check, eventlog_match, load_jobs, parse_args, save, stat_row, warm_up,
                     write_report)

from iterflow.loop import reconfigure
from iterflow.loop.driver import IterationDriver
from iterflow.loop.reconfig import Reconfiguration
from iterflow.policies import PolicyBase

NAME = "scaleout_relayout"
MODES = ("ahead", "barrier", "laid-out", "uncompressed")
COMPRESSED = "spark.sql.inMemoryColumnarStorage.compressed"
SUPERSTEPS = 14
AT, TO = 2, 4  # barrier, executors


class ScaleOut(PolicyBase):
    """Ask for :data:`TO` executors at barrier :data:`AT`; keep otherwise."""

    name = "scale-out"

    def decide(self, history, model=None, *, layout=None, plan=None):  # noqa: ANN001 - Policy protocol
        if history[-1].superstep == AT:
            return Reconfiguration(reason=f"scripted: {TO} executors", executors=TO)
        return Reconfiguration.none("keep")


def extra(ap) -> None:
    ap.add_argument("--jobs", default="pagerank,kmeans", help="comma-separated: pagerank, kmeans")
    ap.add_argument("--modes", default=",".join(MODES), help=f"comma-separated, of {', '.join(MODES)}")
    ap.add_argument("--tag", default="", help="results go to scaleout_relayout_TAG*")
    ap.add_argument("--breakdown", action="store_true",
                    help="print every job and stage of the relayouts' job groups from Spark's event log")


def breakdown(spark: Any, args: Any) -> None:
    """Each relayout job group's jobs and stages (wall, tasks, summed task ms) from the event log."""
    from relayout_jobs import groups

    from iterflow.observe.eventlog import find_log

    jobs, stages, tasks = groups(find_log(args.eventlog, spark.sparkContext.applicationId))
    for j, d in sorted(jobs.items()):
        if (d["group"] or "").startswith("relayout"):
            print(f"job {j} {d['group']} {d.get('end', 0) - d['start']} ms")
            for sid in d["stages"]:
                if sid in stages:
                    name, n, wall = stages[sid]
                    print(f"    stage {sid} {name} tasks={n} wall={wall}ms tasksum={tasks[sid]:.0f}ms")


def one_run(spark: Any, make: Any, args: Any, job: str, mode: str, rep: int) -> tuple[pd.DataFrame, float]:
    reconfigure.PREPARE_AHEAD = mode == "ahead"
    spark.conf.set(COMPRESSED, str(mode != "uncompressed").lower())
    driver = IterationDriver(spark, ScaleOut(), partitions=TO if mode == "laid-out" else None, start_executors=1)
    first_job = driver.stats.first_job
    program = make()
    t0 = time.perf_counter()
    res = driver.run(program)
    took = time.perf_counter() - t0
    t = eventlog_check(spark, args, res.supersteps.copy(), first_job)
    res.release()
    program.release()
    t["job"], t["mode"], t["rep"] = job, mode, rep
    seen, ok = eventlog_match(t)
    t["eventlog_ok"] = ok
    print(f"  {job} {mode} rep {rep}: {took:.1f}s; executors {t['executors'].tolist()} (event log {seen}: "
          f"{'consistent' if ok else 'INCONSISTENT'}); partitions {t['partitions'].tolist()}", flush=True)
    return t, took


def account(t: pd.DataFrame) -> dict[str, Any]:
    """The scale-out of one run: its barriers' stalls, the background relayout, the superstep
    the new layout started in, and the supersteps from the request to it."""
    num = lambda c: pd.to_numeric(t.get(c), errors="coerce").fillna(0.0) if c in t else pd.Series(0.0, index=t.index)
    stall = num("actuation_seconds") + num("relayout_seconds")
    first = t[(t["partitions"] == TO) & (t["executors"] == TO)]["superstep"]
    start = int(first.min()) if len(first) else -1
    between = t[(t["superstep"] > AT) & (t["superstep"] < start)]
    return {"stall_seconds": float(stall.sum()), "stall_max_seconds": float(stall.max()),
            "relayout_barrier_seconds": float(num("relayout_seconds").sum()),
            "relayout_ahead_seconds": float(num("relayout_ahead_seconds").sum()),
            "new_layout_from": start, "old_layout_supersteps_seconds": float(between["wall_seconds"].sum()),
            "after_seconds": float(t[t["superstep"] >= start]["wall_seconds"].sum()) if start > 0 else float("nan")}


def main() -> int:
    args = parse_args(__doc__, NAME, extra, quick_reps=2, partitions=None)
    args.jobs, modes = args.jobs.split(","), tuple(args.modes.split(","))
    if not set(modes) <= set(MODES) or not modes:
        raise SystemExit(f"--modes: {args.modes!r} is not a comma-separated list of {', '.join(MODES)}")
    tables, rows = [], []
    with cluster(args) as (_, spark, note):
        jobs = load_jobs(spark, args, SUPERSTEPS)
        for job, make in jobs.items():
            warm_up(spark, make(3), args)
        for rep in range(args.reps):
            for job, make in jobs.items():
                for mode in modes[rep % len(modes):] + modes[:rep % len(modes)]:
                    t, took = one_run(spark, make, args, job, mode, rep)
                    tables.append(t)
                    rows.append({"job": job, "mode": mode, "rep": rep, "job_seconds": took, **account(t)})
        if args.breakdown:
            time.sleep(2)  # the event log flushed
            breakdown(spark, args)
    reconfigure.PREPARE_AHEAD = False
    r = pd.DataFrame(rows)
    summary = []
    for job in args.jobs:
        for mode in modes:
            sel = r[(r["job"] == job) & (r["mode"] == mode)]
            for col in ("job_seconds", "stall_seconds", "relayout_ahead_seconds", "new_layout_from",
                        "old_layout_supersteps_seconds", "after_seconds"):
                summary.append(stat_row(NAME, job, mode, col, sel[col]))
        by = r[r["job"] == job].pivot(index="rep", columns="mode", values="job_seconds")
        for mode in (m for m in MODES if m != "barrier" and m in modes and "barrier" in modes):
            summary.append(stat_row(NAME, job, f"{mode}/barrier", "ratio job s", by[mode] / by["barrier"], "paired by rep"))
    stem = f"{NAME}_{args.tag}" if args.tag else NAME
    save(stem, r, summary, tables)
    title = (f"{NAME}: {args.workers} workers at cpu share {args.cpu_share} ({note}); 1 -> {TO} executors at "
             f"barrier {AT}, {SUPERSTEPS} supersteps; {args.reps} reps; median [min-max]")
    write_report(stem, title, summary, r)
    return 0 if all(t["eventlog_ok"].all() for t in tables) else 1


if __name__ == "__main__":
    raise SystemExit(main())
