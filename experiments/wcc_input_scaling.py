"""How WCC's supersteps grow with the input at a fixed size: the weak-scaling assumption, measured.

    .venv/bin/python experiments/wcc_input_scaling.py [--graphs 18:600000,19:1200000,20:2400000] [--reps 2]

The simulator weak-scales a recorded run to a larger input (``scale_input``): each stage's
work grows with the input, its tasks' fixed cost does not. Which part of a WCC tail superstep
is which cannot be read from one input -- a cost each task pays and a scan of every label read
the same there (:func:`iterflow.model.tasks.task_fixed_cost`) -- yet it decides what a release
costs at 480 cores. Measured here: ``static`` at 1 executor (one partition) on R-MAT graphs of
the same shape at several scales (edges / vertices constant, the same 30-vertex tail), one run
of each per rep in a rotated order, after one untimed run. Per graph: the heavy supersteps'
and the tail's (work <= 200 changed labels) task seconds a superstep, and per tail stage (in
stage order) the median task seconds; then each against the smallest graph. A tail that does
not grow with the input is fixed cost; one that grows as the input does scales with it.
"""
from __future__ import annotations

import json
import time

import numpy as np
import pandas as pd

from common import rmat
from harness import RESULTS, Collector, cluster, parse_args, warm_up, write_table

from algorithms import WeaklyConnectedComponents
from iterflow.inputs.graphio import load_graph
from iterflow.observe.stats import task_durations
from iterflow.policies import StaticPolicy

NAME = "wcc_input_scaling"
TAIL_WORK = 200  # changed labels: the path's tail, a few labels a superstep


def stage_medians(table: pd.DataFrame) -> list[float]:
    """Per stage position (stage order within a superstep), the median task seconds over the
    supersteps of ``table`` that ran that many stages (the commonest count)."""
    rows = [[task_durations(s) for s in json.loads(st) if s[3]] for st in table["stage_tasks"] if isinstance(st, str)]
    n = pd.Series([len(r) for r in rows]).mode()
    if not len(n):
        return []
    kept = [r for r in rows if len(r) == int(n.iloc[0])]
    return [float(np.median([np.median(r[k]) for r in kept])) / 1e3 for k in range(int(n.iloc[0]))]


def main() -> int:
    args = parse_args(__doc__, NAME, lambda ap: (
        ap.add_argument("--graphs", default="18:600000,19:1200000,20:2400000",
                        help="scale:edges, comma-separated (the first is the reference)"),
        ap.add_argument("--tag", default="")), quick_reps=1, partitions=None)
    try:
        graphs = [tuple(int(v) for v in g.split(":")) for g in args.graphs.split(",")]
    except ValueError:
        raise SystemExit(f"--graphs {args.graphs!r}: expected scale:edges[,...], e.g. 18:600000,19:1200000")
    t0, runs, rows, tables = time.time(), Collector(), [], []
    with cluster(args) as (_, spark, note):
        loaded = {g: load_graph(spark, str(rmat(*g, tail=30)), "edgelist") for g in graphs}
        warm_up(spark, WeaklyConnectedComponents(loaded[graphs[0]]), args, executors=1)
        for rep in range(args.reps):
            for g in graphs[rep % len(graphs):] + graphs[:rep % len(graphs)]:
                run = runs.run(spark, StaticPolicy(), WeaklyConnectedComponents(loaded[g]), args=args, start=1,
                               verbose=False, labels={"experiment": NAME, "job": "wcc", "policy": f"{g[0]}:{g[1]}",
                                                      "rep": rep})
                t = run.table
                tail, heavy = t[t.work <= TAIL_WORK], t[t.work > TAIL_WORK]
                row = {"graph": f"{g[0]}:{g[1]}", "edges": g[1], "rep": rep, "job_seconds": run.job_seconds,
                       "supersteps": len(t), "tail_supersteps": len(tail),
                       "heavy_task_seconds": float(heavy["executor_run_seconds"].sum()),
                       "tail_wall": float(tail["wall_seconds"].median()),
                       "tail_task_seconds": float(tail["executor_run_seconds"].median()),
                       "tail_stages": stage_medians(tail)}
                rows.append(row)
                tables.append(t.assign(graph=row["graph"], rep=rep))
                print(f"  {row['graph']} rep {rep}: job {row['job_seconds']:.1f}s, {row['supersteps']} supersteps "
                      f"({row['tail_supersteps']} in the tail); heavy tasks {row['heavy_task_seconds']:.2f}s, tail "
                      f"superstep {row['tail_wall']:.3f}s wall, {row['tail_task_seconds']:.3f}s of tasks", flush=True)
    df = pd.DataFrame(rows)
    out = [f"== {NAME}: {note}; 1 executor, one partition; {args.reps} reps, graphs in a rotated order"]
    ref = df[df.graph == f"{graphs[0][0]}:{graphs[0][1]}"]
    r_heavy, r_tail = ref.heavy_task_seconds.median(), ref.tail_task_seconds.median()
    r_stages = np.median(np.array([s for s in ref.tail_stages if len(s) == len(ref.tail_stages.iloc[0])]), axis=0)
    for g in graphs:
        mine = df[df.graph == f"{g[0]}:{g[1]}"]
        k = g[1] / graphs[0][1]
        stages = [s for s in mine.tail_stages if len(s) == len(r_stages)]
        per = np.median(np.array(stages), axis=0) if stages else np.array([])
        growth = ", ".join(f"{a * 1e3:.0f} ms ({a / b:.2f}x)" for a, b in zip(per, r_stages))
        out.append(f"  {g[0]}:{g[1]} (input {k:g}x): heavy supersteps' tasks {mine.heavy_task_seconds.median():.2f}s "
                   f"({mine.heavy_task_seconds.median() / r_heavy:.2f}x); tail superstep {mine.tail_wall.median():.3f}s wall, "
                   f"tasks {mine.tail_task_seconds.median():.3f}s ({mine.tail_task_seconds.median() / r_tail:.2f}x); "
                   f"per tail stage {growth or 'n/a (other stage counts)'}")
    out.append("  reading: a tail stage whose tasks stay ~1x as the input grows is fixed cost (free to merge onto fewer "
               "executors at any input); one that grows ~ as the input does is work the tail pays at every scale")
    out.append(f"{time.time() - t0:.0f}s")
    pd.concat(tables).to_csv(RESULTS / f"{NAME}{'_' + args.tag if args.tag else ''}_supersteps.csv", index=False)
    write_table(NAME, args.tag, df, out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
