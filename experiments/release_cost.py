"""What a release (scale-in) costs, killed or decommissioned (issue 13, item 4).

    .venv/bin/python experiments/release_cost.py [--reps 3] [--job pagerank|wcc] [--modes kill,decommission]

On the emulated cluster, starting on 4 executors under a scripted schedule, run ``--modes`` in one
application, alternating order by repetition:

* ``pagerank`` (default): the Pareto experiment's graph (R-MAT scale 18, 1M edges), 4 -> 2 at
  barrier 2, 2 -> 1 at barrier 6, 10 supersteps;
* ``wcc``: the Pareto experiment's WCC input (R-MAT 19, 600k edges, a 30-vertex path: 33
  supersteps), 4 -> 2 at barrier 12, 2 -> 1 at barrier 18 -- releases in its tail, where
  ``efficiency`` and ``target`` make theirs;
* ``wcc-heavy``: the same, 4 -> 1 at barrier 5, the end of its heavy phase -- where ``fastest``
  released to 1 in stop 37-38 and ran the next supersteps 2-4x their static time
  (``next4_1``: the four supersteps after the release). Is it the removed executors' old
  shuffle files migrating onto the one left (a 0.5-core quota)? Stop 38, four applications
  alternated, with ``--conf spark.storage.decommission.shuffleBlocks.enabled=false`` or not
  (``release_cost_wcc-heavy_shuffle.txt``): the four supersteps after the release 5.16 s against
  5.14 s (medians of 4 runs each) -- no; nor did the scripted release reproduce the policies'
  2-3x transient on that (slow) day.

Either way the state is copied to the reliable checkpoint dir before the release and the run
goes on from the copy:

* ``kill``: the removed executors are killed; their cached blocks (the graph) are lost and the
  next superstep recomputes them from the input file;
* ``decommission`` (iterflow's default since stop 28): they are decommissioned; their cached
  blocks move to the executors that stay, then they exit;
* ``decommission-wait``: decommissioned, and the barrier waits until they have exited (their
  blocks moved) before the next superstep starts -- is the first superstep slow because it
  runs while the blocks move? (stop 38, WCC, 2 reps: the barrier stalled 1.7 s instead of
  0.5 s and the first supersteps were only 0.17 / 0.06 s faster (to 2 / to 1): no;
  ``release_cost_wcc_wait.txt``).

Why that first superstep is slow (Spark's event log of WCC's releases, stop 38): it reads the
copy the run goes on from lazily -- its second stage read nothing from the cache and took
220-311 ms of CPU, 48-72 ms in the supersteps after, which read the copy's columnar cache. Stop
38 tried filling that cache at the barrier, one ``count`` a frame on the executors still there
(commit 178136a, ``release_cost_wcc_fill.txt``, 3 reps, where ``decommission-lazy`` is the way
iterflow keeps): the first superstep's excess fell from 0.59 / 0.93 s to 0.39 / 0.49 s, but
the barrier stalled 0.87-1.30 s instead of 0.40-0.57 s -- the job 1.01x [0.98-1.21]. It then
tried caching the state before writing the copy (so the job that writes it fills the cache) and
going on from that cache, the barrier's blocks freed (commit 8018522,
``release_cost_wcc_cached.txt``, where ``decommission-files`` is the way iterflow keeps): the
superstep after each release did not read that cache -- it failed on a freed local-checkpoint
block and was rewound to the copy (two recoveries a run). Not kept.

A release's cost is its barrier's stall (``stall_<n>``) and the first superstep at the new size
over the median of the next ones (``excess_<n>``; ``first_<n>``: that superstep's CPU seconds and
its stages' task milliseconds). Per run: job seconds and executor-seconds. Results:
``experiments/results/release_cost*``. Stop 36 tried a third way, decommissioned and going on
with the state's blocks in memory where they moved instead of from the copy (commit 651a34d;
``release_cost_wcc_inmemory.txt``, where ``decommission-files`` is the way iterflow keeps):
no faster on WCC (1.04x [0.98-1.10] the job, 2 reps), so iterflow did not keep it.
"""
from __future__ import annotations

import re
import time
from typing import Any

import pandas as pd

from harness import RESULTS, cluster, parse_args, print_summary, stat_row, warm_up

