"""``iterflow simulate --run RECORD --executors E --cores C --policy P``: a recorded run replayed
on a simulated cluster (issue 14, item 2). No Spark.

Why beside ``--trace`` and not a new command: both answer "what would this policy do there";
they share ``--json``, ``--seed`` and the policy options. The simulator's own parameters
(latencies, cold excess) are learned from the recorded run (``--learn-from`` adds other
tables) unless given, and the output says which. Bad input: one error line naming the file or
the option, exit 2, nothing on stdout.
"""
from __future__ import annotations

import argparse
import math
from pathlib import Path
from typing import Any

from iterflow.errors import InputError

LATENCIES = ("register_seconds", "remove_seconds", "relayout_seconds", "cold_factor", "cold_in_factor")
POLICY_OPTIONS = ("target_seconds", "baseline_executors", "budget", "rule", "threshold", "ideal_share", "slowdown_bound",
                  "margin", "slack", "wait_count", "cooldown", "warmup", "rescale_seconds")
TRACE_ONLY = ("format", "targets", "replays", "profiling_runs", "quantile")


def add_run_arguments(p: argparse.ArgumentParser) -> None:
    """The ``--run`` mode's options (the shared ones are the ``--trace`` parser's)."""
    g = p.add_argument_group("--run mode")
    g.add_argument("--which", metavar="N|NAME", help="the run to replay when RECORD holds several (index or job/policy/rep)")
    g.add_argument("--executors", type=int, metavar="E", help="executors to start with (the fixed count under static)")
    g.add_argument("--cores", type=int, metavar="C", help="cores per executor (default: the record's)")
    g.add_argument("--min-executors", type=int)
    g.add_argument("--max-executors", type=int, help="adaptive policies' and --sweep's ceiling (default: the "
                                                     "larger of E and the record's largest)")
    g.add_argument("--target-seconds", type=float, help="runtime target (--policy target)")
    g.add_argument("--baseline-executors", type=int, help="fastest: static size whose cost is the budget (default E)")
    g.add_argument("--budget", type=float, metavar="X",
                   help="fastest: executor-seconds it may spend, as a multiple of the baseline's (default 1)")
    g.add_argument("--efficiency-rule", dest="rule", choices=("plan", "knee"),
                   help="efficiency: plan the rest within the bound (default), or the marginal-gain knee (runs "
                        "recorded before stop 41)")
    g.add_argument("--threshold", type=float, help="efficiency --efficiency-rule knee: marginal-gain threshold")
    g.add_argument("--ideal-share", type=float, help="efficiency --efficiency-rule knee: the share of its ideal gain 1/(e-1) an executor "
                                                     "must gain too (default 0.25; 0: the threshold alone)")
    g.add_argument("--slowdown-bound", type=float, help="efficiency: bound on the slowdown vs the maximum")
    g.add_argument("--register-seconds", type=float, help="seconds until a requested executor runs tasks "
                                                          "(default: learned, else 10)")
    g.add_argument("--remove-seconds", type=float, help="seconds a scale-in holds the barrier (default: learned, else 5)")
    g.add_argument("--relayout-seconds", type=float, help="seconds re-distributing the state takes (default: learned, else 1)")
    g.add_argument("--cold-factor", type=float, help="extra share of time of the first superstep at a new size "
                                                     "(default: learned, else 0)")
    g.add_argument("--cold-in-factor", type=float, help="the same after a scale-in (default: learned, else 0)")
    g.add_argument("--scale-input", type=float, default=1.0, metavar="F",
                   help="weak scaling: each stage gets F x its tasks, drawn from its measured durations (default 1)")
    g.add_argument("--learn-from", action="append", default=[], metavar="RECORD",
                   help="learn the latencies from these recorded tables too (repeatable)")
    g.add_argument("--sweep", action="store_true", help="static sizes 1..max and every policy side by side")
    g.add_argument("--figure", metavar="PNG", help="--sweep: also draw it (seconds against executor-seconds, "
                   "the static frontier, each policy, the recorded run) to this PNG file")


