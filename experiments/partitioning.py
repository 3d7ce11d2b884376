"""Partitioning of the state on the emulated cluster: skew before/after hotspot rebalancing,
and the data a rescale moves, minimal-movement bins against hash partitioning.

    .venv/bin/python experiments/partitioning.py [--scale 20 --edges 4000000] [--reps 2]

* **skew** -- PageRank on R-MAT (a = 0.57) with ``P`` partitions per run: ``hash`` (bins
  assigned uniformly: each partition gets B/P hashed bins, which is hash partitioning at bin
  granularity) against ``rebalanced`` (the :class:`~iterflow.policies.Rebalancing` policy:
  threshold 1.1 for 2 supersteps, greedy moves of hot bins). Reported per run: max/mean task
  time of the main stage (``skew``), the same on task CPU time (``skew_cpu``: without the
  waits a 0.5-core cpu quota, remote block reads and scheduling add), max/mean records per
  partition, and the imbalance the
  measured per-bin load predicts -- medians over supersteps 2.. (hash) and over the supersteps
  after the last bin move (rebalanced).
* **movement** -- 2 executors, then 3 at barrier 3 (partitions follow the cores, 8 -> 12):
  ``minimal`` (:func:`~iterflow.actuate.partitioning.rescale`) against ``hash`` (``bin % P`` before
  and after). Reported: fraction of bins moved, bytes shuffled by the relayout and how many
  of them crossed executors (remote shuffle read), relayout seconds.
"""
from __future__ import annotations

import argparse
import time

import pandas as pd

from common import add_emulation_args, RESULTS, emulated_cluster, med, rmat

from algorithms import PageRank
from iterflow.loop.driver import IterationDriver
from iterflow.inputs.graphio import load_graph
from iterflow.actuate.partitioning import hash_assignment
from iterflow.policies import Rebalancing
from iterflow.policies import StaticPolicy
from iterflow.loop.reconfig import Reconfiguration
from iterflow.policies import PolicyBase


class HashRescale(PolicyBase):
    """Hash partitioning's rescale: ``bin % P`` at barrier 1, ``bin % P'`` with 3 executors at 3."""

    name = "hash-rescale"

    def __init__(self, n_bins: int, p0: int, p1: int) -> None:
        super().__init__()
        self.n_bins, self.p0, self.p1 = n_bins, p0, p1

    def decide(self, history, model=None, *, layout=None, plan=None):
        i = history[-1].superstep
        if i == 1:
            return Reconfiguration("hash layout", bin_assignment=hash_assignment(self.n_bins, self.p0))
        if i == 3:
            return Reconfiguration("scale out, hash layout", executors=3,
                                   bin_assignment=hash_assignment(self.n_bins, self.p1))
        return Reconfiguration.none("keep")


def skew_runs(spark, g, partitions: int, supersteps: int, reps: int) -> pd.DataFrame:
    rows = []
    for rep in range(reps):
        for mode in ("hash", "rebalanced"):
            policy = (StaticPolicy() if mode == "hash"
                      else Rebalancing(StaticPolicy(), threshold=1.1, patience=2, max_moves=64, target=1.03))
            t = IterationDriver(spark, policy, partitions=partitions).run(
                PageRank(g, max_iterations=supersteps, layout="bins")).supersteps
            moves = t["bins_moved_fraction"] if "bins_moved_fraction" in t else pd.Series(0.0, index=t.index)
            moved = t.index[moves.fillna(0) > 0]
            after = t[t.index > (moved.max() if len(moved) else 0)]
            after = after[after["superstep"] > 1]
            rows.append({"experiment": "skew", "mode": mode, "rep": rep, "partitions": partitions,
                         "skew": after["skew"].median(),
                         "skew_cpu": after["skew_cpu"].median() if "skew_cpu" in after else float("nan"),
                         "records_max_over_mean": after["partition_records_max_over_mean"].median(),
                         "predicted_imbalance": after["partition_imbalance"].median(),
                         "imbalance_start": t["partition_imbalance"].iloc[0],
                         "bin_moves_barriers": len(moved), "superstep_seconds": after["wall_seconds"].median(),
                         "supersteps_measured": len(after)})
            print(rows[-1], flush=True)
    return pd.DataFrame(rows)


