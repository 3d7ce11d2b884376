"""At 480 cores (issue 14, item 5): the research claims' shape, simulated from recorded runs.

Claims (seed paper): ``fastest`` against the smallest static allocation cuts runtime (-57 %)
with more resources for a shorter time at no more executor-seconds; ``efficiency`` against the
largest releases up to 40 % of the resources without notable slowdown. No Spark; ~15 minutes.

    .venv/bin/python experiments/simulate_480.py [--factor 480] [--out simulate_480]

Assumptions (printed next to the ratios): 4 cores per executor, 120 executors at most (480
cores), the smallest static allocation 12; the input weak-scaled xF (default 480: at 480 cores
each core holds the recorded run's input of its one core), cut as the loop cuts it -- one
partition a core, each task F / cores x the recorded one's work and its fixed cost once; the
time outside tasks (driver, scheduling) as measured; executors register REGISTER s after the
request; no task slow-down with scale-out (the 2-core box's is not a cluster's); a rescale's
removal, relayout and cold excess learned from the current code's adaptive runs on the
emulated cluster, which the policies also know as their rescale prices (as ``iterflow run``
does from its store). Jobs: the newest Pareto session's static-1 runs of WCC (shrinking work:
33 supersteps, its long thin tail) and k-means (14), exact stage tasks, cut as their cores.

Beside each policy, the best any policy could do (:mod:`iterflow.simulate.bounds`: one size a
superstep, chosen knowing every superstep's simulated time at every size; rescales free, then
priced as learned): where the policy misses a claim, that says whether the cluster or the policy
rules it out.
"""
from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from iterflow.model.tasks import task_fixed_cost  # noqa: E402
from iterflow.simulate import bounds  # noqa: E402
from iterflow.simulate.calibrate import load_profile  # noqa: E402
from iterflow.simulate.cluster import Params, SimRun, learn  # noqa: E402
from iterflow.simulate.recorded import RecordedRun, load  # noqa: E402
from iterflow.simulate.whatif import Setup, run_one, sizes_text  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"
CORES, MAX, SMALL = 4, 120, 12
REGISTERS = (30.0, 5.0)   # executor start latency: a Kubernetes pod / a warm YARN container
RECORDED = "pareto_stop65all_supersteps.csv"   # the jobs' static-1 runs (cut as cores, stage tasks)
PRICED_BY = ("pareto_stop63all_supersteps.csv", "pareto_stop64all_supersteps.csv", RECORDED)
JOBS = {"wcc (shrinking work)": "wcc/static-1/0", "k-means": "kmeans/static-1/0"}
BOUND_SIZES = (1, 2, 3, 6, 12, 18, 24, 36, 48, 60, 72, 84, 96, 108, 120)


def jobs() -> dict[str, RecordedRun]:
    runs = load(str(RESULTS / RECORDED))
    return {label: next(r for r in runs if r.name == name) for label, name in JOBS.items()}


def prices() -> tuple[Params, list]:
    """The rescale parameters learned from the current code's adaptive runs (every run of the
    sessions in PRICED_BY that rescaled; they released, none scaled out) and the same sessions'
    cluster calibrations (PageRank 4 -> 3 -> 2 -> 1 -> 2 -> 4: the scale-outs' registration and
    fresh executors' cold superstep); their records are the policies' prices."""
    histories = [r.records for name in PRICED_BY for r in load(str(RESULTS / name)) if len(set(r.sizes)) > 1]
    histories += [load_profile(RESULTS / name.replace("_supersteps.csv", "_cluster_profile.json")).records()
                  for name in PRICED_BY]
    return learn(histories), [rec for h in histories for rec in h]


def bound_lines(static: dict[int, SimRun], params: Params) -> list[str]:
    """What any policy could reach at these sizes: fastest within static-12's executor-seconds,
    the fewest executor-seconds within 1.10x static-120's runtime; free, then priced rescales."""
    sizes, T = bounds.static_times({e: [[r.wall_seconds + r.barrier_seconds for r in run.records]]
                                     for e, run in static.items()})  # static: no rescale pauses
    small, large = static[SMALL], static[MAX]
    up = params.cold_factor * float(np.median(T))  # a scale-out's cold superstep, as a share of a typical one
    out = []
    for label, kw in (("rescales free", {}),
                      (f"priced (a scale-out +{up:.1f}s, a release +{params.remove_seconds + params.relayout_seconds:.1f}s)",
                       {"up": up, "down": params.remove_seconds + params.relayout_seconds})):
        f = bounds.fastest(sizes, T, small.executor_seconds, start=SMALL if kw else None, **kw)
        c = bounds.cheapest(sizes, T, 1.10 * large.runtime, start=MAX if kw else None, **kw)
        fast = (f"fastest within static-12's executor-s {1 - f.seconds / small.runtime:+.0%} shorter "
                f"[{sizes_text(list(f.sizes))}]") if f else "fastest: nothing fits"
        eff = (f"efficiency within +10% of static-120 {1 - c.executor_seconds / large.executor_seconds:+.0%} "
               f"executor-s saved [{sizes_text(list(c.sizes))}]") if c else "efficiency: nothing fits"
        out.append(f"    best any policy could do, {label}: {fast}; {eff}")
    return out


