"""The ``iterflow`` command line: ``run``, ``report``, ``cluster start|status|stop|calibrate|cds``, ``generate``, ``model``, ``simulate``.

User-facing progress is printed here and only here. Bad input ends with one
``iterflow: error: ...`` line and exit status 2; a Spark failure with one line and status 1.
"""
from __future__ import annotations

import argparse
import json
import logging
import os
import signal
import sys
from typing import Any, Sequence

from iterflow.errors import ClusterError, InputError, IterflowError

EXIT_INPUT = 2


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, exit 2 (argparse prints usage too)
        self.exit(EXIT_INPUT, f"iterflow: error: {message}\n")


def _add_cluster_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--workers", type=int, default=2, help="embedded cluster: number of workers")
    p.add_argument("--cores-per-worker", type=int, default=1)
    p.add_argument("--memory", default="2g", help="memory per worker, e.g. 2g")
    p.add_argument("--cpu-share", type=float, default=None,
                   help="cap each worker at this many cores (cgroup v1 cpu quota) to emulate small nodes")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="iterflow", description=__doc__.splitlines()[0])
    parser.add_argument("-v", "--verbose", action="store_true")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    run = sub.add_parser("run", help="run an iterative program superstep by superstep")
    run.add_argument("algorithm", choices=["pagerank", "wcc", "kmeans"])
    run.add_argument("--input", required=True)
    run.add_argument("--format", choices=None, help="graphalytics|edgelist (graphs), csv|parquet (points)")
    d = run.add_mutually_exclusive_group()
    d.add_argument("--directed", dest="directed", action="store_true", default=None)
    d.add_argument("--undirected", dest="directed", action="store_false")
    run.add_argument("--iterations", type=int)
    run.add_argument("--tol", type=float)
    run.add_argument("--k", type=int)
    run.add_argument("--init-centers")
    run.add_argument("--seed", type=int, default=0)
    run.add_argument("--master", help="spark://, yarn or k8s:// URL (default: embedded cluster)")
    _add_cluster_args(run)
    run.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE",
                     help="Spark setting, passed through unchanged (repeatable)")
    run.add_argument("--policy", default="static",
                     choices=["static", "target", "efficiency", "fastest", "dynamic-allocation"])
    run.add_argument("--executors", type=int, help="starting executors (the fixed count under static)")
    run.add_argument("--target-seconds", type=float, help="runtime target of the whole job (--policy target)")
    run.add_argument("--budget", type=float, metavar="X",
                     help="--policy fastest: spend up to X times the executor-seconds of static at --executors "
                          "(default 1: faster for the same executor-seconds)")
    run.add_argument("--min-executors", type=int)
    run.add_argument("--max-executors", type=int)
    run.add_argument("--rebalance", type=float, metavar="RATIO",
                     help="pagerank: move hot bins when the max/mean partition load stays above RATIO")
    run.add_argument("--switch-to-delta", type=float, metavar="DELTA",
                     help="pagerank: switch to the delta step (only changed ranks sent) once the L1 "
                          "change per superstep falls to DELTA")
    run.add_argument("--wait-for-executors", action="store_true",
                     help="a scale-out waits at the barrier until the new executors registered "
                          "(default: the next superstep starts and they join while it runs)")
    run.add_argument("--checkpoint-interval", type=int, default=10,
                     help="reliable checkpoint every k supersteps (lineage is cut every superstep)")
    run.add_argument("--no-mlflow", dest="track", action="store_false",
                     help="do not log the run to MLflow (default store: ./mlflow.db, or MLFLOW_TRACKING_URI)")
    run.add_argument("--output", required=True)
    run.add_argument("--stats", help="write the per-superstep table as CSV")
    run.add_argument("--resume", metavar="RUN_ID",
                     help="continue run RUN_ID (printed at its start) from its last checkpoint; give the "
                          "run's own algorithm, --input, --output and result options again")
    run.set_defaults(func=cmd_run)

    report = sub.add_parser("report", help="figures of one MLflow run as PNG and HTML")
    report.add_argument("run_id")
    report.add_argument("--out", help="directory for report.html and the PNGs (default: out/report-RUN_ID)")
    report.set_defaults(func=cmd_report)

    cluster = sub.add_parser("cluster", help="the embedded standalone cluster")
    csub = cluster.add_subparsers(dest="action", required=True, parser_class=_Parser)
    start = csub.add_parser("start")
    _add_cluster_args(start)
    start.set_defaults(func=cmd_cluster_start)
    status = csub.add_parser("status")
    status.add_argument("--json", action="store_true")
    status.set_defaults(func=cmd_cluster_status)
    csub.add_parser("stop").set_defaults(func=cmd_cluster_stop)
    cal = csub.add_parser("calibrate", help="measure the cluster's task slow-down with scale-out once, "
                                            "for every later run on it (first runs included)")
    cal.add_argument("--master", help="spark://, yarn or k8s:// URL (default: embedded cluster)")
    _add_cluster_args(cal)
    cal.add_argument("--max-executors", type=int, help="with --master: how many executors the cluster gives")
    cal.add_argument("--supersteps", type=int, default=7, help="supersteps a size (>= 3; the first few warm up)")
    cal.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE",
                     help="Spark setting, as the runs it calibrates for pass it (repeatable; the executors' JVM "
                          "options are part of the cluster's key: their JIT changes what a rescale costs)")
    cal.add_argument("--fresh", action="store_true",
                     help="forget the cluster's earlier calibrations (its hardware changed); by default the "
                          "newest five together say which size runs fastest, one alone reads it with an error "
                          "as large as the sizes' differences")
    cal.set_defaults(func=cmd_cluster_calibrate)
    arch = csub.add_parser("cds", help="make the class-data-sharing archives of the executors, the driver, the "
                                       "master and the worker (make setup does): the JVMs iterflow launches on "
                                       "this machine start from them")
    arch.add_argument("--force", action="store_true", help="rebuild them even where they are there")
    arch.set_defaults(func=cmd_cluster_cds)

    gen = sub.add_parser("generate", help="synthetic inputs")
    gsub = gen.add_subparsers(dest="kind", required=True, parser_class=_Parser)
    rmat = gsub.add_parser("rmat", help="R-MAT edge list (a=0.57)")
    rmat.add_argument("--scale", type=int, required=True)
    rmat.add_argument("--edges", type=int, required=True)
    rmat.add_argument("--a", type=float, default=0.57)
    rmat.add_argument("--seed", type=int, default=0)
    rmat.add_argument("--out", required=True)
    rmat.set_defaults(func=cmd_generate)
    pts = gsub.add_parser("points", help="Gaussian blobs as CSV")
    pts.add_argument("--n", type=int, required=True)
    pts.add_argument("--k", type=int, required=True)
    pts.add_argument("--dim", type=int, default=2)
    pts.add_argument("--seed", type=int, default=0)
    pts.add_argument("--out", required=True)
    pts.set_defaults(func=cmd_generate)

    try:
        from iterflow.app import model_cli
    except ImportError:  # pragma: no cover - model module not present
        model_cli = None
    if model_cli is not None:
        model_cli.add_parser(sub)
    from iterflow.app import simulate_cli

    simulate_cli.add_parser(sub)
    return parser


