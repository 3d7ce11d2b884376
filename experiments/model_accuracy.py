"""Accuracy of the resource model: offline on external traces, live on our own supersteps.

    .venv/bin/python experiments/model_accuracy.py [--quick] [--own-runs 3]

1. ``iterflow model evaluate`` (:func:`iterflow.app.model_cli.evaluate`, called in-process) on
   ``../shared/datasets/runtime-traces/bell`` (Bell protocol: leave-one-scale-out error of
   Ernest, Bell and iterflow's model, next to the published figures) and ``.../ellis``
   (online per-iteration MAPE from the 4th iteration); its tables are printed as the CLI prints
   them and saved to ``results/model_accuracy_traces.txt``.
2. Live next-superstep error: the prediction for superstep i is made at barrier i-1, at the
   executors in force for superstep i (``predicted_seconds`` against ``wall_seconds``),
   scored from superstep 4 on. Sources: the superstep tables the other experiments wrote
   (``results/*_supersteps.csv``), and ``--own-runs`` PageRank runs under a hand schedule of
   executors (:class:`live_model.ScheduledExecutors`; default 3 in full mode, in quick mode
   only when no other tables exist). Reported per source: MAPE and MdAPE over the scored
   supersteps, and separately for the supersteps right after a rescale.
"""
from __future__ import annotations

import contextlib
import io
import json
import time
from pathlib import Path

import numpy as np
import pandas as pd

from common import RESULTS, ROOT
from harness import Collector, cluster, graph_path, parse_args, print_summary, save, stat_row

from algorithms import PageRank
from iterflow.inputs.graphio import load_graph
from iterflow.app.model_cli import evaluate
from live_model import ScheduledExecutors

NAME = "model_accuracy"
TRACES = ROOT.parent / "shared" / "datasets" / "runtime-traces"
SOURCES = ("more_for_shorter", "release_surplus", "runtime_targets", "overhead_peers")


def extra(ap) -> None:
    ap.add_argument("--traces", default=str(TRACES))
    ap.add_argument("--own-runs", type=int, default=None)
    ap.add_argument("--schedule", default=None, help="executors per superstep of the own runs")


def run_evaluate(directory: Path, as_json: bool) -> str:
    """``iterflow model evaluate --traces DIR [--json]``, its output captured."""
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        evaluate(str(directory), as_json)
    return buf.getvalue()


def ellis_rows(text: str) -> list[dict]:
    """The Ellis table's rows: application, scored, then MAPE per variant and iterflow's MdAPE."""
    rows, lines = [], text.splitlines()
    head = next((i for i, line in enumerate(lines) if line.startswith("application")), None)
    if head is None:
        return rows
    cols = lines[head].split()[1:]
    for line in lines[head + 2:]:
        parts = line.split()
        if len(parts) < len(cols) + 1:
            continue
        app, vals = " ".join(parts[:-len(cols)]), parts[-len(cols):]
        for col, v in zip(cols[1:], vals[1:]):
            pct = float(v.rstrip("%")) if v != "-" else float("nan")
            rows.append(stat_row(NAME, f"ellis:{app}", col, "online MAPE %" if col != "MdAPE" else "MdAPE %",
                                 [pct], f"{vals[0]} iterations scored"))
    return rows


def traces(root: Path) -> list[dict]:
    rows: list[dict] = []
    report = []
    bell, ellis = root / "bell", root / "ellis"
    if bell.is_dir():
        report.append(run_evaluate(bell, False))
        results = json.loads(run_evaluate(bell, True))
        for a in ("ernest", "bell", "iterflow"):
            rows += [stat_row(NAME, f"bell:{job}", a, "interpolation error %", [100 * r[a]], "Bell protocol")
                     for job, r in results.items()]
            rows.append(stat_row(NAME, "bell:mean", a, "mean interpolation error %",
                                 [100 * sum(r[a] for r in results.values()) / len(results)],
                                 f"Bell protocol, mean over {len(results)} jobs", n=len(results)))
    if ellis.is_dir():
        text = run_evaluate(ellis, False)
        report.append(text)
        rows += ellis_rows(text)
    out = "\n\n".join(report)
    print(out)
    (RESULTS / f"{NAME}_traces.txt").write_text(out)
    return rows