def tail_share(run: RecordedRun, tail_work: float = 200.0) -> str:
    """What the weak scaling takes to grow with the input in WCC's tail (its supersteps of at
    most ``tail_work`` changed labels): each task's seconds above its fixed cost (the re-cut's,
    :func:`~iterflow.model.tasks.task_fixed_cost`), against the emulated cluster's measurement
    (``wcc_input_scaling.py``: the tail's task seconds at 1 executor on inputs 1, 2, 4x; a
    line's share at the largest), where it was run."""
    a = task_fixed_cost((s.stages, s.work) for s in run.steps)
    tail = [st for s in run.steps if s.work <= tail_work for st in s.stages]
    total = sum(sum(st) for st in tail)
    work = sum(max(d - min(a, min(st)), 0.0) for st in tail for d in st)
    out = (f"  weak scaling's reading of WCC's tail: {work / total:.0%} of its task seconds grow with the input "
           f"(the rest a task's fixed cost, {a * 1e3:.0f} ms at most)")
    measured = RESULTS / "wcc_input_scaling.csv"
    if measured.exists():
        df = pd.read_csv(measured)
        x, y = df["edges"] / df["edges"].min(), df["tail_task_seconds"]
        slope, icpt = np.polyfit(x, y, 1)
        top = float(x.max())
        by = df.groupby("edges")["tail_task_seconds"].median()
        out += (f"; measured on the emulated cluster (wcc_input_scaling.csv, 1 executor): the tail's task seconds "
                f"{'/'.join(f'{v / by.iloc[0]:.2f}' for v in by)}x at {'/'.join(f'{e / by.index[0]:g}' for e in by.index)}x "
                f"the input, a line's share at {top:g}x: {slope * top / (icpt + slope * top):.0%}")
    return out


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--factor", type=float, default=float(MAX * CORES),
                    help="weak scaling: the input this many times the recorded one (default 480)")
    ap.add_argument("--out", default="simulate_480", help="results/<out>.txt")
    args = ap.parse_args(argv)
    if not args.factor > 0:
        raise SystemExit(f"--factor must be > 0 (got {args.factor})")
    learned, past = prices()
    work = jobs()
    lines = [f"# .venv/bin/python experiments/simulate_480.py --factor {args.factor:g} (simulated, no Spark)",
             f"cluster: up to {MAX} executors x {CORES} cores = {MAX * CORES} cores; smallest static {SMALL} "
             f"executors ({SMALL * CORES} cores); input weak-scaled x{args.factor:g}, cut one partition a core as "
             "the loop cuts it (each task that share of the work, its fixed cost once); time outside tasks as measured; "
             "no task slow-down with scale-out",
             f"rescales learned from the adaptive runs of {', '.join(PRICED_BY)} (the policies know them as prices); "
             f"jobs: " + ", ".join(f"{k} = {r.source.split('/')[-1]}: {r.name}" for k, r in work.items())]
    lines += [f"  {p}" for p in learned.describe()]
    lines.append(tail_share(work["wcc (shrinking work)"]))
    lines.append(f"{'job':<22} {'register s':>10} {'comparison':<34} {'runtime':>8} {'exec-s':>7}  adaptive path")
    print("\n".join(lines), flush=True)
    setup = dict(cores=CORES, max_executors=MAX, min_executors=1, scale_input=args.factor)

    def show(label: str, register: float, name: str, a: SimRun, b: SimRun) -> None:
        why = next((f"first change, barrier {s}: {w}" for s, d, w in a.decisions if d != "same"), None) or \
            f"no change; barrier 3: {a.decisions[min(2, len(a.decisions) - 1)][2]}"
        add(f"{label:<22} {register:>10g} {name:<34} {a.runtime / b.runtime - 1:>+8.0%} "
            f"{a.executor_seconds / b.executor_seconds:>6.2f}x  {sizes_text([r.executors for r in a.records])}",
            f"{'':<33}   {why[:400]}")

    def add(*new: str) -> None:
        lines.extend(new)
        print("\n".join(new), flush=True)

    for label, run in work.items():
        params = {r: replace(learned, register_seconds=r, sources={**learned.sources, "register_seconds": "given"})
                  for r in REGISTERS}
        first = params[REGISTERS[0]]
        static = {e: run_one(run, "static", Setup(e, **setup), first) for e in BOUND_SIZES}  # no rescale: no latency
        small, large = static[SMALL], static[MAX]
        add(f"{'':<33} static-12 {small.runtime:.0f}s / {small.executor_seconds:.0f} executor-s; "
            f"static-120 {large.runtime:.0f}s / {large.executor_seconds:.0f} executor-s "
            f"({small.runtime / large.runtime:.1f}x faster for {large.executor_seconds / small.executor_seconds:.2f}x)")
        # each policy repeats the job its store holds one run of: static at its own baseline (the
        # forecast knows the length, the start is planned, as iterflow run does); efficiency starts
        # at the maximum, so only a scale-out back would wait to register: once, at the first latency
        show(label, REGISTERS[0], "efficiency vs static-120",
             run_one(run, "efficiency", Setup(MAX, **setup), first, past=large.records, prices=past), large)
        for register in REGISTERS:
            show(label, register, "fastest vs static-12", run_one(run, "fastest", Setup(SMALL, **setup), params[register],
                                                                 past=small.records, prices=past), small)
            show(label, register, "fastest (min 12) vs static-12",
                 run_one(run, "fastest", Setup(SMALL, **{**setup, "min_executors": SMALL}), params[register],
                         past=small.records, prices=past), small)
        add(*bound_lines(static, first))
    (RESULTS / f"{args.out}.txt").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
