"""What a release (scale-in) costs, killed or decommissioned (issue 13, item 4).

    .venv/bin/python experiments/release_cost.py [--reps 3]

PageRank on the Pareto experiment's graph (R-MAT scale 18, 1M edges) on the emulated cluster,
starting on 4 executors under a scripted schedule -- 4 -> 2 at barrier 2, 2 -> 1 at barrier 6,
10 supersteps -- run two ways in one application, alternating order by repetition:

* ``kill``: the removed executors are killed; their cached blocks (the graph) are lost and the
  next superstep recomputes them from the input file;
* ``decommission`` (iterflow's default since stop 28): they are decommissioned; their cached
  blocks move to the executors that stay, then they exit.

A release's cost is the first superstep at the new size over the median of the next ones (its
barrier does not wait for either). Per run: job seconds and executor-seconds. Results:
``experiments/results/release_cost*``.
"""
from __future__ import annotations

import re
import time
from typing import Any

import pandas as pd

from harness import RESULTS, cluster, parse_args, print_summary, stat_row, warm_up

from algorithms import PageRank
from common import rmat
from iterflow.inputs.graphio import load_graph
from iterflow.loop.driver import IterationDriver
from iterflow.loop.reconfig import Reconfiguration
from iterflow.policies import PolicyBase, StaticPolicy

NAME = "release_cost"
SCHEDULE = {2: 2, 6: 1}  # barrier -> executors
SUPERSTEPS = 10
MODES = ("kill", "decommission")


class Schedule(PolicyBase):
    """Release to ``SCHEDULE[i]`` executors at barrier ``i``; keep otherwise."""

    name = "schedule"

    def decide(self, history, model=None, *, layout=None, plan=None):  # noqa: ANN001 - Policy protocol
        n = SCHEDULE.get(history[-1].superstep)
        return Reconfiguration(reason=f"scripted: {n} executors", executors=n) if n else Reconfiguration.none("keep")


def excess(wall: pd.Series) -> dict[str, float]:
    """Per release: its first superstep at the new size over the median of the later ones at
    that size (``wall`` indexed by superstep)."""
    bars, out = sorted(SCHEDULE) + [SUPERSTEPS], {}
    for b, nxt in zip(bars, bars[1:]):
        out[f"excess_{SCHEDULE[b]}"] = float(wall.loc[b + 1] - wall.loc[b + 2:nxt].median())
    return out


def one_run(spark: Any, g: Any, args: Any, mode: str, rep: int) -> dict[str, Any]:
    # two untimed supersteps at 4 first: the previous run's releases left 1 executor warm
    warm = IterationDriver(spark, StaticPolicy(), partitions=args.partitions, collect_stats=False,
                           start_executors=args.workers)
    p = PageRank(g, max_iterations=2)
    warm.run(p)
    p.release()
    driver = IterationDriver(spark, Schedule(), partitions=args.partitions, start_executors=args.workers)
    driver.actuator.decommission = mode == "decommission"
    t0 = time.perf_counter()
    res = driver.run(PageRank(g, max_iterations=SUPERSTEPS))
    took = time.perf_counter() - t0
    t = res.supersteps.set_index("superstep")
    wall = t["wall_seconds"]
    row = {"mode": mode, "rep": rep, "job_seconds": took,
           "executor_seconds": float(((wall + t["barrier_seconds"].fillna(0)) * t["executors"]).sum()),
           "executors": "-".join(str(int(e)) for e in t["executors"]),
           "walls": " ".join(f"{w:.2f}" for w in wall)}
    row.update(excess(wall))
    print(f"  {mode} rep {rep}: {took:.1f}s, {row['executor_seconds']:.0f} executor-s; supersteps {row['walls']} "
          f"on {row['executors']}", flush=True)
    return row


def main() -> int:
    args = parse_args(__doc__, NAME, lambda ap: ap.add_argument(
        "--from-csv", action="store_true", help="only analyse results/release_cost.csv again"), quick_reps=3)
    if args.from_csv:  # the supersteps' walls are in the table: the figures again, no cluster
        df = pd.read_csv(RESULTS / f"{NAME}.csv")
        for i, walls in enumerate(df["walls"]):
            wall = pd.Series([float(w) for w in walls.split()], index=range(1, SUPERSTEPS + 1))
            for k, v in excess(wall).items():
                df.loc[i, k] = v
        head = (RESULTS / f"{NAME}.txt").read_text().splitlines()[0] if (RESULTS / f"{NAME}.txt").exists() else ""
        found = re.search(r"cpu share [\d.]+ \((.*)\); R-MAT", head)  # the measuring run's cluster
        report(df, args, found.group(1) if found else "cluster as recorded by the measuring run", len(df) // len(MODES))
        return 0
    rows = []
    with cluster(args) as (_, spark, note):
        g = load_graph(spark, str(rmat(18, 1_000_000)), "edgelist", partitions=args.partitions)
        for e in (args.workers, 2, 1):
            warm_up(spark, PageRank(g, max_iterations=3), args, executors=e)
        for rep in range(args.reps):
            for mode in (MODES if rep % 2 == 0 else MODES[::-1]):
                rows.append(one_run(spark, g, args, mode, rep))
    report(pd.DataFrame(rows), args, note, args.reps)
    return 0


def report(df: pd.DataFrame, args: Any, note: str, reps: int) -> None:
    summary = []
    for mode in MODES:
        d = df[df["mode"] == mode]
        for to in sorted(set(SCHEDULE.values()), reverse=True):
            summary.append(stat_row(NAME, "pagerank", mode, f"release to {to}: first superstep over steady s",
                                    d[f"excess_{to}"]))
        summary.append(stat_row(NAME, "pagerank", mode, "job s", d["job_seconds"]))
        summary.append(stat_row(NAME, "pagerank", mode, "executor-s", d["executor_seconds"]))
    paired = df.pivot(index="rep", columns="mode")
    summary.append(stat_row(NAME, "pagerank", "decommission/kill", "ratio job s",
                            paired["job_seconds"]["decommission"] / paired["job_seconds"]["kill"], "paired by rep"))
    summary.append(stat_row(NAME, "pagerank", "decommission/kill", "ratio executor-s",
                            paired["executor_seconds"]["decommission"] / paired["executor_seconds"]["kill"],
                            "paired by rep"))
    title = (f"{NAME}: {args.workers} workers at cpu share {args.cpu_share} ({note}); R-MAT 18/1000000; "
             f"schedule {SCHEDULE}, {SUPERSTEPS} supersteps; {reps} reps, alternating order; median [min-max]")
    print_summary(summary, title)
    RESULTS.mkdir(parents=True, exist_ok=True)
    df.to_csv(RESULTS / f"{NAME}.csv", index=False)
    with open(RESULTS / f"{NAME}.txt", "w") as fh:
        fh.write(title + "\n" + pd.DataFrame(summary).to_string(index=False) + "\n\n" + df.to_string(index=False) + "\n")


if __name__ == "__main__":
    raise SystemExit(main())
