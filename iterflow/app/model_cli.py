"""``iterflow model evaluate``: judge the runtime model on external traces, side by side.

Why a command: the accuracy claim for :class:`~iterflow.model.resource.ResourceModel` must be
re-checkable by anyone on traces this project never saw -- point ``--traces`` at a directory of
``Nodes,Runtime`` CSVs (Bell format) and/or ``|``-separated Ellis traces.
"""
from __future__ import annotations

import argparse
import json
import logging
import math
from pathlib import Path
from typing import Any

from iterflow.errors import InputError
from iterflow.model.traces import (ONLINE_VARIANTS, PUBLISHED, ellis_online, evaluate_bell, read_bell_csv,
                             read_ellis_csv, sniff_format)

log = logging.getLogger(__name__)

APPROACH_ORDER = ("ernest", "bell", "iterflow")


def _find_traces(traces_dir: str) -> tuple[list[Path], list[Path]]:
    """(bell files, ellis files) under ``traces_dir`` (recursively); InputError if none usable."""
    root = Path(traces_dir)
    if not root.is_dir():
        raise InputError(f"{traces_dir}: no such directory")
    bell: list[Path] = []
    ellis: list[Path] = []
    for path in sorted(root.rglob("*.csv")):
        kind = sniff_format(path)
        if kind == "bell":
            bell.append(path)
        elif kind == "ellis":
            ellis.append(path)
        else:
            raise InputError(f"{path}:1: unrecognised columns: expected Nodes,Runtime "
                             "or an Ellis header (ID|APP_ID|...|DURATION_MS|SCALE_OUT)")
    if not bell and not ellis:
        raise InputError(f"{traces_dir}: no usable CSV trace (Nodes,Runtime or Ellis format)")
    return bell, ellis


def _pct(x: float | None) -> str:
    return "-" if x is None or not math.isfinite(x) else f"{100.0 * x:.1f}%"


def _bell_table(results: dict[str, dict[str, float]]) -> str:
    head = f"{'job':<22}" + "".join(f"{a:>10}" for a in APPROACH_ORDER) + f"{'pub.ernest':>12}{'pub.bell':>10}"
    lines = ["Bell protocol: leave-one-scale-out interpolation, mean relative error over held-out runs",
             head, "-" * len(head)]
    for job, r in results.items():
        pub = PUBLISHED.get(job, {})
        lines.append(f"{job:<22}" + "".join(f"{_pct(r[a]):>10}" for a in APPROACH_ORDER)
                     + f"{_pct(pub.get('ernest')):>12}{_pct(pub.get('bell')):>10}")
    if results:
        mean = {a: sum(r[a] for r in results.values()) / len(results) for a in APPROACH_ORDER}
        pubs = [PUBLISHED[j] for j in results if j in PUBLISHED]
        same = len(pubs) == len(results)
        pe = sum(p["ernest"] for p in pubs) / len(pubs) if same else None
        pb = sum(p["bell"] for p in pubs) / len(pubs) if same else None
        lines.append("-" * len(head))
        lines.append(f"{'mean':<22}" + "".join(f"{_pct(mean[a]):>10}" for a in APPROACH_ORDER)
                     + f"{_pct(pe):>12}{_pct(pb):>10}")
    return "\n".join(lines)


def _ellis_table(results: dict[str, dict[str, Any]]) -> str:
    width = max([len("application")] + [len(a) for a in results]) + 2
    head = f"{'application':<{width}}{'scored':>8}" + "".join(f"{v:>10}" for v in ONLINE_VARIANTS) + f"{'MdAPE':>9}"
    lines = ["Ellis online protocol: per-iteration MAPE from the 4th iteration of each run on "
             "(MdAPE = iterflow's median APE)", head, "-" * len(head)]
    for app, r in results.items():
        lines.append(f"{app:<{width}}{r['n_scored']:>8}" + "".join(f"{_pct(r['mape'][v]):>10}" for v in ONLINE_VARIANTS)
                     + f"{_pct(r['mdape']['iterflow']):>9}")
    return "\n".join(lines)


def evaluate(traces_dir: str, as_json: bool) -> int:
    """Run the Bell protocol (and the Ellis online protocol) on the traces in ``traces_dir``.

    With ``as_json`` prints exactly one JSON object ``{job: {"ernest": e, "bell": b,
    "iterflow": i}}`` (fractions, Bell-format files only); otherwise human-readable tables.
    Returns the exit status (0). Bad input raises :class:`~iterflow.errors.InputError`.
    """
    bell_files, ellis_files = _find_traces(traces_dir)
    if as_json and not bell_files:
        raise InputError(f"{traces_dir}: --json needs at least one Nodes,Runtime CSV")
    data = {p.stem: read_bell_csv(p) for p in bell_files}  # read all first: fail before computing
    results = {job: evaluate_bell(m, y) for job, (m, y) in data.items()}
    if as_json:
        print(json.dumps({job: {a: r[a] for a in APPROACH_ORDER} for job, r in results.items()}))
        return 0
    if results:
        print(_bell_table(results))
    if ellis_files:
        online: dict[str, dict[str, Any]] = {}
        for path in ellis_files:
            for app, r in ellis_online(read_ellis_csv(path)).items():
                online[app if app not in online else f"{app} ({path.stem})"] = r
        if results:
            print()
        print(_ellis_table(online))
    return 0


def _run(args: argparse.Namespace) -> int:
    return evaluate(args.traces, args.json)


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register ``model evaluate --traces DIR [--json]`` on an argparse subparsers object."""
    model = subparsers.add_parser("model", help="runtime model: evaluate it on external traces")
    sub = model.add_subparsers(dest="model_command", metavar="COMMAND")
    sub.required = True
    ev = sub.add_parser("evaluate", help="Bell protocol (and Ellis online protocol) on a trace directory",
                        description="Compare Ernest, Bell and iterflow's ResourceModel on runtime traces.")
    ev.add_argument("--traces", required=True, metavar="DIR",
                    help="directory with Nodes,Runtime CSVs and/or Ellis '|'-separated traces (searched recursively)")
    ev.add_argument("--json", action="store_true",
                    help="print one JSON object {job: {ernest, bell, iterflow}} (Bell-format files only)")
    ev.set_defaults(func=_run)
    return model
