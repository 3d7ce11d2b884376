"""The live progress line of ``iterflow run``: one line per superstep with an estimate of the
time left, so a user can tell early whether to wait or to stop a run.

Time left = (seconds one more superstep is expected to take) x (supersteps left). The
supersteps left are the run's horizon the loop records with every superstep
(:class:`~iterflow.loop.plan.RunPlan`, the rule the policies use too): known when the run is
bounded by its iteration count only, estimated from the delta's geometric trend under a
tolerance. Everything here is plain Python (no Spark).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Sequence

from iterflow.loop.plan import RunPlan
from iterflow.loop.records import SuperstepRecord


def _finite(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def superstep_seconds(record: SuperstepRecord, walls: Sequence[float]) -> float | None:
    """Seconds the next superstep is expected to take: the model's prediction for it when the
    record carries one (``next_predicted_seconds``), else its prediction for this superstep,
    else the mean of the last three measured supersteps after the first (JIT warm-up)."""
    nxt = record.actuated.next_predicted_seconds if record.actuated is not None else None
    for value in (nxt, record.predicted.predicted_seconds):
        if _finite(value) and value > 0:
            return float(value)
    recent = [w for w in list(walls[1:])[-3:] if _finite(w)] or [w for w in walls[-1:] if _finite(w)]
    return sum(recent) / len(recent) if recent else None


def _duration(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.1f}s"
    minutes, secs = divmod(int(round(seconds)), 60)
    return f"{minutes}m{secs:02d}s" if minutes < 60 else f"{minutes // 60}h{minutes % 60:02d}m"


@dataclass
class Progress:
    """Formats one line per superstep; keeps the times seen so far. ``plan``: where the run
    stops, handed over by the runner once the program is built (:meth:`use`)."""

    plan: RunPlan | None = None
    walls: list[float] = field(default_factory=list)

    def use(self, plan: RunPlan) -> None:
        self.plan = plan

    def line(self, record: SuperstepRecord) -> str:
        ran, decided, act = record.ran, record.decided, record.actuated
        i = ran.superstep
        self.walls.append(ran.wall_seconds)
        plan = self.plan or RunPlan()
        bound = "" if plan.max_iterations is None else ("/" if plan.tol is None else "/<=") + str(plan.max_iterations)
        parts = [f"superstep {i:>4}{bound}", f"{ran.wall_seconds:7.2f}s",
                 f"executors {ran.executors}", f"cores {ran.cores}"]
        pred = record.predicted.predicted_seconds
        if _finite(pred):
            parts.append(f"predicted {pred:.2f}s")
        if ran.delta is not None:
            parts.append(f"delta {ran.delta:.3g}" + (f" (tol {plan.tol:g})" if plan.tol is not None else ""))
        left = decided.remaining_supersteps if decided is not None else None
        per = superstep_seconds(record, self.walls)
        if left is None or (left and per is None):
            parts.append("remaining ?")
        else:
            approx = "~" if decided is not None and (decided.remaining_estimated or plan.tol is not None) else ""
            parts.append(f"remaining {_duration(left * (per or 0.0))} ({approx}{left} supersteps)")
        decision = decided.decision if decided is not None else "same"
        reason = decided.reason if decided is not None else ""
        parts.append(f"decision {decision}" + (f": {reason}" if decision != "same" and reason else ""))
        moved = act.bins_moved_fraction if act is not None else None
        if _finite(moved):
            parts.append(f"relayout to {act.partitions_after or ran.partitions} partitions "
                         f"({100 * moved:.1f}% of bins moved)")
        if act is not None and act.variant_after:
            parts.append(f"step -> {act.variant_after}")
        return "  ".join(parts)
