"""Run the five issue-5 experiments in sequence and print one summary table.

    .venv/bin/python experiments/run_all.py [--full] [--only NAME,...] [--all-rows] [--summary-only]

Each experiment runs as its own process (one SparkContext, one emulated cluster at a time,
its JVMs gone when it ends), ``--quick`` unless ``--full``. Its output streams through; its
``results/<name>_summary.csv`` is read afterwards. The headline rows of all of them are
printed as one table (``--all-rows``: every row) and all rows saved to
``results/summary_all.csv``. model_accuracy runs after the others: in quick mode its live
figures come from their superstep tables.
"""
from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from harness import RESULTS, SUMMARY_COLUMNS, print_summary  # noqa: E402

EXPERIMENTS = ("more_for_shorter", "release_surplus", "runtime_targets", "model_accuracy", "overhead_peers")
HEADLINE = {"runtime s (ss 2..)", "executor-s (ss 2..)", "runtime change %", "executor-s ratio",
            "executor-s saved %", "violation rate %", "mean overshoot % (over)", "mean interpolation error %",
            "online MAPE %", "MAPE % (ss 4..)", "MAPE % after rescale", "ratio per superstep", "ratio per job", "not measured",
            "event-log match %"}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--full", action="store_true", help="full mode (default: --quick)")
    ap.add_argument("--only", default=",".join(EXPERIMENTS))
    ap.add_argument("--reps", type=int, default=None)
    ap.add_argument("--all-rows", action="store_true")
    ap.add_argument("--summary-only", action="store_true",
                    help="run nothing: print the table from the summaries in results/ (after one experiment was rerun)")
    args = ap.parse_args()
    t0 = time.time()
    frames, status = [], {}
    for name in [n for n in EXPERIMENTS if n in args.only.split(",")]:
        if args.summary_only:
            summary = RESULTS / f"{name}_summary.csv"
            if summary.exists():
                frames.append(pd.read_csv(summary, keep_default_na=False, na_values=[""]))
            continue
        cmd = [sys.executable, str(HERE / f"{name}.py")] + ([] if args.full else ["--quick"])
        cmd += ["--reps", str(args.reps)] if args.reps else []
        print(f"\n##### {name}: {' '.join(cmd[1:])}", flush=True)
        started = time.time()
        rc = subprocess.call(cmd, cwd=HERE.parent)
        summary = RESULTS / f"{name}_summary.csv"
        fresh = summary.exists() and summary.stat().st_mtime >= started
        status[name] = (rc, time.time() - started)
        if rc == 0 and fresh:
            frames.append(pd.read_csv(summary, keep_default_na=False, na_values=[""]))
        else:
            print(f"##### {name} FAILED (exit {rc}{'' if fresh else ', no fresh summary'})", flush=True)
    if not frames:
        print("no experiment produced a summary")
        return 1
    table = pd.concat(frames, ignore_index=True)[SUMMARY_COLUMNS]
    table.to_csv(RESULTS / "summary_all.csv", index=False)
    shown = table if args.all_rows else table[table["metric"].isin(HEADLINE)]
    mode = "full" if args.full else "quick"
    print_summary(shown, f"summary ({mode} mode; all rows in {RESULTS / 'summary_all.csv'}); "
                         "median [min-max] (n) -- timings on a shared 2-core machine, see each experiment's note")
    if status:
        print("\n" + "; ".join(f"{n}: {'ok' if rc == 0 else f'exit {rc}'} in {s / 60:.1f} min"
                               for n, (rc, s) in status.items()))
        print(f"total wall time {(time.time() - t0) / 60:.1f} min")
    return 0 if all(rc == 0 for rc, _ in status.values()) else 1


if __name__ == "__main__":
    raise SystemExit(main())
