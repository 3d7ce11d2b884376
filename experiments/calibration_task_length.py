"""How the calibration job's task length changes the slow-down it measures (issue 13, stop 29).

One session on the emulated cluster: ``iterflow cluster calibrate``'s job (PageRank, the
calibration's scripted sizes) on the old calibration graph (R-MAT 16, 300k edges: ~45 ms tasks) and on
a program-sized one (R-MAT 17, 1M edges: ~0.1 s tasks), each twice, alternating. Prints each
size's median task and its slow-down over one slot, to compare with the programs' own static runs
(``pareto_<tag>_supersteps.csv``). ~10 min. (``results/calibration_task_length.txt`` was
measured at 78bcb45, when the calibration climbed 1, 2, 3, 4, then 2; it now warms up at the
maximum and measures each size going down, :func:`iterflow.app.calibrate.schedule`.)

    .venv/bin/python experiments/calibration_task_length.py
"""
from __future__ import annotations

import sys
import time

import numpy as np

from harness import RESULTS, cluster, parse_args
from iterflow.app import calibrate as cal
from iterflow.files import iterflow_home
from iterflow.inputs.generate import write_rmat

NAME = "calibration_task_length"


def main() -> int:
    args = parse_args(__doc__, NAME)
    small = iterflow_home() / "calibration" / "rmat-16-300000.txt"  # the calibration graph before stop 29
    small = small if small.exists() else write_rmat(small, 16, 300_000, seed=0)
    big = cal.calibration_graph()  # today's
    lines = []
    with cluster(args) as (_, spark, note):
        lines.append(note)
        for label, graph in [("300k-edges-1", small), ("1M-edges-1", big), ("300k-edges-2", small), ("1M-edges-2", big)]:
            t = time.time()
            found = cal.measure(spark, "x", args.workers, partitions=args.partitions, graph=graph)
            per = {s: float(np.median(v)) for s, v in sorted(found.task_seconds.items())}
            base = per[min(per)]
            lines.append(f"{label} ({time.time() - t:.0f}s): median task ms "
                         + ", ".join(f"{s:g}: {v * 1e3:.1f}" for s, v in per.items())
                         + "; slow-down " + ", ".join(f"{s:g}: {v / base:.3f}x" for s, v in per.items()))
            print(lines[-1], flush=True)
    (RESULTS / f"{NAME}.txt").write_text("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
