"""What the executors' class archive (:mod:`iterflow.cluster.cds`) saves a scale-out, side by side.

    .venv/bin/python experiments/class_archive.py [--reps 3] [--scale 17 --edges 2000000]

PageRank on the emulated cluster (4 workers at 0.5 core, executors JIT with C1 only), started at
1 executor and scripted 1 -> 4 at barrier 3, 4 -> 1 at barrier 7, 1 -> 4 at barrier 9 (12
supersteps): two scale-outs to three fresh executor JVMs each. Each repetition runs one
application with the archive and one without (``spark.iterflow.classArchive=false``), in
alternating order, each in a Python process and Spark application of its own on one cluster
(an executor's JVM options are the application's). Per application: the job's seconds, each
scale-out's registration delay (request to the barrier that saw the executors,
:func:`~iterflow.loop.rescales.registration_delays`) and price (its pause and the cold supersteps
until the new executors worked, :func:`~iterflow.loop.rescales.rescale_costs`, what the policies
charge), and the two supersteps after each scale-out. Ratios with / without, paired by rep.
Results: ``experiments/results/class_archive*``.
"""
from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

NAME = "class_archive"
SCHEDULE = {3: 4, 7: 1, 9: 4}  # barrier -> executors
SUPERSTEPS = 12


def child(master: str, variant: str, args) -> None:
    """One application: the scripted run; prints one JSON line."""
    from algorithms import PageRank
    from common import rmat, session_settings
    from harness import C1_ONLY
    from iterflow.cluster import cds
    from iterflow.cluster.session import build_session, stop_session
    from iterflow.inputs.graphio import load_graph
    from iterflow.loop.driver import IterationDriver
    from iterflow.loop.reconfig import Reconfiguration
    from iterflow.loop.rescales import registration_delays, rescale_costs
    from iterflow.policies import PolicyBase

    class Schedule(PolicyBase):
        name = "schedule"

        def decide(self, history, model=None, *, layout=None, plan=None):  # noqa: ANN001 - Policy protocol
            n = SCHEDULE.get(history[-1].superstep)
            return Reconfiguration(reason=f"scripted: {n}", executors=n) if n else Reconfiguration.none("keep")

    events = Path(tempfile.mkdtemp(prefix="iterflow-eventlog-")) if args.tasks else None
    work = tempfile.TemporaryDirectory(prefix="iterflow-exp-")  # the driver's checkpoints, removed after
    conf = {**session_settings(args.partitions, events), cds.OPTS: C1_ONLY,
            cds.CONF: "true" if variant == "archive" else "false"}
    spark = build_session(master, args.workers, conf, work_dir=Path(work.name), with_graphframes=False)
    try:
        opts = spark.sparkContext.getConf().get(cds.OPTS, "")
        assert ("SharedArchiveFile" in opts) == (variant == "archive"), opts
        g = load_graph(spark, str(rmat(args.scale, args.edges)), "edgelist", partitions=args.partitions)
        t0 = time.perf_counter()
        res = IterationDriver(spark, Schedule(), partitions=args.partitions, start_executors=1).run(
            PageRank(g, max_iterations=SUPERSTEPS))
        res.output.count()
        took = time.perf_counter() - t0
        rec = res.records
        walls = [r.wall_seconds for r in rec]
        after = [sum(walls[b:b + 2]) for b in sorted(k for k, v in SCHEDULE.items() if v > 1)]
        print("RESULT " + json.dumps({
            "variant": variant, "job_seconds": took, "executors": [r.executors for r in rec], "walls": walls,
            "registration": registration_delays(rec), "scale_out_price": rescale_costs(rec, "up"),
            "two_after_scale_out": after}), flush=True)
        res.release()
        app = spark.sparkContext.applicationId
    finally:
        stop_session(spark)
        work.cleanup()
    if events is not None:
        from iterflow.observe.eventlog import find_log
        print("TASKS " + json.dumps(task_times(find_log(events, app))), flush=True)
        shutil.rmtree(events, ignore_errors=True)


#: a task's time as Spark's event log splits it (milliseconds)
PARTS = {"deserialize": "Executor Deserialize Time", "run": "Executor Run Time", "gc": "JVM GC Time",
         "fetch_wait": ("Shuffle Read Metrics", "Fetch Wait Time")}


def task_times(log: Path) -> list[dict]:
    """Per task of the log: its executor, its rank among that executor's tasks (0: its first),
    whether the executor was added after the application's first task ran (a scale-out's), and
    its time split into ``PARTS`` (seconds)."""
    rows, seen, first_task_at = [], {}, None
    from iterflow.observe.eventlog import event_lines

    for line in event_lines(log):
        if '"SparkListenerTaskEnd"' not in line:
            continue
        ev = json.loads(line)
        info, m = ev["Task Info"], ev.get("Task Metrics") or {}
        ex, launch = info["Executor ID"], info["Launch Time"]
        first_task_at = launch if first_task_at is None else min(first_task_at, launch)
        seen.setdefault(ex, []).append(launch)
        row = {"executor": ex, "launch": launch, "duration": (info["Finish Time"] - launch) / 1e3}
        for name, key in PARTS.items():
            v = m.get(key[0], {}).get(key[1], 0) if isinstance(key, tuple) else m.get(key, 0)
            row[name] = v / 1e3
        rows.append(row)
    first_seen = {ex: min(t) for ex, t in seen.items()}
    for r in rows:
        r["rank"] = sum(t < r["launch"] for t in seen[r["executor"]])
        r["fresh"] = first_seen[r["executor"]] > first_task_at + 1000  # a scale-out's executor
    return rows