from algorithms import PageRank, WeaklyConnectedComponents
from common import rmat
from iterflow.inputs.graphio import load_graph
from iterflow.loop.driver import IterationDriver
from iterflow.loop.reconfig import Reconfiguration
from iterflow.policies import PolicyBase, StaticPolicy

NAME = "release_cost"
# job -> (barrier -> executors, supersteps)
JOBS = {"pagerank": ({2: 2, 6: 1}, 10), "wcc": ({12: 2, 18: 1}, 33), "wcc-heavy": ({5: 1}, 33)}
MODES = ("kill", "decommission", "decommission-wait")


class Schedule(PolicyBase):
    """Release to ``schedule[i]`` executors at barrier ``i``; keep otherwise."""

    name = "schedule"

    def __init__(self, schedule: dict[int, int]) -> None:
        super().__init__()
        self.schedule = schedule

    def decide(self, history, model=None, *, layout=None, plan=None):  # noqa: ANN001 - Policy protocol
        n = self.schedule.get(history[-1].superstep)
        return Reconfiguration(reason=f"scripted: {n} executors", executors=n) if n else Reconfiguration.none("keep")


def excess(wall: pd.Series, job: str) -> dict[str, float]:
    """Per release: its first superstep at the new size over the median of the later ones at
    that size (``wall`` indexed by superstep)."""
    schedule, supersteps = JOBS[job]
    bars, out = sorted(schedule) + [supersteps], {}
    for b, nxt in zip(bars, bars[1:]):
        out[f"excess_{schedule[b]}"] = float(wall.loc[b + 1] - wall.loc[b + 2:nxt].median())
    return out


def program(job: str, g: Any, supersteps: int) -> Any:
    return PageRank(g, max_iterations=supersteps) if job == "pagerank" else WeaklyConnectedComponents(g)


def one_run(spark: Any, g: Any, args: Any, mode: str, rep: int) -> dict[str, Any]:
    # two untimed supersteps at 4 first: the previous run's releases left 1 executor warm
    warm = IterationDriver(spark, StaticPolicy(), partitions=args.partitions, collect_stats=False,
                           start_executors=args.workers)
    p = PageRank(g, max_iterations=2)
    warm.run(p).release()
    p.release()
    schedule, supersteps = JOBS[args.job]
    driver = IterationDriver(spark, Schedule(schedule), partitions=args.partitions, start_executors=args.workers,
                             wait_for_executors=mode == "decommission-wait")
    driver.actuator.decommission = mode.startswith("decommission")
    t0 = time.perf_counter()
    prog = program(args.job, g, supersteps)
    res = driver.run(prog)
    took = time.perf_counter() - t0
    res.release()
    prog.release()
    t = res.supersteps.set_index("superstep")
    if len(t) != supersteps:
        raise SystemExit(f"{args.job} ran {len(t)} supersteps, not {supersteps}: the schedule no longer fits")
    wall = t["wall_seconds"]
    row = {"mode": mode, "rep": rep, "job_seconds": took,
           "executor_seconds": float(((wall + t["barrier_seconds"].fillna(0)) * t["executors"]).sum()),
           "executors": "-".join(str(int(e)) for e in t["executors"]),
           "recoveries": int(t["recoveries"].fillna(0).sum()) if "recoveries" in t else 0,
           "walls": " ".join(f"{w:.2f}" for w in wall)}
    row.update(excess(wall, args.job))
    for b in sorted(schedule):  # the barrier's stall and the first superstep after it, stage by stage
        row[f"stall_{schedule[b]}"] = float(t.loc[b].get("actuation_seconds") or 0.0)
        row[f"first_{schedule[b]}"] = f"{t.loc[b + 1].get('executor_cpu_seconds')} cpu; {t.loc[b + 1].get('stage_tasks')}"
        row[f"next4_{schedule[b]}"] = float(wall.loc[b + 1:b + 4].sum())  # a transient longer than one superstep
    print(f"  {mode} rep {rep}: {took:.1f}s, {row['executor_seconds']:.0f} executor-s; supersteps {row['walls']} "
          f"on {row['executors']}", flush=True)
    return row


