"""An embedded Spark standalone cluster on 127.0.0.1, and the cluster-side view of a run.

:class:`LocalCluster` starts one master and N workers with ``bin/spark-class`` from the
pyspark package (pip's pyspark has no ``sbin/start-*.sh``), each worker with its own ports
and work dir, and stops all of it (executors included: they live in the worker's process
group) on exit, on error and on Ctrl-C. An optional CPU share per worker caps each worker
with a cgroup v1 cpu quota so one box can emulate N small nodes.

Security: everything listens on 127.0.0.1 only; the master and workers require Spark RPC
authentication with a secret made for this cluster (see :mod:`iterflow.cluster.auth`); the daemons
run with umask 077, so their logs, work dirs and what executors write are the user's only.
"""
from __future__ import annotations

import atexit
import json
import logging
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.request
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Mapping

from iterflow.cluster import auth, cds
from iterflow.cluster.cpushare import CpuShare
from iterflow.cluster.jvmopts import extra_jvm_opts, joined
from iterflow.errors import ClusterError
from iterflow.files import atomic_file, iterflow_home, private_dir

log = logging.getLogger(__name__)

LOOPBACK = "127.0.0.1"
# Settings of every daemon (not secret: they are visible in ``ps``). The UIs' kill buttons are
# off because the UIs, unlike RPC, are not authenticated; the REST submission server (no
# authentication either) stays off.
DAEMON_OPTS = ("-Dspark.authenticate=true -Dspark.ui.killEnabled=false "
               "-Dspark.master.rest.enabled=false")


def spark_home() -> Path:
    """SPARK_HOME of the pinned pyspark (its ``bin/spark-class`` launches master and workers)."""
    import pyspark

    return Path(pyspark.__file__).resolve().parent


def free_port() -> int:
    """A currently free TCP port on the loopback interface."""
    with socket.socket() as s:
        s.bind((LOOPBACK, 0))
        return s.getsockname()[1]


def state_file() -> Path:
    """Where ``iterflow cluster start`` records the cluster it left running."""
    return iterflow_home() / "cluster.json"


def submit_conf_file() -> Path:
    """The ``spark-submit --properties-file`` for the cluster ``iterflow cluster start`` left running."""
    return iterflow_home() / "spark-submit.conf"


def fetch_master_json(ui_url: str, timeout: float = 2.0) -> dict[str, Any]:
    """The master's own status document (``/json/``): workers, cores, memory, applications."""
    with urllib.request.urlopen(f"{ui_url}/json/", timeout=timeout) as resp:
        return json.load(resp)


@dataclass
class ClusterInfo:
    """What is needed to find, use and stop a running LocalCluster (serialized by ``cluster start``)."""

    master_url: str
    ui_url: str
    base_dir: str
    workers: int
    cores_per_worker: int
    memory: str
    cpu_share: float | None
    pgids: list[int] = field(default_factory=list)
    cgroups: list[str] = field(default_factory=list)
    cpu_share_note: str = ""


