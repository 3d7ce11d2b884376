"""How ``target``'s releases came out against what it predicted when it made them, in recorded
Pareto sessions -- the measurements behind :mod:`iterflow.policies.pads`. No Spark; seconds.

    .venv/bin/python experiments/release_predictions.py --tags stop57all,stop57prkm,stop57prkmb

Per job, over the ``target`` runs of ``results/pareto_<TAG>_supersteps.csv``:

* **a superstep**: after each release to a size the run had not run yet, its steady supersteps
  there (the first, cold one left out, up to the next rescale; at least two) -- their median
  over the model's prediction for that size made at the release (``next_predicted_seconds``):
  what :data:`~iterflow.policies.pads.UNSEEN_ERROR` pads;
* **the finish**: the run's real finish over the one its last release predicted (the rest at
  the new size, the release's price and the barriers included;
  :func:`pareto_report.release_errors`) -- what the pads and the margin are there to cover.

Printed: median, 75th and 90th percentile and count of each.
"""
from __future__ import annotations

import argparse
import sys

import numpy as np
import pandas as pd

from harness import RESULTS
from pareto_report import release_errors


def unseen_ratios(steps: pd.DataFrame) -> list[float]:
    """Per release to a size its run had not run: the median steady superstep there over the
    prediction made at the release."""
    out = []
    for _, g in steps.groupby("run_id", sort=False):
        g = g.sort_values("superstep").reset_index(drop=True)
        for i in range(len(g) - 2):
            r, new = g.iloc[i], int(g.iloc[i + 1]["executors"])
            if r["decision"] != "down" or new >= r["executors"] or new in set(g["executors"][:i + 1]):
                continue
            steady = []
            for _, a in g.iloc[i + 2:].iterrows():  # past the cold first superstep at the new size
                if a["executors"] != new:
                    break
                steady.append(float(a["wall_seconds"]))
                if a["decision"] != "same":
                    break
            predicted = float(r["next_predicted_seconds"])
            if len(steady) >= 2 and np.isfinite(predicted) and predicted > 0:
                out.append(float(np.median(steady)) / predicted)
    return out


def say(x: list[float]) -> str:
    if not x:
        return "none"
    return f"median {np.median(x):.2f}x, p75 {np.percentile(x, 75):.2f}x, p90 {np.percentile(x, 90):.2f}x ({len(x)})"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tags", required=True, help="comma-separated session tags (results/pareto_<tag>_supersteps.csv)")
    args = ap.parse_args()
    tables = []
    for tag in (t for t in args.tags.split(",") if t):
        path = RESULTS / f"pareto_{tag}_supersteps.csv"
        if not path.is_file():
            raise SystemExit(f"release_predictions: error: --tags: no table {path}")
        tables.append(pd.read_csv(path))
    if not tables:
        raise SystemExit("release_predictions: error: --tags: give at least one session tag")
    steps = pd.concat(tables, ignore_index=True)
    steps = steps[steps["policy"].astype(str).str.startswith("target")]
    for job, s in steps.groupby("job", sort=False):
        _, last = release_errors(s)
        print(f"{job}: a superstep at a size not run before, over its prediction at the release: "
              f"{say(unseen_ratios(s))}; the finish over the last release's prediction: "
              f"{say([1 + e for e in last])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
