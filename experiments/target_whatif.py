"""``target`` from a cold start, replayed in the simulator at a Pareto table's targets (issue 13
item 5, Spark-free): which rule of the policy costs the executor-seconds?

    .venv/bin/python experiments/target_whatif.py --table pareto_stop29_supersteps.csv \\
        --profile experiments/results/pareto_stop29_cluster_profile.json [--set warmup=0 ...]

Per job of the table: the base is its first static-1 run; every static size 1..max and
``target`` at each target the table's target runs were given are simulated from it, ``target``
as ``pareto.py`` runs it (its start planned from the cluster's calibration, no earlier run of
the program, the rescales priced by the calibration job, whose profile also gives the
simulator's latencies and task slow-down; ``--start N``: at N, no plan). Printed per job: targets met (within 5 %) and executor-seconds against the
cheapest *simulated* static size meeting the same target -- the simulator judged against
itself, so a rule's cost shows without the session's noise. A release to one executor costs in
the simulator what the program's own adaptive runs in the table measured (pause, relayout, the
first superstep's excess; ``--calibration-releases``: the calibration job's, as before stop 81):
WCC's cost 1.2 s in stop80g where the calibration job's cost 0.3 s, and the replay released WCC
early at no cost that the real runs paid (13.0 s simulated, 14.7 s real). The policy is never
told: it prices releases as ``pareto.py`` lets it, from the calibration. ``--set k=v``: policy options
(``warmup=0``, ``margin=0.05``, ...), to compare rules side by side. Also printed: each static
size simulated from static-1 against the table's real static runs (the simulator's own error).
"""
from __future__ import annotations

import argparse
import ast
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from calibrate_simulator import RESULTS, program  # noqa: E402
from pareto_bounds import GOAL_COST  # noqa: E402
from iterflow.errors import InputError  # noqa: E402
from iterflow.simulate.calibrate import from_profile, load_profile, policy_of  # noqa: E402
from iterflow.simulate.cluster import Params, learn, simulate  # noqa: E402
from iterflow.simulate.recorded import load, runtime  # noqa: E402
from iterflow.simulate.whatif import Setup, build  # noqa: E402

MET = 0.05


def options(pairs: list[str]) -> dict:
    out = {}
    for p in pairs:
        k, _, v = p.partition("=")
        if not _:
            raise SystemExit(f"--set {p!r}: expected key=value")
        try:
            out[k] = ast.literal_eval(v)
        except (ValueError, SyntaxError):
            out[k] = v
    return out