def live_errors(t: pd.DataFrame) -> pd.DataFrame:
    """Scored supersteps (4..) of every run: APE of the prediction, and whether a rescale preceded."""
    out = []
    for _, g in t.groupby("run_id", sort=False):
        g = g.sort_values("superstep").copy()
        g["after_rescale"] = g["executors"].diff().fillna(0) != 0
        out.append(g)
    t = pd.concat(out)
    t = t[(t["superstep"] >= 4) & np.isfinite(t["predicted_seconds"]) & (t["wall_seconds"] > 0)].copy()
    t["ape"] = (t["predicted_seconds"] - t["wall_seconds"]).abs() / t["wall_seconds"] * 100
    return t


def live_rows(t: pd.DataFrame, source: str) -> list[dict]:
    rows = []
    for job, g in t.groupby("job", sort=False):
        per_run = g.groupby("run_id")["ape"].mean()
        rows += [stat_row(NAME, str(job), f"live:{source}", "MAPE % (ss 4..)", [g["ape"].mean()],
                          f"{len(per_run)} runs; per-run MAPE median {per_run.median():.1f}%", n=len(g)),
                 stat_row(NAME, str(job), f"live:{source}", "MdAPE % (ss 4..)", [g["ape"].median()], n=len(g))]
        after = g[g["after_rescale"]]
        if len(after):
            rows.append(stat_row(NAME, str(job), f"live:{source}", "MAPE % after rescale", [after["ape"].mean()],
                                 "first superstep at new executors", n=len(after)))
    return rows


def own_runs(args, schedule: list[int], n: int) -> pd.DataFrame:
    runs = Collector()
    with cluster(args) as (_, spark, _):
        g = load_graph(spark, str(graph_path(args)), "edgelist", partitions=args.partitions)
        for rep in range(n):
            runs.run(spark, ScheduledExecutors(schedule), PageRank(g, max_iterations=len(schedule)), args=args,
                     start=schedule[0], labels={"experiment": NAME, "job": "pagerank", "policy": "hand-schedule",
                                                "rep": rep, "schedule": "-".join(map(str, schedule))})
    return pd.concat(runs.tables, ignore_index=True)


def main() -> int:
    args = parse_args(__doc__, NAME, extra)
    t0 = time.time()
    RESULTS.mkdir(parents=True, exist_ok=True)
    summary = traces(Path(args.traces))
    found = {s: RESULTS / f"{s}_supersteps.csv" for s in SOURCES if (RESULTS / f"{s}_supersteps.csv").exists()}
    n_own = args.own_runs if args.own_runs is not None else (0 if args.quick and found else args.reps)
    frames = []
    for source, path in found.items():
        t = pd.read_csv(path)
        if "predicted_seconds" in t and "run_id" in t:
            scored = live_errors(t)
            summary += live_rows(scored, source)
            frames.append(scored.assign(source=source))
    if n_own:
        schedule = [int(x) for x in (args.schedule or ("1,1,2,2,4,4,2,1" if args.quick else
                                                       "1,1,1,2,2,4,4,2,2,1,4,2,1,2")).split(",")]
        own = own_runs(args, schedule, n_own)
        own.to_csv(RESULTS / f"{NAME}_supersteps.csv", index=False)
        scored = live_errors(own)
        summary += live_rows(scored, "hand-schedule")
        frames.append(scored.assign(source="hand-schedule"))
    cols = ["source", "job", "policy", "rep", "run_id", "superstep", "executors", "wall_seconds",
            "predicted_seconds", "ape", "after_rescale"]
    live = pd.concat(frames, ignore_index=True)[cols] if frames else pd.DataFrame(columns=cols)
    save(NAME, live, summary)
    if not found and not n_own:
        print("no superstep tables from the other experiments and no own runs: no live figures")
    print_summary(summary, f"{NAME}: traces in {args.traces}; live sources: "
                           f"{', '.join(found) or 'none'}{'; own hand-schedule runs: %d' % n_own if n_own else ''}")
    print(f"{time.time() - t0:.0f}s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