class LocalCluster:
    """A Spark standalone master and ``workers`` workers bound to 127.0.0.1.

    Use as a context manager; ``stop()`` is idempotent and also registered with ``atexit``.
    ``cpu_share`` (e.g. 0.5) caps each worker, and the executors it forks, at that many
    cores through a cgroup cpu quota where the machine permits; where it does not,
    ``cpu_share_note`` says so and the cluster runs uncapped.
    """

    def __init__(
        self,
        workers: int = 2,
        cores_per_worker: int = 1,
        memory: str = "2g",
        cpu_share: float | None = None,
        base_dir: str | os.PathLike[str] | None = None,
        register_timeout: float = 90.0,
        daemon_java_opts: Mapping[str, str] | None = None,
    ) -> None:
        if workers < 1:
            raise ClusterError(f"--workers must be >= 1 (got {workers})")
        if cores_per_worker < 1:
            raise ClusterError(f"--cores-per-worker must be >= 1 (got {cores_per_worker})")
        if cpu_share is not None and not 0 < cpu_share <= cores_per_worker:
            raise ClusterError(f"--cpu-share must be in (0, cores-per-worker] (got {cpu_share})")
        self.workers = workers
        self.cores_per_worker = cores_per_worker
        self.memory = memory
        self.cpu_share = cpu_share
        self.register_timeout = register_timeout
        # more JVM options for the "master" or the "worker" daemons (the class-recording run's dumps)
        self.daemon_java_opts = dict(daemon_java_opts or {})
        self._own_dir = base_dir is None
        self.base_dir = Path(base_dir or tempfile.mkdtemp(prefix="iterflow-cluster-"))
        self._procs: list[subprocess.Popen[bytes]] = []
        self._cpu: CpuShare | None = None
        self.master_url = ""
        self.ui_url = ""
        self.cpu_share_note = ""
        self._secret = ""

    # -- lifecycle -----------------------------------------------------------------
    def start(self) -> "LocalCluster":
        """Start master and workers; return once every worker has registered as ALIVE."""
        atexit.register(self.stop)
        _exit_cleanly_on_sigterm()
        private_dir(self.base_dir)
        self._secret = auth.new_secret()
        try:
            port, ui_port = free_port(), free_port()
            self.master_url = f"spark://{LOOPBACK}:{port}"
            self.ui_url = f"http://{LOOPBACK}:{ui_port}"
            self._spawn("master", ["org.apache.spark.deploy.master.Master",
                                   "--host", LOOPBACK, "--port", str(port), "--webui-port", str(ui_port)])
            self._wait(lambda doc: doc.get("status") == "ALIVE", "master to come up")
            auth.register(self.master_url, self._secret)  # drivers of this user find it there
            if self.cpu_share is not None:
                self._cpu = CpuShare.create(f"iterflow-{os.getpid()}-{port}", self.workers, self.cpu_share)
                self.cpu_share_note = self._cpu.note
            for i in range(self.workers):
                work = private_dir(self.base_dir / f"worker-{i}")
                proc = self._spawn(f"worker-{i}", [
                    "org.apache.spark.deploy.worker.Worker", "--host", LOOPBACK,
                    "--port", str(free_port()), "--webui-port", str(free_port()),
                    "--cores", str(self.cores_per_worker), "--memory", self.memory,
                    "--work-dir", str(work), self.master_url,
                ])
                if self._cpu is not None:
                    self._cpu.add(i, proc.pid)
            self._wait(lambda doc: doc.get("aliveworkers", 0) >= self.workers,
                       f"{self.workers} workers to register")
        except BaseException:
            self.stop()
            raise
        log.info("LocalCluster up: %s (%d workers x %d cores, ui %s)%s", self.master_url,
                 self.workers, self.cores_per_worker, self.ui_url,
                 f"; {self.cpu_share_note}" if self.cpu_share_note else "")
        return self

    def stop(self) -> None:
        """Stop workers (and their executors), then the master; remove cgroups and temp dirs."""
        for proc in reversed(self._procs):
            _kill_group(proc.pid)
        for proc in self._procs:
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:  # pragma: no cover - SIGKILL below always works
                _kill_group(proc.pid, signal.SIGKILL)
        if self._procs and self.master_url:
            auth.unregister(self.master_url)
        self._procs.clear()
        if self._cpu is not None:
            self._cpu.remove()
            self._cpu = None
        if self._own_dir and self.base_dir.exists():
            shutil.rmtree(self.base_dir, ignore_errors=True)
        atexit.unregister(self.stop)

    def __enter__(self) -> "LocalCluster":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- introspection ---------------------------------------------------------------
    def status(self) -> dict[str, Any]:
        """The master's status document (see :func:`fetch_master_json`)."""
        return fetch_master_json(self.ui_url)

    @property
    def total_cores(self) -> int:
        return self.workers * self.cores_per_worker

    def info(self) -> ClusterInfo:
        return ClusterInfo(
            master_url=self.master_url, ui_url=self.ui_url, base_dir=str(self.base_dir),
            workers=self.workers, cores_per_worker=self.cores_per_worker, memory=self.memory,
            cpu_share=self.cpu_share, pgids=[p.pid for p in self._procs],
            cgroups=self._cpu.paths if self._cpu else [], cpu_share_note=self.cpu_share_note,
        )

    def detach(self) -> ClusterInfo:
        """Leave the cluster running after this process exits (``iterflow cluster start``)."""
        info = self.info()
        atexit.unregister(self.stop)
        self._procs.clear()
        self._cpu = None
        self._own_dir = False
        private_dir(iterflow_home())
        for path, text in ((state_file(), json.dumps(asdict(info), indent=2)),
                           (submit_conf_file(), self.submit_properties())):
            with atomic_file(path) as fh:  # 0600: the properties hold the cluster's secret
                fh.write(text)
        return info

    def submit_properties(self) -> str:
        """A ``spark-submit --properties-file`` for this cluster: master, authentication and the
        loopback settings, so a plain ``spark-submit`` command line works against it."""
        from iterflow.cluster.session import default_conf

        conf = {k: v for k, v in default_conf(self.master_url, self.total_cores, None).items()
                if k != "spark.app.name"}
        conf.update({"spark.executor.cores": str(self.cores_per_worker),
                     auth.AUTH: "true", auth.SECRET: self._secret})
        # spark-submit's executors start from their archive too, and its driver from the driver's
        conf = cds.with_driver_archive(cds.with_archive(self.master_url, conf))
        lines = ["# Written by `iterflow cluster start`; removed by `iterflow cluster stop`. Holds the",
                 "# cluster's authentication secret: keep it private (0600)."]
        return "\n".join(lines + [f"{k} {v}" for k, v in sorted(conf.items())]) + "\n"

    # -- internals -------------------------------------------------------------------
    def _spawn(self, name: str, args: list[str]) -> subprocess.Popen[bytes]:
        logs = private_dir(self.base_dir / "logs")
        env = dict(os.environ, SPARK_LOCAL_IP=LOOPBACK, SPARK_HOME=str(spark_home()),
                   SPARK_LOG_DIR=str(logs), SPARK_NO_DAEMONIZE="1",
                   SPARK_DAEMON_JAVA_OPTS=self._daemon_opts("master" if name == "master" else "worker"),
                   SPARK_WORKER_OPTS="-Dspark.worker.cleanup.enabled=true")
        env[auth.ENV_SECRET] = self._secret  # the environment, not the command line: see iterflow.cluster.auth
        for key in ("SPARK_CONF_DIR", "SPARK_MASTER_OPTS"):
            env.pop(key, None)
        fd = os.open(logs / f"{name}.out", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "wb") as out:
            proc = subprocess.Popen(
                [str(spark_home() / "bin" / "spark-class"), *args],
                stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env,
                start_new_session=True,  # own process group: executors die with their worker
                umask=0o077,  # logs, work dirs, executors' shuffle and checkpoint files: user only
            )
        self._procs.append(proc)
        return proc

    def _daemon_opts(self, kind: str) -> str:
        """A daemon's JVM options: iterflow's, ``ITERFLOW_JVM_OPTS``, this cluster's own for the kind,
        then the daemon's class archive where there is one (:func:`~iterflow.cluster.cds.daemon_options`)."""
        return cds.daemon_options(kind, joined(DAEMON_OPTS, extra_jvm_opts(), self.daemon_java_opts.get(kind, "")))

    def _wait(self, ready: Any, what: str) -> None:
        deadline = time.monotonic() + self.register_timeout
        last: Exception | None = None
        while time.monotonic() < deadline:
            dead = [p for p in self._procs if p.poll() is not None]
            if dead:
                raise ClusterError(f"a Spark daemon exited early (status {dead[0].returncode}); "
                                   f"see logs in {self.base_dir / 'logs'}")
            try:
                if ready(self.status()):
                    return
            except OSError as exc:
                last = exc
            time.sleep(0.3)
        raise ClusterError(f"timed out after {self.register_timeout:.0f}s waiting for {what} "
                           f"({last or 'not ready'}); see logs in {self.base_dir / 'logs'}")


