"""The Pareto report's bound: what any policy could reach at best, from a session's static runs
(:mod:`iterflow.simulate.bounds`), with rescales free and priced as measured -- apart from the
report (:mod:`pareto_report`) because ``cold_start_bound.py`` reads it over many sessions.
"""
from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from iterflow.loop.records import records
from iterflow.loop.rescales import rescale_costs
from iterflow.simulate import bounds

MET = 0.05  # a target is met within 5 %
GOAL_COST = 1.15  # the cold-start target goal: at most this times the cheapest static size's executor-s


def best_possible(job: str, labels: list[str], targets: list[float], steps: pd.DataFrame, W: int,
                  given: float | None = None, calibration: list[Any] | None = None) -> list[str]:
    """The goals' figures for the best schedule of per-superstep sizes the static runs allow
    (exact future, free rescales, warm executors): where even that misses a goal, the cluster's
    scaling rules it out. Times per superstep are wall + barrier seconds, median over a size's runs."""
    found = static_matrix(steps)
    if found is None:
        return []
    sizes, T = found
    if sizes != list(range(1, W + 1)):
        return [f"  best possible: static runs at sizes {sizes} only, need 1..{W}"]
    t1, tmax = T[0].sum(), T[-1].sum()
    out = [f"  best any policy could do (one size per superstep, chosen knowing every superstep's time at "
           f"every size from the static runs; rescales free, new executors warm): supersteps "
           f"{T.shape[1]}, static-1 {t1:.1f}s, static-{W} {tmax:.1f}s"]
    f = bounds.fastest(sizes, T, 1.2 * t1)
    out.append(f"    fastest within 1.2x static-1's executor-s: {1 - f.seconds / t1:+.0%} shorter "
               f"[{f.path}]" + (" (goal on WCC >= 30%: out of reach on this cluster)"
                                if job == "wcc" and 1 - f.seconds / t1 < 0.30 else ""))
    c = bounds.cheapest(sizes, T, 1.1 * tmax)
    saved = 1 - c.executor_seconds / (W * tmax)
    out.append(f"    efficiency within +10% of static-{W}: {saved:+.0%} executor-s saved [{c.path}]"
               + (" (goal on WCC >= 35%: out of reach on this cluster)" if job == "wcc" and saved < 0.35 else ""))
    out += _target_bound(targets, sizes, T, {})
    priced, whose = rescale_prices(steps, calibration, given)
    if priced["up"] is None:
        return out + ["    (no scale-out measured, by the adaptive runs or the calibration job: the bound with priced "
                      "rescales needs one)"]
    start = starts(steps)
    out.append(f"  the same with rescales priced as measured here ({whose}; registration still free), from where "
               f"each policy starts:")
    f = bounds.fastest(sizes, T, 1.2 * t1, start=start.get("fastest", 1), **priced)
    unpaid = " (goal on WCC >= {:.0%}: out of reach with rescales priced as measured here)"
    short = 1 - f.seconds / t1 if f else 0.0
    out.append("    fastest within 1.2x static-1's executor-s: "
               + (f"{short:+.0%} shorter [{f.path}]" if f else "none")
               + (unpaid.format(0.30) if job == "wcc" and short < 0.30 else ""))
    c = bounds.cheapest(sizes, T, 1.1 * tmax, start=start.get("efficiency", W), **priced)
    saved = 1 - c.executor_seconds / (W * tmax) if c else 0.0
    out.append(f"    efficiency within +10% of static-{W}: "
               + (f"{saved:+.0%} executor-s saved [{c.path}]" if c else "none")
               + (unpaid.format(0.35) if job == "wcc" and saved < 0.35 else ""))
    out.append(_phased_line(sizes, T, t1, priced["light"] if priced["light"] is not None else priced["down"], job))
    f0, c0 = bounds.fastest(sizes, T, 1.2 * t1, **priced), bounds.cheapest(sizes, T, 1.1 * tmax, **priced)
    out.append("    the same from the best start (what a start planned from earlier runs can reach): fastest "
               + (f"{1 - f0.seconds / t1:+.0%} shorter [{f0.path}]" if f0 else "none") + "; efficiency "
               + (f"{1 - c0.executor_seconds / (W * tmax):+.0%} executor-s saved [{c0.path}]" if c0 else "none"))
    for pol in labels:
        out += _target_bound(targets, sizes, T, dict(start=start.get(pol, W), **priced), pol)
    return out + _start_line(targets, sizes, T, priced)


