"""How many tasks a core: a job's static runs at several partition counts, side by side.

    .venv/bin/python experiments/tasks_per_core.py --job wcc --configs 1:8,1:1,2:8,2:2,4:8,4:4 [--reps 2] [--tag T]

On the emulated cluster and the Pareto experiment's inputs (WCC: R-MAT 19, 600k edges and a
30-vertex tail, to convergence; PageRank: R-MAT 18, 1M edges; k-means: 500k points, k = 5;
14 supersteps each), ``static`` at each ``executors:partitions`` of ``--configs``, one run of
each per rep in an order rotated by rep, after one untimed run on every executor. Printed per
run: the job (supersteps and barriers), its first 8 supersteps and the median of the later
ones; then per executor count each partition count's job against the first one listed at that
count (median ratio paired by rep [min-max]). Why: the loop's partition count follows the cores
(:data:`iterflow.loop.reconfigure.TASKS_PER_CORE`), and a superstep's tasks are short: what a
task costs besides its work decides how many a core should run.
"""
from __future__ import annotations

import copy
import time

import pandas as pd

from common import points, rmat
from harness import Collector, cluster, initial_centers, parse_args, ratio_range, warm_up, write_table

from algorithms import KMeans, PageRank, WeaklyConnectedComponents
from iterflow.inputs.graphio import load_graph
from iterflow.inputs.pointsio import load_points
from iterflow.policies import StaticPolicy

NAME = "tasks_per_core"
HEAD = 8  # supersteps 1-8: WCC's heavy ones (its tail after), the warm-up of the others


def program(spark, job: str, wcc_graph: tuple[int, int] = (19, 600_000)):
    """The job's program factory over its input, loaded once (WCC: R-MAT ``wcc_graph`` =
    scale, edges, and a 30-vertex tail)."""
    if job == "wcc":
        g = load_graph(spark, str(rmat(*wcc_graph, tail=30)), "edgelist")
        return lambda: WeaklyConnectedComponents(g)
    if job == "pagerank":
        g = load_graph(spark, str(rmat(18, 1_000_000)), "edgelist")
        return lambda: PageRank(g, max_iterations=14)
    if job == "kmeans":
        pts = load_points(spark, str(points(500_000, 5)))
        c = initial_centers(pts, 5)
        return lambda: KMeans(pts, 5, init_centers=c, max_iterations=14, tol=None)
    raise SystemExit(f"--job {job}: one of wcc, pagerank, kmeans")


def main() -> int:
    args = parse_args(__doc__, NAME, lambda ap: (
        ap.add_argument("--job", default="wcc"),
        ap.add_argument("--configs", default="1:8,1:1,2:8,2:2,4:8,4:4",
                        help="executors:partitions, comma-separated; per executor count the first is the reference"),
        ap.add_argument("--tag", default="")), quick_reps=2)
    try:
        cfgs = [tuple(int(v) for v in c.split(":")) for c in args.configs.split(",")]
    except ValueError:
        raise SystemExit(f"--configs {args.configs!r}: expected executors:partitions[,...], e.g. 1:8,1:1")
    if any(e < 1 or e > args.workers or p < 1 for e, p in cfgs):
        raise SystemExit(f"--configs {args.configs}: executors in 1..{args.workers} (--workers), partitions >= 1")
    t0, runs, rows = time.time(), Collector(), []
    with cluster(args) as (_, spark, note):
        make = program(spark, args.job)
        warm_up(spark, make(), args)
        for rep in range(args.reps):
            for e, p in cfgs[rep % len(cfgs):] + cfgs[:rep % len(cfgs)]:
                at = copy.copy(args)
                at.partitions = p
                run = runs.run(spark, StaticPolicy(), make(), args=at, start=e, verbose=False,
                               labels={"experiment": NAME, "job": args.job, "policy": f"{e}x{p}", "rep": rep})
                t = run.table
                late = t[t.superstep > HEAD]
                later = late["span_seconds"]
                row = {"executors": e, "partitions": p, "rep": rep, "job_seconds": run.job_seconds,
                       "head_seconds": float(t.loc[t.superstep <= HEAD, "span_seconds"].sum()),
                       "later_median": float(later.median()) if len(later) else float("nan"),
                       # where a later superstep's time goes: its tasks' run and CPU seconds in sum
                       "later_task_seconds": float(late["executor_run_seconds"].median()),
                       "later_cpu_seconds": float(late["executor_cpu_seconds"].median())}
                rows.append(row)
                print(f"  {e} executor(s) x {p} partitions, rep {rep}: job {row['job_seconds']:.1f}s, supersteps "
                      f"1-{HEAD} {row['head_seconds']:.2f}s, later median {row['later_median']:.3f}s (tasks "
                      f"{row['later_task_seconds']:.3f}s, CPU {row['later_cpu_seconds']:.3f}s)", flush=True)
                run.release()
    df = pd.DataFrame(rows)
    out = [f"== {NAME} {args.job}: {note}; {args.reps} reps"]
    for e in dict.fromkeys(c[0] for c in cfgs):
        parts = [p for x, p in cfgs if x == e]
        ref = df[(df.executors == e) & (df.partitions == parts[0])].set_index("rep")
        for p in parts:
            mine = df[(df.executors == e) & (df.partitions == p)].set_index("rep")
            out.append(f"  at {e} executor(s), {p} partitions: job {mine.job_seconds.median():.1f}s, "
                       f"{ratio_range(mine.job_seconds, ref.job_seconds)} of {parts[0]} partitions; "
                       f"supersteps 1-{HEAD} {mine.head_seconds.median():.2f}s, later median {mine.later_median.median():.3f}s "
                       f"(tasks {mine.later_task_seconds.median():.3f}s, CPU {mine.later_cpu_seconds.median():.3f}s in sum)")
    out.append(f"{time.time() - t0:.0f}s")
    write_table(NAME, args.job + (f"_{args.tag}" if args.tag else ""), df, out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
