"""``iterflow simulate --run``: one recorded run under a policy, or a sweep of static sizes and
every policy, as a table or one JSON object (issue 14, item 2).

Policies are built by :func:`~iterflow.policies.registry.make_policy` with the options
``iterflow run`` gives them (start at ``--executors``, or where the policy plans its start as
the driver lets it -- ``target`` from the cluster's calibration; ``fastest``'s baseline is the
start size), so an option that does not apply to a policy is the same error here as there.
``dynamic-allocation`` does nothing at barriers (Spark scales by itself, which this simulator
does not model): it replays as static at its start size, and the output says so.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Sequence

from iterflow.loop.records import SuperstepRecord
from iterflow.policies import make_policy
from iterflow.policies.registry import POLICIES, _parameters
from iterflow.simulate.cluster import Params, SimRun, follows_cores, simulate
from iterflow.simulate.recorded import RecordedRun, cost, runtime

ADAPTIVE = ("target", "efficiency", "fastest", "dynamic-allocation")
NOTES = {"dynamic-allocation": "Spark's own allocation is not simulated: no change at barriers"}


@dataclass(frozen=True)
class Setup:
    """The simulated cluster and the policy options (None: the policy's default)."""

    executors: int
    cores: int
    max_executors: int
    min_executors: int | None = None
    scale_input: float = 1.0
    seed: int = 0
    options: dict[str, Any] = field(default_factory=dict)  # target_seconds, wait_count, ...


def build(name: str, setup: Setup) -> Any:
    """The policy ``name`` as ``iterflow run`` builds it from these options."""
    if name == "static":
        return make_policy("static", **{k: v for k, v in setup.options.items() if v is not None})
    kw: dict[str, Any] = {"min_executors": setup.min_executors, "max_executors": setup.max_executors,
                          "start_executors": setup.executors, **setup.options}
    if name != "dynamic-allocation":
        kw["cores_per_executor"] = setup.cores
    if name == "fastest":
        kw.setdefault("baseline_executors", setup.executors)
    return make_policy(name, **kw)


def run_one(run: RecordedRun, name: str, setup: Setup, params: Params,
            past: Sequence[SuperstepRecord] = (), prices: Sequence[SuperstepRecord] = ()) -> SimRun:
    policy = build(name, setup)
    return simulate(run, policy, setup.executors, setup.cores, params, scale_input=setup.scale_input,
                    seed=setup.seed, past=past, prices=prices)


def sweep(run: RecordedRun, setup: Setup, params: Params) -> list[tuple[str, SimRun]]:
    """Static at 1..max, then each adaptive policy (with the options it takes; ``target``
    only with a ``target_seconds``)."""
    out = []
    for e in range(1, setup.max_executors + 1):
        s = Setup(e, setup.cores, setup.max_executors, setup.min_executors, setup.scale_input, setup.seed)
        out.append((f"static-{e}", run_one(run, "static", s, params)))
    for name in ADAPTIVE:
        takes = _parameters(POLICIES[name])
        opts = {k: v for k, v in setup.options.items() if k in takes}  # each policy gets its own options
        if name == "target" and opts.get("target_seconds") is None:
            continue
        out.append((name, run_one(run, name, Setup(**{**setup.__dict__, "options": opts}), params)))
    return out


def summary(run: RecordedRun, setup: Setup, params: Params, results: list[tuple[str, SimRun]],
            policy: str | None) -> dict[str, Any]:
    """The machine-readable result (``--json``)."""
    def one(label: str, r: SimRun) -> dict[str, Any]:
        return {"policy": label, "start_executors": r.start, "runtime_seconds": r.runtime,
                "executor_seconds": r.executor_seconds, "executors": [x.executors for x in r.records],
                "decisions": [{"superstep": s, "decision": d, "reason": why} for s, d, why in r.decisions],
                **({"note": NOTES[label]} if label in NOTES else {})}

    doc: dict[str, Any] = {
        "run": run.name, "source": run.source, "supersteps": len(run.steps),
        "recorded": {"executors": run.sizes, "runtime_seconds": runtime(run.records),
                     "executor_seconds": cost(run.records),
                     "tasks": "task quantiles (sketched)" if run.sketched else "stage_tasks"},
        "cluster": {"executors": setup.executors, "cores_per_executor": setup.cores,
                    "max_executors": setup.max_executors, "scale_input": setup.scale_input,
                    "weak_scaling": setup.scale_input != 1.0, "partitions_follow_cores": follows_cores(run)},
        "parameters": {k: {"value": getattr(params, k), "source": params.sources.get(k, "given")}
                       for k in ("register_seconds", "remove_seconds", "relayout_seconds", "cold_factor", "cold_in_factor",
                                 "light_relayout_seconds", "light_cold_seconds")}}
    if policy is not None:
        doc["result"] = one(policy, results[0][1])
    else:
        doc["sweep"] = [one(label, r) for label, r in results]
    return doc


def to_json(doc: dict[str, Any]) -> str:
    return json.dumps(doc, indent=2, default=float)


def table(doc: dict[str, Any]) -> str:
    """The human-readable form: assumptions first, then runtime, executor-seconds, decisions."""
    c, rec = doc["cluster"], doc["recorded"]
    lines = [f"simulated replay of {doc['run']} ({doc['source']}, {doc['supersteps']} supersteps, tasks from "
             f"{rec['tasks']}); recorded: {rec['runtime_seconds']:.1f}s, {rec['executor_seconds']:.0f} "
             f"executor-seconds at {sizes_text(rec['executors'])} executors",
             f"cluster: start {c['executors']} executors x {c['cores_per_executor']} cores, max {c['max_executors']}; "
             + (f"input weak-scaled x{c['scale_input']:g} (each stage {c['scale_input']:g}x the tasks, drawn from "
                "its measured durations" + ("; re-cut to one task a core, as the run's partitions followed its cores)"
                                            if c["partitions_follow_cores"] else ")")
                if c["weak_scaling"] else "input as recorded (no weak scaling)")]
    lines += [f"  {k} = {v['value']:.3g}  ({v['source']})" if v["value"] is not None else
              f"  {k}: none learned (no release to one executor recorded: simulated as one that rebuilds)"
              for k, v in doc["parameters"].items()]
    rows = [doc["result"]] if "result" in doc else doc["sweep"]
    lines.append(f"{'policy':<20} {'runtime s':>10} {'executor-s':>11}  executors")
    for r in rows:
        lines.append(f"{r['policy']:<20} {r['runtime_seconds']:>10.1f} {r['executor_seconds']:>11.0f}  "
                     f"{sizes_text(r['executors'])}" + (f"  ({r['note']})" if r.get("note") else ""))
    for r in rows:
        if r["policy"].startswith("static-") or "result" not in doc and not _changes(r):
            continue
        lines.append(f"decisions of {r['policy']}:")
        lines += [f"  superstep {d['superstep']:>3}: {d['decision']:<4} {d['reason']}" for d in r["decisions"]]
    return "\n".join(lines)


def _changes(r: dict[str, Any]) -> bool:
    return any(d["decision"] != "same" for d in r["decisions"])


def sizes_text(executors: list[int]) -> str:
    """``4x8 -> 3x9`` for a run's executor counts by superstep."""
    out, prev, n = [], None, 0
    for e in [*executors, None]:
        if e == prev:
            n += 1
            continue
        if prev is not None:
            out.append(f"{prev}x{n}")
        prev, n = e, 1
    return " -> ".join(out)
