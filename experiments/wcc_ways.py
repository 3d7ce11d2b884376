"""Two ways of running WCC side by side on the Pareto experiment's WCC input, the way
``wcc_labels.py`` and ``checkpoint_copy.py`` compare them: ``static`` at each ``--executors``
count, the ways interleaved within each repetition (who goes first alternating by rep) after an
untimed run at each size (a size change starts fresh executor JVMs), the labels compared across
every run, and each way's figures paired by rep as ratios.
"""
from __future__ import annotations

import contextlib
import time
from typing import Any, Callable, ContextManager

import numpy as np
import pandas as pd

from common import rmat, scale_edges
from harness import RESULTS, Collector, cluster, parse_args, warm_up

from algorithms import WeaklyConnectedComponents
from iterflow.inputs.graphio import load_graph
from iterflow.policies import StaticPolicy

#: a way: the program to run on the graph, and what to run it inside (``contextlib.nullcontext``)
Way = tuple[Callable[[Any], WeaklyConnectedComponents], Callable[[], ContextManager[Any]]]


def side_by_side(doc: str, name: str, ways: dict[str, Way],
                 figures: dict[str, Callable[[pd.DataFrame], float]], partitions: int | None = 8) -> int:
    """Run ``ways`` (the first is the one judged, the second its reference) and report
    ``job_seconds`` and each of ``figures`` (a run's superstep table -> seconds), paired by rep,
    first / second; writes ``experiments/results/<name>[_quick|_<graph>].{csv,txt}`` and the
    superstep tables. ``partitions``: the default of ``--partitions`` (``None``: one task a core,
    as the Pareto runs). Exit status 1 where the labels differ between runs."""
    def extra(ap: Any) -> None:
        ap.add_argument("--executors", default="1,4", help="comma-separated executor counts (default 1,4)")
        ap.add_argument("--graph", default=None, metavar="SCALE:EDGES", type=scale_edges,
                        help="the R-MAT graph (a 30-vertex tail appended; default 19:600000, 17:150000 quick)")

    args = parse_args(doc, name, extra, partitions=partitions)
    sizes = [int(x) for x in args.executors.split(",")]
    if any(e < 1 or e > args.workers for e in sizes):
        raise SystemExit(f"--executors {args.executors}: each count must be in 1..{args.workers} (--workers)")
    t0 = time.time()
    runs, rows, reference = Collector(), [], None
    path = (rmat(*args.graph, tail=30) if args.graph else
            rmat(17, 150_000, tail=12) if args.quick else rmat(19, 600_000, tail=30))
    order = list(ways)
    with cluster(args) as (_, spark, note):
        g = load_graph(spark, str(path), "edgelist", partitions=args.partitions)
        for make, inside in ways.values():
            with inside():
                warm_up(spark, make(g), args)
        for rep in range(args.reps):
            for e in sizes:
                make, inside = ways[order[rep % 2]]
                with inside():
                    warm_up(spark, make(g), args, executors=e)
                for way in (order if rep % 2 == 0 else order[::-1]):
                    make, inside = ways[way]
                    with inside():
                        run = runs.run(spark, StaticPolicy(), make(g), args=args, start=e, verbose=False,
                                       labels={"experiment": name, "job": "wcc", "policy": way, "rep": rep},
                                       keep_output=True)
                        labels = run.output.toPandas().set_index("id")["value"].sort_index()
                        run.release()
                    reference = labels if reference is None else reference
                    row = {"way": way, "executors": e, "rep": rep, "job_seconds": run.job_seconds,
                           **{k: f(run.table) for k, f in figures.items()},
                           "supersteps": len(run.table), "same_labels": bool(labels.equals(reference))}
                    rows.append(row)
                    print(f"  {way:8s} at {e}, rep {rep}: {run.job_seconds:5.1f}s, "
                          + ", ".join(f"{k} {row[k]:.3f}s" for k in figures)
                          + f", {len(run.table)} supersteps, labels {'the same' if row['same_labels'] else 'DIFFER'}",
                          flush=True)
    df = pd.DataFrame(rows)
    first, second = order
    out = [f"== {name}: {note}; {args.reps} reps; {path.name}"]
    for e in sizes:
        a = df[(df.way == first) & (df.executors == e)].set_index("rep")
        b = df[(df.way == second) & (df.executors == e)].set_index("rep")
        for col in ("job_seconds", *figures):
            r = (a[col] / b[col]).to_numpy()
            out.append(f"  at {e} executor(s): {first} / {second} {col}: {np.median(r):.2f}x "
                       f"[{r.min():.2f}-{r.max():.2f}] ({first} median {a[col].median():.2f}s, "
                       f"{second} {b[col].median():.2f}s)")
    out.append(f"  labels identical in every run: {bool(df.same_labels.all())}")
    out.append(f"{time.time() - t0:.0f}s")
    print("\n".join(out))
    RESULTS.mkdir(parents=True, exist_ok=True)
    tag = f"_{args.graph[0]}_{args.graph[1]}" if args.graph else "_quick" if args.quick else ""
    df.to_csv(RESULTS / f"{name}{tag}.csv", index=False)
    pd.concat(runs.tables).to_csv(RESULTS / f"{name}{tag}_supersteps.csv", index=False)
    (RESULTS / f"{name}{tag}.txt").write_text("\n".join(out) + "\n")
    return 0 if df.same_labels.all() else 1


def plain() -> ContextManager[Any]:
    """No context: the way is its program."""
    return contextlib.nullcontext()
