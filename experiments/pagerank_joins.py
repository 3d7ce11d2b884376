"""PageRank's joins: shuffled-hash joins of co-partitioned sides against Spark's own choice.

    .venv/bin/python experiments/pagerank_joins.py [--reps 4] [--sizes 4,1] [--tag T]

Why: left to itself, Spark broadcast the ranks into the join with the edges every superstep (the
ranks of R-MAT 18 fall under its 10 MB threshold): the driver collects them, hashes them and
ships the table to every executor. On this box the driver shares the 2 cores with the
executors; Java Flight Recorder put 16 % of the driver JVM's samples in the broadcast exchange
(``experiments/session_drift.py --jfr``). ``joins="hash"`` (the default since stop 42) hints
both joins of a superstep as shuffled-hash joins, as WCC's are. Runs alternate between the two
(same session, same cached graph, interleaved so the driver's warm-up falls on both alike),
static at each size; per run the median superstep and the driver JVM's CPU seconds. Ranks are
compared after each pair (max absolute difference). Writes results/pagerank_joins[_TAG].csv/.txt.
"""
from __future__ import annotations

import time
from typing import Any

import numpy as np
import pandas as pd

from common import rmat
from harness import Collector, cluster, parse_args, warm_up, write_table
from session_drift import cpu_seconds

from algorithms import PageRank
from iterflow.inputs.graphio import load_graph
from iterflow.policies import StaticPolicy

NAME = "pagerank_joins"


def extra(ap: Any) -> None:
    ap.add_argument("--sizes", default="4,1")
    ap.add_argument("--supersteps", type=int, default=14)
    ap.add_argument("--tag", default="")


def main() -> int:
    args = parse_args(__doc__, NAME, extra, quick_reps=4)
    sizes = [int(s) for s in args.sizes.split(",")]
    rows, runs = [], Collector()
    with cluster(args) as (_, spark, note):
        jvm = int(spark.sparkContext._jvm.ProcessHandle.current().pid())
        g = load_graph(spark, str(rmat(18, 1_000_000)), "edgelist", partitions=args.partitions)
        for joins in ("auto", "hash"):
            warm_up(spark, PageRank(g, max_iterations=4, joins=joins), args)
        for rep in range(args.reps):
            for e in sizes:
                ranks = {}
                for joins in (("auto", "hash") if rep % 2 == 0 else ("hash", "auto")):
                    j0, t0 = cpu_seconds(jvm), time.perf_counter()
                    run = runs.run(spark, StaticPolicy(), PageRank(g, max_iterations=args.supersteps, joins=joins),
                                   args=args, start=e, verbose=False, keep_output=True,
                                   labels={"experiment": NAME, "job": "pagerank", "policy": f"static-{e}",
                                           "joins": joins, "rep": rep})
                    ranks[joins] = run.output.toPandas().set_index("id")["value"] if run.output is not None else None
                    run.release()
                    steps = run.table.sort_values("superstep")["wall_seconds"].to_numpy()[1:]
                    rows.append({"rep": rep, "executors": e, "joins": joins, "job_s": run.job_seconds,
                                 "median_superstep_s": float(np.median(steps)),
                                 "driver_jvm_cpu_s": cpu_seconds(jvm) - j0, "wall_s": time.perf_counter() - t0})
                    r = rows[-1]
                    print(f"  rep {rep} at {e}: {joins}: median superstep {r['median_superstep_s']:.3f}s, job "
                          f"{r['job_s']:.1f}s, driver JVM CPU {r['driver_jvm_cpu_s']:.1f}s", flush=True)
                a, b = ranks.get("auto"), ranks.get("hash")
                diff = float((a - b.reindex(a.index)).abs().max()) if a is not None and b is not None else float("nan")
                rows[-1]["max_rank_diff"] = rows[-2]["max_rank_diff"] = diff
    df = pd.DataFrame(rows)
    text = [f"PageRank (R-MAT 18, 1M edges, {args.supersteps} supersteps), static, joins hinted as shuffled-hash "
            f"('hash') against Spark's choice ('auto'), interleaved, {args.reps} reps per size ({note})"]
    for e, g in df.groupby("executors", sort=False):
        h, a = g[g.joins == "hash"].set_index("rep"), g[g.joins == "auto"].set_index("rep")
        r = lambda c: (h[c] / a[c]).to_numpy()  # noqa: E731
        text.append(f"  {e} executor(s): hash / auto, paired by rep (median [min-max]): median superstep "
                    f"{np.median(r('median_superstep_s')):.3f}x [{r('median_superstep_s').min():.3f}-"
                    f"{r('median_superstep_s').max():.3f}], job {np.median(r('job_s')):.3f}x "
                    f"[{r('job_s').min():.3f}-{r('job_s').max():.3f}], driver JVM CPU "
                    f"{np.median(r('driver_jvm_cpu_s')):.2f}x; ranks' largest difference "
                    f"{g['max_rank_diff'].max():.2e}")
    text.append(df.round(4).to_string(index=False))
    write_table(NAME, args.tag, df, text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
