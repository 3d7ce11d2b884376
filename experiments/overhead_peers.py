"""iterflow's overhead against peers doing the same supersteps without it.

    .venv/bin/python experiments/overhead_peers.py [--quick] [--reps 3] [--scale 17 --edges 2000000]
        [--executors 1,4] [--jobs pagerank,kmeans,wcc]      (make bench: the issue-12 comparison)

All on the same emulated cluster, the same partitions, inputs cached alike; every
configuration at each ``--executors`` count (PageRank; the others on all workers), the systems
interleaved within each repetition, after ``--warm-ups`` untimed runs of each (JIT excluded):

* PageRank: iterflow ``static`` against a hand-written PySpark loop (:func:`peers.hand_pagerank`:
  a DataFrame loop with a local checkpoint per iteration); results compared (max rel. error);
* k-means: iterflow ``static`` (fixed initial centers, N supersteps) against
  ``pyspark.ml.clustering.KMeans`` (same k and N, tol 0; its own random init: the DataFrame API
  takes no initial centers) and the RDD-based ``pyspark.mllib`` KMeans from the *same* centers
  (``initialModel``); centers compared;
* WCC: iterflow ``static`` against GraphX ``ConnectedComponents`` through py4j (GraphX per
  round = its run time / rounds, iterflow's supersteps + the first round it does in init);
* GraphFrames: not measured -- its JVM jar is not available here (see the note printed).

Times: iterflow per superstep = median span of supersteps 2.. (barrier and statistics
included; the driver's ``wall_seconds`` without them is reported too); per job = init +
all supersteps + securing the result (the whole ``IterationDriver.run``). Peers: per iteration = median of iterations 2.. where the loop is ours, else
run time / iterations; per job = setup + run. Ratios are iterflow / peer, paired by rep.
"""
from __future__ import annotations

import time
from typing import Any

import numpy as np
import pandas as pd

from harness import (K, RESULTS, Collector, cluster, graph_path, initial_centers, parse_args, points_path, report,
                     stat_row, summarize, warm_up)
from common import rmat
from peers import graphx_cc, hand_inputs, hand_pagerank, hand_step, mllib_kmeans, ml_kmeans

from algorithms import KMeans, PageRank, WeaklyConnectedComponents
from iterflow.cluster import jars
from iterflow.actuate.executors import ExecutorActuator
from iterflow.inputs.graphio import load_graph
from iterflow.inputs.pointsio import load_points
from iterflow.policies import StaticPolicy
from iterflow.app.tracking import RunTracker

NAME = "overhead_peers"


def extra(ap) -> None:
    ap.add_argument("--supersteps", type=int, default=None)
    ap.add_argument("--jobs", default="pagerank,kmeans,wcc")
    ap.add_argument("--scale", type=int, default=None, help="R-MAT scale of the graph (default: --data's)")
    ap.add_argument("--edges", type=int, default=None, help="R-MAT edges drawn (with --scale)")
    ap.add_argument("--executors", default=None,
                    help="comma-separated executor counts PageRank is compared at (default: all workers)")
    ap.add_argument("--warm-ups", type=int, default=2,
                    help="untimed runs of each system before the timed reps (JIT, GC sizing; default 2: "
                         "after one, the first timed rep was still slower for both systems)")


def graphframes_note() -> str:
    if jars.available():
        return "GraphFrames jar present, but no GraphFrames peer is implemented in this experiment"
    return ("GraphFrames: unavailable -- its JVM jar (io.graphframes:graphframes-spark4_2.13) is not on this "
            "machine's Maven mirror, so .cache/jars has none; not measured")


def peer_row(args: Any, job: str, system: str, rep: int, setup: float, iters: list[float], n: int,
             **extra: Any) -> dict:
    """A peer run, logged to MLflow like iterflow's (params, per-iteration seconds as steps, its
    iteration table); ``iters`` per iteration when known, else one total divided by ``n``."""
    run = float(sum(iters))
    per = float(np.median(iters[1:])) if len(iters) > 2 else run / max(n, 1)
    row = {"job": job, "system": system, "rep": rep, "setup_seconds": setup, "run_seconds": run,
           "iterations": n, "per_superstep": per, "total_seconds": setup + run, **extra}
    tracker = RunTracker({"experiment": NAME, "job": job, "policy": system, "rep": rep, "iterations": n,
                          "workers": args.workers, "cpu_share": args.cpu_share, "partitions": args.partitions,
                          "quick": args.quick, **extra}, experiment=args.mlflow_experiment,
                         run_name=f"{NAME}/{job}/{system}/{rep}")
    for i, seconds in enumerate(iters, 1):
        tracker.mlflow.log_metric("iteration_seconds", seconds, step=i)
    tracker.mlflow.log_metrics({k: float(row[k]) for k in ("setup_seconds", "run_seconds", "per_superstep",
                                                            "total_seconds")})
    tracker.finish(pd.DataFrame({"iteration": range(1, len(iters) + 1), "seconds": iters}))
    row["run_id"] = tracker.run_id
    return row


