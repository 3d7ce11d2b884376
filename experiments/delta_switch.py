"""The logic dimension: PageRank switching to its delta step once most ranks have settled.

    .venv/bin/python experiments/delta_switch.py [--scale 20 --edges 4000000] [--reps 2]

Side by side on the emulated cluster, same executors: ``full`` (every superstep sends along
every edge) against ``switch`` (:class:`~iterflow.policies.LogicSwitch`: once the L1 change
of the ranks falls to ``--below``, the delta step sends only changes above 1e-3/|V|). Both
compute the L1 delta every superstep, so the only difference is the step function.
Reported: seconds per superstep after the switch point (median), total seconds, messages
shuffled, and the result's error against the full run (max and median relative).
"""
from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd

from common import add_emulation_args, RESULTS, emulated_cluster, med, rmat

from algorithms import PageRank
from iterflow.loop.driver import IterationDriver
from iterflow.inputs.graphio import load_graph
from iterflow.policies import LogicSwitch
from iterflow.policies import StaticPolicy


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_emulation_args(ap)
    ap.add_argument("--supersteps", type=int, default=20)
    ap.add_argument("--below", type=float, default=0.02, help="switch when the L1 delta falls to this")
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--out", default=str(RESULTS / "delta_switch.csv"))
    args = ap.parse_args()
    data = rmat(args.scale, args.edges)
    rows = []
    t0 = time.time()
    with emulated_cluster(args.workers, args.cpu_share, partitions=8) as (cluster, spark):
        g = load_graph(spark, str(data), "edgelist", partitions=8)
        n = g.vertices.count()
        for rep in range(args.reps):
            runs = {}
            for mode in ("full", "switch"):
                policy = StaticPolicy() if mode == "full" else LogicSwitch(StaticPolicy(), "delta", args.below)
                prog = PageRank(g, max_iterations=args.supersteps, delta_threshold=1e-3 / n, measure_delta=True)
                res = IterationDriver(spark, policy, partitions=8).run(prog)
                runs[mode] = (res.supersteps, res.output.toPandas().set_index("id")["value"])
            (tf, rf), (ts, rs) = runs["full"], runs["switch"]
            switched = ts.index[ts["variant"] == "delta"]
            first = int(ts.loc[switched[0], "superstep"]) if len(switched) else args.supersteps + 1
            after = lambda t: t[t["superstep"] > first]  # noqa: E731 - the supersteps after the switch's first
            rel = ((rs.loc[rf.index] - rf).abs() / rf)
            rows.append({"rep": rep, "switch_superstep": first,
                         "full_seconds_after": after(tf)["wall_seconds"].median(),
                         "delta_seconds_after": after(ts)["wall_seconds"].median(),
                         "full_total": tf["wall_seconds"].sum(), "switch_total": ts["wall_seconds"].sum(),
                         "full_messages_after": after(tf)["shuffle_read_records"].sum(),
                         "delta_messages_after": after(ts)["shuffle_read_records"].sum(),
                         "max_rel_error": float(rel.max()), "median_rel_error": float(rel.median()),
                         "l1_full": float(tf["delta"].iloc[-1]), "l1_switch": float(ts["delta"].iloc[-1])})
            print(rows[-1], flush=True)
    out = pd.DataFrame(rows)
    RESULTS.mkdir(parents=True, exist_ok=True)
    out.to_csv(args.out, index=False)
    print(f"\n== PageRank full vs switch to delta at L1 <= {args.below} ({args.workers} workers at cpu share "
          f"{args.cpu_share}); median [min-max] over {args.reps} reps")
    print(f"switch at superstep {med(out['switch_superstep'])}; seconds per superstep after it: full "
          f"{med(out['full_seconds_after'])}, delta {med(out['delta_seconds_after'])} "
          f"(ratio {med(out['delta_seconds_after'] / out['full_seconds_after'])})")
    print(f"whole run: ratio switch/full {med(out['switch_total'] / out['full_total'])}; messages after the "
          f"switch: ratio {med(out['delta_messages_after'] / out['full_messages_after'])}")
    print(f"result vs full run: max relative error {med(out['max_rel_error'])}, median {med(out['median_rel_error'])}")
    print(f"table: {args.out}; {time.time() - t0:.0f}s")
    return 0 if np.isfinite(out["max_rel_error"]).all() else 1


if __name__ == "__main__":
    raise SystemExit(main())
