"""At 480 cores (issue 14, item 5): the research claims' shape, simulated from recorded runs.

Claims (seed paper): ``fastest`` against the smallest static allocation cuts runtime (-57 %)
with more resources for a shorter time at no more executor-seconds; ``efficiency`` against the
largest releases up to 40 % of the resources without notable slowdown. No Spark; seconds.

    .venv/bin/python experiments/simulate_480.py

Assumptions (printed next to the ratios): 4 cores per executor, 120 executors max (480 cores),
the smallest static allocation SMALL executors; input weak-scaled xF (each stage F x its tasks,
drawn from the measured durations; time outside tasks as measured); executors register
REGISTER s after the request; removal, relayout and the cold excess learned from the recorded
runs at the current code (``rescale_stall``'s no-wait rescales: a scale-in does not wait for
the executor JVM to exit). Jobs: WCC (shrinking work: the Pareto input's static-1 run on the
C1 executors, 33 supersteps with its long thin tail and exact stage tasks; release_surplus'
profile-1, tasks sketched from quantiles, where that table is missing) and k-means (the same
experiment's static-1 run at stop 25; overhead_peers' median rep where that table is missing): the longest recorded supersteps (pareto's quick inputs last ~0.1 s a superstep at 480
cores once weak-scaled, where any rescale costs more than it can save).
"""
from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import pandas as pd  # noqa: E402

from iterflow.loop.records import records  # noqa: E402
from iterflow.simulate.cluster import learn  # noqa: E402
from iterflow.simulate.recorded import load, runtime  # noqa: E402
from iterflow.simulate.whatif import Setup, run_one  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"
CORES, MAX, SMALL, FACTOR = 4, 120, 12, 120
REGISTERS = (30.0, 5.0)   # executor start latency: a Kubernetes pod / a warm YARN container


# static-1 on the C1 executors, exact stage tasks, 33 supersteps: the newest WCC first (stop 37: adjacency
# lists, a superstep joins only the active vertices' rows), then stop 24b's (every superstep joined the
# whole edge list)
WCC_C1 = ("pareto_stop37w_supersteps.csv", "pareto_full_wcc_stop24b_supersteps.csv")
KMEANS_C1 = "pareto_full_stop25_supersteps.csv"  # its k-means static-1 run (exact stage tasks, 14 supersteps)


def jobs() -> dict[str, object]:
    found = [name for name in WCC_C1 if (RESULTS / name).exists()]
    if found:  # the whole tail, and stage tasks the replay model reads
        wcc = next(r for r in load(str(RESULTS / found[0])) if r.name == "wcc/static-1/0")
    else:
        wcc = next(r for r in load(str(RESULTS / "release_surplus_supersteps.csv")) if r.name == "wcc/profile-1/0")
    kms = [r for r in load(str(RESULTS / KMEANS_C1)) if r.name == "kmeans/static-1/0"] \
        if (RESULTS / KMEANS_C1).exists() else []
    km = kms[0] if kms else sorted((r for r in load(str(RESULTS / "overhead_peers_supersteps.csv"))
                                    if r.name.startswith("kmeans")), key=lambda r: runtime(r.records))[1]
    return {"wcc (shrinking work)": wcc, "k-means": km}