def own_releases(params: Params, adaptive: list) -> tuple[Params, str]:
    """``params`` with a release to one executor priced as ``adaptive`` (one program's adaptive
    runs) measured it -- pause, relayout and the first superstep's excess -- where they made one
    (else ``params`` as given), and which it is."""
    own = learn([r.records for r in adaptive])
    if own.light_cold_seconds is None:
        return params, "the calibration job's (the program's runs made none)"
    return (replace(params, remove_seconds=own.remove_seconds, light_relayout_seconds=own.light_relayout_seconds,
                    light_cold_seconds=own.light_cold_seconds),
            f"as the program's adaptive runs measured it ({own.sources['light_cold_seconds'].removeprefix('learned: ')})")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--table", required=True, help="a pareto.py superstep table in experiments/results")
    ap.add_argument("--profile", required=True, help="the cluster profile JSON pareto.py wrote next to it")
    ap.add_argument("--set", action="append", default=[], help="policy option key=value (repeatable)")
    ap.add_argument("--start", type=int, default=None,
                    help="target's start size, no start plan (default: the policy's plan from the maximum)")
    ap.add_argument("--calibration-releases", action="store_true",
                    help="simulate every program's releases at the calibration job's price (not its own runs')")
    ap.add_argument("--why", default=None, help="JOB:N -- print the decisions of the N-th target of JOB")
    args = ap.parse_args()
    opts = options(args.set)
    try:
        profile = load_profile(Path(args.profile))
    except InputError as exc:
        ap.error(str(exc))
    params, prices = from_profile(profile), profile.records()
    runs = load(str(RESULTS / args.table))
    top = max(max(r.sizes) for r in runs)
    print(f"target_whatif {args.table}: options {opts or 'defaults'}, start "
          f"{args.start if args.start else 'planned from ' + str(top)}")
    ratios_all, static_err = [], []  # static_err: each static size simulated from static-1 against its real runs
    for prog in sorted({program(r) for r in runs}):
        mine = [r for r in runs if program(r) == prog]
        base = next((r for r in mine if policy_of(r) == "static" and set(r.sizes) == {1}), None)
        targets = sorted({float(r.labels["target_seconds"]) for r in mine
                          if policy_of(r) == "target" and "target_seconds" in r.labels})
        if base is None or not targets:
            continue
        cores = base.cores_per_executor
        truth, said = (params, "the calibration job's") if args.calibration_releases else \
            own_releases(params, [r for r in mine if policy_of(r) != "static"])
        static = {e: simulate(base, build("static", Setup(e, cores, top)), e, cores, truth) for e in range(1, top + 1)}
        start = args.start or top
        met, reach, both, ratios, paths = 0, 0, 0, [], []
        for i, t in enumerate(targets):
            p = build("target", Setup(start, cores, top, options={"target_seconds": t, **opts}))
            sim = simulate(base, p, start, cores, truth, prices=prices, planned_start=args.start is None)
            ok = [s for s in static.values() if s.runtime <= (1 + MET) * t]
            cheapest = min((s.executor_seconds for s in ok), default=float("nan"))
            hit = sim.runtime <= (1 + MET) * t
            met += hit
            reach += bool(ok)
            ratios.append(sim.executor_seconds / cheapest)
            both += hit and ratios[-1] <= GOAL_COST
            sizes = [r.executors for r in sim.records]
            if args.why == f"{prog}:{i}":
                print("\n".join(f"   barrier {b}: {d} {why}" for b, d, why in sim.decisions))
            paths.append(f"{t:.1f}s: {sim.runtime:.1f}s {sim.executor_seconds:.0f}es "
                         f"(cheapest static {cheapest:.0f}) {'-'.join(str(x) for x in sizes)}")
        ratios_all += ratios
        r = np.asarray(ratios, float)
        print(f"== {prog} (target starts at {sim.start}): static " + ", ".join(f"{e}: {s.runtime:.1f}s {s.executor_seconds:.0f}es"
                                              for e, s in static.items()))
        walls: dict[int, list[float]] = {}  # each static size's real runs
        for o in mine:
            if policy_of(o) == "static" and len(set(o.sizes)) == 1:
                walls.setdefault(o.sizes[0], []).append(runtime(o.records))
        real = {e: float(np.median(walls[e])) for e in static if e in walls}
        static_err += [static[e].runtime / real[e] - 1 for e in real if e != 1]
        print("   the real static runs (median): " + ", ".join(f"{e}: {t:.1f}s ({static[e].runtime / t - 1:+.0%} simulated)"
                                                         for e, t in real.items()))
        print(f"   a release to one executor costs {said}: pause {truth.remove_seconds:.2f}s, relayout "
              f"{truth.light_relayout_seconds or 0:.2f}s, first superstep +{truth.light_cold_seconds or 0:.2f}s")
        print("\n".join(f"   {p}" for p in paths))
        print(f"   met {met}/{len(targets)} ({reach} met by a static size); executor-s vs cheapest static meeting it: median "
              f"{np.nanmedian(r):.2f}x, max {np.nanmax(r):.2f}x; met at <= {GOAL_COST:g}x (the goal): {both}")
    e = np.abs(static_err)
    print(f"all jobs: median {np.nanmedian(ratios_all):.2f}x; static sizes > 1 simulated from static-1: "
          f"{np.mean(e <= 0.15):.0%} of {e.size} within 15 % of the real runs' median, mean |error| {np.mean(e):.1%}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