def starts(steps: pd.DataFrame) -> dict[str, int]:
    """Where each adaptive policy's runs started (the median of their first supersteps' executors)."""
    first = steps[~steps["policy"].astype(str).str.startswith("static-") & (steps["superstep"] == 1)]
    return {p: int(g["executors"].median()) for p, g in first.groupby("policy")}


def static_matrix(steps: pd.DataFrame) -> tuple[list[int], np.ndarray] | None:
    """``(sizes, T[size, superstep])`` of a job's static runs (wall + barrier seconds, the median
    run per superstep: :func:`~iterflow.simulate.bounds.static_times`), or ``None`` without any."""
    st = steps[steps["policy"].astype(str).str.startswith("static-")]
    if st.empty:
        return None
    runs: dict[int, list[list[float]]] = {}
    for (pol, _), r in st.groupby(["policy", "run_id"], sort=False):
        r = r.sort_values("superstep")
        runs.setdefault(int(str(pol).split("-")[1]), []).append(
            list(r["wall_seconds"] + r["barrier_seconds"].fillna(0.0)))
    return bounds.static_times(runs)


def _phased_line(sizes: list[int], T: np.ndarray, t1: float, down: float | None, job: str) -> str:
    """``fastest``'s goal over the schedules a plan runs without per-superstep foresight: one
    larger size for the first supersteps, then 1 (:func:`~iterflow.simulate.bounds.phased`)."""
    plans = bounds.phased(sizes, T, base=1, down=down)
    within = min((p for p in plans if p.executor_seconds <= 1.2 * t1), key=lambda p: p.seconds)
    short = [p for p in plans if p.seconds <= 0.7 * t1]
    head = (f"    one larger size for the first supersteps, then 1 (a release priced as above; what a plan runs "
            f"without knowing each superstep's noise): within 1.2x static-1's executor-s {1 - within.seconds / t1:+.0%} "
            f"shorter [{_phase(within)}]")
    if not short:
        return head + "; none is 30% shorter"
    cheap = min(short, key=lambda p: p.executor_seconds)
    return head + (f"; 30% shorter costs at least {cheap.executor_seconds / t1:.2f}x static-1's executor-s "
                   f"[{_phase(cheap)}]" + (" (the WCC goal's 1.2x: out of reach for such a plan)"
                                           if job == "wcc" and cheap.executor_seconds > 1.2 * t1 else ""))


def _phase(b: bounds.Bound) -> str:
    """``3 x4, then 1`` for a phased schedule."""
    first = b.sizes[0]
    k = next((i for i, e in enumerate(b.sizes) if e != first), len(b.sizes))
    return f"{first} x{k}" + (f", then {b.sizes[k]}" if k < len(b.sizes) else "")


def target_reach(targets: Any, sizes: list[int], T: np.ndarray, priced: dict,
                 safety: float = 0.0) -> list[tuple[bool, float]]:
    """Per target: whether the best schedule (:func:`~iterflow.simulate.bounds.cheapest`, rescales
    ``priced``) meets it within :data:`MET`, and its executor-s over the cheapest static size's
    meeting it (both read off ``T``; NaN where no static size or no schedule does). ``safety``:
    the schedule must end that much before the target's bound (what a policy keeps for its
    error); the static sizes are judged on the bound itself."""
    out = []
    for target in targets:
        meet = [e * T[i].sum() for i, e in enumerate(sizes) if T[i].sum() <= target * (1 + MET)]
        b = bounds.cheapest(sizes, T, target * (1 + MET) / (1 + safety), **priced)
        out.append((b is not None, b.executor_seconds / min(meet) if meet and b is not None else np.nan))
    return out


