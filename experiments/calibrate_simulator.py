"""Calibration of ``iterflow simulate --run`` on the recorded runs in experiments/results (issue 14,
item 4, Spark-free part): each program's smallest static run is the base; every other run of
the same program in the same experiment is simulated from it and compared with what really
happened. Writes experiments/results/simulator_calibration.csv and .txt. No Spark; seconds.

    .venv/bin/python experiments/calibrate_simulator.py [--tables A.csv,B.csv] [--tag T]

``--tables``: other recorded tables in experiments/results (their adaptive runs made with the
policies' defaults); the simulator's latencies are then learned from the *other* tables only
(leave one table out), so no run is simulated with parameters fitted on it. ``--tag`` names the
output files (``simulator_calibration_TAG*``).
"""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from iterflow.errors import InputError  # noqa: E402
from iterflow.simulate.calibrate import (GOAL_ERROR, GOAL_SAME, calibrate, from_profile, load_profile,  # noqa: E402
                                        policy_of, repeatability)
from iterflow.simulate.cluster import learn  # noqa: E402
from iterflow.simulate.recorded import load  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"
#: pareto.py's fastest runs spend up to 1.2x static-1's executor-seconds (its BUDGET), not 1x --
#: static-1's whatever size their start plan chose (without it a run started at 3 replayed with
#: static-3 as its baseline: 3 throughout where the run released to 1, stop55w20t10)
PARETO = {"fastest": {"budget": 1.2, "baseline_executors": 1}}
#: (table, the options its adaptive runs were made with -- see the experiment's script)
SOURCES = [("release_surplus_supersteps.csv", {"efficiency": {"threshold": 0.1, "slowdown_bound": 0.1}}),
           ("runtime_targets_supersteps.csv", {}),
           ("overhead_peers_supersteps.csv", {}),
           ("more_for_shorter_supersteps.csv", {}),
           ("pareto_supersteps.csv", PARETO)]


def program(run) -> str:
    return str(run.labels.get("job", "?")).split("@")[0]