def _check(args: argparse.Namespace) -> None:
    """Bad options, each named, before anything is read."""
    given = [k for k in TRACE_ONLY if getattr(args, k, None) not in (None, _trace_default(k))]
    if given:
        raise InputError(f"--{given[0].replace('_', '-')} applies to --trace only")
    if args.sweep == (args.policy is not None):
        raise InputError("--run needs exactly one of --policy and --sweep")
    if args.figure is not None:
        if not args.sweep:
            raise InputError("--figure draws a --sweep: give --sweep")
        if not args.figure.lower().endswith(".png"):
            raise InputError(f"--figure {args.figure}: expected a .png file")
        if not Path(args.figure).resolve().parent.is_dir():
            raise InputError(f"--figure {args.figure}: no such directory {Path(args.figure).resolve().parent}")
    if args.executors is None or args.executors < 1:
        raise InputError(f"--executors must be given and >= 1 (got {args.executors})")
    for key in ("cores", "max_executors", "min_executors"):
        if getattr(args, key) is not None and getattr(args, key) < 1:
            raise InputError(f"--{key.replace('_', '-')} must be >= 1 (got {getattr(args, key)})")
    if not (math.isfinite(args.scale_input) and args.scale_input > 0):
        raise InputError(f"--scale-input must be a finite number > 0 (got {args.scale_input})")
    for key in LATENCIES:
        v = getattr(args, key)
        if v is not None and not (math.isfinite(v) and v >= 0):
            raise InputError(f"--{key.replace('_', '-')} must be a finite number >= 0 (got {v})")
    if args.seed < 0:
        raise InputError(f"--seed must be >= 0 (got {args.seed})")


def _trace_default(key: str) -> Any:
    return {"targets": 10, "replays": 20, "profiling_runs": 10, "quantile": 0.9}.get(key)


def run_mode(args: argparse.Namespace) -> int:
    """The command; its output is printed whole, after everything was computed."""
    from iterflow.simulate.cluster import jobs_of, learn
    from iterflow.simulate.recorded import load, pick
    from iterflow.simulate.whatif import Setup, run_one, summary, sweep, table, to_json

    _check(args)
    run = pick(load(args.run, args.seed), args.which, args.run)
    cores = args.cores or run.cores_per_executor
    top = args.max_executors or max(args.executors, *run.sizes)
    if top < args.executors:
        raise InputError(f"--max-executors {top} is below --executors {args.executors}")
    others = [r for src in args.learn_from for r in load(src, args.seed)]
    params = learn([run.records] + [r.records for r in others], {k: getattr(args, k) for k in LATENCIES},
                   jobs=jobs_of([run, *others]))
    options = {k: getattr(args, k) for k in POLICY_OPTIONS if getattr(args, k) is not None}
    setup = Setup(args.executors, cores, top, args.min_executors, args.scale_input, args.seed, options)
    if args.sweep:
        results = sweep(run, setup, params)
    else:
        if args.policy == "static" and (args.max_executors or args.min_executors):
            raise InputError(f"--{'max' if args.max_executors else 'min'}-executors does not apply to "
                             "--policy static (use --executors)")
        results = [(args.policy, run_one(run, args.policy, setup, params))]
    doc = summary(run, setup, params, results, None if args.sweep else args.policy)
    if args.figure is not None:
        from iterflow.app.report import save_sweep

        rec = doc["recorded"]  # the summary's own figures of the recorded run
        real = (rec["executor_seconds"], rec["runtime_seconds"], f"recorded run (executors {'-'.join(map(str, run.sizes))})")
        save_sweep(Path(args.figure), results, real, f"{run.name}: simulated sweep beside the recorded run")
    print(to_json(doc) if args.json else table(doc))
    return 0
