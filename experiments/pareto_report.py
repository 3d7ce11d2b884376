"""The Pareto experiment's report (issue 13, item 5): dominance, the issue's goals, the session's
repeatability and the best any policy could do, from the tables ``pareto.py`` saved -- apart
from the runs so that ``pareto.py --from-csv`` reads them again without a cluster.
"""
from __future__ import annotations

import re
from typing import Any

import numpy as np
import pandas as pd

from harness import RESULTS

from iterflow.loop.records import records
from iterflow.loop.rescales import rescale_costs
from iterflow.simulate import bounds

MET = 0.05  # a target is met within 5 %
GOAL_COST = 1.15  # the cold-start target goal: at most this times the cheapest static size's executor-s


def analyse(df: pd.DataFrame, W: int, steps: pd.DataFrame | None = None, up: float | None = None,
            calibration: list[Any] | None = None) -> list[str]:
    """Dominance per adaptive run, the issue's goals, parallel efficiency per static size and,
    given the runs' supersteps, the best any policy could reach (:mod:`iterflow.simulate.bounds`;
    ``up``: a scale-out's price given, ``calibration``: the cluster calibration job's records,
    whose rescales price the bound where :func:`rescale_prices` says)."""
    out = []
    for job, d in df.groupby("job", sort=False):
        st, med = static_runs(d)
        spread = st.groupby("policy")["job_seconds"].agg(lambda s: (s.max() - s.min()) / s.median() if len(s) > 1 else np.nan)
        noise = float(spread.median()) if spread.notna().any() else 0.10
        out.append(f"== {job}: noise {noise:.0%} (median relative spread of a static size's runs, before and "
                   f"after the adaptive ones; largest {float(spread.max()):.0%})")
        t1 = med.loc["static-1", "job_seconds"]
        out.append("  parallel efficiency: " + ", ".join(
            f"{e}: speedup {t1 / med.loc[f'static-{e}', 'job_seconds']:.2f}x ({t1 / med.loc[f'static-{e}', 'job_seconds'] / e:.0%})"
            for e in range(1, W + 1) if f"static-{e}" in med.index))
        for _, r in d[~d["policy"].str.startswith("static-")].iterrows():
            beat = [p for p, m in med.iterrows() if m["job_seconds"] < r["job_seconds"] * (1 - noise)
                    and m["executor_seconds"] < r["executor_seconds"] * (1 - noise)]
            tgt = f" target {r['target_seconds']:.1f}s" if pd.notna(r.get("target_seconds")) else ""
            fixed = len(set(str(r["executors_path"]).split("-"))) == 1
            out.append(f"  {r['policy']}{tgt} rep {r['rep']}: {r['job_seconds']:.1f}s {r['executor_seconds']:.0f} executor-s "
                       f"[{r['executors_path']}] -> {'dominated by ' + ', '.join(beat) if beat else 'not dominated'}"
                       + (" (never rescaled: a static run in all but name)" if fixed else ""))
        out += goals(job, d, med, W)
        out += per_rep(job, d, W)
        if steps is not None and "job" in steps:
            for pol in target_policies(d):
                out += releases(steps[(steps["job"] == job) & (steps["policy"] == pol)], pol)
            out += best_possible(job, d, steps[steps["job"] == job], W, up, calibration)
    return out