def movement_runs(spark, g, driver_factory, reps: int) -> pd.DataFrame:
    rows = []
    for rep in range(reps):
        for mode in ("minimal", "hash"):
            driver = driver_factory()
            driver.start_executors = 2
            prog = PageRank(g, max_iterations=5, layout="bins")
            p0 = driver.partitions
            policy = HashRescale(prog.n_bins, p0, p0 * 3 // 2) if mode == "hash" else _ScaleAt3()
            driver.policy = policy
            t = driver.run(prog).supersteps
            r = t[t["superstep"] == 3].iloc[0]
            nxt = t[t["superstep"] == 4].iloc[0]
            rows.append({"experiment": "movement", "mode": mode, "rep": rep,
                         "partitions": f"{int(r['partitions'])}->{int(r['partitions_after'])}",
                         "bins_moved_fraction": r["bins_moved_fraction"],
                         "load_moved_fraction": r.get("load_moved_fraction", float("nan")),
                         "relayout_shuffle_bytes": r["relayout_shuffle_bytes"],
                         "relayout_remote_bytes": r["relayout_remote_bytes"],
                         "relayout_remote_fraction": r["relayout_remote_bytes"] / max(r["relayout_shuffle_bytes"], 1),
                         "relayout_seconds": r["relayout_seconds"],
                         "next_superstep_seconds": nxt["wall_seconds"],
                         "next_superstep_remote_bytes": nxt["shuffle_remote_bytes"]})
            print(rows[-1], flush=True)
    return pd.DataFrame(rows)


class _ScaleAt3(PolicyBase):
    name = "scale-at-3"

    def decide(self, history, model=None, *, layout=None, plan=None):
        if history[-1].superstep == 3:
            return Reconfiguration("scale out to 3 (partitions follow the cores)", executors=3)
        return Reconfiguration.none("keep")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_emulation_args(ap)
    ap.add_argument("--partitions", type=int, default=64, help="partitions of the skew runs")
    ap.add_argument("--supersteps", type=int, default=8)
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--only", choices=["skew", "movement"])
    ap.add_argument("--out", default=str(RESULTS / "partitioning.csv"))
    args = ap.parse_args()
    data = rmat(args.scale, args.edges)
    frames = []
    t0 = time.time()
    with emulated_cluster(args.workers, args.cpu_share, partitions=8) as (cluster, spark):
        g = load_graph(spark, str(data), "edgelist", partitions=8)
        print(f"loaded {g.edges.count()} edges in {time.time() - t0:.0f}s", flush=True)
        if args.only in (None, "movement"):
            frames.append(movement_runs(spark, g, lambda: IterationDriver(spark, partitions=8), args.reps))
        if args.only in (None, "skew"):
            frames.append(skew_runs(spark, g, args.partitions, args.supersteps, args.reps))
    out = pd.concat(frames, ignore_index=True)
    RESULTS.mkdir(parents=True, exist_ok=True)
    out.to_csv(args.out, index=False)
    print(f"\n== partitioning ({args.workers} workers at cpu share {args.cpu_share}; "
          f"R-MAT scale {args.scale}, {args.edges} edges drawn); median [min-max] over {args.reps} reps")
    for (exp, mode), grp in out.groupby(["experiment", "mode"], sort=False):
        if exp == "skew":
            print(f"skew     {mode:>10}: task time max/mean {med(grp['skew'])}, task CPU time max/mean "
                  f"{med(grp['skew_cpu'])}, records max/mean "
                  f"{med(grp['records_max_over_mean'])}, bin-load imbalance {med(grp['predicted_imbalance'])} "
                  f"(start {med(grp['imbalance_start'])})")
        else:
            print(f"movement {mode:>10}: bins moved {med(grp['bins_moved_fraction'])}, edge load moved "
                  f"{med(grp['load_moved_fraction'])}, relayout shuffle "
                  f"{med(grp['relayout_shuffle_bytes'] / 1e6)} MB of which remote {med(grp['relayout_remote_bytes'] / 1e6)} MB, "
                  f"relayout {med(grp['relayout_seconds'])} s")
    print(f"table: {args.out}; {time.time() - t0:.0f}s in total")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