def cmd_run(args: argparse.Namespace) -> int:
    os.umask(0o077)  # outputs, stats, MLflow store, driver files: the user's only (README: Security)
    from iterflow.app.progress import Progress
    from iterflow.app.runner import run_job
    from iterflow.app.spec import JobSpec
    from iterflow.cluster.session import parse_conf

    spec = JobSpec(
        algorithm=args.algorithm, input=args.input, output=args.output, format=args.format,
        directed=args.directed, iterations=args.iterations, tol=args.tol, k=args.k,
        init_centers=args.init_centers, seed=args.seed, master=args.master, workers=args.workers,
        cores_per_worker=args.cores_per_worker, memory=args.memory, cpu_share=args.cpu_share,
        conf=parse_conf(args.conf), stats=args.stats, policy=args.policy,
        checkpoint_interval=args.checkpoint_interval, track=args.track, executors=args.executors,
        target_seconds=args.target_seconds, budget=args.budget, min_executors=args.min_executors, max_executors=args.max_executors,
        rebalance=args.rebalance, switch_to_delta=args.switch_to_delta,
        wait_for_executors=args.wait_for_executors,
    )
    spec.validate()  # the one validation: bad input ends here, before a run id is announced
    from iterflow.faults.resume import new_run_id

    progress = Progress()  # its plan comes from the program the runner builds
    run_id = args.resume or new_run_id()
    print(f"iterflow: run {run_id}" + (" (resumed)" if args.resume else ""), file=sys.stderr, flush=True)
    result = run_job(spec, on_superstep=lambda rec: print(progress.line(rec), file=sys.stderr, flush=True),
                     on_start=lambda note: print(f"iterflow: {note}", file=sys.stderr, flush=True),
                     run_id=run_id, resume=bool(args.resume), on_plan=progress.use)
    total = result.supersteps["wall_seconds"].sum()
    print(f"iterflow: {spec.algorithm} finished: {result.iterations} supersteps in {total:.2f}s "
          f"({'converged' if result.converged else 'iteration limit'}); output {spec.output}"
          + (f"; mlflow run {result.run_id}" if result.run_id else ""),
          file=sys.stderr)
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    from iterflow.app.report import write_report

    print(write_report(args.run_id, args.out or f"out/report-{args.run_id}"))
    return 0


