"""Pareto experiment (issue 13, item 5): every static size and every adaptive policy, per job.

    .venv/bin/python experiments/pareto.py --quick     # 1 rep, 3 targets a job, small inputs (< 25 min)
    .venv/bin/python experiments/pareto.py             # 3 reps, 10 targets a job, the issue's inputs

On the emulated cluster (``--workers`` workers at ``--cpu-share`` core each), per job --
PageRank (constant work), WCC on an R-MAT graph with a long thin tail (shrinking work) and
k-means -- and per repetition: static at 1 .. ``workers`` executors, then ``efficiency``
(from the maximum), ``fastest`` (baseline 1 executor) and ``target`` at targets spread evenly
between the static-max and the static-1 finish times of that repetition; then the static sizes
again in reverse order (the session warms up as it runs: each static size is the median of a
run before and one after the adaptive ones, and their spread is the noise). ``efficiency`` and
``fastest`` are warm-started from the static runs (as ``iterflow run`` is from its MLflow
store), ``fastest`` with a budget of 1.2x static-1's executor-seconds (the issue's goal);
``target`` starts cold (no earlier runs: the empty-store case; the cluster calibrated first,
``--cluster-profile``, as ``iterflow cluster calibrate`` does once per cluster) on ``--target-start``
executors (default ``plan``, the policy's own: the fastest size, the maximum unless the cluster's
calibration says a smaller one is as fast -- a cold start must be able to meet a target near
static-max's time, and from 1 a scale-out pays registration and cold executors where a release
pays about one superstep).

Before the first measured run of a job, one untimed run of it at every size (the session
itself warms up for minutes: without this, PageRank's static-1 took 7.9 s before the adaptive
runs and 4.5 s after, and the policies warm-started from the early static runs saw the small
sizes as slower than they are). Before every measured run, two untimed supersteps at its starting size (a size change starts
fresh executor JVMs, which on 0.5-core workers run their first tasks several times slower):
every run starts as warm as the others, and only a policy's own scale-outs meet cold
executors -- what rescaling costs. Every run is measured as a whole job: all supersteps, barriers and rescales (``job_seconds``)
and the executor-seconds held for them. Printed: the table of runs, each adaptive run's
dominance check against the static runs (dominated = some static size's median is better on
both by more than *noise*: the median relative spread of job time among the runs of one
static size), the issue's goals with the measured figures, and the
parallel efficiency per static size (what makes a goal physically possible or not). Figure:
``results/pareto_<job>.png``, job seconds against executor-seconds with the static frontier.
"""
from __future__ import annotations

import json
import re
import time
from typing import Any, Callable

import numpy as np
import pandas as pd

from common import points, rmat
from harness import RESULTS, Collector, cluster, initial_centers, parse_args, warm_up

from algorithms import KMeans, PageRank, WeaklyConnectedComponents
from iterflow.app.calibrate import describe, measure
from iterflow.inputs.graphio import load_graph
from iterflow.inputs.pointsio import load_points
from iterflow.loop.driver import IterationDriver
from iterflow.loop.records import records, rescale_costs
from iterflow.model.contention import fit
from iterflow.model.live import LiveModel, warm_start
from iterflow.model.replay import ReplayModel
from iterflow.simulate import bounds
from iterflow.policies import EfficiencyPolicy, FastestPolicy, StaticPolicy, TargetPolicy

NAME = "pareto"
MET = 0.05  # a target is met within 5 %
BUDGET = 1.2  # the issue's fastest goal: at <= 1.2x static-1's executor-seconds
RELEASE = {"auto": None, "prompt": True, "hysteresis": False}  # --target-release -> prompt_release


