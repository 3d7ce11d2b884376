"""``target`` from a cold start, replayed in the simulator at a Pareto table's targets (issue 13
item 5, Spark-free): which rule of the policy costs the executor-seconds?

    .venv/bin/python experiments/target_whatif.py --table pareto_stop29_supersteps.csv \\
        --profile experiments/results/pareto_stop29_cluster_profile.json [--set warmup=0 ...]
    .venv/bin/python experiments/target_whatif.py --tags stop78g,stop79g,... [--warm SIZE]

``--tags``: several sessions pooled, a line per session and job and each job's totals (with how
many sessions reach the goal's 9 of 10). ``--warm SIZE``: not a cold start -- each target run
repeats the session's static run at SIZE (its records warm-start the model, the price and the
start plan, as ``iterflow run`` does from its MLflow store); ``--warm 1`` repeats the very run the
simulator replays, the policy knowing its run exactly.

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


def session(table: str, profile_path: Path, args: argparse.Namespace, opts: dict, out=print) -> dict[str, tuple[int, int, int]]:
    """Replay one Pareto session's targets (see the module docstring), printing through ``out``;
    per job ``(met, met at <= GOAL_COST, targets)``."""
    profile = load_profile(profile_path)
    params, prices = from_profile(profile), profile.records()
    runs = load(str(RESULTS / table))
    top = max(max(r.sizes) for r in runs)
    if args.warm is not None:  # checked before anything is printed
        lacking = sorted({program(r) for r in runs} - {program(r) for r in runs
                                                        if policy_of(r) == "static" and set(r.sizes) == {args.warm}})
        if lacking:
            raise InputError(f"--warm {args.warm}: {table} has no static run of {', '.join(lacking)} at {args.warm} executors")
    out(f"target_whatif {table}: options {opts or 'defaults'}, start "
        f"{args.start if args.start else 'planned from ' + str(top)}"
        + (f", warm: each run repeats the static run at {args.warm}" if args.warm else ", cold"))
    ratios_all, static_err = [], []  # static_err: each static size simulated from static-1 against its real runs
    scores: dict[str, tuple[int, int, int]] = {}
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
        earlier = next((r for r in mine if policy_of(r) == "static" and set(r.sizes) == {args.warm}), None)
        past = list(earlier.records) if earlier is not None else []
        met, reach, both, ratios, paths = 0, 0, 0, [], []
        for i, t in enumerate(targets):
            p = build("target", Setup(start, cores, top, options={"target_seconds": t, **opts}))
            sim = simulate(base, p, start, cores, truth, prices=prices, past=past, planned_start=args.start is None)
            ok = [s for s in static.values() if s.runtime <= (1 + MET) * t]
            cheapest = min((s.executor_seconds for s in ok), default=float("nan"))
            hit = sim.runtime <= (1 + MET) * t
            met += hit
            reach += bool(ok)
            ratios.append(sim.executor_seconds / cheapest)
            both += hit and ratios[-1] <= GOAL_COST
            sizes = [r.executors for r in sim.records]
            if args.why == f"{prog}:{i}":
                out("\n".join(f"   barrier {b}: {d} {why}" for b, d, why in sim.decisions))
            paths.append(f"{t:.1f}s: {sim.runtime:.1f}s {sim.executor_seconds:.0f}es "
                         f"(cheapest static {cheapest:.0f}) {'-'.join(str(x) for x in sizes)}")
        ratios_all += ratios
        scores[prog] = (met, both, len(targets))
        r = np.asarray(ratios, float)
        out(f"== {prog} (target starts at {sim.start}): static " + ", ".join(f"{e}: {s.runtime:.1f}s {s.executor_seconds:.0f}es"
                                                                       for e, s in static.items()))
        walls: dict[int, list[float]] = {}  # each static size's real runs
        for o in mine:
            if policy_of(o) == "static" and len(set(o.sizes)) == 1:
                walls.setdefault(o.sizes[0], []).append(runtime(o.records))
        real = {e: float(np.median(walls[e])) for e in static if e in walls}
        static_err += [static[e].runtime / real[e] - 1 for e in real if e != 1]
        out("   the real static runs (median): " + ", ".join(f"{e}: {t:.1f}s ({static[e].runtime / t - 1:+.0%} simulated)"
                                                       for e, t in real.items()))
        out(f"   a release to one executor costs {said}: pause {truth.remove_seconds:.2f}s, relayout "
            f"{truth.light_relayout_seconds or 0:.2f}s, first superstep +{truth.light_cold_seconds or 0:.2f}s")
        out("\n".join(f"   {p}" for p in paths))
        out(f"   met {met}/{len(targets)} ({reach} met by a static size); executor-s vs cheapest static meeting it: median "
            f"{np.nanmedian(r):.2f}x, max {np.nanmax(r):.2f}x; met at <= {GOAL_COST:g}x (the goal): {both}")
    e = np.abs(static_err)
    out(f"all jobs: median {np.nanmedian(ratios_all):.2f}x; static sizes > 1 simulated from static-1: "
        f"{np.mean(e <= 0.15):.0%} of {e.size} within 15 % of the real runs' median, mean |error| {np.mean(e):.1%}")
    return scores


def pooled(tags: list[str], args: argparse.Namespace, opts: dict) -> None:
    """:func:`session` over ``tags`` (each ``results/pareto_<tag>_supersteps.csv`` with its cluster
    profile): a line per session and job, then each job's sessions together and how many of them
    reach the goal's 9 of 10."""
    total: dict[str, list[tuple[int, int, int]]] = {}
    missing = [str(f) for tag in tags for f in (RESULTS / f"pareto_{tag}_supersteps.csv",
                                                RESULTS / f"pareto_{tag}_cluster_profile.json") if not f.is_file()]
    if missing:  # before any session is replayed: no partial table
        raise InputError("--tags: no such file " + ", ".join(missing))
    for tag in tags:
        for prog, (met, both, n) in session(f"pareto_{tag}_supersteps.csv",
                                            RESULTS / f"pareto_{tag}_cluster_profile.json", args, opts,
                                            out=lambda *_: None).items():
            print(f"{tag:12} {prog:9} met {met}/{n}, met at <= {GOAL_COST:g}x {both}/{n}")
            total.setdefault(prog, []).append((met, both, n))
    for prog, rows in total.items():
        met, both, n = (sum(x) for x in zip(*rows))
        nine = sum(b >= 0.9 * k for _, b, k in rows)
        print(f"{prog}: {len(rows)} sessions, met {met}/{n} ({met / n:.0%}), met at <= {GOAL_COST:g}x {both}/{n} "
              f"({both / n:.0%}); sessions with >= 9 of 10 at <= {GOAL_COST:g}x: {nine}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--table", help="a pareto.py superstep table in experiments/results")
    ap.add_argument("--profile", help="the cluster profile JSON pareto.py wrote next to it")
    ap.add_argument("--tags", help="instead of --table/--profile: comma-separated session tags, pooled "
                                   "(results/pareto_<tag>_supersteps.csv and _cluster_profile.json each)")
    ap.add_argument("--set", action="append", default=[], help="policy option key=value (repeatable)")
    ap.add_argument("--start", type=int, default=None,
                    help="target's start size, no start plan (default: the policy's plan from the maximum)")
    ap.add_argument("--calibration-releases", action="store_true",
                    help="simulate every program's releases at the calibration job's price (not its own runs')")
    ap.add_argument("--warm", type=int, default=None, metavar="SIZE",
                    help="not a cold start: each target run repeats an earlier run of the program, the "
                         "table's first static run at SIZE (as `iterflow run` warm-starts from its MLflow store)")
    ap.add_argument("--why", default=None, help="JOB:N -- print the decisions of the N-th target of JOB")
    args = ap.parse_args()
    if bool(args.tags) == bool(args.table and args.profile):
        ap.error("give --table and --profile, or --tags")
    opts = options(args.set)
    try:
        if args.tags:
            pooled([t for t in args.tags.split(",") if t], args, opts)
        else:
            session(args.table, Path(args.profile), args, opts)
    except InputError as exc:
        ap.error(str(exc))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
