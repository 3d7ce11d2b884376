"""``iterflow simulate``: what-if replay of a trace (``--trace``) or of a recorded run (``--run``).

Why a command: before paying for a cluster, a user can see what the ``target`` policy would
have done on a job measured elsewhere -- its violations and executor-seconds beside every
profiled static size and beside the runs as they were scheduled (issue 14, item 3). No Spark.
With ``--json`` stdout carries one JSON object and nothing else; bad input is one error line
(file:line or the option) and exit status 2 (:func:`iterflow.app.cli.main`). ``--run`` (item 2)
is :mod:`iterflow.app.simulate_run_cli`; the two modes are mutually exclusive.
"""
from __future__ import annotations

import argparse
import math
import sys
from typing import Any

from iterflow.errors import InputError


def _check(args: argparse.Namespace) -> None:
    """Options out of range, each named (before the trace is read); the policy options not
    given take the trace replay's defaults (:class:`~iterflow.simulate.replay.Settings`)."""
    if args.format is None:
        raise InputError("--format is required with --trace")
    for key in ("sweep", "figure"):
        if getattr(args, key, None) not in (None, False):
            raise InputError(f"--{key} applies to --run only")
    if args.policy != "target":
        raise InputError(f"--policy: --trace replays only --policy target (got {args.policy})")
    d = _defaults()
    for key in ("margin", "slack", "wait_count", "cooldown", "warmup"):
        if getattr(args, key) is None:
            setattr(args, key, getattr(d, key))
    if args.targets < 1:
        raise InputError(f"--targets must be >= 1 (got {args.targets})")
    if args.replays < 1:
        raise InputError(f"--replays must be >= 1 (got {args.replays})")
    if args.profiling_runs < 1:
        raise InputError(f"--profiling-runs must be >= 1 (got {args.profiling_runs})")
    if args.seed < 0:
        raise InputError(f"--seed must be >= 0 (got {args.seed})")
    if not (math.isfinite(args.margin) and 0 <= args.margin < args.slack and math.isfinite(args.slack)):
        raise InputError(f"--margin and --slack need 0 <= margin < slack (got {args.margin}, {args.slack})")
    if not 0 < args.quantile < 1:
        raise InputError(f"--quantile must be in (0, 1) (got {args.quantile})")
    if args.wait_count < 1 or args.cooldown < 0 or args.warmup < 0:
        raise InputError("--wait-count must be >= 1, --cooldown and --warmup >= 0")
    if args.rescale_seconds is not None and not (math.isfinite(args.rescale_seconds) and args.rescale_seconds >= 0):
        raise InputError(f"--rescale-seconds must be a finite number >= 0 (got {args.rescale_seconds})")


def _run(args: argparse.Namespace) -> int:
    """The command; its bad input is reported here, on exactly one stderr line (no JVM shares
    stderr in a simulation, so the blank line :func:`iterflow.app.cli.main` puts before an
    error to guard against one is not needed)."""
    try:
        if args.run is not None:
            from iterflow.app.simulate_run_cli import run_mode

            return run_mode(args)
        return _simulate(args)
    except InputError as exc:
        print(f"iterflow: error: {exc}", file=sys.stderr)
        return 2


def _simulate(args: argparse.Namespace) -> int:
    from iterflow.simulate.evaluate import evaluate
    from iterflow.simulate.replay import Settings
    from iterflow.simulate.report import table, to_json
    from iterflow.simulate.trace import EllisTrace

    _check(args)
    trace = EllisTrace.from_file(args.trace, args.profiling_runs)
    settings = Settings(margin=args.margin, slack=args.slack, quantile=args.quantile, wait_count=args.wait_count,
                        cooldown=args.cooldown, warmup=args.warmup, rescale_seconds=args.rescale_seconds)
    ev = evaluate(trace, args.targets, args.replays, args.seed, settings)
    text = to_json(ev) if args.json else table(ev, reasons=args.reasons)
    print(text)  # printed whole, after everything was computed: an error leaves stdout empty
    return 0


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register ``simulate --trace FILE ...`` on an argparse subparsers object."""
    d = _defaults()
    from iterflow.app.simulate_run_cli import add_run_arguments

    p = subparsers.add_parser("simulate", help="what-if replay of a trace or a recorded run under a policy (no Spark)",
                              description="--trace: replay a trace's jobs under the target policy at evenly spread "
                                          "runtime targets, beside static sizes and the recorded runs. --run: "
                                          "replay a recorded run on a simulated cluster under any policy.")
    mode = p.add_mutually_exclusive_group(required=True)
    mode.add_argument("--trace", metavar="FILE", help="the trace file")
    mode.add_argument("--run", metavar="RECORD", help="a recorded run: superstep table (.parquet/.csv) or MLflow run id")
    p.add_argument("--format", choices=["ellis"], help="trace format ('|'-separated Ellis traces; --trace only)")
    p.add_argument("--policy", choices=["static", "target", "efficiency", "fastest", "dynamic-allocation"],
                   help="the policy replayed (--trace: target only)")
    p.add_argument("--targets", type=int, default=10, metavar="N",
                   help="runtime targets, spread evenly between the median runtime at the largest and at the "
                        "smallest profiled scale-out (default 10)")
    p.add_argument("--replays", type=int, default=20, metavar="N", help="replays per target (default 20)")
    p.add_argument("--seed", type=int, default=0, help="seed of the replays' draws (default 0)")
    p.add_argument("--json", action="store_true", help="print one JSON object and nothing else")
    p.add_argument("--reasons", action="store_true", help="tables: every decision's reason, not only changes")
    p.add_argument("--profiling-runs", type=int, default=10, metavar="N",
                   help="the first N runs of the trace are profiling runs (default 10)")
    p.add_argument("--margin", type=float, help=f"TargetPolicy margin (--trace default {d.margin:g})")
    p.add_argument("--slack", type=float, help=f"TargetPolicy slack (--trace default {d.slack:g})")
    p.add_argument("--quantile", type=float, default=d.quantile,
                   help=f"quantile of the profiled rest of the run the policy plans for (default {d.quantile:g})")
    p.add_argument("--wait-count", type=int, help=f"hysteresis (--trace default {d.wait_count})")
    p.add_argument("--cooldown", type=int, help=f"barriers after a rescale (--trace default {d.cooldown})")
    p.add_argument("--warmup", type=int, help=f"barriers without change (--trace default {d.warmup})")
    p.add_argument("--rescale-seconds", type=float, default=None,
                   help="--trace: seconds a rescale costs (default: learned from the recorded runs); "
                        "--run: the policy's prior rescale price")
    add_run_arguments(p)
    p.set_defaults(func=_run)
    return p


def _defaults() -> Any:
    from iterflow.simulate.replay import Settings

    return Settings()
