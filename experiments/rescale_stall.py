"""How long a rescale stalls the barrier (issue 13, item 3), and whether Spark agrees.

    .venv/bin/python experiments/rescale_stall.py [--reps 2] [--scale 17 --edges 2000000]

PageRank on the emulated cluster under a scripted schedule of sizes (4 -> 2 -> 4 -> 1 -> 3 -> 4,
a rescale every other barrier: scale-ins and scale-outs of 1 to 3 executors), run two ways in
each repetition, in alternating order:

* ``no-wait`` (iterflow's default): a scale-out requests executors and the next superstep
  starts; a scale-in secures the state, asks Spark to remove the executors and the next
  superstep starts while their JVMs exit; no relayout at an unchanged partition count;
* ``wait`` (``wait_for_executors=True``): the barrier waits until the executors registered
  or exited.

Per rescale: the barrier's stall (``pause_seconds``: securing the state before a scale-in +
the actuator's wait + any relayout) and the next superstep's wall time, which pays what the
stall no longer does (fresh JVMs, recomputed cached blocks). Per run: the job's seconds. Every
superstep is checked in Spark's event log (:func:`iterflow.observe.eventlog.consistent`: no
more executors ran its tasks than the record says, at least that many were alive as it ended).
Results: ``experiments/results/rescale_stall*``.
"""
from __future__ import annotations

import time
from typing import Any

import pandas as pd

from harness import RESULTS, cluster, parse_args, stat_row, warm_up, write_report

from algorithms import PageRank
from common import rmat
from iterflow.inputs.graphio import load_graph
from iterflow.loop.driver import IterationDriver
from iterflow.loop.reconfig import Reconfiguration
from iterflow.observe.eventlog import consistent, executors_by_superstep, find_log
from iterflow.policies import PolicyBase

NAME = "rescale_stall"
SCHEDULE = {2: 2, 4: 4, 6: 1, 8: 3, 10: 4}  # barrier -> executors
SUPERSTEPS = 12


class Schedule(PolicyBase):
    """Rescale to ``SCHEDULE[i]`` executors at barrier ``i``; keep otherwise."""

    name = "schedule"

    def decide(self, history, model=None, *, layout=None, plan=None):  # noqa: ANN001 - Policy protocol
        n = SCHEDULE.get(history[-1].superstep)
        return Reconfiguration(reason=f"scripted: {n} executors", executors=n) if n else Reconfiguration.none("keep")


def extra(ap) -> None:
    ap.add_argument("--scale", type=int, default=17)
    ap.add_argument("--edges", type=int, default=2_000_000)


def one_run(spark: Any, g: Any, args: Any, mode: str, rep: int) -> tuple[pd.DataFrame, float]:
    sc = spark.sparkContext
    driver = IterationDriver(spark, Schedule(), partitions=args.partitions, start_executors=args.workers,
                             wait_for_executors=(mode == "wait"))
    first_job = driver.stats.first_job
    t0 = time.perf_counter()
    res = driver.run(PageRank(g, max_iterations=SUPERSTEPS))
    res.output.count()
    took = time.perf_counter() - t0
    t = res.supersteps.copy()
    seen = executors_by_superstep(find_log(args.eventlog, sc.applicationId), first_job)
    t["eventlog_end"] = [seen.get(int(i), {}).get("end", -1) for i in t["superstep"]]
    t["eventlog_tasks"] = [seen.get(int(i), {}).get("tasks", -1) for i in t["superstep"]]
    t["eventlog_ok"] = [consistent(int(e), seen.get(int(i), {})) for i, e in zip(t["superstep"], t["executors"])]
    t["mode"], t["rep"] = mode, rep
    print(f"  {mode} rep {rep}: {took:.1f}s; executors {t['executors'].tolist()}; event log end "
          f"{t['eventlog_end'].tolist()}, ran tasks {t['eventlog_tasks'].tolist()} -> "
          f"{'consistent' if t['eventlog_ok'].all() else 'INCONSISTENT'}", flush=True)
    return t, took


