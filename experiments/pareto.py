"""Pareto experiment (issue 13, item 5): every static size and every adaptive policy, per job.

    .venv/bin/python experiments/pareto.py --quick     # 1 rep, 3 targets a job, 8 supersteps (< 25 min)
    .venv/bin/python experiments/pareto.py             # 3 reps, 10 targets a job, 14 supersteps (~2.5 h)

Both modes run the same inputs -- PageRank on R-MAT 18 (1M edges), k-means on 500k points, WCC on
R-MAT 20 (2.4M edges) with a 30-vertex tail (12 quick) -- because the smaller ones of stop 74 and
before did not scale on the emulated cluster (quick WCC on 2 executors 0.85x as fast as on 1,
k-means 0.99x; full WCC on R-MAT 19 1.00x): there every policy's best is one executor and the
targets between static-max and static-1 collapse into the noise. Quick is shorter only (1 rep, 3
targets, 8 supersteps, the shorter tail, warm-ups of a few supersteps).

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
pays about one superstep; the calibration read on this session's and the cluster's earlier ones
together, ``--earlier-calibrations``). With several starts (``--target-start 3,4``) every target is
run from each, side by side.

Before the first measured run of a job, one untimed run of it at every size (quick: its first
:data:`WARM_QUICK` supersteps; the session
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
parallel efficiency per static size (what makes a goal physically possible or not), and the
session's repeatability (how often a static size's single run meets a target its median meets);
the report is :mod:`pareto_report`'s (``--from-csv`` prints it again from the saved tables). Figure:
``results/pareto_<job>.png``, job seconds against executor-seconds with the static frontier.
"""
from __future__ import annotations

import argparse
import json
import time
from dataclasses import replace
from typing import Any, Callable

import numpy as np
import pandas as pd

from common import points, rmat, scale_edges
from harness import RESULTS, Collector, cluster, initial_centers, parse_args, warm_up
from pareto_report import analyse, figures

from algorithms import KMeans, PageRank, WeaklyConnectedComponents
from iterflow.app.calibrate import describe, measure
from iterflow.inputs.graphio import load_graph
from iterflow.inputs.pointsio import load_points
from iterflow.loop.driver import IterationDriver
from iterflow.simulate.calibrate import load_profile
from iterflow.loop.records import records
from iterflow.model.live import LiveModel, warm_start
from iterflow.model.replay import ReplayModel
from iterflow.policies import EfficiencyPolicy, FastestPolicy, StaticPolicy, TargetPolicy

NAME = "pareto"
BUDGET = 1.2  # the issue's fastest goal: at <= 1.2x static-1's executor-seconds
WCC_GRAPH = (20, 2_400_000)  # R-MAT 19:600000 (the default to stop 74) ran no faster on 2-4 executors than on 1
WARM_QUICK = 3  # supersteps of a quick session's warm-up run at each size
RELEASE = {"auto": None, "prompt": True, "hysteresis": False}  # --target-release -> prompt_release


