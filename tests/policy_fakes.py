"""Fakes of the policy tests (no Spark): a fitted model ``a + b·work/cores``, hand-made history
rows, and a simulated cluster that runs supersteps at that time (with noise) and may grant fewer
executors than asked -- as dask/distributed's adaptive tests drive their policies."""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from fakes import H

QUICK = dict(wait_count=1, cooldown=0, warmup=0, scale_in_seconds=0)  # the bare rule: no hysteresis,
# cooldown, warm-up, and free scale-ins


class FakeModel:
    """A fitted model: ``a + b·work/scale_out`` seconds."""

    X_ = np.zeros((1, 2))  # "fitted"
    error_estimate_ = 0.05

    def __init__(self, a: float = 1.0, b: float = 0.01) -> None:
        self.a, self.b = a, b

    def predict_seconds(self, scale_out: float, work: float = 1.0) -> float:
        return self.a + self.b * work / scale_out


class UnfittedModel:
    def predict_seconds(self, scale_out: float, work: float = 1.0) -> float:  # pragma: no cover
        raise AssertionError("an unfitted model must not be asked")


def row(i: int, executors: int, wall: float, work: float = 10_000.0, delta: float | None = None,
        cores_per_executor: int = 1, **extra) -> dict:
    return {"superstep": i, "executors": executors, "cores": executors * cores_per_executor,
            "wall_seconds": wall, "work": work, "delta": delta, "partitions": 8, **extra}


def flat(n: int, executors: int, model: FakeModel, work: float = 10_000.0) -> list[dict]:
    return [row(i, executors, model.predict_seconds(executors, work), work) for i in range(1, n + 1)]


@dataclass
class FakeCluster:
    """Runs supersteps at ``(a + b·work/cores)·noise``; grants at most ``grant`` executors.

    Rows follow the driver: after the policy decides at a barrier, that row gets
    ``executors_requested`` and ``executors_active``; the next superstep runs at the new size.
    """

    a: float = 2.0
    b: float = 0.1
    sigma: float = 0.0
    grant: int | None = None
    seed: int = 0
    history: list[dict] = field(default_factory=list)

    def run(self, policy, executors: int, works, model=None, learn: bool = False) -> list[dict]:
        rng = np.random.default_rng(self.seed)
        self.history = []
        for i, w in enumerate(works, start=1):
            t = (self.a + self.b * w / executors) * math.exp(rng.normal(0.0, self.sigma))
            rec = row(i, executors, t, w, delta=float(len(works) - i))
            if learn and i > 1:
                model.observe(executors, w, t)
            self.history.append(rec)
            reconf = policy.decide(**H(self.history, model))
            rec.update(barrier_seconds=0.0, reason=reconf.reason)
            if reconf.executors is not None and reconf.executors != executors:
                rec["executors_requested"] = reconf.executors
                executors = min(reconf.executors, self.grant or reconf.executors)
            else:
                rec["executors_requested"] = executors
            rec["executors_active"] = executors
        return self.history


def total_seconds(history) -> float:
    return sum(r["wall_seconds"] for r in history)


def executor_seconds(history) -> float:
    return sum(r["executors"] * r["wall_seconds"] for r in history)


def sizes(history) -> list[int]:
    return [r["executors"] for r in history]


def direction_changes(history) -> int:
    """How often the run went up after going down or down after going up."""
    steps = [np.sign(b - a) for a, b in zip(sizes(history), sizes(history)[1:]) if b != a]
    return sum(1 for s, t in zip(steps, steps[1:]) if s != t)
