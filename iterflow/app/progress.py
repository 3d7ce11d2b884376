"""The live progress line of ``iterflow run``: one line per superstep with an estimate of the
time left, so a user can tell early whether to wait or to stop a run.

Time left = (seconds one more superstep is expected to take) x (supersteps left). Supersteps
left are known when the run is bounded by its iteration count only; with a tolerance they are
estimated from the geometric rate at which the program's delta approaches ``tol``. Everything
here is plain Python (no Spark), so the estimate is unit-tested on its own.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from iterflow.policies.forecast import log_slope

RATE_WINDOW = 5  # deltas fitted for the convergence rate, as the target policy's forecast does


def _finite(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def supersteps_to_converge(deltas: Sequence[float | None], tol: float) -> int | None:
    """Supersteps still needed until the delta falls to ``tol``, extrapolating the geometric
    trend of the last few deltas (the fit the ``target`` policy uses, :func:`log_slope`);
    ``None`` when that cannot be told: fewer than three positive deltas, a delta that is not
    shrinking, or ``tol`` 0 on a continuous delta, which a geometric sequence never reaches.

    ``tol`` 0 on a delta that counts things (WCC: labels changed) means "until it is below 1".
    """
    if deltas and _finite(deltas[-1]) and deltas[-1] <= tol:
        return 0
    tail: list[tuple[float, float]] = []
    for i in range(len(deltas) - 1, -1, -1):
        d = deltas[i]
        if not _finite(d) or d <= 0 or len(tail) == RATE_WINDOW:
            break
        tail.insert(0, (float(i), float(d)))
    target = tol
    if target <= 0:
        if not tail or not all(d.is_integer() for _, d in tail):
            return None
        target = 0.5  # a count below 1 is 0
    slope = log_slope(tail)
    if slope is None or slope > -1e-6:
        return None
    return max(1, math.ceil((math.log(target) - math.log(tail[-1][1])) / slope - 1e-9))


def remaining_supersteps(done: int, max_iterations: int | None, tol: float | None,
                         deltas: Sequence[float | None] = ()) -> int | None:
    """Supersteps left after ``done`` of them: ``max_iterations - done`` without a tolerance;
    with one, the convergence estimate capped by that bound; ``None`` when unknown."""
    bound = None if max_iterations is None else max(max_iterations - done, 0)
    if tol is None or bound == 0:
        return bound
    estimate = supersteps_to_converge(deltas, tol)
    if estimate is None:
        return None
    return estimate if bound is None else min(estimate, bound)


def superstep_seconds(record: dict[str, Any], walls: Sequence[float]) -> float | None:
    """Seconds the next superstep is expected to take: the model's prediction for it when the
    record carries one (``next_predicted_seconds``), else its prediction for this superstep,
    else the mean of the last three measured supersteps after the first (JIT warm-up)."""
    for key in ("next_predicted_seconds", "predicted_seconds"):
        value = record.get(key)
        if _finite(value) and value > 0:
            return float(value)
    recent = [w for w in list(walls[1:])[-3:] if _finite(w)] or [w for w in walls[-1:] if _finite(w)]
    return sum(recent) / len(recent) if recent else None


def run_limits(algorithm: str, input: str, fmt: str | None, iterations: int | None,
               tol: float | None) -> tuple[int | None, float | None]:
    """``(max_iterations, tol)`` the run will use, with the defaults of
    :func:`iterflow.app.runner.build_program` (kept in step with it by a test)."""
    if algorithm == "kmeans":
        return iterations or 20, (1e-4 if tol is None and iterations is None else tol)
    if algorithm == "wcc":
        return iterations or 1000, (0.0 if tol is None else tol)
    if iterations is None and fmt == "graphalytics":
        try:
            from iterflow.inputs.graphio import graphalytics_paths, read_properties

            props = graphalytics_paths(input)[2]
            value = read_properties(Path(props)).get("pr.num-iterations") if props else None
            iterations = int(value) if value else None
        except (OSError, ValueError):
            return None, tol  # the run itself reports the bad file
    return iterations or (100 if tol else 20), tol


def _duration(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.1f}s"
    minutes, secs = divmod(int(round(seconds)), 60)
    return f"{minutes}m{secs:02d}s" if minutes < 60 else f"{minutes // 60}h{minutes % 60:02d}m"


@dataclass
class Progress:
    """Formats one line per superstep; keeps the deltas and times seen so far."""

    max_iterations: int | None = None
    tol: float | None = None
    deltas: list[float | None] = field(default_factory=list)
    walls: list[float] = field(default_factory=list)

    def line(self, record: dict[str, Any]) -> str:
        i = int(record["superstep"])
        self.deltas.append(record.get("delta"))
        self.walls.append(record.get("wall_seconds", float("nan")))
        bound = "" if self.max_iterations is None else ("/" if self.tol is None else "/<=") + str(self.max_iterations)
        parts = [f"superstep {i:>4}{bound}", f"{record['wall_seconds']:7.2f}s",
                 f"executors {record['executors']}", f"cores {record['cores']}"]
        pred = record.get("predicted_seconds")
        if _finite(pred):
            parts.append(f"predicted {pred:.2f}s")
        delta = record.get("delta")
        if delta is not None:
            parts.append(f"delta {delta:.3g}" + (f" (tol {self.tol:g})" if self.tol is not None else ""))
        converging = record.get("decision") == "same" and record.get("reason") == "converged"
        left = 0 if converging else remaining_supersteps(i, self.max_iterations, self.tol, self.deltas)
        per = superstep_seconds(record, self.walls)
        if left is None or (left and per is None):
            parts.append("remaining ?")
        else:
            approx = "" if self.tol is None else "~"
            parts.append(f"remaining {_duration(left * (per or 0.0))} ({approx}{left} supersteps)")
        decision = record.get("decision", "same")
        reason = record.get("reason") or ""
        parts.append(f"decision {decision}" + (f": {reason}" if decision != "same" and reason else ""))
        moved = record.get("bins_moved_fraction")
        if _finite(moved):
            parts.append(f"relayout to {record.get('partitions_after', record.get('partitions'))} partitions "
                         f"({100 * moved:.1f}% of bins moved)")
        if record.get("variant_after"):
            parts.append(f"step -> {record['variant_after']}")
        return "  ".join(parts)