def extra(ap) -> None:
    ap.add_argument("--jobs", default="pagerank,wcc,kmeans")
    ap.add_argument("--targets", type=int, default=None, help="targets per job (default 3 quick, 10 full)")
    ap.add_argument("--supersteps", type=int, default=None, help="PageRank and k-means (default 8 quick, 14 full)")
    ap.add_argument("--from-csv", action="store_true", help="only analyse results/pareto[_TAG].csv again")
    ap.add_argument("--tag", default="", help="results go to results/pareto_TAG* (default: results/pareto*)")
    ap.add_argument("--target-release", choices=["auto", "prompt", "hysteresis"], default="auto",
                    help="when target releases executors: auto (the policy's default: at the first barrier "
                         "ahead where the run's length is known, after 3 barriers where it is estimated), "
                         "prompt (always at once), hysteresis (always after 3 barriers)")
    ap.add_argument("--scale-out-seconds", type=float, default=None,
                    help="--from-csv: a scale-out's price for the priced bound where the runs measured none "
                         "(e.g. an earlier run's; the output says it was given)")
    ap.add_argument("--cluster-profile", choices=["calibrate", "none"], default="calibrate",
                    help="calibrate (default): measure the cluster's task slow-down first with `iterflow cluster "
                         "calibrate`'s job (PageRank on a generated graph, not one of the jobs) and give it to "
                         "target's cold-start runs, as a first run on a calibrated cluster gets it; none: they "
                         "take a task to cost the same at every size (stop 25 and before)")
    ap.add_argument("--target-start", choices=["plan", "max", "1"], default="plan",
                    help="executors target starts on: plan (default; the policy's own: the fastest size, from "
                         "the maximum down to where the cluster's calibration says tasks slow down so much that "
                         "no larger size finishes sooner), max (stop 29 and before), 1 (a release costs about "
                         "one superstep here, a scale-out registration plus cold executors)")


def programs(spark: Any, args: Any, n: int) -> dict[str, Callable[..., Any]]:
    """Program factories (``make(supersteps)``, default the run's) over inputs loaded and cached once."""
    quick, out = args.quick, {}
    if "pagerank" in args.jobs:
        g = load_graph(spark, str(rmat(17 if quick else 18, 500_000 if quick else 1_000_000)), "edgelist",
                       partitions=args.partitions)
        out["pagerank"] = lambda k=n: PageRank(g, max_iterations=k)
    if "wcc" in args.jobs:
        t = load_graph(spark, str(rmat(17 if quick else 19, 150_000 if quick else 600_000, tail=12 if quick else 30)),
                       "edgelist", partitions=args.partitions)
        out["wcc"] = lambda k=1000: WeaklyConnectedComponents(t, max_iterations=k)
    if "kmeans" in args.jobs:
        pts = load_points(spark, str(points(200_000 if quick else 500_000, 5)), partitions=args.partitions)
        c = initial_centers(pts, 5)
        out["kmeans"] = lambda k=n: KMeans(pts, 5, init_centers=c, max_iterations=k, tol=None)
    return out


def whole(run: Any) -> tuple[float, float]:
    """(job seconds, executor-seconds) of every superstep of a run, rescales included
    (``Run.executor_seconds`` leaves superstep 1 out)."""
    return run.job_seconds, float(run.table["executor_seconds"].sum())


