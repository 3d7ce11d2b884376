"""Runtime targets: how often ``target`` misses a deadline, against static and dynamic allocation.

    .venv/bin/python experiments/runtime_targets.py [--quick] [--targets 10] [--reps 3]

PageRank (R-MAT) and k-means (fixed initial centers, a fixed number of supersteps). Per job:

1. *profile* -- a short static run (``--profile-steps`` supersteps) on each executor count
   e = 1..workers; the whole job at e is estimated as superstep 1 + (N-1) x the median of the
   later supersteps: ``T(e)``;
2. ``--targets`` deadlines spread evenly between ``T(workers)`` and ``T(1)``;
3. ``target`` -- one :class:`~iterflow.policies.registry.TargetPolicy` run per deadline, starting on all
   executors (the policy's default) and releasing them while comfortably ahead;
4. ``static`` -- what a user would do with the profile: the fewest executors whose ``T(e)``
   meets the deadline (all of them when none does); ``--reps`` runs at each count chosen;
5. ``dynamic-allocation`` -- Spark's dynamic allocation
   (:class:`~iterflow.policies.registry.DynamicAllocationPolicy` ``spark_conf()``, min 1, max workers),
   in a session of its own on a second emulated cluster; ``--reps`` runs.

A deadline is for the whole job (superstep 1 included; superstep 1 is also reported apart).
Static and dynamic-allocation runs do not depend on the deadline, so each of their runs is
scored against every deadline that maps to it (violation rate over those pairs). Reported:
violation rate (share over target), mean overshoot of the runs over target, executor-seconds.
"""
from __future__ import annotations

import statistics
import time
from typing import Any

import numpy as np
import pandas as pd

from common import RESULTS
from harness import Collector, cluster, load_jobs, parse_args, report, stat_row, summarize, warm_up

from iterflow.policies import DynamicAllocationPolicy, StaticPolicy, TargetPolicy

NAME = "runtime_targets"


def extra(ap) -> None:
    ap.add_argument("--targets", type=int, default=10, help="deadlines (target runs) per job")
    ap.add_argument("--supersteps", type=int, default=None)
    ap.add_argument("--profile-steps", type=int, default=None)
    ap.add_argument("--jobs", default="pagerank,kmeans")


def score(runs: pd.DataFrame, targets: pd.DataFrame, key: str | None) -> pd.DataFrame:
    """One row per (deadline, run) pair: the run's job seconds against the deadline."""
    keys = ["job"] + ([key] if key else [])
    runs = runs.drop(columns=[c for c in targets.columns if c in runs.columns and c not in keys])
    if key:
        runs = runs.astype({key: int})
    pairs = targets.merge(runs, on=keys)
    pairs["over"] = pairs["job_seconds"] > pairs["target_seconds"]
    pairs["overshoot_pct"] = (pairs["job_seconds"] / pairs["target_seconds"] - 1) * 100
    return pairs


def violation_rows(pairs: pd.DataFrame, job: str, config: str) -> list[dict[str, Any]]:
    p = pairs[pairs["job"] == job]
    n = len(p)
    rate = 100.0 * p["over"].mean() if n else float("nan")
    over = p.loc[p["over"], "overshoot_pct"]
    runs = p.drop_duplicates("run_id")
    return [stat_row(NAME, job, config, "violation rate %", [rate], f"{int(p['over'].sum())} of {n} over", n=n),
            stat_row(NAME, job, config, "mean overshoot % (over)", [over.mean()] if len(over) else [],
                     "mean over the runs over target", n=len(over)),
            stat_row(NAME, job, config, "job / target", p["job_seconds"] / p["target_seconds"], "per pair"),
            stat_row(NAME, job, config, "executor-s (ss 2..)", runs["executor_seconds"], "per run")]