def static_runs(d: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The static runs of a job's table ``d`` and each size's median job and executor seconds
    (indexed by ``static-N``): what every adaptive run is judged against."""
    st = d[d["policy"].str.startswith("static-")]
    return st, st.groupby("policy")[["job_seconds", "executor_seconds"]].median()


def per_rep(job: str, d: pd.DataFrame, W: int) -> list[str]:
    """The goals again per repetition, each against its own static passes (the runs before and
    after its adaptive ones), where there are several: a session drifts between reps (stop51w20:
    WCC at 3 executors 20.5-23.0 s in rep 0, 30.3-31.5 s in rep 2), and the pooled medians then
    judge a fast rep's runs by a slow rep's sizes and its targets (set from its own passes) by
    sizes that did not run then."""
    if d["rep"].nunique() < 2:
        return []
    out = ["  per rep, against that rep's own static runs:"]
    for rep, dr in d.groupby("rep"):
        _, med = static_runs(dr)
        if {"static-1", f"static-{W}"} <= set(med.index):
            out += [f"    rep {rep}: {line.strip()}" for line in goals(job, dr, med, W)]
    return out


def target_policies(d: pd.DataFrame) -> list[str]:
    """The ``target`` runs' labels: ``target``, or ``target@<start>`` per start where a session ran
    every target from several (``pareto.py --target-start 3,4``)."""
    return [p for p in dict.fromkeys(d["policy"]) if p == "target" or str(p).startswith("target@")]


def releases(steps: pd.DataFrame, label: str = "target") -> list[str]:
    """``target``'s releases: the finish each predicted ("comfortably ahead: N executors finish
    Ts") against the run's real one (:func:`release_errors`)."""
    every, last = release_errors(steps)

    def say(x: list[float]) -> str:
        return f"{np.median(x):+.0%} ({min(x):+.0%}..{max(x):+.0%}, {len(x)})" if x else "none"
    return [f"  {label}'s releases, real finish over predicted: every release not undone by a scale-out {say(every)}; "
            f"each run's last {say(last)}"]


def release_errors(steps: pd.DataFrame) -> tuple[list[float], list[float]]:
    """Real finish over the finish a release predicted, minus one: for every release not undone
    by a later scale-out, and for each run's last release with no rescale after it (the only
    one whose prediction was meant to be the finish: a release followed by another spends on
    purpose the slack the first left)."""
    every, last = [], []
    for _, g in steps.groupby("run_id", sort=False):
        g = g.sort_values("superstep")
        real = float((g["wall_seconds"] + g["barrier_seconds"].fillna(0)).sum())
        mine: list[float] = []
        for _, r in g.iterrows():
            m = re.search(r"comfortably ahead: \d+ executors finish ([\d.]+)s", str(r.get("reason")))
            if r.get("decision") == "down" and m:
                mine.append(real / float(m.group(1)) - 1)
            elif r.get("decision") == "up":
                mine = []  # a scale-out after a release: its prediction no longer applies
        every += mine
        last += mine[-1:]
    return every, last


def best_possible(job: str, d: pd.DataFrame, steps: pd.DataFrame, W: int, given: float | None = None,
                  calibration: list[Any] | None = None) -> list[str]:
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
    out += _target_bound(d, sizes, T, {})
    priced, whose = rescale_prices(steps, calibration, given)
    if priced["up"] is None:
        return out + ["    (no scale-out measured, by the adaptive runs or the calibration job: the bound with priced "
                      "rescales needs one)"]
    starts = steps[~steps["policy"].astype(str).str.startswith("static-") & (steps["superstep"] == 1)]
    start = {p: int(g["executors"].median()) for p, g in starts.groupby("policy")}
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
    for pol in target_policies(d):
        out += _target_bound(d, sizes, T, dict(start=start.get(pol, W), **priced), pol)
    return out + _start_line(d, sizes, T, priced)


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


def _target_bound(d: pd.DataFrame, sizes: list[int], T: np.ndarray, priced: dict, label: str = "target") -> list[str]:
    targets = d.loc[d["policy"].isin(target_policies(d)), "target_seconds"].dropna().drop_duplicates()
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


def _start_line(d: pd.DataFrame, sizes: list[int], T: np.ndarray, priced: dict) -> list[str]:
    """The cold-start goal's count for the best schedule from each start size (a cold start picks
    its start without the job), and ending 10 % early (what a policy keeps for its error):
    ``cold_start_bound.py`` pools it over sessions."""
    targets = d.loc[d["policy"].isin(target_policies(d)), "target_seconds"].dropna().drop_duplicates()
    if targets.empty:
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
    calibration = calibration or []
    runs = {"up": rescale_price(steps, "up"), "down": rescale_price(steps, "down", False),
            "light": rescale_price(steps, "down", True)}
    ours = {"up": _median(rescale_costs(calibration, "up")), "down": _median(rescale_costs(calibration, "down", False)),
            "light": _median(rescale_costs(calibration, "down", True))}
    order = {"up": [("given: --scale-out-seconds", given), ("the calibration job's", ours["up"]),
                    ("the adaptive runs'", runs["up"])]}
    priced, said = {}, []
    for key, what in (("up", "a scale-out"), ("light", "a release to one executor"), ("down", "one that rebuilds")):
        found = order.get(key, [("the adaptive runs'", runs[key]), ("the calibration job's", ours[key])])
        whose, value = next(((w, v) for w, v in found if v is not None), (None, None))
        priced[key] = value
        said.append(f"{what} +{value:.1f}s, {whose} median" if value is not None else f"{what}: one superstep at the new size")
    return priced, "; ".join(said)


def _median(prices: list[float]) -> float | None:
    return float(np.median(prices)) if prices else None


def goals(job: str, d: pd.DataFrame, med: pd.DataFrame, W: int) -> list[str]:
    out = []
    mx, one = med.loc[f"static-{W}"], med.loc["static-1"]
    eff = d[d["policy"] == "efficiency"][["job_seconds", "executor_seconds"]].median()
    fast = d[d["policy"] == "fastest"][["job_seconds", "executor_seconds"]].median()
    saved, slower = 1 - eff["executor_seconds"] / mx["executor_seconds"], eff["job_seconds"] / mx["job_seconds"] - 1
    paths = d[d["policy"] == "efficiency"]["executors_path"].map(lambda p: str(p).split("-"))
    moved = paths.map(lambda p: len(set(p)) > 1).any()
    held = sorted({int(p[0]) for p in paths}) if len(paths) else []
    why, met = "", moved and saved >= 0.35 and slower <= 0.10
    if not moved and len(held) == 1 and held[0] != W and f"static-{held[0]}" in med.index:
        # a planned start below the maximum, never rescaled: a static run at that size, and what
        # repeats is that size's median, not this one run's luck
        k = med.loc[f"static-{held[0]}"]
        ks, kl = 1 - k["executor_seconds"] / mx["executor_seconds"], k["job_seconds"] / mx["job_seconds"] - 1
        why = (f" (it started at {held[0]} as planned and never rescaled: a static-{held[0]} run, whose median "
               f"saves {ks:+.0%} at {kl:+.0%}; the goal judged on that)")
        met = ks >= 0.35 and kl <= 0.10
    elif not moved:
        why = " (it never released an executor: the difference is the static runs' noise)"
    out.append(f"  efficiency vs static-{W}: {saved:+.0%} executor-s saved at {slower:+.0%} runtime" + why
               + (f" (goal on WCC: >= 35% at <= +10%: {'MET' if met else 'NOT MET'})" if job == "wcc" else ""))
    shorter, cost = 1 - fast["job_seconds"] / one["job_seconds"], fast["executor_seconds"] / one["executor_seconds"]
    out.append(f"  fastest vs static-1: {shorter:+.0%} shorter at {cost:.2f}x executor-s"
               + (f" (goal on WCC: >= 30% at <= 1.2x: {'MET' if shorter >= 0.30 and cost <= 1.2 else 'NOT MET'})" if job == "wcc" else ""))
    for pol in target_policies(d):
        out += _target_goal(pol, d[d["policy"] == pol], d[d["policy"].str.startswith("static-")], med)
    return out


def _target_goal(label: str, t: pd.DataFrame, st: pd.DataFrame, med: pd.DataFrame) -> list[str]:
    """The cold-start ``target`` goal for the runs ``t`` labelled ``label``: how many met their
    target, and their executor-seconds against the cheapest static size meeting it."""
    out = []
    if len(t):
        s = target_scores(t, st, med)
        by_size, ratios = s["vs_size"].dropna(), s["vs_run"].dropna()
        both = int((s["met"] & (s["vs_size"] <= GOAL_COST)).sum())  # met, and within the goal's 1.15x of that size
        out.append(f"  {label} (cold start): {int(s['met'].sum())} of {len(t)} met within {MET:.0%}; executor-s vs the cheapest "
                   f"static size meeting the same target (a size's median run): median {np.median(by_size):.2f}x, max "
                   f"{max(by_size):.2f}x over {len(by_size)} ({int((by_size <= GOAL_COST).sum())} within {GOAL_COST}x, the "
                   f"goal's bound; met and within it: {both}); vs the cheapest single static run meeting it (the luckier of "
                   f"a size's runs): median {np.median(ratios):.2f}x, max {max(ratios):.2f}x"
                   if len(ratios) and len(by_size) else f"  {label}: {int(s['met'].sum())} of {len(t)} met; no static size "
                                                        f"(median) or no static run of the same rep met any target")
        out.append(repeatability(st, med, t["target_seconds"]))
    return out


def target_scores(t: pd.DataFrame, st: pd.DataFrame, med: pd.DataFrame) -> pd.DataFrame:
    """Per ``target`` run of ``t``: ``met`` (within :data:`MET`); ``vs_size``, its executor-s over
    the median run's of the cheapest static size meeting its target (NaN where none does);
    ``vs_run``, over the cheapest single static run of its rep meeting it (NaN where none)."""
    rows = []
    for _, r in t.iterrows():
        bound = r["target_seconds"] * (1 + MET)
        ok = st[(st["rep"] == r["rep"]) & (st["job_seconds"] <= bound)]
        size = cheapest_size(med, r["target_seconds"])
        rows.append({"met": bool(r["job_seconds"] <= bound),
                     "vs_size": r["executor_seconds"] / med.loc[size, "executor_seconds"] if size else np.nan,
                     "vs_run": r["executor_seconds"] / ok["executor_seconds"].min() if len(ok) else np.nan})
    return pd.DataFrame(rows, columns=["met", "vs_size", "vs_run"])


def cheapest_size(med: pd.DataFrame, target: float) -> str | None:
    """The static size (``static-N``) of the fewest median executor-seconds whose median run
    meets ``target`` within :data:`MET`, else ``None``."""
    ok = med[med["job_seconds"] <= target * (1 + MET)]
    return str(ok["executor_seconds"].idxmin()) if len(ok) else None


def repeatability(st: pd.DataFrame, med: pd.DataFrame, targets: pd.Series) -> str:
    """What no policy run once can count on here: the static size chosen *knowing* the medians
    (the cheapest meeting each target), each of its runs taken alone -- how many of them meet
    the target, and their executor-s against the median's."""
    met, ratios = repeat_scores(st, med, targets)
    if not met:
        return "  repeatability: no static size meets any target"
    return (f"  repeatability: the cheapest static size meeting each target chosen knowing its median, each of its "
            f"runs alone: {sum(met)} of {len(met)} meet the target within {MET:.0%}, executor-s {min(ratios):.2f}-"
            f"{max(ratios):.2f}x its median -- the session's noise, which any policy run once also meets")


def repeat_scores(st: pd.DataFrame, med: pd.DataFrame, targets: Any) -> tuple[list[bool], list[float]]:
    """:func:`repeatability`'s figures: per target and run of the cheapest static size meeting it
    (by the medians), whether the run met it and its executor-s over the median's."""
    met, ratios = [], []
    for target in targets:
        size = cheapest_size(med, target)
        if size is None:
            continue
        for _, r in st[st["policy"] == size].iterrows():
            met.append(bool(r["job_seconds"] <= target * (1 + MET)))
            ratios.append(r["executor_seconds"] / med.loc[size, "executor_seconds"])
    return met, ratios


def figures(df: pd.DataFrame, W: int, stem: str = "pareto") -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    for job, d in df.groupby("job", sort=False):
        fig, ax = plt.subplots(figsize=(6, 4.5))
        st, med = static_runs(d)
        med = med.sort_values("executor_seconds")
        ax.plot(med["executor_seconds"], med["job_seconds"], "k--", lw=1, label="static (median)")
        for p, m in med.iterrows():
            ax.annotate(p.split("-")[1], (m["executor_seconds"], m["job_seconds"]), fontsize=8)
        ax.scatter(st["executor_seconds"], st["job_seconds"], c="k", s=12)
        for pol, marker in (("efficiency", "s"), ("fastest", "^"), *((t, "o") for t in target_policies(d))):
            a = d[d["policy"] == pol]
            ax.scatter(a["executor_seconds"], a["job_seconds"], marker=marker, label=pol)
        ax.set_xlabel("executor-seconds per job")
        ax.set_ylabel("job seconds")
        ax.set_title(f"{job}: adaptive runs against the static frontier")
        ax.legend(fontsize=8)
        fig.tight_layout()
        fig.savefig(RESULTS / f"{stem}_{job}.png", dpi=110)
        plt.close(fig)
