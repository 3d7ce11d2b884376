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
from typing import Any, Iterator

import pandas as pd
from pyspark import StorageLevel

from wcc_ways import plain, side_by_side

from algorithms import WeaklyConnectedComponents
from iterflow.loop.program import State
from iterflow.loop.spark_engine import SparkEngine

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


if __name__ == "__main__":
    raise SystemExit(side_by_side(__doc__, NAME, {"copy": (WeaklyConnectedComponents, plain),
                                                  "readback": (WeaklyConnectedComponents, read_back)},
                                  {"checkpoint_seconds": checkpoint_cost}))
