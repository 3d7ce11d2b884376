"""What ``iterflow simulate --trace`` prints: one JSON object, or tables for a person.

The JSON object has the contract's keys ``policy``, ``static`` (by scale-out) and
``recorded``, each ``{violation_rate, mean_overshoot, executor_seconds}``, and two more:
``targets`` (seconds, ascending) and ``cheapest_static`` (the same figures for the cheapest
static size that meets each target, and those sizes) -- the baseline of the goal.
"""
from __future__ import annotations

import json
import textwrap
from typing import Any

import numpy as np

from iterflow.simulate.evaluate import EPS, Evaluation


def to_json(ev: Evaluation) -> str:
    return json.dumps(ev.figures())


def _f(x: float | None, fmt: str, width: int) -> str:
    return f"{'-' if x is None or not np.isfinite(x) else format(x, fmt):>{width}}"


def _ratio(a: float | None, b: float | None) -> str:
    return "-" if a is None or not b else f"{a / b:.2f}x"


def table(ev: Evaluation, reasons: bool = True) -> str:
    """Per target: the policy's runtime, executor-seconds and (first replay) decisions with
    their reasons, beside every static size; then the summary over all targets."""
    tr, fig = ev.trace, ev.figures()
    sizes = list(ev.static)
    static_rt = {s: float(np.mean([r.runtime for r in ev.static[s]])) for s in sizes}
    static_es = {s: float(np.mean([r.executor_seconds for r in ev.static[s]])) for s in sizes}
    out = [f"{tr.source}: {tr.n_jobs} jobs, profiled scale-outs {', '.join(map(str, tr.scale_outs))}; "
           f"{len(tr.recorded)} recorded runs; {ev.replays} replays per target (seed {ev.seed}); "
           f"rescale cost {ev.settings.rescale_seconds if ev.settings.rescale_seconds is not None else tr.rescale_seconds:.1f}s"
           + ("" if ev.settings.rescale_seconds is not None else f" ({tr.rescale_note})"),
           f"policy: target (margin {ev.settings.margin:g}, slack {ev.settings.slack:g}, model quantile "
           f"{ev.settings.quantile:g}, wait_count {ev.settings.wait_count}, cooldown {ev.settings.cooldown}, "
           f"warm-up {ev.settings.warmup}); runtime = sum of job durations, setup job included"]
    for t, runs, cheap in zip(ev.targets, ev.policy, ev.cheapest):
        rt = np.array([r.runtime for r in runs])
        es = float(np.mean([r.executor_seconds for r in runs]))
        out += ["", f"target {t:.1f}s: policy runtime {rt.mean():.1f}s (max {rt.max():.1f}s, "
                    f"{np.mean(rt > t * (1 + EPS)):.0%} over), {es:.0f} executor-seconds; cheapest static "
                    f"meeting it: {cheap} ({static_es[cheap]:.0f}, policy {_ratio(es, static_es[cheap])})"]
        head = "  static  " + "".join(f"{s:>9}" for s in sizes)
        out += [head,
                "  runtime " + "".join(f"{static_rt[s]:>9.1f}" for s in sizes),
                "  over    " + "".join(f"{np.mean([r.runtime > t * (1 + EPS) for r in ev.static[s]]):>9.0%}"
                                       for s in sizes),
                "  exec-s  " + "".join(f"{static_es[s]:>9.0f}" for s in sizes)]
        first = runs[0]
        out.append(f"  decisions (replay 0: sizes {'/'.join(map(str, _runs_of(first.scale_outs)))}):")
        for job, decision, reason in first.decisions:
            if decision == "same" and not reasons:
                continue
            where = "before job 0" if job < 0 else f"after job {job}"
            out.append(textwrap.fill(f"{where}: {decision}: {reason}", width=160, initial_indent="    ",
                                     subsequent_indent="      "))
    out += ["", _summary(fig, ev.violation_5pct())]
    return "\n".join(out)


def _runs_of(sizes: list[int]) -> list[int]:
    """The sizes a run went through, repeats collapsed."""
    return [s for k, s in enumerate(sizes) if k == 0 or s != sizes[k - 1]]


def _summary(fig: dict[str, Any], v5: dict[str, float | None]) -> str:
    base = fig["cheapest_static"]["executor_seconds"]
    rows = [("policy (target)", fig["policy"], v5["policy"]),
            ("cheapest static", fig["cheapest_static"], v5["cheapest_static"]),
            ("recorded (Ellis)", fig["recorded"], v5["recorded"])]
    rows += [(f"static {s}", r, None) for s, r in fig["static"].items()]
    lines = [f"{'over all targets':<18}{'violations':>11}{'>5% over':>10}{'overshoot':>11}{'exec-s':>10}"
             f"{'vs cheapest':>13}"]
    for name, r, v in rows:
        lines.append(f"{name:<18}{_f(r['violation_rate'], '.0%', 11)}{_f(v, '.0%', 10)}"
                     f"{_f(r['mean_overshoot'], '.1%', 11)}{_f(r['executor_seconds'], '.0f', 10)}"
                     f"{_ratio(r['executor_seconds'], base):>13}")
    return "\n".join(lines)
