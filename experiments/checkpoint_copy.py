"""The periodic reliable checkpoint copied from the kept blocks, against the superstep's frames
checkpointed to files and read back (the engine to stop 35), side by side.

    .venv/bin/python experiments/checkpoint_copy.py [--reps 3] [--executors 1,4] [--quick]

On the emulated cluster and the Pareto experiment's WCC input (R-MAT 19, 600k edges, a
30-vertex path: 33 supersteps, so the state is copied to files at supersteps 10, 20 and 30;
``--quick``: R-MAT 17 with a 12-vertex path), ``static`` at each ``--executors`` count, the two
ways interleaved within each repetition (who goes first alternating by rep) after an untimed
run at each size:

* ``copy`` -- iterflow now (:meth:`~iterflow.loop.spark_engine.SparkEngine.secure`): the
  barrier local-checkpoints as every superstep, then the kept blocks are written to files; the
  run goes on with the blocks in memory;
* ``readback`` -- the engine to stop 35, emulated here (:func:`read_back`): at those supersteps
  the barrier checkpoints the frames straight to files, and the run goes on from the files.

Printed per run: job seconds, the checkpoint's cost (the supersteps copied and the one after
each, over twice the median of the other supersteps past the first 8: what a checkpoint adds),
whether the labels are the same; then copy / readback paired by rep, median [min-max].
"""
from __future__ import annotations

import contextlib
import time
from typing import Any, Iterator

import numpy as np
import pandas as pd
from pyspark import StorageLevel

from common import rmat
from harness import RESULTS, Collector, cluster, parse_args, warm_up

from algorithms import WeaklyConnectedComponents
from iterflow.inputs.graphio import load_graph
from iterflow.loop.program import State
from iterflow.loop.spark_engine import SparkEngine
from iterflow.policies import StaticPolicy

NAME = "checkpoint_copy"
INTERVAL = 10  # the driver's default checkpoint_interval
TAIL_FROM = 9


@contextlib.contextmanager
def read_back() -> Iterator[None]:
    """SparkEngine as it was to stop 35: every ``INTERVAL``-th superstep's barrier checkpoints
    each frame to files (none carried over) and returns the file-backed frames, persisted (read
    back once); that state is the anchor (``secure`` returns it as it is)."""
    group, barrier, secure = SparkEngine.job_group, SparkEngine.barrier, SparkEngine.secure

    def job_group(self: SparkEngine, name: str, description: str) -> None:
        self._group = name
        group(self, name, description)

    def reliable_barrier(self: SparkEngine, state: State) -> tuple[State, dict[str, int]]:
        g = getattr(self, "_group", "")
        if not (g.startswith("superstep-") and int(g.split("-")[1]) % INTERVAL == 0):
            return barrier(self, state)
        rows: dict[str, int] = {}
        frames: dict[str, Any] = {}
        for name, df in state.frames.items():
            if callable(df):
                df = df(dict(frames))
            checkpointed = df.checkpoint(eager=True)
            n = self.events.output_rows(df) if self.events is not None else -1
            rows[name] = n if n >= 0 else checkpointed.count()
            frames[name] = self._bounded_stats(checkpointed).persist(StorageLevel.MEMORY_AND_DISK)
        self._made = {id(df): (df, rows[name]) for name, df in frames.items()}
        self._read_back = State(frames, dict(state.values))
        return self._read_back, rows

    def own_secure(self: SparkEngine, state: State) -> State:
        return state if state is getattr(self, "_read_back", None) else secure(self, state)

    SparkEngine.job_group, SparkEngine.barrier, SparkEngine.secure = job_group, reliable_barrier, own_secure
    try:
        yield
    finally:
        SparkEngine.job_group, SparkEngine.barrier, SparkEngine.secure = group, barrier, secure


