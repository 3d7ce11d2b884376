"""At 480 cores (issue 14, item 5): the research claims' shape, simulated from recorded runs.

Claims (seed paper): ``fastest`` against the smallest static allocation cuts runtime (-57 %)
with more resources for a shorter time at no more executor-seconds; ``efficiency`` against the
largest releases up to 40 % of the resources without notable slowdown. No Spark; seconds.

    .venv/bin/python experiments/simulate_480.py

Assumptions (printed next to the ratios): 4 cores per executor, 120 executors max (480 cores),
the smallest static allocation SMALL executors; input weak-scaled xF (each stage F x its tasks,
drawn from the measured durations; time outside tasks as measured); executors register
REGISTER s after the request; removal, relayout and the cold excess learned from the recorded
runs. Jobs: WCC (shrinking work, release_surplus profile-1: 1 executor, tasks sketched from
quantiles) and k-means (overhead_peers, exact stage tasks, the median of its 3 reps).
"""
from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from iterflow.simulate.cluster import learn  # noqa: E402
from iterflow.simulate.recorded import load, runtime  # noqa: E402
from iterflow.simulate.whatif import Setup, run_one  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"
CORES, MAX, SMALL, FACTOR = 4, 120, 12, 120
REGISTERS = (30.0, 5.0)   # executor start latency: a Kubernetes pod / a warm YARN container


def jobs() -> dict[str, object]:
    wcc = next(r for r in load(str(RESULTS / "release_surplus_supersteps.csv")) if r.name == "wcc/profile-1/0")
    km = sorted((r for r in load(str(RESULTS / "overhead_peers_supersteps.csv")) if r.name.startswith("kmeans")),
                key=lambda r: runtime(r.records))[1]
    return {"wcc (shrinking work)": wcc, "k-means": km}


def main() -> None:
    tables = [r.records for name in ("release_surplus_supersteps.csv", "runtime_targets_supersteps.csv")
              for r in load(str(RESULTS / name))]
    learned = learn(tables)
    lines = ["# .venv/bin/python experiments/simulate_480.py (simulated, no Spark)",
             f"cluster: up to {MAX} executors x {CORES} cores = {MAX * CORES} cores; smallest static {SMALL} executors "
             f"({SMALL * CORES} cores); input weak-scaled x{FACTOR} (each stage {FACTOR}x its tasks, drawn from the "
             "measured durations; time outside tasks kept as measured)",
             "learned from experiments/results (release_surplus, runtime_targets):"]
    lines += [f"  {p}" for p in learned.describe()]
    lines.append(f"{'job':<22} {'register s':>10} {'comparison':<32} {'runtime ratio':>13} {'exec-s ratio':>12}  "
                 "adaptive path")
    for register in REGISTERS:
        params = replace(learned, register_seconds=register)
        for label, run in jobs().items():
            small = run_one(run, "static", Setup(SMALL, CORES, MAX, scale_input=FACTOR), params)
            large = run_one(run, "static", Setup(MAX, CORES, MAX, scale_input=FACTOR), params)
            fast = run_one(run, "fastest", Setup(SMALL, CORES, MAX, scale_input=FACTOR), params)
            eff = run_one(run, "efficiency", Setup(MAX, CORES, MAX, scale_input=FACTOR), params)
            for name, a, b in (("fastest vs static-12", fast, small), ("efficiency vs static-120", eff, large)):
                lines.append(f"{label:<22} {register:>10g} {name:<32} {a.runtime / b.runtime:>13.2f} "
                             f"{a.executor_seconds / b.executor_seconds:>12.2f}  {_path(a)}")
                why = next((w for _, d, w in a.decisions if d != "same"), "no change")
                lines.append(f"{'':<22} {'':>10}   first change: {why[:260]}")
            lines.append(f"{'':<22} {'':>10} static-12 {small.runtime:.0f}s / {small.executor_seconds:.0f} "
                         f"executor-s; static-120 {large.runtime:.0f}s / {large.executor_seconds:.0f} executor-s")
    lines += READING
    text = "\n".join(lines) + "\n"
    (RESULTS / "simulate_480.txt").write_text(text)
    print(text)


READING = [
    "what decides it (read from the first-change reasons above; the claims do NOT come out here):",
    "  * fastest on WCC: the record has no stage_tasks, so the model is the learned curve, time ~ work; WCC's work",
    "    (active vertices) falls 40962 -> 1 while its supersteps stay ~1-3 s (time outside tasks, kept as measured).",
    "    The curve predicts ~0 s for the tail, the budget has nothing to buy and the policy releases (12 -> 2).",
    "    Deciding assumption: time outside tasks not scaling with work (and the model's work proportionality).",
    "  * fastest on k-means: flat work, so the Lagrange plan is one count for the whole run (the policy's own",
    "    docstring); more-for-shorter needs work that varies across supersteps.",
    "  * efficiency: releases at barrier 4 and pays the measured scale-in pause (remove_seconds, 5.15 s of",
    "    decommission on the emulated cluster) while holding all 120 executors -- on a job whose supersteps",
    "    last ~1-2 s at 480 cores after x120 weak scaling. Deciding assumption: the removal latency against the",
    "    superstep length (a longer job or a cheaper removal might let the release pay: not simulated here).",
    "  * the registration latency (30 s vs 5 s) changes nothing here: no policy scaled out.",
]


def _path(run) -> str:
    out: list[str] = []
    for r in run.records:
        if not out or out[-1] != str(r.executors):
            out.append(str(r.executors))
    return "-".join(out)


if __name__ == "__main__":
    main()