def main() -> int:
    args = parse_args(__doc__, NAME, extra, quick_reps=1)
    stem = f"{NAME}_{args.tag}" if args.tag else NAME
    if args.from_csv:  # the analysis again, on the runs saved by an earlier call
        df = pd.read_csv(RESULTS / f"{stem}.csv")
        steps = RESULTS / f"{stem}_supersteps.csv"
        text = analyse(df, args.workers, pd.read_csv(steps) if steps.exists() else None, args.scale_out_seconds)
        print("\n".join(text))
        return 0
    if not args.quick and not args.reps_given:  # full mode: 3 reps unless told otherwise
        args.reps = 3
    n = args.supersteps or (8 if args.quick else 14)
    n_targets = args.targets or (3 if args.quick else 10)
    W, t0, runs, rows = args.workers, time.time(), Collector(), []
    with cluster(args) as (_, spark, note):
        slow, priced, calibrated = None, [], "not calibrated (--cluster-profile none): no task slow-down known"
        if args.cluster_profile == "calibrate":  # what `iterflow cluster calibrate` measures, this session
            found = measure(spark, "pareto", W, partitions=args.partitions, say=print)
            slow, priced = fit([found.task_seconds], walls=found.superstep_seconds()), found.records()
            calibrated = describe(found, sizes=range(1, W + 1))
            print(calibrated, flush=True)
            RESULTS.mkdir(parents=True, exist_ok=True)  # what the simulator's calibration may learn from
            (RESULTS / f"{stem}_cluster_profile.json").write_text(json.dumps(found.to_dict(), indent=1))
        for job, make in programs(spark, args, n).items():
            warm_up(spark, make(), args)
            for e in range(1, W + 1):  # the session warms up for minutes (driver JIT, executors'):
                warm_up(spark, make(), args, executors=e)  # one untimed run per size before any timed one
            for rep in range(args.reps):
                def go(policy: str, p: Any, start: int, past: list, model: Any = None, cluster_past: Any = (),
                       **extra: Any) -> None:
                    # executors a size change just started are fresh JVMs: two untimed supersteps
                    # at the starting size first, so every run starts as warm as the others
                    # (only a policy's own scale-outs meet cold executors: what rescaling costs)
                    warm = IterationDriver(spark, StaticPolicy(), partitions=args.partitions, collect_stats=False,
                                           start_executors=start)
                    w = make(2)
                    warm.run(w)
                    w.release()
                    run = runs.run(spark, p, make(), args=args, start=start, past=past, model=model,
                                   cluster_past=cluster_past, verbose=False,
                                   labels={"experiment": NAME, "job": job, "policy": policy, "rep": rep,
                                           **({"target_seconds": extra["target_seconds"]}
                                              if "target_seconds" in extra else {})})
                    js, es = whole(run)
                    rows.append({"job": job, "policy": policy, "rep": rep, "job_seconds": js, "executor_seconds": es,
                                 "executors_path": run.row().get("executors_path"),
                                 "eventlog_match": run.row().get("eventlog_match"), **extra})
                    print(f"  {job} {policy} rep {rep}: {js:.1f}s, {es:.0f} executor-s, executors "
                          f"{rows[-1]['executors_path']}", flush=True)

                static_tables = []
                for e in range(1, W + 1):
                    go(f"static-{e}", StaticPolicy(), e, [], sweep="before")
                    static_tables.append(runs.tables[-1])
                # every policy prices its rescales from the cluster's calibration, as `iterflow run` does
                go("efficiency", EfficiencyPolicy(max_executors=W, start_executors=W), W, static_tables,
                   cluster_past=priced)
                f = fastest_start(static_tables, W)  # warmed at its planned start, as the static runs at theirs
                go("fastest", FastestPolicy(1, budget=BUDGET, max_executors=W, start_executors=f), f, static_tables,
                   cluster_past=priced)
                mine = [r for r in rows if r["job"] == job and r["rep"] == rep]
                hi = next(r["job_seconds"] for r in mine if r["policy"] == "static-1")
                lo = next(r["job_seconds"] for r in mine if r["policy"] == f"static-{W}")
                s = target_start(W, slow) if args.target_start == "plan" else W if args.target_start == "max" else 1
                for target in np.linspace(min(lo, hi), max(lo, hi), n_targets):
                    go("target", TargetPolicy(float(target), max_executors=W, start_executors=s,
                                              prompt_release=RELEASE[args.target_release],
                                              cold_start_plan=args.target_start == "plan"), s, [],
                       model=LiveModel(replay=ReplayModel(contention=slow)), cluster_past=priced,
                       target_seconds=float(target))
                # the static sizes again, in reverse order: the session warms up as it goes, so
                # a static size is the median of a run before and one after the adaptive runs
                # (their spread is the noise the dominance check allows)
                for e in range(W, 0, -1):
                    go(f"static-{e}", StaticPolicy(), e, [], sweep="after")
    df = pd.DataFrame(rows)
    df["cluster_note"] = note
    RESULTS.mkdir(parents=True, exist_ok=True)
    df.to_csv(RESULTS / f"{stem}.csv", index=False)
    steps = pd.concat([t.dropna(axis=1, how="all") for t in runs.tables], ignore_index=True)
    steps.to_csv(RESULTS / f"{stem}_supersteps.csv", index=False)
    text = analyse(df, W, steps) + [f"target's cold starts: {calibrated}",
                                    f"{time.time() - t0:.0f}s; {W} workers at cpu share {args.cpu_share} ({note}); "
                             f"{args.reps} rep(s); {n} supersteps (PageRank, k-means), WCC to convergence"]
    (RESULTS / f"{stem}.txt").write_text("\n".join(text) + "\n")
    print("\n".join(text))
    figures(df, W, stem)
    return 0


def fastest_start(tables: list[pd.DataFrame], W: int) -> int:
    """Where ``fastest`` plans to start from the static runs (what the driver asks it before the
    input is loaded, :meth:`IterationDriver.planned_start`), so that the run is warmed at that
    size as each static run is at its own: a planned start is no scale-out."""
    past = records(pd.concat(tables, ignore_index=True))
    model = warm_start(LiveModel(), past)  # as the driver's warm start
    want = FastestPolicy(1, budget=BUDGET, max_executors=W, start_executors=1).plan_start(past, model)
    print(f"  fastest: {want.reason if want else 'starts at its baseline, 1 executor'}", flush=True)
    return want.executors if want else 1


