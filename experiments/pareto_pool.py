"""The cold-start ``target`` goal of issue 13 item 5 pooled over several Pareto sessions.

    .venv/bin/python experiments/pareto_pool.py --tags stop57all,stop57prkm,stop57prkmb [--by-start]

Why: one session runs each target once, and a session's static runs spread 10-30 % (its noise):
whether 9 of 10 targets are met at <= 1.15x the cheapest static size is then partly the luck of
that session (stop 57's three sessions of one code: PageRank 10, 10 and 8 of 10 met at 1.03-1.17x).
Pooled over sessions of the same code, the goal's two figures are read on all their runs. Each
run is judged against its own session's static runs, as ``pareto.py`` judges it
(:func:`pareto_report.target_scores`); printed beside: the same for the static size chosen
knowing each session's medians, each of its runs alone (:func:`pareto_report.repeat_scores`) --
what no policy run once can beat. Reads ``results/pareto_<tag>.csv``; no Spark.
"""
from __future__ import annotations

import argparse
import sys
from typing import Iterator

import numpy as np
import pandas as pd

from harness import RESULTS
from pareto_bounds import GOAL_COST
from pareto_report import goal_met, repeat_scores, static_runs, target_policies, target_scores


def session(tag: str, suffix: str = "") -> pd.DataFrame:
    """``results/pareto_<tag><suffix>.csv`` (``suffix`` ``_supersteps``: its superstep table), or a
    clear error naming the file."""
    path = RESULTS / f"pareto_{tag}{suffix}.csv"
    if not path.is_file():
        raise SystemExit(f"error: --tags: no table {path}")
    return pd.read_csv(path)


def target_runs(tags: list[str]) -> Iterator[tuple[str, str, str, pd.DataFrame, pd.DataFrame, pd.DataFrame]]:
    """``(tag, job, label, runs, static runs, static medians)`` per session, job and ``target``
    label: the runs of one target policy with the static runs they are judged against."""
    for tag in tags:
        df = session(tag)
        for job, d in df.groupby("job", sort=False):
            st, med = static_runs(d)
            for label in target_policies(d):
                yield tag, job, label, d[d["policy"] == label].reset_index(drop=True), st, med


def pool(tags: list[str]) -> list[str]:
    """Per job and ``target`` label: each session's goal figures, then all sessions' together."""
    scores: dict[tuple[str, str], list[tuple[str, pd.DataFrame, list[bool]]]] = {}
    for tag, job, label, t, st, med in target_runs(tags):
        met, _ = repeat_scores(st, med, t["target_seconds"])
        scores.setdefault((job, label), []).append((tag, target_scores(t, st, med), met))
    out = []
    for (job, label), found in scores.items():
        out.append(f"== {job} {label}")
        for tag, s, oracle in [*found, ("pooled", pd.concat([s for _, s, _ in found], ignore_index=True),
                                        [m for _, _, o in found for m in o])]:
            out.append("  " + line(tag, s, oracle))
    return out


def by_start(tags: list[str]) -> list[str]:
    """Per job and the size each ``target`` run started at (its first superstep's executors): the
    pooled goal figures of those runs, over all targets and per third of the targets' span
    (tight: near static-max's finish, loose: near static-1's). Why: the cold start's size is the
    one choice made knowing nothing of the program, and sessions started at 2 or at 3 as their
    calibrations read the cluster -- which start pays, and for which targets, shows only pooled."""
    found = []
    for _, job, _, t, st, med in target_runs(tags):
        s = target_scores(t, st, med)
        lo, hi = t["target_seconds"].min(), t["target_seconds"].max()
        pos = (t["target_seconds"] - lo) / (hi - lo) if hi > lo else pd.Series(0.5, index=t.index)
        s["third"] = pd.cut(pos, [-0.01, 1 / 3, 2 / 3, 1.01], labels=["tight", "mid", "loose"]).astype(str)
        s["start"] = t["executors_path"].astype(str).str.split("-").str[0].astype(int)
        s["job"] = job
        found.append(s)
    if not found:
        return []
    a = pd.concat(found, ignore_index=True)
    out = []
    for (job, start), g in a.groupby(["job", "start"], sort=False):
        parts = [f"all {_figures(g)}"] + [f"{k} {_figures(g[g['third'] == k])}" for k in ("tight", "mid", "loose")
                                            if (g["third"] == k).any()]
        out.append(f"{job} from {start}: " + "; ".join(parts))
    return out


def _figures(s: pd.DataFrame) -> str:
    """``met/n, within GOAL_COST met/n, median executor-s ratio`` of some :func:`target_scores` rows."""
    by_size = s["vs_size"].dropna()
    return (f"{int(s['met'].sum())}/{len(s)} met, {goal_met(s)}/{len(s)} met within {GOAL_COST}x"
            + (f", median {np.median(by_size):.2f}x" if len(by_size) else ""))


def line(tag: str, s: pd.DataFrame, oracle: list[bool]) -> str:
    """The goal's figures of the runs ``s`` (:func:`pareto_report.target_scores`)."""
    by_size = s["vs_size"].dropna()
    both = goal_met(s)
    cost = (f"executor-s vs the cheapest static size meeting it: median {np.median(by_size):.2f}x "
            f"(p75 {np.percentile(by_size, 75):.2f}x) over {len(by_size)}" if len(by_size) else "no static size met any")
    return (f"{tag}: {int(s['met'].sum())} of {len(s)} met ({s['met'].mean():.0%}); {cost}; met and within {GOAL_COST}x: "
            f"{both} ({both / len(s):.0%}); the cheapest static size known from the medians, each run alone: "
            f"{sum(oracle)} of {len(oracle)} met ({np.mean(oracle) if oracle else float('nan'):.0%})")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tags", required=True, help="comma-separated session tags (results/pareto_<tag>.csv)")
    ap.add_argument("--by-start", action="store_true",
                    help="the target runs grouped by the size they started at, per third of the targets' span")
    args = ap.parse_args()
    tags = [t for t in args.tags.split(",") if t]
    if not tags:
        raise SystemExit("pareto_pool: error: --tags: give at least one session tag")
    print("\n".join(by_start(tags) if args.by_start else pool(tags)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
