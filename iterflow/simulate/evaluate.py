"""Score the policy, every static size and the recorded runs against the same targets.

Definitions (README, "Plan before you run"):

* **violation**: runtime > target (strict; a relative 1e-9 absorbs float rounding of sums).
  ``violation_rate_5pct`` (human output only) counts runtime > 1.05 × target, the "met
  (within 5 %)" tolerance the issues use elsewhere;
* **mean_overshoot**: mean of ``max(0, runtime / target − 1)``;
* **executor_seconds**: mean of Σ over jobs (setup job 0 included) of duration × scale-out;
* means are over every (target, replay) pair: each target is replayed ``replays`` times with
  seeded draws shared by the policy and the static sizes;
* **static** ``s``: every job at ``s``, the same draws; **cheapest static** (per target): the
  static size with the fewest executor-seconds among those that meet the target in at least
  90 % of its replays (the goal's own bar); where none does, the one that misses least;
* **recorded**: the runs after the profiling runs exactly as the trace has them. Ellis's own
  targets are not in the file, so every recorded run is scored against every target -- "had
  this been the target, did Ellis's run meet it" -- and its executor-seconds do not depend
  on the target. A run with fewer jobs than the profile (aborted) counts as it is.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable

import numpy as np

from iterflow.simulate.replay import Replay, Settings, draws, replay_policy, replay_static
from iterflow.simulate.trace import EllisTrace, ProfileModel

GOAL_VIOLATIONS = 0.10
EPS = 1e-9


def score(runtimes: Iterable[float], targets: Iterable[float], executor_seconds: Iterable[float]) -> dict[str, float]:
    """The three figures of the contract over paired (runtime, target, executor-seconds)."""
    rt, tg = np.asarray(list(runtimes), float), np.asarray(list(targets), float)
    es = np.asarray(list(executor_seconds), float)
    if rt.size == 0:
        return {"violation_rate": None, "mean_overshoot": None, "executor_seconds": None}
    return {"violation_rate": float(np.mean(rt > tg * (1 + EPS))),
            "mean_overshoot": float(np.mean(np.maximum(0.0, rt / tg - 1.0))),
            "executor_seconds": float(np.mean(es))}


def rate_5pct(runtimes: Iterable[float], targets: Iterable[float]) -> float | None:
    rt, tg = np.asarray(list(runtimes), float), np.asarray(list(targets), float)
    return float(np.mean(rt > 1.05 * tg)) if rt.size else None


@dataclass
class Evaluation:
    """Every replay of one trace: ``policy[t][r]``, ``static[s][r]`` (the same for every
    target), the recorded runs, and the cheapest static size per target."""

    trace: EllisTrace
    targets: np.ndarray
    settings: Settings
    replays: int
    seed: int
    policy: list[list[Replay]] = field(default_factory=list)
    static: dict[int, list[Replay]] = field(default_factory=dict)
    cheapest: list[int] = field(default_factory=list)

    def _pairs(self, per_target: list[list[Replay]]) -> tuple[list[float], list[float], list[float]]:
        rt, tg, es = [], [], []
        for t, runs in zip(self.targets, per_target):
            for r in runs:
                rt.append(r.runtime), tg.append(t), es.append(r.executor_seconds)
        return rt, tg, es

    def figures(self) -> dict[str, Any]:
        """The contract's JSON object (plus ``targets`` and ``cheapest_static``)."""
        nt = len(self.targets)
        out: dict[str, Any] = {"policy": score(*self._pairs(self.policy))}
        out["static"] = {str(s): score(*self._pairs([runs] * nt)) for s, runs in self.static.items()}
        rec = self.trace.recorded
        out["recorded"] = score([r.runtime for r in rec for _ in self.targets], [t for _ in rec for t in self.targets],
                                [r.executor_seconds for r in rec for _ in self.targets])
        chosen = [[self.static[s][r] for r in range(self.replays)] for s in self.cheapest]
        out["cheapest_static"] = {**score(*self._pairs(chosen)), "scale_outs": list(self.cheapest)}
        out["targets"] = [float(t) for t in self.targets]
        return out

    def violation_5pct(self) -> dict[str, float | None]:
        """``violation_rate_5pct`` of the policy, the cheapest static sizes and the recorded runs."""
        rec = self.trace.recorded
        chosen = [[self.static[s][r] for r in range(self.replays)] for s in self.cheapest]
        return {"policy": rate_5pct(*self._pairs(self.policy)[:2]),
                "cheapest_static": rate_5pct(*self._pairs(chosen)[:2]),
                "recorded": rate_5pct([r.runtime for r in rec for _ in self.targets],
                                      [t for _ in rec for t in self.targets])}


def cheapest_meeting(static: dict[int, list[Replay]], target: float) -> int:
    """The static size with the fewest executor-seconds meeting ``target`` in >= 90 % of its
    replays; where none does, the one with the fewest violations (then the cheapest)."""
    def key(s: int) -> tuple[float, float]:
        runs = static[s]
        miss = float(np.mean([r.runtime > target * (1 + EPS) for r in runs]))
        return (max(miss - GOAL_VIOLATIONS, 0.0), float(np.mean([r.executor_seconds for r in runs])))
    return min(static, key=key)


def evaluate(trace: EllisTrace, n_targets: int, replays: int = 20, seed: int = 0,
             settings: Settings = Settings()) -> Evaluation:
    """Replay the policy at every target and every static size, ``replays`` times each."""
    ev = Evaluation(trace, trace.targets(n_targets), settings, replays, seed)
    U = draws(trace, replays, seed)
    ev.static = {s: [replay_static(trace, s, u) for u in U] for s in trace.scale_outs}
    model = ProfileModel(trace, settings.quantile, seed=seed)
    ev.policy = [[replay_policy(model, float(t), u, settings) for u in U] for t in ev.targets]
    ev.cheapest = [cheapest_meeting(ev.static, float(t)) for t in ev.targets]
    return ev
