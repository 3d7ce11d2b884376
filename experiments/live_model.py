"""Live accuracy of the resource model: PageRank on an R-MAT graph on an emulated cluster,
executors changed by hand between supersteps; next-superstep prediction error (MAPE).

    .venv/bin/python experiments/live_model.py [--scale 20 --edges 4000000] [--workers 4 --cpu-share 0.5]

The schedule of executors (default 1,1,1,2,2,4,4,2,2,1,4,2,1,2) is applied at barriers through
Spark's allocation client; the prediction for superstep i is made at barrier i-1, at the
executors in force for superstep i, before it runs. Errors are reported from the fourth
superstep on; superstep 1 (JIT warm-up) is not fed to the model.
"""
from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from common import RESULTS, add_emulation_args, emulated_cluster, rmat

from algorithms import PageRank
from iterflow.loop.driver import IterationDriver
from iterflow.inputs.graphio import load_graph
from iterflow.loop.reconfig import Reconfiguration
from iterflow.policies import PolicyBase


class ScheduledExecutors(PolicyBase):
    """A hand schedule: executors for superstep i+1 decided at barrier i."""

    name = "scheduled"

    def __init__(self, schedule: list[int]) -> None:
        super().__init__()
        self.schedule = schedule

    def decide(self, history, model=None, *, layout=None, plan=None) -> Reconfiguration:
        nxt = len(history)  # index of the next superstep in the schedule
        if nxt >= len(self.schedule):
            return Reconfiguration.none("schedule exhausted")
        return Reconfiguration(reason=f"hand schedule: {self.schedule[nxt]} executors", executors=self.schedule[nxt])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_emulation_args(ap)
    ap.add_argument("--partitions", type=int, default=8)
    ap.add_argument("--schedule", default="1,1,1,2,2,4,4,2,2,1,4,2,1,2")
    ap.add_argument("--out", default=str(RESULTS / "live_model.csv"))
    args = ap.parse_args()
    schedule = [int(x) for x in args.schedule.split(",")]
    data = rmat(args.scale, args.edges)
    t0 = time.time()
    with emulated_cluster(args.workers, args.cpu_share, partitions=args.partitions) as (cluster, spark):
        driver = IterationDriver(spark, ScheduledExecutors(schedule), partitions=args.partitions,
                                 on_superstep=lambda rec: (r := rec.row()) and print(
                                     f"superstep {r['superstep']:>2}: {r['wall_seconds']:.2f}s on "
                                     f"{r['executors']} executors, predicted {r['predicted_seconds']:.2f}s",
                                     flush=True))
        driver.actuator.set_executors(schedule[0])  # before loading: caches land where they stay
        g = load_graph(spark, str(data), "edgelist", partitions=args.partitions)
        print(f"loaded {g.edges.count()} edges in {time.time() - t0:.0f}s", flush=True)
        res = driver.run(PageRank(g, max_iterations=len(schedule)))
    t = res.supersteps
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    t.to_csv(args.out, index=False)
    scored = t[t["superstep"] >= 4]
    ape = (scored["predicted_seconds"] - scored["wall_seconds"]).abs() / scored["wall_seconds"]
    print(f"\nexecutors in force per superstep: {t['executors'].tolist()}")
    by_exec = t[t["superstep"] > 1].groupby("executors")["wall_seconds"].median()
    print("median superstep seconds by executors: " + ", ".join(f"{k}: {v:.2f}s" for k, v in by_exec.items()))
    print(f"next-superstep prediction MAPE from superstep 4 on: {ape.mean():.1%} "
          f"(median {ape.median():.1%}, n={len(ape)}); barrier overhead median "
          f"{t['barrier_seconds'].median() * 1e3:.0f} ms; table in {args.out}")
    return 0 if np.isfinite(ape.mean()) else 1


if __name__ == "__main__":
    raise SystemExit(main())
