"""What a scale-in's relayout buys: the same scripted release with the partition count following
the cores (a relayout at the release) -- by index coalescing where the new count divides the old
(``narrow``, iterflow's way since stop 46) or by a shuffle (``shuffle``, ``hashed.NARROW`` off) --
and kept (``kept``: the tasks of the larger size on fewer cores).

    .venv/bin/python experiments/scale_in_relayout.py [--reps 2] [--tag T]

On the emulated cluster, interleaved by rep (order rotated), after one untimed run on every executor:

* WCC on the Pareto experiment's larger input (R-MAT 20, 2.4M edges + a 30-vertex tail, to
  convergence), started at 4 executors and released to 2 at barrier 6 (its heavy supersteps done);
* PageRank (R-MAT 18, 1M edges, 14 supersteps), started at 4 and released to 2 at barrier 4.

Printed per run: the job, the release barrier's span, its relayout seconds and the median
superstep after it; then per job the kept count's job over the followed one (paired by rep,
median [min-max]) and the supersteps it would take the kept count's extra per-superstep cost to
spend what the relayout cost; the shuffled relayout's job and relayout over the narrow one's.
Why: a relayout was 3.2-4.8 s of a 4.5-6 s scale-in on WCC R-MAT 20 (stop 45,
``pareto_stop45w20``), the price every policy weighs a release against.
"""
from __future__ import annotations

import copy
import time

import pandas as pd

from common import rmat
from harness import Collector, cluster, parse_args, ratio_range, warm_up, write_table
from one_partition import ReleaseAt

from algorithms import PageRank, WeaklyConnectedComponents
from iterflow.inputs.graphio import load_graph
from iterflow.loop import hashed

NAME = "scale_in_relayout"
MODES = ("narrow", "shuffle", "kept")


def main() -> int:
    args = parse_args(__doc__, NAME, lambda ap: ap.add_argument("--tag", default=""), quick_reps=2, partitions=None)
    t0, runs, rows = time.time(), Collector(), []
    with cluster(args) as (_, spark, note):
        pr = load_graph(spark, str(rmat(18, 1_000_000)), "edgelist")
        wcc = load_graph(spark, str(rmat(20, 2_400_000, tail=30)), "edgelist")
        jobs = {"wcc 4->2 at 6": (lambda: WeaklyConnectedComponents(wcc), 4, 6, 2),
                "pagerank 4->2 at 4": (lambda: PageRank(pr, max_iterations=14), 4, 4, 2)}
        warm_up(spark, PageRank(pr, max_iterations=3), args)
        warm_up(spark, WeaklyConnectedComponents(wcc, max_iterations=4), args)
        configs = [(job, mode) for job in jobs for mode in MODES]
        for rep in range(args.reps):
            for job, mode in configs[rep % len(configs):] + configs[:rep % len(configs)]:
                make, start, at, to = jobs[job]
                run_args, follow = copy.copy(args), mode != "kept"
                run_args.partitions = None if follow else start
                hashed.NARROW = mode != "shuffle"
                try:
                    run = runs.run(spark, ReleaseAt(at, to), make(), args=run_args, start=start, verbose=False,
                                   follow_cores=follow,
                                   labels={"experiment": NAME, "job": job, "policy": mode, "rep": rep})
                finally:
                    hashed.NARROW = True
                t = run.table
                after = t[t.superstep > at + 1]
                rel = t[t.superstep == at].iloc[0]
                row = {"job": job, "mode": mode, "rep": rep, "job_seconds": run.job_seconds,
                       "release_span": float(rel.span_seconds),
                       "relayout_seconds": float(rel["relayout_seconds"]) if "relayout_seconds" in t and pd.notna(rel["relayout_seconds"]) else 0.0,
                       "partitions_after": int(after.partitions.iloc[0]), "after_median": float(after.span_seconds.median()),
                       "after_supersteps": len(after)}
                rows.append(row)
                print(f"  {job}, {mode}, rep {rep}: job {row['job_seconds']:.1f}s, "
                      f"release barrier {row['release_span']:.2f}s (relayout {row['relayout_seconds']:.2f}s), then "
                      f"{row['partitions_after']} partitions: median superstep {row['after_median']:.3f}s", flush=True)
    df = pd.DataFrame(rows)
    out = [f"== {NAME}: {note}; {args.reps} reps"]
    for job in jobs:
        f, sh, k = (df[(df.job == job) & (df["mode"] == m)].set_index("rep") for m in MODES)
        extra = k.after_median.median() - f.after_median.median()
        pays = f.relayout_seconds.median() / extra if extra > 0 else float("inf")
        out.append(f"  {job}: job kept {k.job_seconds.median():.1f}s vs followed {f.job_seconds.median():.1f}s, "
                   f"{ratio_range(k.job_seconds, f.job_seconds)}; release barrier {k.release_span.median():.2f}s vs "
                   f"{f.release_span.median():.2f}s (relayout {f.relayout_seconds.median():.2f}s); superstep after "
                   f"{k.after_median.median():.3f}s ({int(k.partitions_after.iloc[0])} partitions) vs "
                   f"{f.after_median.median():.3f}s ({int(f.partitions_after.iloc[0])}); the relayout repaid after "
                   f"~{pays:.0f} supersteps ({int(f.after_supersteps.median())} came after it)")
        out.append(f"  {job}: relayout by shuffle {sh.relayout_seconds.median():.2f}s vs narrow "
                   f"{f.relayout_seconds.median():.2f}s, {ratio_range(sh.relayout_seconds, f.relayout_seconds)}; "
                   f"release barrier {sh.release_span.median():.2f}s vs {f.release_span.median():.2f}s; job "
                   f"{ratio_range(sh.job_seconds, f.job_seconds)}; superstep after {sh.after_median.median():.3f}s "
                   f"vs {f.after_median.median():.3f}s")
    out.append(f"{time.time() - t0:.0f}s")
    write_table(NAME, args.tag, df, out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