def target_start(W: int, slow: Any) -> int:
    """Where a cold ``target`` plans to start (:meth:`TargetPolicy.plan_start` with the cluster's
    calibration and no run of the program), so that it is warmed at that size."""
    want = TargetPolicy(1.0, max_executors=W, start_executors=W).plan_start(
        [], LiveModel(replay=ReplayModel(contention=slow)))
    print(f"  target: {want.reason if want else f'starts at the maximum, {W} executors'}", flush=True)
    return want.executors if want else W


def analyse(df: pd.DataFrame, W: int, steps: pd.DataFrame | None = None, up: float | None = None) -> list[str]:
    """Dominance per adaptive run, the issue's goals, parallel efficiency per static size and,
    given the runs' supersteps, the best any policy could reach (:mod:`iterflow.simulate.bounds`)."""
    out = []
    for job, d in df.groupby("job", sort=False):
        st = d[d["policy"].str.startswith("static-")]
        med = st.groupby("policy")[["job_seconds", "executor_seconds"]].median()
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
        if steps is not None and "job" in steps:
            out += releases(steps[(steps["job"] == job) & (steps["policy"] == "target")])
            out += best_possible(job, d, steps[steps["job"] == job], W, up)
    return out


def releases(steps: pd.DataFrame) -> list[str]:
    """``target``'s releases: the finish each predicted ("comfortably ahead: N executors finish
    Ts") against the run's real one -- for every release not undone by a later scale-out, and
    for each run's last release with no rescale after it (the only one whose prediction was meant to be the finish: a release
    followed by another spends on purpose the slack the first left)."""
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

    def say(x: list[float]) -> str:
        return f"{np.median(x):+.0%} ({min(x):+.0%}..{max(x):+.0%}, {len(x)})" if x else "none"
    return [f"  target's releases, real finish over predicted: every release not undone by a scale-out {say(every)}; "
            f"each run's last {say(last)}"]


def best_possible(job: str, d: pd.DataFrame, steps: pd.DataFrame, W: int, given: float | None = None) -> list[str]:
    """The goals' figures for the best schedule of per-superstep sizes the static runs allow
    (exact future, free rescales, warm executors): where even that misses a goal, the cluster's
    scaling rules it out. Times per superstep are wall + barrier seconds, median over a size's runs."""
    st = steps[steps["policy"].astype(str).str.startswith("static-")]
    if st.empty:
        return []
    runs: dict[int, list[list[float]]] = {}
    for (pol, _), r in st.groupby(["policy", "run_id"], sort=False):
        r = r.sort_values("superstep")
        runs.setdefault(int(str(pol).split("-")[1]), []).append(
            list(r["wall_seconds"] + r["barrier_seconds"].fillna(0.0)))
    sizes, T = bounds.static_times(runs)
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
    up, whose = scale_out_price(steps), "median of the adaptive runs'"
    if up is None and given is not None:
        up, whose = given, "given: --scale-out-seconds"
    if up is None:
        return out + ["    (no scale-out in the adaptive runs: the bound with priced rescales needs one measured)"]
    starts = steps[~steps["policy"].astype(str).str.startswith("static-") & (steps["superstep"] == 1)]
    start = {p: int(g["executors"].median()) for p, g in starts.groupby("policy")}
    priced = dict(up=up, down=None)
    out.append(f"  the same with rescales priced as measured here (a scale-out +{up:.1f}s at the new size: its "
               f"pause and cold supersteps, {whose}; a scale-in one superstep at the new "
               f"size; registration still free), from where each policy starts:")
    f = bounds.fastest(sizes, T, 1.2 * t1, start=start.get("fastest", 1), **priced)
    out.append(f"    fastest within 1.2x static-1's executor-s: {1 - f.seconds / t1:+.0%} shorter [{f.path}]")
    c = bounds.cheapest(sizes, T, 1.1 * tmax, start=start.get("efficiency", W), **priced)
    out.append(f"    efficiency within +10% of static-{W}: "
               + (f"{1 - c.executor_seconds / (W * tmax):+.0%} executor-s saved [{c.path}]" if c else "none"))
    return out + _target_bound(d, sizes, T, dict(start=start.get("target", W), **priced))


def _target_bound(d: pd.DataFrame, sizes: list[int], T: np.ndarray, priced: dict) -> list[str]:
    ratios, met = [], 0
    targets = d.loc[d["policy"] == "target", "target_seconds"].dropna()
    for target in targets:
        meet = [e * T[i].sum() for i, e in enumerate(sizes) if T[i].sum() <= target * (1 + MET)]
        b = bounds.cheapest(sizes, T, target * (1 + MET), **priced)
        met += b is not None
        if meet and b is not None:
            ratios.append(b.executor_seconds / min(meet))
    if not ratios:
        return []
    return [f"    target: {met} of {len(targets)} reachable; executor-s vs the cheapest static meeting it, median "
            f"{np.median(ratios):.2f}x (best {min(ratios):.2f}x, largest {max(ratios):.2f}x, "
            f"{sum(r <= 1.15 for r in ratios)} within 1.15x) over {len(ratios)} targets a static size meets"]