def main() -> int:
    def extra(ap: Any) -> None:
        ap.add_argument("--from-csv", action="store_true", help="only analyse results/release_cost*.csv again")
        ap.add_argument("--job", choices=sorted(JOBS), default="pagerank")
        ap.add_argument("--modes", default="kill,decommission", help=f"comma-separated, of {', '.join(MODES)}")

    args = parse_args(__doc__, NAME, extra, quick_reps=3)
    if args.from_csv:  # the supersteps' walls are in the table: the figures again, no cluster
        df = pd.read_csv(RESULTS / f"{stem(args.job)}.csv")
        schedule, supersteps = JOBS[args.job]
        for i, walls in enumerate(df["walls"]):
            wall = pd.Series([float(w) for w in walls.split()], index=range(1, supersteps + 1))
            for k, v in excess(wall, args.job).items():
                df.loc[i, k] = v
        txt = RESULTS / f"{stem(args.job)}.txt"
        head = txt.read_text().splitlines()[0] if txt.exists() else ""
        found = re.search(r"cpu share [\d.]+ \((.*)\); R-MAT", head)  # the measuring run's cluster
        modes = df["mode"].nunique()
        graph = re.search(r"; R-MAT ([^;]+);", head)
        report(df, args, found.group(1) if found else "cluster as recorded by the measuring run", len(df) // modes,
               graph.group(1) if graph else "")
        return 0
    rows = []
    path = rmat(18, 1_000_000) if args.job == "pagerank" else rmat(19, 600_000, tail=30)
    with cluster(args) as (_, spark, note):  # --conf: harness.parse_args, in the note
        g = load_graph(spark, str(path), "edgelist", partitions=args.partitions)
        for e in (args.workers, 2, 1):
            warm_up(spark, PageRank(g, max_iterations=3), args, executors=e)
        for rep in range(args.reps):
            modes = [m for m in MODES if m in args.modes.split(",")]
            for mode in (modes if rep % 2 == 0 else modes[::-1]):
                rows.append(one_run(spark, g, args, mode, rep))
    report(pd.DataFrame(rows), args, note, args.reps, path.name)
    return 0


def stem(job: str) -> str:
    """``release_cost`` for PageRank (the name since stop 28), ``release_cost_<job>`` else."""
    return NAME if job == "pagerank" else f"{NAME}_{job}"


def report(df: pd.DataFrame, args: Any, note: str, reps: int, graph: str = "") -> None:
    job, (schedule, supersteps) = args.job, JOBS[args.job]
    modes = [m for m in MODES if m in set(df["mode"])]
    summary = []
    for mode in modes:
        d = df[df["mode"] == mode]
        for to in sorted(set(schedule.values()), reverse=True):
            summary.append(stat_row(NAME, job, mode, f"release to {to}: first superstep over steady s",
                                    d[f"excess_{to}"]))
            if f"next4_{to}" in d:
                summary.append(stat_row(NAME, job, mode, f"release to {to}: its next 4 supersteps s", d[f"next4_{to}"]))
        summary.append(stat_row(NAME, job, mode, "job s", d["job_seconds"]))
        summary.append(stat_row(NAME, job, mode, "executor-s", d["executor_seconds"]))
    paired = df.pivot(index="rep", columns="mode")
    for other in (m for m in modes if m != "decommission"):
        for col, label in (("job_seconds", "ratio job s"), ("executor_seconds", "ratio executor-s")):
            summary.append(stat_row(NAME, job, f"decommission/{other}", label,
                                    paired[col]["decommission"] / paired[col][other], "paired by rep"))
    title = (f"{NAME}: {args.workers} workers at cpu share {args.cpu_share} ({note}); R-MAT {graph or job}; "
             f"schedule {schedule}, {supersteps} supersteps; {reps} reps, alternating order; median [min-max]")
    print_summary(summary, title)
    RESULTS.mkdir(parents=True, exist_ok=True)
    df.to_csv(RESULTS / f"{stem(job)}.csv", index=False)
    with open(RESULTS / f"{stem(job)}.txt", "w") as fh:
        fh.write(title + "\n" + pd.DataFrame(summary).to_string(index=False) + "\n\n" + df.to_string(index=False) + "\n")


if __name__ == "__main__":
    raise SystemExit(main())