def rescales(t: pd.DataFrame) -> pd.DataFrame:
    """One row per rescale: its direction, the barrier's stall, the next superstep's wall."""
    rows = []
    for _, r in t[t["decision"].isin(["up", "down"])].iterrows():
        nxt = t[t["superstep"] == r["superstep"] + 1]
        stall = sum(float(r[c]) for c in ("actuation_seconds", "relayout_seconds") if pd.notna(r.get(c)))
        rows.append({"mode": r["mode"], "rep": r["rep"], "superstep": int(r["superstep"]), "decision": r["decision"],
                     "from": int(r["executors"]), "to": int(r["executors_requested"]), "stall_seconds": stall,
                     "relayout_seconds": r.get("relayout_seconds"),
                     "next_wall_seconds": float(nxt["wall_seconds"].iloc[0]) if len(nxt) else float("nan")})
    return pd.DataFrame(rows)


def main() -> int:
    args = parse_args(__doc__, NAME, extra, quick_reps=2)
    data = rmat(args.scale, args.edges)
    tables, jobs = [], []
    with cluster(args) as (_, spark, note):
        g = load_graph(spark, str(data), "edgelist", partitions=args.partitions)
        warm_up(spark, PageRank(g, max_iterations=3), args)
        for rep in range(args.reps):
            for mode in (("no-wait", "wait") if rep % 2 == 0 else ("wait", "no-wait")):
                t, took = one_run(spark, g, args, mode, rep)
                tables.append(t)
                jobs.append({"mode": mode, "rep": rep, "job_seconds": took})
    t = pd.concat(tables, ignore_index=True)
    r = pd.concat([rescales(x) for x in tables], ignore_index=True)
    j = pd.DataFrame(jobs)
    summary = []
    for mode in ("no-wait", "wait"):
        for kind in ("down", "up"):
            sel = r[(r["mode"] == mode) & (r["decision"] == kind)]
            summary.append(stat_row(NAME, "pagerank", mode, f"stall per scale-{'in' if kind == 'down' else 'out'} s",
                                    sel["stall_seconds"], "securing + actuator wait + relayout"))
            summary.append(stat_row(NAME, "pagerank", mode, f"next superstep after scale-{'in' if kind == 'down' else 'out'} s",
                                    sel["next_wall_seconds"]))
        summary.append(stat_row(NAME, "pagerank", mode, "stall per rescale s", r[r["mode"] == mode]["stall_seconds"]))
        summary.append(stat_row(NAME, "pagerank", mode, "job s", j[j["mode"] == mode]["job_seconds"]))
        summary.append(stat_row(NAME, "pagerank", mode, "event log consistent %",
                                [100.0 * t[t["mode"] == mode]["eventlog_ok"].mean()]))
    ratio = (j[j["mode"] == "no-wait"].set_index("rep")["job_seconds"] / j[j["mode"] == "wait"].set_index("rep")["job_seconds"])
    summary.append(stat_row(NAME, "pagerank", "no-wait/wait", "ratio job s", ratio, "paired by rep"))
    RESULTS.mkdir(parents=True, exist_ok=True)
    t.to_csv(RESULTS / f"{NAME}_supersteps.csv", index=False)
    r.to_csv(RESULTS / f"{NAME}.csv", index=False)
    pd.DataFrame(summary).to_csv(RESULTS / f"{NAME}_summary.csv", index=False)
    title = (f"{NAME}: {args.workers} workers at cpu share {args.cpu_share} ({note}); R-MAT {args.scale}/{args.edges}; "
             f"schedule {SCHEDULE}; {args.reps} reps; median [min-max]")
    write_report(NAME, title, summary, r)
    return 0 if t["eventlog_ok"].all() else 1


if __name__ == "__main__":
    raise SystemExit(main())