def main() -> None:
    stall = RESULTS / "rescale_stall_supersteps.csv"
    names = ("rescale_stall_supersteps.csv (no-wait runs)",) if stall.exists() else \
        ("release_surplus_supersteps.csv", "runtime_targets_supersteps.csv")
    if stall.exists():
        table = pd.read_csv(stall)
        tables = [records(table[table["mode"] == "no-wait"])]
    else:
        tables = [r.records for name in names for r in load(str(RESULTS / name))]
    learned = learn(tables)
    past = [rec for t in tables for rec in t]
    lines = ["# .venv/bin/python experiments/simulate_480.py (simulated, no Spark)",
             f"cluster: up to {MAX} executors x {CORES} cores = {MAX * CORES} cores; smallest static {SMALL} executors "
             f"({SMALL * CORES} cores); input weak-scaled x{FACTOR} (each stage {FACTOR}x its tasks, drawn from the "
             "measured durations; time outside tasks kept as measured)",
             f"learned from experiments/results ({', '.join(names)}); jobs: "
             + ", ".join(f"{k} = {r.source}: {r.name}" for k, r in jobs().items())]
    lines += [f"  {p}" for p in learned.describe()]
    lines.append(f"{'job':<22} {'register s':>10} {'comparison':<32} {'runtime ratio':>13} {'exec-s ratio':>12}  "
                 "adaptive path")
    for register in REGISTERS:
        params = replace(learned, register_seconds=register)
        for label, run in jobs().items():
            small = run_one(run, "static", Setup(SMALL, CORES, MAX, scale_input=FACTOR), params)
            large = run_one(run, "static", Setup(MAX, CORES, MAX, scale_input=FACTOR), params)
            # the policies know this cluster's rescale prices, as `iterflow run` does from its store
            fast = run_one(run, "fastest", Setup(SMALL, CORES, MAX, scale_input=FACTOR), params, prices=past)
            eff = run_one(run, "efficiency", Setup(MAX, CORES, MAX, scale_input=FACTOR), params, prices=past)
            for name, a, b in (("fastest vs static-12", fast, small), ("efficiency vs static-120", eff, large)):
                lines.append(f"{label:<22} {register:>10g} {name:<32} {a.runtime / b.runtime:>13.2f} "
                             f"{a.executor_seconds / b.executor_seconds:>12.2f}  {_path(a)}")
                why = next((f"first change: {w}" for _, d, w in a.decisions if d != "same"), None) or \
                    f"no change; barrier 3: {a.decisions[min(2, len(a.decisions) - 1)][2]}"
                lines.append(f"{'':<22} {'':>10}   {why[:520]}")
            lines.append(f"{'':<22} {'':>10} static-12 {small.runtime:.0f}s / {small.executor_seconds:.0f} "
                         f"executor-s; static-120 {large.runtime:.0f}s / {large.executor_seconds:.0f} executor-s")
    lines += READING
    text = "\n".join(lines) + "\n"
    (RESULTS / "simulate_480.txt").write_text(text)
    print(text)


READING = [
    "what decides it (read from the reasons above; the claims do NOT come out here):",
    "  * both jobs scale well at 480 cores once weak-scaled: WCC static-120 runs 4.8x faster than static-12 for",
    "    2.06x the executor-seconds (stop 37's WCC: a superstep joins only the active vertices' rows; stop 24b's,",
    "    joining the whole edge list every superstep, 5.7x for 1.73x), k-means 5.8x for 1.63x. No phase of either",
    "    is cheaper on more executors, so 'faster at no more executor-seconds' has nothing to buy with:",
    "    fastest's plan is 11 executors (WCC and k-means) throughout. Deciding assumption: the job's cost per",
    "    superstep at a size; the seed paper's -57 % needs early supersteps that scale super-linearly (or a",
    "    baseline below the knee), which these records lack.",
    "  * efficiency: weak-scaled stages hold exactly 2 tasks per slot at 480 cores, so every size from 119 down",
    "    to 80 executors runs a third round: WCC's tail (0.25-0.45 s a superstep at 120) reads executor #120's",
    "    gain at 0-0.3 % -- yet any release below 120 adds that round, ~14 % over the 10 % bound, and releasing one",
    "    executor cannot pay its price (~1.2 s at 119 executors against ~8 executor-seconds saved); k-means' #120",
    "    gains 15 %. Deciding assumption: the rounds of tasks per slot at the maximum -- the weak-scaled",
    "    stages repeat the measured durations, so a size's time steps with its rounds; weak-scaled x600 instead",
    "    (10 tasks per slot) WCC's efficiency still keeps 120 (checked at stop 37: #120 gains 0.6 %, no size",
    "    below within the bound).",
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