def main() -> int:
    from harness import parse_args
    from iterflow.app.classlist import ensure
    from iterflow.cluster.local import LocalCluster

    def extra(ap) -> None:
        ap.add_argument("--scale", type=int, default=17)
        ap.add_argument("--edges", type=int, default=2_000_000)
        ap.add_argument("--tag", default="", help="names the result files (class_archive_TAG.*)")
        ap.add_argument("--tasks", action="store_true",
                        help="also split the tasks of a scale-out's executors (their first ones against the rest) "
                             "into deserialization, run, GC and shuffle fetch wait, from Spark's event log")
        ap.add_argument("--child", default=None, help=argparse.SUPPRESS)  # one application of the experiment
        ap.add_argument("--master", default=None, help=argparse.SUPPRESS)

    args = parse_args(__doc__, NAME, extra, quick_reps=2)
    if args.child:
        child(args.master, args.child, args)
        return 0
    ensure()
    rows, tasks = [], []
    with LocalCluster(args.workers, 1, "3g", args.cpu_share) as cluster:
        note = cluster.cpu_share_note or "no cpu share"
        print(f"cluster: {args.workers} workers; {note}", flush=True)
        for rep in range(args.reps):
            for variant in (("archive", "none") if rep % 2 == 0 else ("none", "archive")):
                cmd = [sys.executable, __file__, "--child", variant, "--master", cluster.master_url,
                       "--scale", str(args.scale), "--edges", str(args.edges), "--workers", str(args.workers),
                       "--cpu-share", str(args.cpu_share), "--partitions", str(args.partitions), "--tag", args.tag]
                cmd += ["--tasks"] if args.tasks else []
                out = subprocess.run(cmd, capture_output=True, text=True)
                line = next((x for x in out.stdout.splitlines() if x.startswith("RESULT ")), None)
                if out.returncode != 0 or line is None:
                    print(out.stdout[-2000:], out.stderr[-3000:], file=sys.stderr)
                    raise SystemExit(f"{variant} rep {rep}: the application failed (exit {out.returncode})")
                r = {"rep": rep, **json.loads(line[len("RESULT "):])}
                rows.append(r)
                tl = next((x for x in out.stdout.splitlines() if x.startswith("TASKS ")), None)
                if tl:
                    tasks += [{"rep": rep, "variant": variant, **x} for x in json.loads(tl[len("TASKS "):])]
                print(f"  rep {rep} {variant}: {r['job_seconds']:.1f}s; executors {r['executors']}; registered after "
                      f"{[round(x, 1) for x in r['registration']]}s; scale-out price "
                      f"{[round(x, 1) for x in r['scale_out_price']]}s; two supersteps after each scale-out "
                      f"{[round(x, 1) for x in r['two_after_scale_out']]}s", flush=True)
    t = pd.DataFrame(rows)
    results = Path(__file__).resolve().parent / "results"
    tag = f"_{args.tag}" if args.tag else ""
    t.to_csv(results / f"{NAME}{tag}.csv", index=False)
    lines = [f"{NAME}: PageRank R-MAT {args.scale}/{args.edges}, {args.workers} workers ({note}), executors JIT "
             f"with C1 only; schedule {SCHEDULE}; {args.reps} reps, alternating; with the archive / without"]
    for what, col in (("job seconds", "job_seconds"), ("registration delay s", "registration"),
                      ("scale-out price s", "scale_out_price"), ("two supersteps after a scale-out s", "two_after_scale_out")):
        per = {v: t[t["variant"] == v].set_index("rep")[col] for v in ("archive", "none")}
        flat = {v: np.concatenate([np.atleast_1d(x) for x in s]) if len(s) else np.array([]) for v, s in per.items()}
        ratio = [float(np.median(np.atleast_1d(per["archive"][k])) / np.median(np.atleast_1d(per["none"][k])))
                 for k in per["archive"].index if k in per["none"].index
                 and np.size(per["archive"][k]) and np.size(per["none"][k])]
        lines.append(f"  {what}: with {np.median(flat['archive']):.2f} [{np.min(flat['archive']):.2f}-"
                     f"{np.max(flat['archive']):.2f}], without {np.median(flat['none']):.2f} [{np.min(flat['none']):.2f}-"
                     f"{np.max(flat['none']):.2f}]; ratio by rep median {np.median(ratio):.2f}x "
                     f"[{min(ratio):.2f}-{max(ratio):.2f}]" if ratio else f"  {what}: not measured")
    if tasks:
        lines += task_summary(pd.DataFrame(tasks))
        pd.DataFrame(tasks).to_csv(results / f"{NAME}{tag}_tasks.csv", index=False)
    print("\n".join(lines))
    (results / f"{NAME}{tag}.txt").write_text("\n".join(lines) + "\n")
    return 0


def task_summary(t: pd.DataFrame) -> list[str]:
    """Median seconds of each part: a scale-out's executors' first 2 tasks, and every executor's
    tasks from its 10th on (steady), per variant."""
    out = ["  tasks, median seconds (duration = deserialize + run + the rest; fetch wait is inside run):"]
    for variant in ("archive", "none"):
        v = t[t["variant"] == variant]
        for label, sel in (("a scale-out's executor, its first 2 tasks", v[v["fresh"] & (v["rank"] < 2)]),
                           ("every executor, its 10th task on", v[v["rank"] >= 10])):
            parts = ", ".join(f"{p} {sel[p].median():.3f}" for p in ("duration", *PARTS))
            out.append(f"    {variant}: {label} ({len(sel)}): {parts}")
    return out


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    raise SystemExit(main())