def pagerank_plans(spark: Any, g: Any, partitions: int) -> str:
    """The physical plans of one PageRank superstep, iterflow's and the hand loop's, side by
    side (what runs; read them before guessing where the time goes)."""
    from pyspark.sql import functions as F

    from iterflow.loop.spark_engine import SparkEngine

    out = []
    for layout in ("hash", "bins"):
        prog = PageRank(g, max_iterations=1, layout=layout)
        prog.partitions = partitions
        state, _ = SparkEngine(spark).barrier(prog.init(spark))
        plan = prog.step(state, 1).frames["ranks"]._jdf.queryExecution().executedPlan().toString()
        out.append(f"== iterflow PageRank superstep, layout={layout} ==\n{plan}")
        prog.release()
    links, verts, dangling, n = hand_inputs(g.edges, g.vertices, partitions)
    ranks = verts.select("id", F.lit(1.0 / n).alias("rank")).localCheckpoint(eager=True)
    plan = hand_step(links, verts, dangling, ranks, n)._jdf.queryExecution().executedPlan().toString()
    out.append(f"== hand-written loop, one iteration ==\n{plan}")
    for df in (links, verts, dangling):
        df.unpersist()
    return "\n".join(out)


def iterflow_row(job: str, rep: int, run: Any) -> dict:
    later = run.later
    return {"job": job, "system": "iterflow", "rep": rep, "setup_seconds": run.init_seconds,
            "run_seconds": run.job_seconds, "iterations": len(run.table),
            "per_superstep": float(later["span_seconds"].median()),
            "per_superstep_wall": float(later["wall_seconds"].median()),
            "barrier_median": float(later["barrier_seconds"].median()),
            "barrier_p90": float(later["barrier_seconds"].quantile(0.9)),
            "result_seconds": run.result_seconds,
            "total_seconds": run.init_seconds + run.job_seconds + run.result_seconds, "run_id": run.run_id}