def checkpoint_cost(t: pd.DataFrame) -> float:
    """Seconds the copied supersteps and the ones after them took over the median of the rest
    of the tail (past the first 8 supersteps)."""
    spans = t.set_index("superstep")["span_seconds"]
    marked = {k + d for k in spans.index if k % INTERVAL == 0 and k >= TAIL_FROM for d in (0, 1)} & set(spans.index)
    rest = spans[(spans.index >= TAIL_FROM) & ~spans.index.isin(list(marked))]
    return float(spans.loc[sorted(marked)].sum() - len(marked) * rest.median())


def main() -> int:
    args = parse_args(__doc__, NAME, lambda ap: ap.add_argument("--executors", default="1,4"))
    sizes = [int(x) for x in args.executors.split(",")]
    if any(e < 1 or e > args.workers for e in sizes):
        raise SystemExit(f"--executors {args.executors}: each count must be in 1..{args.workers} (--workers)")
    t0 = time.time()
    runs, rows, reference = Collector(), [], None
    path = rmat(17, 150_000, tail=12) if args.quick else rmat(19, 600_000, tail=30)
    ways = {"copy": contextlib.nullcontext, "readback": read_back}
    with cluster(args) as (_, spark, note):
        g = load_graph(spark, str(path), "edgelist", partitions=args.partitions)
        warm_up(spark, WeaklyConnectedComponents(g), args)
        for rep in range(args.reps):
            for e in sizes:
                warm_up(spark, WeaklyConnectedComponents(g), args, executors=e)
                for way in (list(ways) if rep % 2 == 0 else list(ways)[::-1]):
                    with ways[way]():
                        run = runs.run(spark, StaticPolicy(), WeaklyConnectedComponents(g), args=args, start=e,
                                       verbose=False, labels={"experiment": NAME, "job": "wcc", "policy": way,
                                                              "rep": rep})
                        labels = run.output.toPandas().set_index("id")["value"].sort_index()
                    reference = labels if reference is None else reference
                    cost, same = checkpoint_cost(run.table), bool(labels.equals(reference))
                    rows.append({"way": way, "executors": e, "rep": rep, "job_seconds": run.job_seconds,
                                 "checkpoint_seconds": cost, "supersteps": len(run.table), "same_labels": same})
                    print(f"  {way:8s} at {e}, rep {rep}: {run.job_seconds:5.1f}s, checkpoints +{cost:.2f}s, "
                          f"{len(run.table)} supersteps, labels {'the same' if same else 'DIFFER'}", flush=True)
    df = pd.DataFrame(rows)
    out = [f"== {NAME}: {note}; {args.reps} reps; {path.name}"]
    for e in sizes:
        a = df[(df.way == "copy") & (df.executors == e)].set_index("rep")
        b = df[(df.way == "readback") & (df.executors == e)].set_index("rep")
        r = (a.job_seconds / b.job_seconds).to_numpy()
        out.append(f"  at {e} executor(s): copy / readback job seconds {np.median(r):.2f}x [{r.min():.2f}-{r.max():.2f}]"
                   f" ({a.job_seconds.median():.1f}s vs {b.job_seconds.median():.1f}s); the checkpoints added "
                   f"{a.checkpoint_seconds.median():.2f}s vs {b.checkpoint_seconds.median():.2f}s (median)")
    out.append(f"  labels identical in every run: {bool(df.same_labels.all())}")
    out.append(f"{time.time() - t0:.0f}s")
    print("\n".join(out))
    RESULTS.mkdir(parents=True, exist_ok=True)
    tag = "_quick" if args.quick else ""
    df.to_csv(RESULTS / f"{NAME}{tag}.csv", index=False)
    pd.concat(runs.tables).to_csv(RESULTS / f"{NAME}{tag}_supersteps.csv", index=False)
    (RESULTS / f"{NAME}{tag}.txt").write_text("\n".join(out) + "\n")
    return 0 if df.same_labels.all() else 1


if __name__ == "__main__":
    raise SystemExit(main())