def _target_bound(targets: list[float], sizes: list[int], T: np.ndarray, priced: dict,
                  label: str = "target") -> list[str]:
    reach = target_reach(targets, sizes, T, priced)
    met = sum(ok for ok, _ in reach)
    ratios = [r for _, r in reach if not np.isnan(r)]
    if not ratios:
        return []
    return [f"    {label}: {met} of {len(targets)} reachable; executor-s vs the cheapest static meeting it, median "
            f"{np.median(ratios):.2f}x (best {min(ratios):.2f}x, largest {max(ratios):.2f}x, "
            f"{sum(r <= GOAL_COST for r in ratios)} within {GOAL_COST}x) over {len(ratios)} targets a static size meets"]


def goal_count(reach: list[tuple[bool, float]]) -> int:
    """Of :func:`target_reach`'s targets, those met at <= :data:`GOAL_COST` the cheapest static
    size's executor-s (the cold-start goal's two conditions on one target)."""
    return sum(ok and r <= GOAL_COST + 1e-9 for ok, r in reach)


def _start_line(targets: list[float], sizes: list[int], T: np.ndarray, priced: dict) -> list[str]:
    """The cold-start goal's count for the best schedule from each start size (a cold start picks
    its start without the job), and ending 10 % early (what a policy keeps for its error):
    ``cold_start_bound.py`` pools it over sessions."""
    if not targets:
        return []

    def counts(safety: float) -> str:
        return ", ".join(f"{s}: {goal_count(target_reach(targets, sizes, T, dict(start=s, **priced), safety))}"
                         for s in sizes)
    return [f"    target from each start size, met at <= {GOAL_COST}x (of {len(targets)}): {counts(0.0)}; "
            f"ending 10% early (a policy's safety for its error): {counts(0.1)}"]


def rescale_price(steps: pd.DataFrame, direction: str, light: bool | None = None) -> float | None:
    """The median price of the adaptive runs' rescales in ``direction`` ("up", "down";
    ``rescale_costs``: pause and cold supersteps; ``light``: only the releases that are, or are
    not, to one executor), or ``None`` when none was made."""
    prices = []
    for _, run in steps[~steps["policy"].astype(str).str.startswith("static-")].groupby("run_id", sort=False):
        prices += rescale_costs(records(run.sort_values("superstep")), direction, light)
    return _median(prices)


def rescale_prices(steps: pd.DataFrame, calibration: list[Any] | None = None,
                   given: float | None = None) -> tuple[dict[str, float | None], str]:
    """The bound's prices (:mod:`iterflow.simulate.bounds`: ``up``, ``down``, ``light``) and what
    they are. A scale-out: ``given`` (``--scale-out-seconds``), else the calibration job's median
    -- its executors came and worked, the price ``target`` itself is told -- else the adaptive
    runs' (few, and some withdrawn before their executors came: stop60all's WCC, one, 0.0 s). A
    release to one executor (``light``: it rebuilds nothing at its barrier) and one that rebuilds
    its cached blocks (``down``), each the adaptive runs' median where they made one, else the
    calibration job's (``None``: one superstep at the new size)."""
    priced, said = {}, []
    for key, what, direction, light in (("up", "a scale-out", "up", None),
                                        ("light", "a release to one executor", "down", True),
                                        ("down", "one that rebuilds", "down", False)):
        runs = ("the adaptive runs'", rescale_price(steps, direction, light))
        ours = ("the calibration job's", _median(rescale_costs(calibration or [], direction, light)))
        order = [("given: --scale-out-seconds", given), ours, runs] if key == "up" else [runs, ours]
        whose, value = next(((w, v) for w, v in order if v is not None), (None, None))
        priced[key] = value
        said.append(f"{what} +{value:.1f}s, {whose} median" if value is not None else f"{what}: one superstep at the new size")
    return priced, "; ".join(said)


def _median(prices: list[float]) -> float | None:
    return float(np.median(prices)) if prices else None
