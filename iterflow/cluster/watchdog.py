"""Stop an embedded cluster whose driver process died without stopping it.

:class:`~iterflow.cluster.local.LocalCluster` stops its master and workers on exit, on errors, on
Ctrl-C and on SIGTERM -- but a process killed with SIGKILL (or by the OOM killer) runs no
cleanup, and its daemons, started in sessions of their own, would run on forever. So a run's
embedded cluster is guarded by a small watchdog process: it holds the read end of a pipe whose
write end only the driver process has. When the driver dies, however it dies, the pipe reaches
end-of-file; unless the driver said ``done`` first (after stopping the cluster itself), the
watchdog stops the daemons' process groups (SIGTERM, SIGKILL after a grace period; a worker
takes its executors with it) and removes the cluster's files.

The watchdog runs as a plain script (``python watchdog.py``), without importing iterflow or
pyspark, so it starts in a fraction of a second. It only signals process groups whose leader
is still a Spark daemon (``org.apache.spark.deploy`` on its command line), so a recycled pid
is never hit.
"""
from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Iterator, Sequence

DONE = b"done\n"


def _is_spark_daemon(pid: int) -> bool:
    try:
        return b"org.apache.spark.deploy" in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False


def _signal_groups(pgids: list[int], sig: int) -> None:
    for pgid in pgids:
        try:
            os.killpg(pgid, sig)
        except (ProcessLookupError, PermissionError):
            pass


def _group_alive(pgid: int) -> bool:
    """Whether a process of group ``pgid`` still runs (zombies, dead but not yet reaped, do not)."""
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if fields[2] == str(pgid) and fields[0] != "Z":  # state, ppid, pgrp, ...
            return True
    return False


def stop_orphans(pgids: list[int], paths: list[str], grace: float = 15.0) -> None:
    """Stop the daemons' process groups (those still led by a Spark daemon) and remove ``paths``."""
    ours = [g for g in pgids if _is_spark_daemon(g)]
    _signal_groups(ours, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline and any(_group_alive(g) for g in ours):
        time.sleep(0.2)
    _signal_groups([g for g in ours if _group_alive(g)], signal.SIGKILL)
    for path in paths:
        if os.path.isdir(path):
            shutil.rmtree(path, ignore_errors=True)
        elif os.path.exists(path):
            os.unlink(path)


@contextlib.contextmanager
def stop_if_orphaned(cluster: Any, also: Sequence[str] = ()) -> Iterator[None]:
    """Guard a started LocalCluster for the duration of the block: if this process dies, the
    watchdog stops the cluster and removes its files and ``also`` (the driver's work dir: a
    SIGKILLed driver's was left in /tmp, one per test session). On a normal exit the cluster is
    stopped here, then the watchdog is told ``done``."""
    paths = [str(cluster.base_dir)] if getattr(cluster, "_own_dir", False) else []
    paths += [str(p) for p in also]
    try:
        from iterflow.cluster import auth  # the cluster's secret file goes too

        secret = auth.secret_path(cluster.master_url)
        if secret is not None:
            paths.append(str(secret))
    except (ImportError, AttributeError, OSError):
        pass
    args = [sys.executable, __file__, "--paths", *paths, "--pgids", *map(str, cluster.info().pgids)]
    proc = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)  # not in our process group: a Ctrl-C is not for it
    try:
        yield
    finally:
        try:
            cluster.stop()
        finally:
            assert proc.stdin is not None
            try:
                proc.stdin.write(DONE)
                proc.stdin.close()
            except OSError:
                pass
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:  # pragma: no cover - it exits on EOF
                proc.kill()


def main(argv: list[str]) -> int:
    paths = argv[argv.index("--paths") + 1: argv.index("--pgids")]
    pgids = [int(x) for x in argv[argv.index("--pgids") + 1:]]
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    received = b""
    while True:
        chunk = os.read(0, 64)
        if not chunk:
            break
        received += chunk
    if DONE not in received:
        stop_orphans(pgids, paths)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
