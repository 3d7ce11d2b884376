"""Does a long session slow down? The same static PageRank run again and again in one session.

    .venv/bin/python experiments/session_drift.py [--runs 16] [--executors 4] [--retained N] [--tag T]

Why: in the Pareto sessions (30-40 runs, one SparkSession), static-4's runs after the adaptive
ones were up to 25 % slower than before them, and ``target``'s runs at 4 executors ran ~10 %
slower than the static runs at 4 (stop 41-42). A driver that costs more CPU as the session
ages takes it from the executors on this 2-core box, at 4 executors (the whole machine) most.
Each run here is tracked as every experiment's (:meth:`harness.Collector.run`): per run, the
median superstep, and the CPU seconds the driver's JVM and Python process spent during it.
``--retained N`` caps what Spark's status store keeps (``spark.ui.retainedJobs``,
``spark.ui.retainedStages``, ``spark.sql.ui.retainedExecutions``: N each). ``--jfr FILE``
records the driver JVM with Java Flight Recorder during the last run and prints where its CPU
samples fall (the top frames, and the Spark/iterflow frame nearest the top of each stack).
Writes results/session_drift[_TAG].csv and .txt.
"""
from __future__ import annotations

import collections
import json
import os
import subprocess
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from common import rmat
from harness import Collector, cluster, parse_args, warm_up, write_table

from algorithms import PageRank
from iterflow.inputs.graphio import load_graph
from iterflow.policies import StaticPolicy

NAME = "session_drift"


def extra(ap: Any) -> None:
    ap.add_argument("--runs", type=int, default=16)
    ap.add_argument("--executors", type=int, default=4)
    ap.add_argument("--supersteps", type=int, default=14)
    ap.add_argument("--retained", type=int, default=None,
                    help="cap Spark's status store at N jobs, stages and SQL executions (default: Spark's)")
    ap.add_argument("--jfr", default=None, help="record the driver JVM during the last run to this .jfr file")
    ap.add_argument("--tag", default="")


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def hot_frames(path: Path, top: int = 25) -> list[str]:
    """Where the driver JVM's CPU samples fall: the top frame of each sample, and the nearest
    frame of Spark's or iterflow's own packages (what called into the JDK or Scala library)."""
    out = subprocess.run(["jfr", "print", "--json", "--events", "jdk.ExecutionSample", str(path)],
                         check=True, capture_output=True, text=True).stdout
    events = json.loads(out)["recording"]["events"]
    leaf, ours, threads = collections.Counter(), collections.Counter(), collections.Counter()

    def kind(f: dict) -> str:
        return f["method"]["type"]["name"].replace("/", ".")

    def name(f: dict) -> str:
        return f"{kind(f)}.{f['method']['name']}"
    for ev in events:
        frames = ev["values"]["stackTrace"]["frames"] if ev["values"].get("stackTrace") else []
        threads[ev["values"]["sampledThread"]["javaName"].rstrip("0123456789-")] += 1
        if not frames:
            continue
        leaf[name(frames[0])] += 1
        own = next((name(f) for f in frames if kind(f).startswith(("org.apache.spark", "io.iterflow"))
                    and "$$Lambda" not in kind(f)), "-")
        ours[own] += 1
    n = max(1, len(events))
    say = lambda c: [f"    {v / n:5.1%}  {k}" for k, v in c.most_common(top)]  # noqa: E731
    return ([f"driver JVM CPU samples during the last run: {len(events)} ({path})", "  by thread:"]
            + say(threads) + ["  by the Spark/iterflow frame nearest the top:"] + say(ours)
            + ["  by top frame:"] + say(leaf))


def main() -> int:
    args = parse_args(__doc__, NAME, extra, quick_reps=1)
    conf = {}
    if args.retained:
        n = str(args.retained)
        conf = {"spark.ui.retainedJobs": n, "spark.ui.retainedStages": n, "spark.sql.ui.retainedExecutions": n}
    rows, runs = [], Collector()
    with cluster(args, conf) as (_, spark, note):
        jvm = int(spark.sparkContext._jvm.ProcessHandle.current().pid())
        g = load_graph(spark, str(rmat(18, 1_000_000)), "edgelist", partitions=args.partitions)
        warm_up(spark, PageRank(g, max_iterations=4), args, executors=args.executors)
        for k in range(args.runs):
            if args.jfr and k == args.runs - 1:
                subprocess.run(["jcmd", str(jvm), "JFR.start", "name=drift", "settings=profile",
                                f"filename={Path(args.jfr).resolve()}"], check=True, capture_output=True)
            j0, p0, t0 = cpu_seconds(jvm), time.process_time(), time.perf_counter()
            run = runs.run(spark, StaticPolicy(), PageRank(g, max_iterations=args.supersteps), args=args,
                           start=args.executors, verbose=False,
                           labels={"experiment": NAME, "job": "pagerank", "policy": f"static-{args.executors}",
                                   "rep": k})
            wall = time.perf_counter() - t0
            steps = run.table.sort_values("superstep")["wall_seconds"].to_numpy()[1:]
            rows.append({"run": k, "median_superstep_s": float(np.median(steps)), "job_s": run.job_seconds,
                         "wall_s": wall, "driver_jvm_cpu_s": cpu_seconds(jvm) - j0,
                         "driver_python_cpu_s": time.process_time() - p0})
            if args.jfr and k == args.runs - 1:
                subprocess.run(["jcmd", str(jvm), "JFR.stop", "name=drift"], check=True, capture_output=True)
            r = rows[-1]
            print(f"  run {k}: median superstep {r['median_superstep_s']:.3f}s, job {r['job_s']:.1f}s; driver CPU "
                  f"JVM {r['driver_jvm_cpu_s']:.1f}s, Python {r['driver_python_cpu_s']:.1f}s", flush=True)
    df = pd.DataFrame(rows)
    third = max(1, len(df) // 3)
    first, last = df.head(third), df.tail(third)
    ratio = lambda c: float(last[c].median() / first[c].median())  # noqa: E731
    slope = float(np.polyfit(df["run"], df["median_superstep_s"], 1)[0] / df["median_superstep_s"].median())
    text = [f"session drift: {len(df)} static runs of PageRank (R-MAT 18, 1M edges, {args.supersteps} supersteps) at "
            f"{args.executors} executors in one session ({note})"
            + (f"; Spark's status store capped at {args.retained} jobs/stages" if args.retained else ""),
            f"  last third over first third (medians): superstep {ratio('median_superstep_s'):.2f}x, driver JVM CPU "
            f"per run {ratio('driver_jvm_cpu_s'):.2f}x, driver Python CPU per run {ratio('driver_python_cpu_s'):.2f}x",
            f"  superstep trend: {slope:+.1%} of the median per run (least squares over the runs)",
            df.round(3).to_string(index=False)]
    if args.jfr:
        text += hot_frames(Path(args.jfr))
    write_table(NAME, args.tag, df, text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