def cmd_cluster_start(args: argparse.Namespace) -> int:
    from iterflow.cluster.local import LocalCluster, load_detached

    if load_detached() is not None:
        raise ClusterError("a cluster is already running; `iterflow cluster stop` first")
    cluster = LocalCluster(args.workers, args.cores_per_worker, args.memory, args.cpu_share).start()
    info = cluster.detach()
    print(f"master {info.master_url}  ui {info.ui_url}  workers {info.workers} x "
          f"{info.cores_per_worker} cores, {info.memory}" + (f"; {info.cpu_share_note}" if info.cpu_share_note else ""))
    return 0


def cmd_cluster_status(args: argparse.Namespace) -> int:
    from iterflow.cluster.local import fetch_master_json, load_detached

    info = load_detached()
    if info is None:
        print(json.dumps({"running": False}) if args.json else "no cluster running")
        return 1
    doc = fetch_master_json(info.ui_url)
    summary = {
        "running": True, "master": info.master_url, "ui": info.ui_url,
        "workers": [{"id": w["id"], "state": w["state"], "cores": w["cores"], "memory_mb": w["memory"],
                     "cores_used": w["coresused"]} for w in doc.get("workers", [])],
        "cores": doc.get("cores"), "memory_mb": doc.get("memory"),
        "applications": [{"id": a["id"], "name": a["name"], "cores": a["cores"], "state": a["state"]}
                         for a in doc.get("activeapps", [])],
        "cpu_share": info.cpu_share, "cpu_share_note": info.cpu_share_note,
    }
    if args.json:
        print(json.dumps(summary, indent=2))
    else:
        print(f"master {info.master_url}  ui {info.ui_url}  cores {summary['cores']}  memory {summary['memory_mb']} MB")
        for w in summary["workers"]:
            print(f"  worker {w['id']}  {w['state']}  cores {w['cores_used']}/{w['cores']}  memory {w['memory_mb']} MB")
        for a in summary["applications"]:
            print(f"  app {a['id']}  {a['name']}  cores {a['cores']}  {a['state']}")
        if info.cpu_share_note:
            print(f"  {info.cpu_share_note}")
    return 0


def cmd_cluster_stop(args: argparse.Namespace) -> int:
    from iterflow.cluster.local import ClusterInfo, state_file, stop_detached

    path = state_file()
    if not path.exists():
        print("no cluster running")
        return 0
    stop_detached(ClusterInfo(**json.loads(path.read_text())))
    path.unlink()
    print("cluster stopped")
    return 0


def cmd_cluster_cds(args: argparse.Namespace) -> int:
    from iterflow.app.classlist import ensure

    ensure(force=args.force)
    return 0


