"""The replay loop: the driver's ``TargetPolicy`` at every job barrier of a traced job, no Spark.

Superstep ``i`` of a replay is job ``i − 1`` of the trace (job 0, the setup, is superstep 1:
Ellis rescaled between any two jobs, so the policy may decide after it too). A replay:

1. **plans the start** (before the run, as ``iterflow run --executors`` would be chosen): the
   candidate size with the fewest predicted executor-seconds whose predicted runtime (the
   model's quantile) is within ``target / (1 + margin)``; none: the fastest;
2. runs each job at the current size for the duration the trace draws
   (:meth:`~iterflow.simulate.trace.EllisTrace.draw`), plus the rescale cost on the first job
   after a change (recorded as that job's ``cold_seconds``, as the driver records it);
3. at each barrier builds the job's :class:`~iterflow.loop.records.SuperstepRecord` and asks
   ``policy.decide(history, model, plan=RunPlan(jobs))`` -- the driver's call -- with the
   :class:`~iterflow.simulate.trace.ProfileModel` positioned after the jobs done.

The policy object is :class:`~iterflow.policies.rules.TargetPolicy` itself, bounded to the
candidate sizes and told the learned rescale cost as its prior; its hysteresis, cooldown and
warm-up are parameters (:class:`Settings`).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from iterflow.loop.plan import RunPlan
from iterflow.loop.records import Actuated, Decided, Predicted, Ran, SuperstepRecord
from iterflow.policies.rules import TargetPolicy
from iterflow.simulate.trace import EllisTrace, ProfileModel


@dataclass(frozen=True)
class Settings:
    """The ``TargetPolicy`` parameters a replay uses (see the README for why these values).

    ``margin``: the safety margin the rule keeps below the time left (0: the model's
    ``quantile`` is the margin); ``slack``: how far ahead before it scales in; ``wait_count`` / ``cooldown`` / ``warmup``: the base mechanics.
    ``rescale_seconds``: charged per rescale (None: learned from the recorded runs).
    """

    margin: float = 0.0
    slack: float = 0.5
    quantile: float = 0.9
    wait_count: int = 1
    cooldown: int = 1
    warmup: int = 0
    rescale_seconds: float | None = None


@dataclass
class Replay:
    """One replayed run: the size and duration of each job, and the decisions with reasons
    (``(after job, "start"|"up"|"down"|"same", reason)``)."""

    scale_outs: list[int] = field(default_factory=list)
    seconds: list[float] = field(default_factory=list)
    decisions: list[tuple[int, str, str]] = field(default_factory=list)

    @property
    def runtime(self) -> float:
        return float(np.sum(self.seconds))

    @property
    def executor_seconds(self) -> float:
        return float(np.dot(self.scale_outs, self.seconds))


def plan_start(model: ProfileModel, target: float, margin: float) -> tuple[int, str]:
    """The size to start at, and why (step 1 of the module docstring)."""
    S = np.array(model.trace.scale_outs)
    T = model.table[:, 0]
    ok = np.flatnonzero(T <= target / (1 + margin))
    if ok.size:
        k = int(ok[np.argmin(S[ok] * T[ok])])
        return int(S[k]), (f"plan: {S[k]} executors, {model.quantile:.0%} of the profile within {T[k]:.1f}s for {S[k] * T[k]:.0f} executor-seconds, "
                           f"the cheapest within target {target:.1f}s / (1 + margin {margin:g})")
    k = int(np.argmin(T))
    return int(S[k]), f"plan: no size within target {target:.1f}s / (1 + margin {margin:g}); the fastest, {S[k]} ({T[k]:.1f}s)"


def replay_policy(model: ProfileModel, target: float, u: np.ndarray, settings: Settings = Settings()) -> Replay:
    """One replay of ``TargetPolicy(target)`` with the draws ``u`` (one per job) and ``model``
    (positioned by the replay; built once per trace, as its quantiles take a moment)."""
    trace = model.trace
    cost = trace.rescale_seconds if settings.rescale_seconds is None else settings.rescale_seconds
    size, why = plan_start(model, target, settings.margin)
    policy = TargetPolicy(target, margin=settings.margin, slack=settings.slack,
                          min_executors=min(trace.scale_outs), max_executors=max(trace.scale_outs),
                          start_executors=size, wait_count=settings.wait_count, cooldown=settings.cooldown,
                          warmup=settings.warmup, max_iterations=trace.n_jobs, rescale_seconds=cost)
    plan = RunPlan(trace.n_jobs)
    out = Replay(decisions=[(-1, "start", why)])
    history: list[SuperstepRecord] = []
    cold: float | None = None
    for k in range(trace.n_jobs):
        t = float(trace.draw(k, size, u[k])) + (cold or 0.0)
        out.scale_outs.append(size)
        out.seconds.append(t)
        rec = SuperstepRecord(Ran(k + 1, t, size, size, 1), predicted=Predicted(cold_seconds=cold))
        if k == trace.n_jobs - 1:
            break
        reconf = policy.decide([*history, rec], model.at(k + 1), plan=plan)
        new, reason = reconf.executors or size, reconf.reason
        if trace.index(new) is None:  # the model forbids it, so the rule should never ask
            new = min((s for s in trace.scale_outs if s >= new), default=max(trace.scale_outs))
            reason += f"; {reconf.executors} executors were never profiled: {new}"
        decision = reconf.decision(size) if new != size else "same"
        changed = new != size
        rec = rec.with_(decided=Decided(decision, reason),
                        actuated=Actuated(new, new, 0.0) if changed else None)
        history.append(rec)
        out.decisions.append((trace.jobs[k], decision, reason))
        cold, size = (cost if changed else None), new
    return out


def replay_static(trace: EllisTrace, scale_out: int, u: np.ndarray) -> Replay:
    """One replay of every job at ``scale_out`` with the draws ``u``."""
    n = trace.n_jobs
    return Replay([scale_out] * n, [float(trace.draw(k, scale_out, u[k])) for k in range(n)])


def draws(trace: EllisTrace, replays: int, seed: int) -> np.ndarray:
    """The uniforms of every replay, shape ``(replays, jobs)``: one per (replay, job), shared
    by every target, the policy and every static size (common random numbers)."""
    return np.random.default_rng(seed).random((replays, trace.n_jobs))