def main() -> int:
    args = parse_args(__doc__, NAME, extra)
    n = args.supersteps or (4 if args.quick else 10)
    t0 = time.time()
    rows: list[dict] = []
    runs = Collector()
    data = rmat(args.scale, args.edges or 16 * 2 ** args.scale) if args.scale else graph_path(args)
    sizes = [int(x) for x in args.executors.split(",")] if args.executors else [args.workers]

    def track(prog: Any, job: str, rep: int, executors: int | None = None) -> Any:
        return runs.run(spark, StaticPolicy(), prog, args=args, start=executors or args.workers, verbose=False,
                        keep_output=True,  # read for the correctness check, then released
                        labels={"experiment": NAME, "job": job, "policy": "static", "rep": rep})

    with cluster(args) as (_, spark, note):
        act = ExecutorActuator(spark.sparkContext)
        g = load_graph(spark, str(data), "edgelist", partitions=args.partitions)
        if "pagerank" in args.jobs:
            plans = pagerank_plans(spark, g, args.partitions)
            (RESULTS / f"{NAME}_plans.txt").write_text(plans + "\n")
            print(f"  physical plans of one superstep: {RESULTS / f'{NAME}_plans.txt'}", flush=True)
            # largest first: the executors a smaller size keeps are warm already, while a
            # scale-out after a smaller size would start cold ones
            for e in sorted(sizes, reverse=True):
                job = "pagerank" if len(sizes) == 1 else f"pagerank@{e}"
                # untimed warm-up of both at this size (JIT, GC sizing), then timed reps
                for _ in range(args.warm_ups):
                    act.set_executors(e)
                    warm_up(spark, PageRank(g, max_iterations=4), args, executors=e)
                    hand_pagerank(g.edges, g.vertices, 4, args.partitions)
                for rep in range(args.reps):
                    # alternate who goes first, so neither always inherits the other's leftovers
                    for system in (("iterflow", "hand") if rep % 2 == 0 else ("hand", "iterflow")):
                        if system == "iterflow":
                            run = track(PageRank(g, max_iterations=n), job, rep, e)
                            ours = run.output.toPandas().set_index("id")["value"]
                            run.release()
                            rows.append(iterflow_row(job, rep, run))
                            continue
                        act.set_executors(e)
                        setup, iters, ranks = hand_pagerank(g.edges, g.vertices, n, args.partitions)
                        theirs = ranks.toPandas().set_index("id")["rank"]
                        rows.append(peer_row(args, job, "hand-loop", rep, setup, iters, n))
                        print(f"  hand loop on {e}: setup {setup:.1f}s, iterations {[round(x, 2) for x in iters]}",
                              flush=True)
                    err = float(((theirs.loc[ours.index] - ours).abs() / ours).max())
                    rows[-1]["check"] = rows[-2]["check"] = f"max rel err {err:.2g}"
                act.set_executors(args.workers)
        if "kmeans" in args.jobs:
            pts = load_points(spark, str(points_path(args)), partitions=args.partitions)
            centers = initial_centers(pts, K)
            for _ in range(args.warm_ups):
                warm_up(spark, KMeans(pts, K, init_centers=centers, max_iterations=3, tol=None), args)
                mllib_kmeans(pts, centers, 3)
                ml_kmeans(pts, K, 3)
            for rep in range(args.reps):
                got: dict[str, Any] = {}

                def ours_kmeans() -> None:
                    run = track(KMeans(pts, K, init_centers=centers, max_iterations=n, tol=0.0), "kmeans", rep)  # stops where MLlib (epsilon 0) does
                    got["centers"] = run.output.toPandas().sort_values("cluster").drop(columns="cluster").to_numpy()
                    run.release()
                    still = run.table.index[run.table["delta"] == 0]
                    got["iters"] = int(run.table.loc[still[0], "superstep"]) if len(still) else n
                    rows.append(iterflow_row("kmeans", rep, run))

                def peers_kmeans() -> None:
                    act.set_executors(args.workers)
                    fit, _, info = ml_kmeans(pts, K, n)
                    rows.append(peer_row(args, "kmeans", "spark-ml", rep, 0.0, [fit], info["iterations"],
                                         check="own random init"))
                    fit, _, info = mllib_kmeans(pts, centers, n)
                    got["mllib"] = (fit, info)

                for part in ((ours_kmeans, peers_kmeans) if rep % 2 == 0 else (peers_kmeans, ours_kmeans)):
                    part()
                fit, info = got["mllib"]
                diff = float(np.abs(info["centers"] - got["centers"]).max())
                rows.append(peer_row(args, "kmeans", "spark-mllib-same-centers", rep, 0.0, [fit], got["iters"],
                                     check=f"max center diff {diff:.2g}"))
                print(f"  mllib from the same centers {fit:.1f}s, {rows[-1]['check']}", flush=True)
        if "wcc" in args.jobs:
            for _ in range(args.warm_ups):
                warm_up(spark, WeaklyConnectedComponents(g, max_iterations=3), args)
                graphx_cc(spark, str(data), args.partitions)
            for rep in range(args.reps):
                got = {}

                def ours_wcc() -> None:
                    run = track(WeaklyConnectedComponents(g), "wcc", rep)
                    got["components"] = run.output.select("value").distinct().count()
                    run.release()
                    # rounds of label propagation: iterflow computes the first (every vertex hears
                    # its neighbours' ids) while preparing its input, GraphX in its Pregel loop
                    got["supersteps"] = len(run.table) + 1
                    rows.append(iterflow_row("wcc", rep, run))

                def graphx_wcc() -> None:
                    act.set_executors(args.workers)
                    got["graphx"] = graphx_cc(spark, str(data), args.partitions)

                for part in ((ours_wcc, graphx_wcc) if rep % 2 == 0 else (graphx_wcc, ours_wcc)):
                    part()
                setup, iters, info = got["graphx"]
                rows.append(peer_row(args, "wcc", "graphx", rep, setup, iters, got["supersteps"],
                                     check=f"{info['components']} components vs iterflow {got['components']}; "
                                           f"{info['vertices']} vs {g.vertices.count()} vertices"))
                print(f"  graphx: load {setup:.1f}s, run {iters[0]:.1f}s; {rows[-1]['check']}", flush=True)
    df = pd.DataFrame(rows)
    df["cluster_note"] = note
    summary = summarize(df, NAME, ["job", "system"], {"per_superstep": "s per superstep (2..)",
                                                      "total_seconds": "s per job (setup+run)"})
    for job in df["job"].unique():
        ours = df[(df["job"] == job) & (df["system"] == "iterflow")].set_index("rep")
        summary.append(stat_row(NAME, job, "iterflow", "barrier s per superstep", ours["barrier_median"],
                                "statistics + model + policy"))
        summary.append(stat_row(NAME, job, "iterflow", "barrier s p90", ours["barrier_p90"], "per run, supersteps 2.."))
        for peer in [s for s in df[df["job"] == job]["system"].unique() if s != "iterflow"]:
            p = df[(df["job"] == job) & (df["system"] == peer)].set_index("rep")
            summary += [stat_row(NAME, job, f"iterflow/{peer}", "ratio per superstep",
                                 ours["per_superstep"] / p["per_superstep"], str(p["check"].iloc[0])),
                        stat_row(NAME, job, f"iterflow/{peer}", "ratio per job",
                                 ours["total_seconds"] / p["total_seconds"])]
    gf = graphframes_note()
    summary.append({"experiment": NAME, "job": "wcc", "config": "graphframes", "metric": "not measured",
                    "median": float("nan"), "min": float("nan"), "max": float("nan"), "n": 0, "note": gf})
    report(NAME, df, summary, runs.tables, f"{NAME}: {args.workers} workers at cpu share {args.cpu_share} ({note}); "
                                           f"{n} supersteps (WCC: to convergence); {args.reps} reps; median [min-max]")
    print(f"{gf}\n{time.time() - t0:.0f}s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
