"""Does an adaptive run pay for being adaptive? Its supersteps at a kept size against the static
runs' same superstep at that size, over every recorded Pareto session (no Spark).

    .venv/bin/python experiments/kept_size.py [--tags stop65all,stop68all] [--out results/kept_size.txt]

Why: in a session an adaptive run at a size it never left can run 20-40 % slower than the static
runs of that size (stop65all: PageRank ``target`` at 3 executors 1.2-1.4 s a superstep where
static-3 ran 0.97 s before and after them; stop68all: WCC ``fastest`` at 2 executors 11.2 s over
its heavy supersteps where both static-2 runs took 8.9 s). Overhead of the adaptive path (a
background thread, the barrier's model) would show in every session; the machine's own drift
(a 2-core box shared with others) would average out. A superstep counts where the run kept its
size for the two supersteps before it (no cold superstep after a rescale) and the session has at
least two static runs of that size; per session the median ratio of wall seconds and of the
executors' CPU seconds over the static runs' median.
"""
from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd

from common import session_parser, session_tag, superstep_tables, write_result

COLS = ["job", "policy", "run_id", "superstep", "executors", "wall_seconds", "executor_cpu_seconds"]


def session(path: Path) -> dict[str, float] | None:
    """One session's median ratios (``None`` where it has too few comparable supersteps)."""
    df = pd.read_csv(path, usecols=lambda c: c in COLS)
    if set(COLS) - set(df.columns):
        return None
    static = df[df.policy.str.startswith("static")]
    ref = static.groupby(["job", "executors", "superstep"]).agg(
        n=("wall_seconds", "size"), wall=("wall_seconds", "median"), cpu=("executor_cpu_seconds", "median"))
    ref = ref[ref.n >= 2]
    adaptive = df[~df.policy.str.startswith("static")].sort_values(["run_id", "superstep"])
    same = adaptive.groupby("run_id").executors.transform(lambda e: (e == e.shift(1)) & (e == e.shift(2)))
    kept = adaptive[same & (adaptive.superstep >= 2)].join(ref, on=["job", "executors", "superstep"], how="inner",
                                                           rsuffix="_static")
    if len(kept) < 20:
        return None
    return {"supersteps": float(len(kept)),
            "wall": float((kept.wall_seconds / kept.wall).median()),
            "cpu": float((kept.executor_cpu_seconds / kept.cpu).median())}


def main(argv: list[str] | None = None) -> int:
    ap = session_parser(__doc__, "kept_size.py")
    a = ap.parse_args(argv)
    paths = superstep_tables(a.tags, "kept_size.py")
    rows = {session_tag(p): session(p) for p in paths}
    table = pd.DataFrame({k: v for k, v in rows.items() if v is not None}).T
    if table.empty:
        print("kept_size.py: no session with 20 comparable supersteps", file=sys.stderr)
        return 1
    lines = ["adaptive runs' supersteps at a kept size over the static runs' median at that size and superstep",
             *(f"  {k:<26} n={int(r.supersteps):4d}  wall {r.wall:.2f}x  cpu {r.cpu:.2f}x" for k, r in table.iterrows()),
             f"over {len(table)} sessions: median wall {table.wall.median():.2f}x (range {table.wall.min():.2f}-"
             f"{table.wall.max():.2f}x), cpu {table.cpu.median():.2f}x (range {table.cpu.min():.2f}-{table.cpu.max():.2f}x)"]
    write_result(a.out, "kept_size.py", argv, lines)
    return 0


if __name__ == "__main__":
    sys.exit(main())