def main() -> None:
    import argparse

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tables", default=None, help="comma-separated tables in experiments/results")
    ap.add_argument("--judge", default=None, help="of --tables, the ones simulated (default all): the others "
                    "only teach the latencies (e.g. tables made by earlier code, whose adaptive runs decided "
                    "by other rules)")
    ap.add_argument("--tag", default="")
    ap.add_argument("--profile", default=None,
                    help="a cluster profile (JSON written by pareto.py next to its table, or one entry of "
                         "cluster-profiles.json): the simulator's task slow-down and latencies from the cluster's "
                         "calibration job alone -- a job none of the judged runs is")
    ap.add_argument("--base", choices=["smallest", "start", "starts"], default="smallest",
                    help="smallest (default): every run simulated from the program's smallest static run (the "
                         "what-if at other sizes); start: each adaptive run from a static run at its own start size "
                         "(what a user replaying a recorded run under another policy does; static runs are then "
                         "bases, not judged); starts: the same from every static run at that size (a Pareto "
                         "session's passes before and after), the simulated figures their geometric mean")
    ap.add_argument("--ideal-share", type=float, default=0.0,
                    help="the ideal_share the tables' efficiency runs were made with (default 0: every table "
                         "recorded before EfficiencyPolicy had it, pareto_stop36w's included)")
    ap.add_argument("--efficiency-rule", choices=("plan", "knee"), default="knee",
                    help="the rule the tables' efficiency runs were made with (default knee: every table recorded "
                         "before stop 41; plan: stop 41's and later)")
    args = ap.parse_args()
    if not all(c.isalnum() or c in "_.-" for c in args.tag):
        ap.error(f"--tag {args.tag!r}: letters, digits, '_', '.' and '-' only (it names files in {RESULTS})")
    sources = [(t, PARETO if t.startswith("pareto") else {}) for t in args.tables.split(",")] if args.tables else SOURCES
    sources = [(t, {**o, "efficiency": {**o.get("efficiency", {}), "ideal_share": args.ideal_share,
                                        "rule": args.efficiency_rule}})
               for t, o in sources]
    out = f"simulator_calibration{'_' + args.tag if args.tag else ''}"
    rows, used = [], []
    all_runs = {name: load(str(RESULTS / name)) for name, _ in sources}
    every = [r.records for runs in all_runs.values() for r in runs]
    jobs = {(name, prog): [r for r in runs if program(r) == prog]
            for name, runs in all_runs.items() for prog in {program(r) for r in runs}}
    apart = bool(args.tables) and len(sources) > 1  # latencies from the other tables only
    params = learn(every)
    try:
        profile = load_profile(Path(args.profile)) if args.profile else None
    except InputError as exc:
        ap.error(str(exc))
    calibrated = from_profile(profile) if profile else None
    priced = profile.records() if profile else []  # the calibration job's records priced the runs' rescales
    with_slow = []  # the same runs simulated with the task slow-down of the session's other programs
    judged = set(args.judge.split(",")) if args.judge else {name for name, _ in sources}
    for name, options in sources:
        runs = all_runs[name]
        if name not in judged:
            continue
        if calibrated is not None:
            params = calibrated
            used.append(f"{name}: simulator parameters from the cluster's calibration job ({args.profile}): "
                        f"{'; '.join(params.describe())}")
        elif apart:
            params = learn([r.records for k, rs in all_runs.items() if k != name for r in rs])
            used.append(f"{name}: simulator latencies learned from the other tables: {'; '.join(params.describe())}")
        top = max(max(r.sizes) for r in runs)
        for prog in sorted({program(r) for r in runs}):
            # the task slow-down from the same session's other programs: none of the runs simulated here
            pool = [r.records for k, rs in all_runs.items() if k != name for r in rs] if apart else every
            held_out = learn(pool, jobs=[v for k, v in jobs.items() if k[0] == name and k[1] != prog])
            mine = [r for r in runs if program(r) == prog]
            static = [r for r in mine if policy_of(r) == "static" and len(set(r.sizes)) == 1]
            if not static:
                continue
            cold = ("target",) if name.startswith("pareto") else ()  # pareto.py's target starts cold
            sizes = sorted({r.sizes[0] for r in static})  # the runs' past: every static size recorded
            if args.base == "starts":
                for run, bases in start_bases(static, mine):
                    used.append(f"{name}: {prog}, {run.name} from {len(bases)} static run(s) at {bases[0].sizes[0]} executors")
                    for out_rows, p in ((rows, params), (with_slow, held_out)):
                        per = [r for b in bases for r in calibrate(b, [run], p, top, options, cold=cold, prices=priced,
                                                                   past_sizes=sizes)]
                        if per:
                            out_rows.append({"table": name, "program": prog, **merged(per)})
                continue
            for base, others in pairs(static, mine, args.base):
                used.append(f"{name}: {prog}, base {base.name} ({base.sizes[0]} executors, "
                            f"{'sketched tasks' if base.sketched else 'stage_tasks'}), {len(others)} other runs")
                used.append(f"    task slow-down of the session's other programs: {', '.join(d for d in held_out.describe() if d.startswith('contention'))}")
                for row in calibrate(base, others, params, top, options, cold=cold, prices=priced):
                    rows.append({"table": name, "program": prog, **row})
                with_slow += [{"table": name, "program": prog, **row}
                              for row in calibrate(base, others, held_out, top, options, cold=cold, prices=priced)]
    df = pd.DataFrame(rows)
    slow = pd.DataFrame(with_slow)
    ok = lambda d: float(((d.runtime_error.abs() <= GOAL_ERROR) & (d.executor_s_error.abs() <= GOAL_ERROR)).mean())
    used.append(f"with the task slow-down learned from the session's other programs (iterflow.model.contention): "
                f"{ok(slow):.0%} of {len(slow)} runs within 15 % on both (without it: {ok(df):.0%}; below)")
    for table, g in slow.groupby("table"):
        used.append(f"    {table}: {ok(g):.0%} of {len(g)} with it, {ok(df[df.table == table]):.0%} without; median "
                    f"|runtime error| {g.runtime_error.abs().median():.0%} with, "
                    f"{df[df.table == table].runtime_error.abs().median():.0%} without")
    slow.to_csv(RESULTS / f"{out}_contention.csv", index=False)
    df.to_csv(RESULTS / f"{out}.csv", index=False)
    repeats = {name: repeatability(all_runs[name]) for name, _ in sources if name in judged}
    text = report(df, used, params, repeats)
    (RESULTS / f"{out}.txt").write_text(text)
    print(text)


def pairs(static: list, mine: list, how: str) -> list[tuple[Any, list]]:
    """(base, runs simulated from it): the smallest static run and every other run of the
    program; or (``start``) per adaptive run, a static run at its start size -- never itself,
    the one whose superstep count matches, the first recorded."""
    if how == "smallest":
        base = min(static, key=lambda r: (r.sizes[0], str(r.labels.get("rep"))))
        others = [r for r in mine if r is not base and len(r.steps) == len(base.steps)]
        return [(base, others)] if others else []
    out: dict[int, tuple[Any, list]] = {}
    for run, same in start_bases(static, mine):
        out.setdefault(id(same[0]), (same[0], []))[1].append(run)
    return list(out.values())


def start_bases(static: list, mine: list) -> list[tuple[Any, list]]:
    """(adaptive run, every static run at its start size of as many supersteps): ``--base
    starts``."""
    out = []
    for run in mine:
        if policy_of(run) != "static":
            same = [b for b in static if b.sizes[0] == run.sizes[0] and len(b.steps) == len(run.steps)]
            if same:
                out.append((run, same))
    return out


