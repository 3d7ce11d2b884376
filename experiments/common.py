"""What every experiment shares: the emulated cluster, its session, the inputs, the summaries.

The emulated cluster is a :class:`~iterflow.cluster.local.LocalCluster` of ``workers`` workers of
one core each, every worker (and the executor it forks) capped by a cgroup v1 cpu quota at
``cpu_share`` of a core -- one 2-core box behaving like several small nodes. Where cgroups
are not writable the cluster runs uncapped and says so; every experiment prints that note.
"""
from __future__ import annotations

import argparse
import contextlib
import shutil
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any, Iterator, Sequence

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "experiments" / "results"
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from iterflow.cluster.local import LocalCluster  # noqa: E402
from iterflow.inputs.generate import write_points, write_rmat  # noqa: E402
from iterflow.cluster.session import build_session  # noqa: E402


def session_settings(partitions: int | None, eventlog: Path | None = None) -> dict[str, str]:
    """The Spark settings of an experiment's session on the emulated nodes (1-core executors), with
    Spark's event log (uncompressed, for :mod:`iterflow.observe.eventlog`) in ``eventlog`` if given;
    ``partitions`` None: the session's default (the loop sets a run's own count)."""
    settings = {"spark.executor.cores": "1", "spark.executor.memory": "2g", "spark.driver.memory": "4g"}
    if partitions:
        settings.update({"spark.sql.shuffle.partitions": str(partitions), "spark.default.parallelism": str(partitions)})
    if eventlog is not None:
        eventlog.mkdir(parents=True, exist_ok=True)
        settings.update({"spark.eventLog.enabled": "true", "spark.eventLog.compress": "false",
                         "spark.eventLog.dir": f"file://{eventlog}"})
    return settings


@contextlib.contextmanager
def emulated_cluster(workers: int = 4, cpu_share: float | None = 0.5, partitions: int | None = 8,
                     eventlog: Path | None = None, conf: dict[str, str] | None = None) -> Iterator[Any]:
    """Yield ``(cluster, spark)``; everything is stopped on exit, also on errors and Ctrl-C."""
    with LocalCluster(workers, 1, "3g", cpu_share) as cluster:
        print(f"cluster: {workers} workers x 1 core; {cluster.cpu_share_note or 'no cpu share'}", flush=True)
        settings = {**session_settings(partitions, eventlog), **(conf or {})}
        work_dir = Path(tempfile.mkdtemp(prefix="iterflow-exp-"))  # checkpoints: up to ~220 MB a Pareto session
        try:
            spark = build_session(cluster.master_url, workers, settings, work_dir=work_dir)
            try:
                yield cluster, spark
            finally:
                spark.stop()
        finally:
            shutil.rmtree(work_dir, ignore_errors=True)


def add_emulation_args(ap: argparse.ArgumentParser, scale: int = 20, edges: int = 4_000_000) -> None:
    """The options every emulated-cluster experiment takes: the R-MAT input and the cluster shape."""
    ap.add_argument("--scale", type=int, default=scale)
    ap.add_argument("--edges", type=int, default=edges)
    ap.add_argument("--workers", type=int, default=4)
    ap.add_argument("--cpu-share", type=float, default=0.5)


def scale_edges(value: str) -> tuple[int, int]:
    """``SCALE:EDGES`` of an R-MAT graph (argparse names the option on an error)."""
    try:
        scale, edges = (int(x) for x in value.split(":"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected SCALE:EDGES, e.g. 20:1200000 (got {value!r})") from None
    if not (1 <= scale <= 30 and edges > 0):
        raise argparse.ArgumentTypeError(f"scale in 1..30, edges > 0 (got {value!r})")
    return scale, edges


def rmat(scale: int, edges: int, seed: int = 1, tail: int = 0) -> Path:
    """The R-MAT edge list (a = 0.57; ``tail``: a path appended, see ``write_rmat``),
    generated once under ``data/``."""
    path = ROOT / "data" / (f"rmat-{scale}-{edges}" + (f"-tail{tail}" if tail else "") + ".txt")
    if not path.exists():
        print(f"generating {path} ...", flush=True)
        write_rmat(path, scale, edges, seed=seed, tail=tail)
    return path


def points(n: int, k: int, dim: int = 4, seed: int = 1) -> Path:
    path = ROOT / "data" / f"points-{n}-{k}-{dim}.csv"
    if not path.exists():
        print(f"generating {path} ...", flush=True)
        write_points(path, n, k, dim, seed)
    return path


def med(values: Sequence[float]) -> str:
    """``median [min-max]`` of repeated measurements."""
    vals = [float(v) for v in values]
    if not vals:
        return "n/a"
    return f"{statistics.median(vals):.3g} [{min(vals):.3g}-{max(vals):.3g}]"


def session_parser(doc: str, script: str) -> argparse.ArgumentParser:
    """The command line of a report over the recorded Pareto sessions: ``--tags`` (which
    sessions, :func:`superstep_tables`) and ``--out`` (``results/<script>.txt``)."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("--tags", help="comma-separated session tags (default: every pareto_*_supersteps.csv)")
    ap.add_argument("--out", type=Path, default=RESULTS / f"{Path(script).stem}.txt")
    return ap


def superstep_tables(tags: str | None, script: str) -> list[Path]:
    """The recorded Pareto sessions' superstep tables that ``tags`` names (comma-separated; none:
    every one in ``results/``); a missing one exits 2 naming it."""
    if not tags:
        return sorted(RESULTS.glob("pareto_*_supersteps.csv"))
    paths = [RESULTS / f"pareto_{t}_supersteps.csv" for t in tags.split(",")]
    missing = [str(p) for p in paths if not p.is_file()]
    if missing:
        print(f"{script}: no such superstep table: {', '.join(missing)}", file=sys.stderr)
        raise SystemExit(2)
    return paths


def session_tag(table: Path) -> str:
    """``stop68all`` of ``pareto_stop68all_supersteps.csv``."""
    return table.name.removeprefix("pareto_").removesuffix("_supersteps.csv")


def write_result(out: Path, script: str, argv: Sequence[str] | None, lines: Sequence[str]) -> None:
    """``lines`` under a header naming the command (``argv``: its arguments, ``None``: this
    process's), written whole or not at all, and printed."""
    args = list(argv) if argv is not None else sys.argv[1:]
    text = "\n".join([f"# {' '.join([f'experiments/{script}', *args])} (no Spark)", *lines]) + "\n"
    tmp = out.with_suffix(".tmp")
    tmp.write_text(text)
    tmp.replace(out)
    print(text, end="")