def cmd_cluster_calibrate(args: argparse.Namespace) -> int:
    os.umask(0o077)
    from iterflow.app.calibrate import calibrate
    from iterflow.app.spec import JobSpec

    for name, least in (("supersteps", 3), ("max_executors", 1), ("workers", 1), ("cores_per_worker", 1)):
        value = getattr(args, name)
        if value is not None and value < least:
            raise InputError(f"--{name.replace('_', '-')}: must be >= {least}, got {value}")
    from iterflow.cluster.session import parse_conf

    spec = JobSpec("pagerank", "(calibration graph)", "(none)", master=args.master, workers=args.workers,
                   cores_per_worker=args.cores_per_worker, memory=args.memory, cpu_share=args.cpu_share,
                   conf=parse_conf(args.conf))
    calibrate(spec, supersteps=args.supersteps, max_executors=args.max_executors, fresh=args.fresh)
    return 0


def cmd_generate(args: argparse.Namespace) -> int:
    from iterflow.inputs import generate

    if args.kind == "rmat":
        if not 1 <= args.scale <= 40 or args.edges < 1:
            raise InputError("--scale must be in 1..40 and --edges >= 1")
        path = generate.write_rmat(args.out, args.scale, args.edges, args.seed, args.a)
    else:
        if args.n < 1 or args.k < 1 or args.dim < 1:
            raise InputError("--n, --k and --dim must be >= 1")
        path = generate.write_points(args.out, args.n, args.k, args.dim, args.seed)
    print(path)
    return 0


def _raise_on_sigterm(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt  # unwinds through `with LocalCluster`, which stops everything


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING,
                        format="%(asctime)s %(name)s %(levelname)s %(message)s")
    if args.verbose:
        os.environ["ITERFLOW_VERBOSE"] = "1"  # Spark's expected warnings too (cluster/session.py)
    else:  # MLflow's store migrations and its signature warning are expected: not shown
        os.environ.setdefault("MLFLOW_LOGGING_LEVEL", "WARNING")
        logging.getLogger("alembic").setLevel(logging.WARNING)
    signal.signal(signal.SIGTERM, _raise_on_sigterm)
    entry = argv is None  # the process's own command line (not a caller's in-process argv)
    try:
        return int(args.func(args) or 0)
    except InputError as exc:
        _error(str(exc), entry)
        return EXIT_INPUT
    except IterflowError as exc:
        _error(str(exc), entry)
        return 1
    except KeyboardInterrupt:
        print("iterflow: interrupted; cluster and session stopped", file=sys.stderr)
        return 130
    except Exception as exc:  # Spark/py4j failures: one readable line, not a Java stack trace
        from iterflow.app.sparkerrors import describe

        message, status = describe(exc)
        if args.verbose:
            import traceback

            traceback.print_exc()
        _error(message, entry)
        return status


def _stop_jvm() -> None:
    """End the JVM this process launched, so nothing it logs at exit lands after the error line."""
    if "pyspark" not in sys.modules:
        return
    from iterflow.cluster.session import stop_gateway

    try:
        stop_gateway()
    except Exception:  # noqa: BLE001 - best effort; the error line matters more
        logging.getLogger(__name__).debug("stopping the JVM before the error line failed", exc_info=True)


def _error(message: str, stop_jvm: bool) -> None:
    """The one error line, written whole (one write) and on a line of its own: the JVM shares
    this stderr, and a line it left unterminated must not swallow the start of ours. As the
    process's entry point (``stop_jvm``) the JVM is stopped first, so the error is the last line."""
    if stop_jvm:
        _stop_jvm()
    stream = sys.stderr
    stream.flush()
    try:
        fd = stream.fileno()
    except (AttributeError, OSError, ValueError):  # redirected to a Python object (tests)
        stream.write(f"iterflow: error: {message}\n")
        return
    lead = "" if os.isatty(fd) else "\n"
    os.write(fd, f"{lead}iterflow: error: {message}\n".encode("utf-8", "replace"))


if __name__ == "__main__":
    sys.exit(main())
