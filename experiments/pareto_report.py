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

from pareto_bounds import GOAL_COST, MET, best_possible



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
                   f"after the adaptive ones; largest {float(spread.max()):.0%})" + drift(st))
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
            out += best_possible(job, target_policies(d), targets_of(d), steps[steps["job"] == job], W, up,
                                 calibration)
    return out


def static_runs(d: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The static runs of a job's table ``d`` and each size's median job and executor seconds
    (indexed by ``static-N``): what every adaptive run is judged against."""
    st = d[d["policy"].str.startswith("static-")]
    return st, st.groupby("policy")[["job_seconds", "executor_seconds"]].median()


def drift(st: pd.DataFrame) -> str:
    """How much the machine changed speed over a rep: each static size's last run over its first
    of the same rep (rows in the order they ran), the median over sizes -- the adaptive runs ran
    between the two passes and ``target``'s targets came from the first (stop72all: WCC's second
    pass ran 1.16-1.47x its first, its target runs slowing with it). Empty with one pass."""
    ratios = [g["job_seconds"].iloc[-1] / g["job_seconds"].iloc[0]
              for _, g in st.groupby(["policy", "rep"], sort=False) if len(g) > 1]
    if not ratios:
        return ""
    return (f"; drift: the later static pass ran {np.median(ratios):.2f}x the earlier "
            f"({min(ratios):.2f}-{max(ratios):.2f}x over {len(ratios)} sizes; targets come from the earlier)")


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


def targets_of(d: pd.DataFrame) -> list[float]:
    """The targets the ``target`` runs of ``d`` were given, each once."""
    return d.loc[d["policy"].isin(target_policies(d)), "target_seconds"].dropna().drop_duplicates().tolist()


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
        real, found = run_releases(g.sort_values("superstep"))
        mine = [real / done - 1 for done, _ in found]
        every += mine
        last += mine[-1:]
    return every, last


def run_releases(g: pd.DataFrame) -> tuple[float, list[tuple[float, float | None]]]:
    """One run's rows in superstep order: its real finish (wall + barrier seconds), and per
    release not undone by a later scale-out the finish it predicted ("comfortably ahead: N
    executors finish Ts") and the seconds elapsed when it was made (``None`` where not said)."""
    real = float((g["wall_seconds"] + g["barrier_seconds"].fillna(0)).sum())
    found: list[tuple[float, float | None]] = []
    for _, r in g.iterrows():
        why = str(r.get("reason"))
        m = re.search(r"comfortably ahead: \d+ executors finish ([\d.]+)s", why)
        if r.get("decision") == "down" and m:
            e = re.search(r"elapsed ([\d.]+)s", why)
            found.append((float(m.group(1)), float(e.group(1)) if e else None))
        elif r.get("decision") == "up":
            found = []  # a scale-out after a release: its prediction no longer applies
    return real, found


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
        both = goal_met(s)
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


def goal_met(scores: pd.DataFrame) -> int:
    """Of :func:`target_scores`, the runs that met their target and stayed within :data:`GOAL_COST`
    the cheapest static size's executor-s (the cold-start goal's two conditions on one run)."""
    return int((scores["met"] & (scores["vs_size"] <= GOAL_COST)).sum())


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