def _exit_cleanly_on_sigterm() -> None:
    """Make SIGTERM unwind the interpreter (``with`` blocks, ``atexit``) instead of killing it
    on the spot, which would leave master and workers running. Only where nobody else
    installed a handler, and only from the main thread (where Python allows it)."""
    import threading

    if threading.current_thread() is threading.main_thread() and \
            signal.getsignal(signal.SIGTERM) in (signal.SIG_DFL, None):
        def _raise(signum: int, frame: Any) -> None:
            raise SystemExit(128 + signum)

        signal.signal(signal.SIGTERM, _raise)


def _kill_group(pgid: int, sig: int = signal.SIGTERM) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def stop_detached(info: ClusterInfo, timeout: float = 15.0) -> None:
    """Stop a cluster started by ``iterflow cluster start`` (from its recorded process groups)."""
    for pgid in info.pgids:
        _kill_group(pgid)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and any(_group_alive(g) for g in info.pgids):
        time.sleep(0.2)
    for pgid in info.pgids:
        _kill_group(pgid, signal.SIGKILL)
    if info.cgroups:
        CpuShare(info.cgroups, "").remove()
    auth.unregister(info.master_url)
    submit_conf_file().unlink(missing_ok=True)
    shutil.rmtree(info.base_dir, ignore_errors=True)


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
        return True
    except (ProcessLookupError, PermissionError):
        return False


def load_detached() -> ClusterInfo | None:
    """The cluster ``iterflow cluster start`` left running, if it is still up."""
    path = state_file()
    if not path.exists():
        return None
    info = ClusterInfo(**json.loads(path.read_text()))
    try:
        fetch_master_json(info.ui_url, timeout=1.0)
    except OSError:
        return None
    return info