def merged(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """One run simulated from several bases (``--base starts``): the simulated runtime and
    executor-seconds their geometric mean, the decisions matched their mean, the executor path
    the first base's. Why: a session drifts (stop48's first static pass ran PageRank at 3
    executors in 18.7 s, the second in 15.6 s, the target runs between them in 12.6-15.8 s); one
    base carries its pass's drift into every run simulated from it."""
    first = dict(rows[0])
    for sim, real, err in (("sim_runtime_s", "real_runtime_s", "runtime_error"),
                           ("sim_executor_s", "real_executor_s", "executor_s_error")):
        first[sim] = float(np.exp(np.mean([np.log(r[sim]) for r in rows])))
        first[err] = first[sim] / first[real] - 1 if first[real] else float("nan")
    first["same_decisions"] = float(np.nanmean([r["same_decisions"] for r in rows]))
    first["base"] = " + ".join(str(r["base"]) for r in rows)
    return first


def report(df: pd.DataFrame, used: list[str], params, repeats: dict[str, list[float]]) -> str:
    lines = [f"# simulator calibration: .venv/bin/python experiments/calibrate_simulator.py {' '.join(sys.argv[1:])} (no Spark)",
             f"goal (issue 14 item 4): |error| <= {GOAL_ERROR:.0%} on runtime and executor-seconds, "
             f">= {GOAL_SAME:.0%} same decisions (up/down/same per barrier) on adaptive runs",
             "recorded runs used (base -> the others of the same program and experiment):"]
    lines += [f"  {u}" for u in used]
    lines.append("simulator parameters (learned over all tables):")
    lines += [f"  {p}" for p in params.describe()]
    cols = ["table", "program", "run", "policy", "real_executors", "sim_executors", "real_runtime_s", "sim_runtime_s",
            "runtime_error", "real_executor_s", "sim_executor_s", "executor_s_error", "same_decisions", "barriers"]
    lines.append(df[cols].to_string(index=False, float_format=lambda x: f"{x:.3g}"))
    lines.append("summary by table, program, policy: median |runtime error|, median |executor-s error|, share within 15 %, "
                 "mean same-decision share")
    for key, g in df.groupby(["table", "program", "policy"]):
        rt, es = g.runtime_error.abs(), g.executor_s_error.abs()
        same = g.same_decisions.dropna()
        lines.append(f"  {'/'.join(key)}: runtime {rt.median():.1%}, executor-s {es.median():.1%}, "
                     f"within 15 %: {np.mean((rt <= GOAL_ERROR) & (es <= GOAL_ERROR)):.0%} of {len(g)}"
                     + (f", same decisions {same.mean():.0%}" if len(same) else ""))
    lines.append("noise floor -- the same configuration's real runs (same policy and start size, other reps) "
                 "differ by, max/min runtime:")
    for key, g in df.groupby(["table", "program", "policy", "start_executors"]):
        if len(g) > 1 and key[2] == "static":
            lines.append(f"  {key[0]}/{key[1]} static at {key[3]}: {g.real_runtime_s.max() / g.real_runtime_s.min():.2f}x "
                         f"over {len(g)} runs")
    lines += ceiling(df, repeats)
    ok = (df.runtime_error.abs() <= GOAL_ERROR) & (df.executor_s_error.abs() <= GOAL_ERROR)
    adaptive = df.same_decisions.dropna()
    lines.append(f"overall: {ok.mean():.0%} of {len(df)} runs within 15 % on both; same decisions "
                 f"{adaptive.mean():.0%} over {len(adaptive)} adaptive runs" if len(adaptive) else "")
    return "\n".join(lines) + "\n"


def ceiling(df: pd.DataFrame, repeats: dict[str, list[float]]) -> list[str]:
    """What no simulator can beat on these tables (:func:`~iterflow.simulate.calibrate.repeatability`):
    each static run predicted by its configuration's other runs -- a Pareto session's passes
    before and after the adaptive runs -- per table, beside the simulator's share on the same
    table. Its share within 15 % is the repeatability of the real runs themselves."""
    within = lambda e: float(np.mean(np.abs(e) <= GOAL_ERROR)) if len(e) else float("nan")
    ok = (df.runtime_error.abs() <= GOAL_ERROR) & (df.executor_s_error.abs() <= GOAL_ERROR)
    lines = ["oracle ceiling -- each static run's runtime predicted by the other runs of its size (geometric "
             "mean), within 15 %, against the simulator's runs within 15 % on both:"]
    for name, errors in repeats.items():
        mine = ok[df.table == name] if len(df) else ok
        lines.append(f"  {name}: repeats {within(errors):.0%} of {len(errors)} (median |error| "
                     f"{np.median(np.abs(errors)) if errors else float('nan'):.0%}); simulator {mine.mean():.0%} of {len(mine)}")
    every = [e for errors in repeats.values() for e in errors]
    lines.append(f"  all: repeats {within(every):.0%} of {len(every)} (median |error| "
                 f"{np.median(np.abs(every)) if every else float('nan'):.0%}); simulator {ok.mean():.0%} of {len(df)}")
    return lines


if __name__ == "__main__":
    main()