def scale_out_price(steps: pd.DataFrame) -> float | None:
    """The median price of the scale-outs in the adaptive runs (``rescale_costs``: pause and cold
    supersteps), or ``None`` when none was made."""
    prices = []
    for _, run in steps[~steps["policy"].astype(str).str.startswith("static-")].groupby("run_id", sort=False):
        prices += rescale_costs(records(run.sort_values("superstep")), "up")
    return float(np.median(prices)) if prices else None


def goals(job: str, d: pd.DataFrame, med: pd.DataFrame, W: int) -> list[str]:
    out = []
    mx, one = med.loc[f"static-{W}"], med.loc["static-1"]
    eff = d[d["policy"] == "efficiency"][["job_seconds", "executor_seconds"]].median()
    fast = d[d["policy"] == "fastest"][["job_seconds", "executor_seconds"]].median()
    saved, slower = 1 - eff["executor_seconds"] / mx["executor_seconds"], eff["job_seconds"] / mx["job_seconds"] - 1
    moved = d[d["policy"] == "efficiency"]["executors_path"].map(lambda p: len(set(str(p).split("-"))) > 1).any()
    out.append(f"  efficiency vs static-{W}: {saved:+.0%} executor-s saved at {slower:+.0%} runtime"
               + ("" if moved else " (it never released an executor: the difference is the static runs' noise)")
               + (f" (goal on WCC: >= 35% at <= +10%: {'MET' if moved and saved >= 0.35 and slower <= 0.10 else 'NOT MET'})" if job == "wcc" else ""))
    shorter, cost = 1 - fast["job_seconds"] / one["job_seconds"], fast["executor_seconds"] / one["executor_seconds"]
    out.append(f"  fastest vs static-1: {shorter:+.0%} shorter at {cost:.2f}x executor-s"
               + (f" (goal on WCC: >= 30% at <= 1.2x: {'MET' if shorter >= 0.30 and cost <= 1.2 else 'NOT MET'})" if job == "wcc" else ""))
    t = d[d["policy"] == "target"]
    if len(t):
        st = d[d["policy"].str.startswith("static-")]
        met = t["job_seconds"] <= t["target_seconds"] * (1 + MET)
        ratios = []
        for _, r in t.iterrows():
            ok = st[(st["rep"] == r["rep"]) & (st["job_seconds"] <= r["target_seconds"] * (1 + MET))]
            if len(ok):
                ratios.append(r["executor_seconds"] / ok["executor_seconds"].min())
        out.append(f"  target (cold start): {int(met.sum())} of {len(t)} met within {MET:.0%}; executor-s vs the cheapest "
                   f"static meeting the same target: median {np.median(ratios):.2f}x, max {max(ratios):.2f}x"
                   if ratios else f"  target: {int(met.sum())} of {len(t)} met; no static run met any target")
    return out


def figures(df: pd.DataFrame, W: int, stem: str = NAME) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    for job, d in df.groupby("job", sort=False):
        fig, ax = plt.subplots(figsize=(6, 4.5))
        st = d[d["policy"].str.startswith("static-")]
        med = st.groupby("policy")[["job_seconds", "executor_seconds"]].median().sort_values("executor_seconds")
        ax.plot(med["executor_seconds"], med["job_seconds"], "k--", lw=1, label="static (median)")
        for p, m in med.iterrows():
            ax.annotate(p.split("-")[1], (m["executor_seconds"], m["job_seconds"]), fontsize=8)
        ax.scatter(st["executor_seconds"], st["job_seconds"], c="k", s=12)
        for pol, marker in (("efficiency", "s"), ("fastest", "^"), ("target", "o")):
            a = d[d["policy"] == pol]
            ax.scatter(a["executor_seconds"], a["job_seconds"], marker=marker, label=pol)
        ax.set_xlabel("executor-seconds per job")
        ax.set_ylabel("job seconds")
        ax.set_title(f"{job}: adaptive runs against the static frontier")
        ax.legend(fontsize=8)
        fig.tight_layout()
        fig.savefig(RESULTS / f"{stem}_{job}.png", dpi=110)
        plt.close(fig)


if __name__ == "__main__":
    raise SystemExit(main())
