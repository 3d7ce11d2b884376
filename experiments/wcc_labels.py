"""WCC's labels patched where few changed, against rewritten every superstep, side by side.

    .venv/bin/python experiments/wcc_labels.py [--reps 3] [--executors 1,4] [--quick]

On the emulated cluster and the Pareto experiment's WCC input (R-MAT 19, 600k edges, a
30-vertex path appended: 33 supersteps, the last ~25 changing a few labels each; ``--quick``:
R-MAT 17 with a 12-vertex path), ``static`` at each ``--executors`` count, the two ways
interleaved within each repetition after one untimed run of each (and one at each size before
its timed runs: a size change starts fresh executor JVMs): ``patch`` (the default,
:data:`algorithms.wcc.PATCH_SHARE`) and ``rewrite`` (``patch_share=0``: every superstep rewrites
every label, as WCC did before the patch). Printed per run: job seconds (all supersteps and
barriers), the median tail superstep (supersteps past the first 8), whether the labels are the
same; then the ratio patch / rewrite paired by rep (median [min-max]) per executor count.
"""
from __future__ import annotations

import time

import numpy as np
import pandas as pd

from common import rmat
from harness import RESULTS, Collector, cluster, parse_args, warm_up

from algorithms import WeaklyConnectedComponents
from iterflow.inputs.graphio import load_graph
from iterflow.policies import StaticPolicy

NAME = "wcc_labels"
TAIL_FROM = 9  # supersteps from here on change few labels (Pareto input: ~1,100 at 5, ~70 at 6, then 30 ... 1)
WAYS = {"patch": None, "rewrite": 0.0}


def extra(ap) -> None:
    ap.add_argument("--executors", default="1,4", help="comma-separated executor counts (default 1,4)")


def main() -> int:
    args = parse_args(__doc__, NAME, extra)
    sizes = [int(x) for x in args.executors.split(",")]
    if any(e < 1 or e > args.workers for e in sizes):
        raise SystemExit(f"--executors {args.executors}: each count must be in 1..{args.workers} (--workers)")
    t0 = time.time()
    runs = Collector()
    rows = []
    path = rmat(17, 150_000, tail=12) if args.quick else rmat(19, 600_000, tail=30)
    with cluster(args) as (_, spark, note):
        g = load_graph(spark, str(path), "edgelist", partitions=args.partitions)

        def make(way: str) -> WeaklyConnectedComponents:
            share = WAYS[way]
            return WeaklyConnectedComponents(g) if share is None else WeaklyConnectedComponents(g, patch_share=share)

        for way in WAYS:
            warm_up(spark, make(way), args)
        reference = None
        for rep in range(args.reps):
            for e in sizes:
                # a size change starts fresh executor JVMs: a whole untimed run at the size first (after
                # four supersteps only, the first timed run at 4 was still 15-20 % slower, either way)
                warm_up(spark, make(list(WAYS)[rep % 2]), args, executors=e)
                for way in (WAYS if rep % 2 == 0 else reversed(list(WAYS))):  # alternate who goes first
                    run = runs.run(spark, StaticPolicy(), make(way), args=args, start=e, verbose=False,
                                   labels={"experiment": NAME, "job": "wcc", "policy": way, "rep": rep})
                    labels = run.output.toPandas().set_index("id")["value"].sort_index()
                    reference = labels if reference is None else reference
                    t = run.table
                    tail = float(t.loc[t["superstep"] >= TAIL_FROM, "span_seconds"].median())
                    same = bool(labels.equals(reference))
                    rows.append({"way": way, "executors": e, "rep": rep, "job_seconds": run.job_seconds,
                                 "tail_superstep": tail, "supersteps": len(t), "same_labels": same})
                    print(f"  {way:7s} at {e}, rep {rep}: {run.job_seconds:5.1f}s, tail superstep {tail:.3f}s, "
                          f"{len(t)} supersteps, labels {'the same' if same else 'DIFFER'}", flush=True)
    df = pd.DataFrame(rows)
    out = [f"== {NAME}: {note}; {args.reps} reps; {path.name}"]
    for e in sizes:
        a = df[(df.way == "patch") & (df.executors == e)].set_index("rep")
        b = df[(df.way == "rewrite") & (df.executors == e)].set_index("rep")
        for col in ("job_seconds", "tail_superstep"):
            r = (a[col] / b[col]).to_numpy()
            out.append(f"  at {e} executor(s): patch / rewrite {col}: {np.median(r):.2f}x [{r.min():.2f}-{r.max():.2f}]"
                       f" (patch median {a[col].median():.2f}s, rewrite {b[col].median():.2f}s)")
    out.append(f"  labels identical in every run: {bool(df.same_labels.all())}")
    out.append(f"{time.time() - t0:.0f}s")
    print("\n".join(out))
    RESULTS.mkdir(parents=True, exist_ok=True)
    tag = "_quick" if args.quick else ""
    df.to_csv(RESULTS / f"{NAME}{tag}.csv", index=False)
    (RESULTS / f"{NAME}{tag}.txt").write_text("\n".join(out) + "\n")
    return 0 if df.same_labels.all() else 1


if __name__ == "__main__":
    raise SystemExit(main())
