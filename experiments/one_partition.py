"""One partition reported hash-partitioned (:mod:`iterflow.loop.hashed`) against Spark's own
``SinglePartition``, side by side.

    .venv/bin/python experiments/one_partition.py [--reps 2] [--tag T]

On the emulated cluster and the Pareto experiment's inputs, interleaved by rep (order rotated),
after one untimed run on every executor:

* PageRank (R-MAT 18, 1M edges, 14 supersteps), ``static`` at 1 executor (one partition from
  the start: every input and the ranks keyed into one partition);
* WCC (R-MAT 19, 600k edges + a 30-vertex tail, to convergence) started at 4 executors and
  released to 1 at barrier 3 (the relayout keys the state into one partition), and ``static``
  at 1 as the reference its tail should match.

Each under the ways :data:`iterflow.loop.hashed.ONE_PARTITION` makes one partition: ``coalesce``
(the default), ``shuffle`` and ``spark`` (Spark's ``SinglePartition``; WCC static-1 starts at one
partition by its own aggregation, the same plan under all: the noise). Printed per run: the job,
the median superstep after 8 with its stages, the relayout's seconds; then per job each way's
job against ``spark``'s (paired by rep, median [min-max]).
"""
from __future__ import annotations

import time

import pandas as pd

from common import rmat
from harness import Collector, cluster, parse_args, ratio_range, warm_up, write_table

from algorithms import PageRank, WeaklyConnectedComponents
from iterflow.inputs.graphio import load_graph
from iterflow.loop import hashed
from iterflow.loop.reconfig import Reconfiguration
from iterflow.policies import PolicyBase, StaticPolicy

NAME = "one_partition"
WAYS = ("coalesce", "shuffle", "spark")
DEFAULT = hashed.ONE_PARTITION
HEAD = 8


class ReleaseAt(PolicyBase):
    """Release to ``to`` executors at barrier ``at``, then keep: the scale-in of a policy, scripted."""

    name = "release"

    def __init__(self, at: int = 3, to: int = 1) -> None:
        super().__init__()
        self.at, self.to = at, to

    def decide(self, history, model=None, *, layout=None, plan=None):
        if history[-1].superstep == self.at:
            return Reconfiguration(reason=f"scripted: {self.to} executor(s)", executors=self.to)
        return Reconfiguration.none("scripted: keep")


def main() -> int:
    args = parse_args(__doc__, NAME, lambda ap: ap.add_argument("--tag", default=""), quick_reps=2, partitions=None)
    t0, runs, rows = time.time(), Collector(), []
    with cluster(args) as (_, spark, note):
        pr_graph = load_graph(spark, str(rmat(18, 1_000_000)), "edgelist")
        wcc_graph = load_graph(spark, str(rmat(19, 600_000, tail=30)), "edgelist")
        jobs = {"pagerank static-1": (lambda: PageRank(pr_graph, max_iterations=14), StaticPolicy, 1, WAYS),
                "wcc 4->1 at 3": (lambda: WeaklyConnectedComponents(wcc_graph), ReleaseAt, 4, WAYS),
                "wcc static-1": (lambda: WeaklyConnectedComponents(wcc_graph), StaticPolicy, 1, ("coalesce", "spark"))}
        warm_up(spark, PageRank(pr_graph, max_iterations=3), args)
        warm_up(spark, WeaklyConnectedComponents(wcc_graph, max_iterations=6), args)
        configs = [(job, way) for job, (*_, ways) in jobs.items() for way in ways]
        for rep in range(args.reps):
            for job, way in configs[rep % len(configs):] + configs[:rep % len(configs)]:
                make, policy, start, _ = jobs[job]
                hashed.ONE_PARTITION = way
                try:
                    run = runs.run(spark, policy(), make(), args=args, start=start, verbose=False,
                                   labels={"experiment": NAME, "job": job, "policy": way, "rep": rep})
                finally:
                    hashed.ONE_PARTITION = DEFAULT
                t = run.table
                later = t[t.superstep > HEAD]
                row = {"job": job, "way": way, "rep": rep, "job_seconds": run.job_seconds,
                       "later_median": float(later.span_seconds.median()),
                       "later_stages": float(later.stages.median()), "later_tasks": float(later.tasks.median()),
                       "relayout_seconds": float(t["relayout_seconds"].fillna(0).sum()) if "relayout_seconds" in t else 0.0}
                rows.append(row)
                print(f"  {job}, one partition by {way}, rep {rep}: job {row['job_seconds']:.1f}s, superstep > "
                      f"{HEAD} median {row['later_median']:.3f}s ({row['later_stages']:.0f} stages, "
                      f"{row['later_tasks']:.0f} tasks), relayout {row['relayout_seconds']:.2f}s", flush=True)
    df = pd.DataFrame(rows)
    out = [f"== {NAME}: {note}; {args.reps} reps"]
    for job, (*_, ways) in jobs.items():
        ref = df[(df.job == job) & (df.way == "spark")].set_index("rep")
        for way in ways:
            mine = df[(df.job == job) & (df.way == way)].set_index("rep")
            out.append(f"  {job}, by {way}: job {mine.job_seconds.median():.1f}s, "
                       f"{ratio_range(mine.job_seconds, ref.job_seconds)} of spark's; superstep > {HEAD} median "
                       f"{mine.later_median.median():.3f}s ({mine.later_stages.median():.0f} stages); relayout "
                       f"{mine.relayout_seconds.median():.2f}s")
    out.append(f"{time.time() - t0:.0f}s")
    write_table(NAME, args.tag, df, out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
