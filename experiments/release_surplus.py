"""Release the surplus: ``efficiency`` against static at the maximum on a shrinking active set.

    .venv/bin/python experiments/release_surplus.py [--quick] [--reps 3]

Weakly connected components on an R-MAT graph: only vertices whose label changed send, so
the work per superstep falls as components settle. Per repetition, on one cluster:

* ``static-max`` -- :class:`~iterflow.policies.registry.StaticPolicy` on all ``--workers`` executors;
* ``efficiency`` -- :class:`~iterflow.policies.registry.EfficiencyPolicy` starting on all of them,
  the fewest executor-seconds with the run within ``--bound`` of static at the maximum
  (``--rule plan``, the default), or releasing executors whose marginal speedup fell below
  ``--threshold`` within that bound held per superstep (``--rule knee``, the rule before stop 41). Its resource model is warm-started (as
  ``iterflow run`` does from its MLflow history) from two profiling runs, static on 1 and on 2
  executors, and the static-max runs so far: a model that has seen only one executor count
  assumes linear scaling and never finds a marginal executor to release (``--cold``: no
  warm start, to see that).

The graph is a sparse R-MAT (about 1.1 edges drawn per vertex slot), whose components take
about ten supersteps to settle, plus a path of ``--tail`` vertices hanging off it -- the long,
thin tail of real graphs -- over which labels need ``tail`` more supersteps with an active set
of a vertex or two: the supersteps where executors are surplus.

Reported (supersteps 2.., superstep 1 apart): runtime and executor-seconds of each, and per
repetition the executor-seconds saved and the runtime change of ``efficiency``.
"""
from __future__ import annotations

import time

from common import rmat
from harness import RUN_METRICS, Collector, cluster, paired, parse_args, report, summarize, warm_up

from algorithms import WeaklyConnectedComponents
from iterflow.inputs.graphio import load_graph
from iterflow.policies import EfficiencyPolicy, StaticPolicy

NAME = "release_surplus"


def extra(ap) -> None:
    ap.add_argument("--scale", type=int, default=None)
    ap.add_argument("--edges", type=int, default=None)
    ap.add_argument("--cold", action="store_true", help="no warm start of the efficiency policy's model")
    ap.add_argument("--tail", type=int, default=None,
                    help="length of the path appended to the graph (default 12 quick, 30 full)")
    ap.add_argument("--rule", choices=("plan", "knee"), default="plan",
                    help="efficiency: plan the rest within the bound (default), or the marginal-gain knee")
    ap.add_argument("--threshold", type=float, default=0.1,
                    help="efficiency --rule knee: release an executor whose marginal gain is below this")
    ap.add_argument("--bound", type=float, default=0.1, help="efficiency: runtime bound over static-max")


def main() -> int:
    args = parse_args(__doc__, NAME, extra)
    scale = args.scale or (17 if args.quick else 19)
    edges = args.edges or (150_000 if args.quick else 600_000)
    tail = args.tail if args.tail is not None else (12 if args.quick else 30)
    t0 = time.time()
    runs = Collector()
    with cluster(args) as (_, spark, note):
        g = load_graph(spark, str(rmat(scale, edges, tail=tail)), "edgelist", partitions=args.partitions)
        warm_up(spark, WeaklyConnectedComponents(g, max_iterations=1), args)
        profile = Collector()
        for e in ([] if args.cold else [1, 2]):
            profile.run(spark, StaticPolicy(), WeaklyConnectedComponents(g), args=args, start=e,
                        labels={"experiment": NAME, "job": "wcc", "policy": f"profile-{e}", "rep": 0})
        for rep in range(args.reps):
            for name in ("static-max", "efficiency"):
                policy = (StaticPolicy() if name == "static-max" else
                          EfficiencyPolicy(max_executors=args.workers, start_executors=args.workers,
                                           rule=args.rule, threshold=args.threshold, slowdown_bound=args.bound))
                past = [] if args.cold or name == "static-max" else profile.tables + runs.tables
                run = runs.run(spark, policy, WeaklyConnectedComponents(g), args=args, start=args.workers,
                               past=past, labels={"experiment": NAME, "job": "wcc", "policy": name, "rep": rep})
                runs.rows[-1]["active_path"] = "-".join(str(int(w)) for w in run.table["work"])
    df = runs.frame(note)
    summary = summarize(df, NAME, ["job", "policy"], {**RUN_METRICS, "supersteps": "supersteps"})
    summary += paired(df, NAME, "wcc", "static-max", "efficiency")
    print(f"active vertices per superstep (first run): {df['active_path'].iloc[0]}")
    model_note = "cold model" if args.cold else "efficiency's model warm-started from profiling runs on 1 and 2"
    report(NAME, df, summary, runs.tables + profile.tables,
           f"{NAME}: WCC on R-MAT scale {scale} ({edges} edges drawn, a path of {tail} appended), "
           f"efficiency threshold {args.threshold:.0%} bound {1 + args.bound:.2f}x; {args.workers} workers at cpu share "
           f"{args.cpu_share} ({note}); {model_note}; {args.reps} reps; median [min-max]")
    print(f"{time.time() - t0:.0f}s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
