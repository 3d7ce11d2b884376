"""Predict any scale-out from one (issue 13, item 1): task replay against measured runs.

    .venv/bin/python experiments/predict_scaleout.py [--quick] [--reps 1] [--sizes 1,2,4]

Each job (PageRank, WCC, k-means) runs ``static`` at every size of ``--sizes`` on the emulated
cluster, the sizes interleaved within each repetition after one untimed warm-up. Superstep
``i`` of the run at the smallest size is replayed (:class:`~iterflow.model.replay.Profile`:
its tasks list-scheduled on the other size's slots, its time outside tasks kept) and set
against superstep ``i`` measured at the other size (same work: the programs are deterministic).
Reported per job and size: the median over supersteps 2.. of measured and predicted seconds and
the relative error of the medians; also what the learned curve predicts from one size alone
(perfect scaling), the model before task replay. Results: ``experiments/results/predict_scaleout*``.
"""
from __future__ import annotations

import time
from typing import Any

import numpy as np
import pandas as pd

from harness import K, RESULTS, cluster, graph_path, initial_centers, parse_args, points_path, warm_up

from algorithms import KMeans, PageRank, WeaklyConnectedComponents
from common import rmat
from iterflow.inputs.graphio import load_graph
from iterflow.inputs.pointsio import load_points
from iterflow.loop.driver import IterationDriver
from iterflow.model.replay import Profile
from iterflow.policies import StaticPolicy

NAME = "predict_scaleout"


def extra(ap) -> None:
    ap.add_argument("--sizes", default="1,2,4")
    ap.add_argument("--supersteps", type=int, default=8)
    ap.add_argument("--scale", type=int, default=None)
    ap.add_argument("--edges", type=int, default=None)


def run(spark: Any, program: Any, executors: int, partitions: int) -> pd.DataFrame:
    driver = IterationDriver(spark, StaticPolicy(), partitions=partitions, start_executors=executors)
    res = driver.run(program)
    program.release()
    return res.supersteps


def predictions(base: pd.DataFrame, other: pd.DataFrame, slots: int) -> list[dict[str, Any]]:
    rows = []
    for _, r in other[other["superstep"] > 1].iterrows():
        b = base[base["superstep"] == r["superstep"]]
        if b.empty:
            continue
        b = b.iloc[0]
        prof = Profile.parse(b["cores"], b["work"], b["wall_seconds"], b["stage_tasks"])
        if prof is None:
            continue
        rows.append({"superstep": int(r["superstep"]), "measured": float(r["wall_seconds"]),
                     "replay": prof.replay(slots, r["work"]),
                     "curve_one_size": float(b["wall_seconds"]) * b["cores"] / slots,
                     "base": float(b["wall_seconds"]), "outside": prof.outside})
    return rows


def main() -> int:
    args = parse_args(__doc__, NAME, extra, quick_reps=1)
    sizes = sorted(int(x) for x in args.sizes.split(","))
    n = args.supersteps
    t0 = time.time()
    out: list[dict[str, Any]] = []
    raw: list[pd.DataFrame] = []  # every size's supersteps with their task durations
    with cluster(args) as (_, spark, note):
        data = rmat(args.scale, args.edges or 16 * 2 ** args.scale) if args.scale else graph_path(args)
        g = load_graph(spark, str(data), "edgelist", partitions=args.partitions)
        pts = load_points(spark, str(points_path(args)), partitions=args.partitions)
        centers = initial_centers(pts, K)
        jobs = {"pagerank": lambda: PageRank(g, max_iterations=n),
                "wcc": lambda: WeaklyConnectedComponents(g, max_iterations=max(n, 30)),
                "kmeans": lambda: KMeans(pts, K, init_centers=centers, max_iterations=n, tol=None)}
        for job, make in jobs.items():
            warm_up(spark, make(), args)
            for rep in range(args.reps):
                tables = {}
                for e in (sizes if rep % 2 == 0 else sizes[::-1]):
                    tables[e] = run(spark, make(), e, args.partitions)
                    raw.append(tables[e].assign(job=job, rep=rep, size=e))
                    print(f"  {job} rep {rep} at {e}: supersteps {[round(x, 2) for x in tables[e]['wall_seconds']]}",
                          flush=True)
                base = tables[sizes[0]]
                for e in sizes[1:]:
                    for row in predictions(base, tables[e], e):
                        out.append({"job": job, "rep": rep, "from": sizes[0], "size": e, **row})
    df = pd.DataFrame(out)
    df["cluster_note"] = note
    pd.concat(raw).to_csv(RESULTS / f"{NAME}_supersteps.csv", index=False)
    df.to_csv(RESULTS / f"{NAME}.csv", index=False)
    summary = []
    for (job, size), g2 in df.groupby(["job", "size"]):
        meas, rep_, curve = (float(np.median(g2[c])) for c in ("measured", "replay", "curve_one_size"))
        summary.append({"job": job, "from": sizes[0], "size": size, "measured_median": meas,
                        "replay_median": rep_, "replay_error": rep_ / meas - 1,
                        "curve_error": curve / meas - 1, "measured_at_base": float(np.median(g2["base"])),
                        "supersteps": len(g2)})
    s = pd.DataFrame(summary)
    s.to_csv(RESULTS / f"{NAME}_summary.csv", index=False)
    print(f"== {NAME}: {args.workers} workers at cpu share {args.cpu_share} ({note}); predicted from the "
          f"{sizes[0]}-executor run only; {args.reps} rep(s); medians over supersteps 2..")
    print(s.to_string(index=False, float_format=lambda v: f"{v:.3g}"))
    print(f"{time.time() - t0:.0f}s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
