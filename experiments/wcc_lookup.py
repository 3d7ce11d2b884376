"""WCC's tail supersteps looking their few active vertices up in the adjacency, against scanning it.

    .venv/bin/python experiments/wcc_lookup.py [--reps 3] [--executors 1,4] [--graph 20:2400000] [--quick]

On the emulated cluster and the Pareto experiment's WCC input (R-MAT 19, 600k edges, a
30-vertex path appended: 33 supersteps, the last ~27 with at most 30 active vertices; ``--graph``
another R-MAT, as the Pareto's ``--wcc-graph``; ``--quick``: R-MAT 17 with a 12-vertex path),
one partition a core (as the Pareto runs), ``static`` at each ``--executors`` count, the two
ways interleaved within each repetition after an untimed run of each (``wcc_ways.side_by_side``):
``lookup`` (the default, :data:`algorithms.wcc.LOOKUP_ACTIVE`: where at most that many vertices
are active, their ids are collected and the adjacency, cached sorted by vertex, is read only in
the batches that can hold them) and ``scan`` (``lookup_active=0``: every superstep scans the
whole adjacency, as WCC did before). Printed per run: job seconds, the median tail superstep
(supersteps past the first 8), whether the labels are the same; then lookup / scan paired by rep.
"""
from __future__ import annotations

from wcc_labels import tail_superstep
from wcc_ways import plain, side_by_side

from algorithms import WeaklyConnectedComponents

NAME = "wcc_lookup"
WAYS = {"lookup": (WeaklyConnectedComponents, plain),
        "scan": (lambda g: WeaklyConnectedComponents(g, lookup_active=0), plain)}

if __name__ == "__main__":
    raise SystemExit(side_by_side(__doc__, NAME, WAYS, {"tail_superstep": tail_superstep}, partitions=None))
