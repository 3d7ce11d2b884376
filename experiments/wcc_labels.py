"""WCC's labels patched where few changed, against rewritten every superstep, side by side.

    .venv/bin/python experiments/wcc_labels.py [--reps 3] [--executors 1,4] [--quick]

On the emulated cluster and the Pareto experiment's WCC input (R-MAT 19, 600k edges, a
30-vertex path appended: 33 supersteps, the last ~25 changing a few labels each; ``--quick``:
R-MAT 17 with a 12-vertex path), ``static`` at each ``--executors`` count, the two ways
interleaved within each repetition after one untimed run of each (and one at each size before
its timed runs: a size change starts fresh executor JVMs): ``patch`` (the default,
:data:`algorithms.wcc.PATCH_SHARE`) and ``rewrite`` (``patch_share=0``: every superstep rewrites
every label, as WCC did before the patch). Printed per run: job seconds (all supersteps and
barriers), the median tail superstep (supersteps past the first 8), whether the labels are the
same; then the ratio patch / rewrite paired by rep (median [min-max]) per executor count.
"""
from __future__ import annotations

import pandas as pd

from wcc_ways import plain, side_by_side

from algorithms import WeaklyConnectedComponents

NAME = "wcc_labels"
TAIL_FROM = 9  # supersteps from here on change few labels (Pareto input: ~1,100 at 5, ~70 at 6, then 30 ... 1)
WAYS = {"patch": (WeaklyConnectedComponents, plain),
        "rewrite": (lambda g: WeaklyConnectedComponents(g, patch_share=0.0), plain)}


def tail_superstep(t: pd.DataFrame) -> float:
    """The median superstep past the first 8 (span: barrier included)."""
    return float(t.loc[t["superstep"] >= TAIL_FROM, "span_seconds"].median())


if __name__ == "__main__":
    raise SystemExit(side_by_side(__doc__, NAME, WAYS, {"tail_superstep": tail_superstep}))