def extra(ap) -> None:
    ap.add_argument("--jobs", default="pagerank,wcc,kmeans")
    ap.add_argument("--targets", type=int, default=None, help="targets per job (default 3 quick, 10 full)")
    ap.add_argument("--supersteps", type=int, default=None, help="PageRank and k-means (default 8 quick, 14 full)")
    ap.add_argument("--wcc-graph", default=None, metavar="SCALE:EDGES", type=scale_edges,
                    help="WCC's R-MAT (default 20:2400000; a 30-vertex tail, 12 with --quick)")
    ap.add_argument("--from-csv", action="store_true", help="only analyse results/pareto[_TAG].csv again")
    ap.add_argument("--tag", default="", help="results go to results/pareto_TAG* (default: results/pareto*)")
    ap.add_argument("--target-release", choices=["auto", "prompt", "hysteresis"], default="auto",
                    help="when target releases executors: auto (the policy's default: at the first barrier "
                         "ahead where the run's length is known, after 3 barriers where it is estimated), "
                         "prompt (always at once), hysteresis (always after 3 barriers)")
    ap.add_argument("--scale-out-seconds", type=float, default=None,
                    help="--from-csv: a scale-out's price for the priced bound, over the calibration job's and "
                         "the runs' (e.g. an earlier session's; the output says it was given)")
    ap.add_argument("--cluster-profile", choices=["calibrate", "none"], default="calibrate",
                    help="calibrate (default): measure the cluster's task slow-down first with `iterflow cluster "
                         "calibrate`'s job (PageRank on a generated graph, not one of the jobs) and give it to "
                         "target's cold-start runs, as a first run on a calibrated cluster gets it; none: they "
                         "take a task to cost the same at every size (stop 25 and before)")
    ap.add_argument("--earlier-calibrations", choices=["results", "none"], default="results",
                    help="results (default): the cluster's earlier calibrations -- the profiles of earlier "
                         "sessions in experiments/results -- pooled with this session's to say which size runs "
                         "fastest and how much a task slows with the size, as `iterflow cluster calibrate` pools a "
                         "cluster's; none: this session's alone "
                         "(stop 55 and before)")
    ap.add_argument("--target-start", default="plan", type=starts,
                    help="executors target starts on: plan (default; the policy's own: the fastest size, from "
                         "the maximum down to where the cluster's calibration says tasks slow down so much that "
                         "no larger size finishes sooner), max (stop 29 and before), or a count (1 .. --workers); "
                         "several, comma-separated (e.g. 3,4): every target is run from each, interleaved (the "
                         "order alternating target by target), and the runs labelled target@<start>")


def earlier_calibrations(stem: str) -> list[dict]:
    """The emulated cluster's calibrations before this session's (``results/pareto_*_cluster_profile.json``
    of earlier sessions, oldest first by when they were measured), as :func:`iterflow.cluster.profile.save`
    keeps a cluster's earlier calibrations; the profile pools the newest of them
    (:attr:`~iterflow.cluster.profile.ClusterProfile.pooled_with`)."""
    found = []
    for path in RESULTS.glob("pareto_*_cluster_profile.json"):
        if path.name == f"{stem}_cluster_profile.json":
            continue
        try:
            p = load_profile(path)
        except Exception as exc:  # noqa: BLE001 - an unreadable old profile: left out, and said
            print(f"  earlier calibration {path.name} left out: {exc}", flush=True)
            continue
        if p.measured_at and p.steady_walls():
            found.append(p.summary())
    return sorted(found, key=lambda e: e["measured_at"])


def starts(text: str) -> list[str]:
    """``--target-start``: ``plan``, ``max`` or executor counts, comma-separated, none twice."""
    got = [t.strip() for t in text.split(",") if t.strip()]
    bad = [t for t in got if t not in ("plan", "max") and not (t.isdigit() and int(t) >= 1)]
    if not got or bad or len(set(got)) < len(got):
        raise argparse.ArgumentTypeError(f"want plan, max or executor counts >= 1, comma-separated, "
                                         f"each once (got {text!r})")
    return got


def programs(spark: Any, args: Any, n: int) -> dict[str, Callable[..., Any]]:
    """Program factories (``make(supersteps)``, default the run's) over inputs loaded and cached once."""
    quick, out = args.quick, {}
    if "pagerank" in args.jobs:
        g = load_graph(spark, str(rmat(18, 1_000_000)), "edgelist", partitions=args.partitions)
        out["pagerank"] = lambda k=n: PageRank(g, max_iterations=k)
    if "wcc" in args.jobs:
        scale, edges = args.wcc_graph or WCC_GRAPH
        t = load_graph(spark, str(rmat(scale, edges, tail=12 if quick else 30)), "edgelist", partitions=args.partitions)
        out["wcc"] = lambda k=1000: WeaklyConnectedComponents(t, max_iterations=k)
    if "kmeans" in args.jobs:
        pts = load_points(spark, str(points(500_000, 5)), partitions=args.partitions)
        c = initial_centers(pts, 5)
        out["kmeans"] = lambda k=n: KMeans(pts, 5, init_centers=c, max_iterations=k, tol=None)
    return out