def main() -> int:
    args = parse_args(__doc__, NAME, extra)
    n_steps = args.supersteps or (4 if args.quick else 12)
    p_steps = args.profile_steps or (2 if args.quick else 3)
    t0 = time.time()
    runs, profile_runs = Collector(), Collector()
    targets: list[dict[str, Any]] = []
    with cluster(args) as (_, spark, note):
        for job, make in load_jobs(spark, args, n_steps).items():
            warm_up(spark, make(1), args)
            prof = {}
            for e in range(args.workers, 0, -1):
                r = profile_runs.run(spark, StaticPolicy(), make(p_steps), args=args, start=e, verbose=False,
                                     labels={"experiment": NAME, "job": job, "policy": "profile", "rep": e})
                prof[e] = r.ss1_seconds + (n_steps - 1) * float(r.later["span_seconds"].median())
                profile_runs.rows[-1]["profiled_job_seconds"] = prof[e]
            lo, hi = sorted((prof[args.workers], prof[1]))
            print(f"{job}: profiled whole-job seconds by executors "
                  + ", ".join(f"{e}: {t:.1f}" for e, t in sorted(prof.items())), flush=True)
            for i, tgt in enumerate(np.linspace(lo, hi, args.targets)):
                fits = [e for e in sorted(prof) if prof[e] <= tgt]
                chosen = fits[0] if fits else args.workers
                targets.append({"job": job, "target_id": i, "target_seconds": float(tgt), "static_executors": chosen})
                runs.run(spark, TargetPolicy(float(tgt), max_executors=args.workers, max_iterations=n_steps,
                                             start_executors=args.workers), make(), args=args, start=args.workers,
                         verbose=False, labels={"experiment": NAME, "job": job, "policy": "target", "rep": i,
                                                "target_seconds": round(float(tgt), 2)})
            for e in sorted({t["static_executors"] for t in targets if t["job"] == job}):
                for rep in range(args.reps):
                    runs.run(spark, StaticPolicy(), make(), args=args, start=e, verbose=False, static_executors=e,
                             labels={"experiment": NAME, "job": job, "policy": f"static-{e}", "rep": rep})
    da = DynamicAllocationPolicy(min_executors=1, max_executors=args.workers, start_executors=1)
    with cluster(args, da.spark_conf()) as (_, spark, _):
        print(f"dynamic allocation session: {da.spark_conf()}", flush=True)
        for job, make in load_jobs(spark, args, n_steps).items():
            for rep in range(args.reps):
                runs.run(spark, da, make(), args=args, start=None, verbose=False,
                         labels={"experiment": NAME, "job": job, "policy": "dynamic-allocation", "rep": rep})
    df = runs.frame(note)
    tg = pd.DataFrame(targets)
    pairs = {"target": score(df[df["policy"] == "target"].rename(columns={"rep": "target_id"}), tg, "target_id"),
             "static (profiled choice)": score(df[df["policy"].str.startswith("static")], tg, "static_executors"),
             "dynamic-allocation": score(df[df["policy"] == "dynamic-allocation"], tg, None)}
    summary = []
    for job in tg["job"].unique():
        for config, p in pairs.items():
            summary += violation_rows(p, job, config)
        summary.append(stat_row(NAME, job, "all", "target seconds", tg[tg["job"] == job]["target_seconds"],
                                f"{args.targets} deadlines"))
    summary += summarize(df, NAME, ["job", "policy"], {"ss1_seconds": "superstep 1 s"})
    profile_runs.frame(note).to_csv(RESULTS / f"{NAME}_profile.csv", index=False)
    pd.concat(pairs.values(), keys=pairs.keys(), names=["config", None]).reset_index(level=0).to_csv(
        RESULTS / f"{NAME}_pairs.csv", index=False)
    report(NAME, df, summary, runs.tables + profile_runs.tables,
           f"{NAME}: {args.workers} workers at cpu share {args.cpu_share} ({note}); {n_steps} supersteps; "
           f"{args.targets} deadlines per job; median [min-max]")
    print(f"most common executors path of target runs: "
          f"{statistics.mode(df[df['policy'] == 'target']['executors_path'])}; {time.time() - t0:.0f}s")
    return 0

if __name__ == "__main__":
    raise SystemExit(main())
