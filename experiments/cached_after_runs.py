"""Do cached blocks outlive a run in one application? Three static WCC runs in a row on the
emulated cluster (R-MAT 19, 600k edges, 30-vertex tail); after each, what the executors still
cache (RDD storage info from the driver). ~3 min.

    .venv/bin/python experiments/cached_after_runs.py

Stop 39, without ``RunResult.release``: 9.3 MB after loading the graph, then 21.7 / 34.1 / 46.5 MB
after runs 1-3 (one 12.4 MB RDD of 8 partitions per run: its final state), also after a gc; with
it (this script calls it): 9.3 MB after every run. Why it mattered: a later scale-in's
decommissioned executors moved every stale block to the ones left -- in the Pareto sessions
(20+ runs an application) the removed executors stayed alive for 2-9 supersteps after a release,
and those supersteps ran 2-5x static.
"""
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from algorithms.wcc import WeaklyConnectedComponents  # noqa: E402
from common import emulated_cluster, rmat  # noqa: E402
from iterflow.inputs.graphio import load_graph  # noqa: E402
from iterflow.loop.driver import IterationDriver  # noqa: E402
from iterflow.policies import StaticPolicy  # noqa: E402


def cached(sc) -> tuple:
    """(RDDs, partitions, MB in memory, MB on disk, the RDDs) the executors cache now."""
    infos = sc._jsc.sc().getRDDStorageInfo()
    out = [(i.id(), i.name()[:60], i.numCachedPartitions(), i.memSize(), i.diskSize()) for i in infos]
    return len(out), sum(x[2] for x in out), sum(x[3] for x in out) / 1e6, sum(x[4] for x in out) / 1e6, out


def main() -> None:
    with emulated_cluster(4, 0.5, 8) as (_, spark):
        sc = spark.sparkContext
        g = load_graph(spark, str(rmat(19, 600_000, tail=30)), "edgelist", partitions=8)
        print("after load: rdds %d, partitions %d, mem %.1f MB, disk %.1f MB" % cached(sc)[:4])
        for k in range(3):
            p = WeaklyConnectedComponents(g, max_iterations=1000)
            res = IterationDriver(spark, StaticPolicy(), partitions=8, start_executors=4).run(p)
            n, steps = res.output.count(), len(res.records)
            res.release()
            p.release()
            time.sleep(2)
            print(f"after run {k + 1} ({steps} supersteps, {n} rows): rdds %d, partitions %d, mem %.1f MB, "
                  "disk %.1f MB" % cached(sc)[:4])
        for x in cached(sc)[4]:
            print("  ", x)


if __name__ == "__main__":
    main()