def whole(run: Any) -> tuple[float, float]:
    """(job seconds, executor-seconds) of every superstep of a run, rescales included
    (``Run.executor_seconds`` leaves superstep 1 out)."""
    return run.job_seconds, float(run.table["executor_seconds"].sum())


def main() -> int:
    args = parse_args(__doc__, NAME, extra, quick_reps=1, partitions=None, data=False,
                      quick_help="1 rep, 3 targets a job, 8 supersteps, WCC's tail 12 vertices: the inputs of full mode")
    stem = f"{NAME}_{args.tag}" if args.tag else NAME
    if args.from_csv:  # the analysis again, on the runs saved by an earlier call
        df = pd.read_csv(RESULTS / f"{stem}.csv")
        steps = RESULTS / f"{stem}_supersteps.csv"
        profile = RESULTS / f"{stem}_cluster_profile.json"
        text = analyse(df, args.workers, pd.read_csv(steps) if steps.exists() else None, args.scale_out_seconds,
                       load_profile(profile).records() if profile.exists() else None)
        print("\n".join(text))
        figures(df, args.workers, stem)
        return 0
    if any(c.isdigit() and int(c) > args.workers for c in args.target_start):
        raise SystemExit(f"--target-start {','.join(args.target_start)}: a count above --workers {args.workers}")
    if not args.quick and not args.reps_given:  # full mode: 3 reps unless told otherwise
        args.reps = 3
    n = args.supersteps or (8 if args.quick else 14)
    n_targets = args.targets or (3 if args.quick else 10)
    W, t0, runs, rows = args.workers, time.time(), Collector(), []
    with cluster(args) as (_, spark, note):
        slow, priced, calibrated = None, [], "not calibrated (--cluster-profile none): no task slow-down known"
        if args.cluster_profile == "calibrate":  # what `iterflow cluster calibrate` measures, this session
            found = measure(spark, "pareto", W, partitions=args.partitions, say=print)
            if args.earlier_calibrations == "results":  # as `iterflow cluster calibrate` pools the cluster's
                found = replace(found, earlier=earlier_calibrations(stem))
                print(f"  pooled with {len(found.pooled_with)} earlier calibrations of this cluster ("
                      + (", ".join(e["measured_at"][:16] for e in found.pooled_with) or "none") + ")", flush=True)
            priced = found.records()
            slow = found.contention(priced)
            calibrated = describe(found, sizes=range(1, W + 1))
            print(calibrated, flush=True)
            RESULTS.mkdir(parents=True, exist_ok=True)  # what the simulator's calibration may learn from
            (RESULTS / f"{stem}_cluster_profile.json").write_text(json.dumps(found.to_dict(), indent=1))
        for job, make in programs(spark, args, n).items():
            for e in range(1, W + 1):  # the session warms up for minutes (driver JIT, executors'):
                # one untimed run per size before any timed one (quick: its first supersteps, WCC's heavy ones)
                warm_up(spark, make(WARM_QUICK) if args.quick else make(), args, executors=e)
            for rep in range(args.reps):
                def go(policy: str, p: Any, start: int, past: list, model: Any = None, cluster_past: Any = (),
                       **extra: Any) -> None:
                    # executors a size change just started are fresh JVMs: two untimed supersteps
                    # at the starting size first, so every run starts as warm as the others
                    # (only a policy's own scale-outs meet cold executors: what rescaling costs)
                    warm = IterationDriver(spark, StaticPolicy(), partitions=args.partitions, collect_stats=False,
                                           start_executors=start)
                    w = make(2)
                    warm.run(w).release()
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
                follow = args.partitions is None  # each warmed at its planned start, as the static runs at theirs
                e = planned_start(EfficiencyPolicy(max_executors=W, start_executors=W), static_tables, follow, priced)
                go("efficiency", EfficiencyPolicy(max_executors=W, start_executors=W), e, static_tables,
                   cluster_past=priced)
                f = planned_start(FastestPolicy(1, budget=BUDGET, max_executors=W, start_executors=1), static_tables,
                                  follow, priced)
                go("fastest", FastestPolicy(1, budget=BUDGET, max_executors=W, start_executors=f), f, static_tables,
                   cluster_past=priced)
                mine = [r for r in rows if r["job"] == job and r["rep"] == rep]
                hi = next(r["job_seconds"] for r in mine if r["policy"] == "static-1")
                lo = next(r["job_seconds"] for r in mine if r["policy"] == f"static-{W}")
                begin = {c: target_start(W, slow, args.partitions is None) if c == "plan" else W if c == "max"
                         else int(c) for c in args.target_start}
                several = len(begin) > 1
                for i, target in enumerate(np.linspace(min(lo, hi), max(lo, hi), n_targets)):
                    for c in (args.target_start if i % 2 == 0 else args.target_start[::-1]):  # drift hits each alike
                        go(f"target@{c}" if several else "target",
                           TargetPolicy(float(target), max_executors=W, start_executors=begin[c],
                                        prompt_release=RELEASE[args.target_release], cold_start_plan=c == "plan"),
                           begin[c], [], model=LiveModel(replay=ReplayModel(contention=slow)), cluster_past=priced,
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
    text = analyse(df, W, steps, calibration=priced) + [f"target's cold starts: {calibrated}",
                                    f"{time.time() - t0:.0f}s; {W} workers at cpu share {args.cpu_share} ({note}); "
                             f"{args.reps} rep(s); {n} supersteps (PageRank, k-means), WCC to convergence"]
    (RESULTS / f"{stem}.txt").write_text("\n".join(text) + "\n")
    print("\n".join(text))
    figures(df, W, stem)
    return 0


def start_plan(policy: Any, tables: list[pd.DataFrame], follow: bool, cluster_past: Any = ()) -> tuple[Any, Any, list]:
    """``policy``'s start plan from the static runs ``tables`` (a ``Want`` or ``None``), with the
    model and the past it planned on (``plan_start_check.py`` prints them). ``follow``: the
    runs' partition count follows their cores (the driver's model then re-cuts stages, so must
    this one); ``cluster_past``: the calibration's records, which price a scale-out as the
    driver's warm start has them do."""
    past = records(pd.concat(tables, ignore_index=True))
    model = warm_start(LiveModel(replay=ReplayModel(tasks_follow_slots=follow)), past)  # as the driver's warm start
    policy.learn_rescales([*records(cluster_past), *past], scale_ins=past)
    return policy.plan_start(past, model), model, past


def planned_start(policy: Any, tables: list[pd.DataFrame], follow: bool, cluster_past: Any = ()) -> int:
    """Where ``policy`` (``fastest``, ``efficiency``) plans to start from the static runs (what
    the driver asks it before the input is loaded, :meth:`IterationDriver.planned_start`), so
    that the run is warmed at that size as each static run is at its own: a planned start is no
    scale-out. See :func:`start_plan`."""
    want, _, _ = start_plan(policy, tables, follow, cluster_past)
    start = want.executors if want else policy.start_executors
    print(f"  {policy.name}: {want.reason if want else f'starts as configured, {start} executor(s)'}", flush=True)
    return start


def target_start(W: int, slow: Any, follow: bool) -> int:
    """Where a cold ``target`` plans to start (:meth:`TargetPolicy.plan_start` with the cluster's
    calibration and no run of the program), so that it is warmed at that size."""
    want = TargetPolicy(1.0, max_executors=W, start_executors=W).plan_start(
        [], LiveModel(replay=ReplayModel(contention=slow, tasks_follow_slots=follow)))
    print(f"  target: {want.reason if want else f'starts at the maximum, {W} executors'}", flush=True)
    return want.executors if want else W


if __name__ == "__main__":
    raise SystemExit(main())
