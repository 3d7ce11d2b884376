"""Spark RPC authentication for clusters iterflow starts: one secret per cluster, never on a
command line.

Why the secret travels the way it does (Spark 4.0 ``SecurityManager``):

- master and workers read it from the environment variable ``_SPARK_AUTH_SECRET``
  (``/proc/<pid>/environ`` is readable by the owner only; ``ps`` shows command lines);
  ``spark.authenticate.secret.file`` would also work for them, but Spark hashes a file's
  bytes differently (base64) from a configured string, and a driver on a ``spark://``
  master accepts only ``spark.authenticate.secret`` (``initializeAuth`` requires it);
- executors get it from their worker, again through ``_SPARK_AUTH_SECRET``;
- the driver gets ``spark.authenticate.secret`` in its SparkConf over py4j, after its JVM
  was launched without it (:func:`iterflow.cluster.session.build_session`).

Every cluster's secret is kept in ``<runtime dir>/<host>-<port>.secret`` (0600 in a 0700
directory of this user), so that any process of the same user that is handed the master
URL (a CLI run with ``--master``, a test subprocess, ``spark-submit``) finds it.
"""
from __future__ import annotations

import contextlib
import os
import secrets
import socket
import stat
import tempfile
from pathlib import Path
from urllib.parse import urlparse

from iterflow.errors import ClusterError
from iterflow.files import atomic_file, private_dir

AUTH = "spark.authenticate"
SECRET = "spark.authenticate.secret"
ENV_SECRET = "_SPARK_AUTH_SECRET"


def new_secret() -> str:
    """A fresh 256-bit secret, hex encoded."""
    return secrets.token_hex(32)


def runtime_dir() -> Path:
    """Where cluster secrets live: ``$ITERFLOW_RUNTIME_DIR``, ``$XDG_RUNTIME_DIR/iterflow``
    or ``<tmp>/iterflow-<uid>``; independent of ``ITERFLOW_HOME`` on purpose."""
    explicit = os.environ.get("ITERFLOW_RUNTIME_DIR")
    if explicit:
        return private_dir(explicit)
    xdg = os.environ.get("XDG_RUNTIME_DIR")
    if xdg and Path(xdg).is_dir():
        return private_dir(Path(xdg) / "iterflow")
    return private_dir(Path(tempfile.gettempdir()) / f"iterflow-{os.getuid()}")


def _endpoint(master_url: str) -> tuple[str, int] | None:
    parsed = urlparse(master_url)
    if parsed.scheme != "spark" or not parsed.hostname or not parsed.port:
        return None
    return parsed.hostname, parsed.port


def secret_path(master_url: str) -> Path | None:
    """The secret file of the cluster at ``master_url`` (``None`` for non-standalone URLs)."""
    end = _endpoint(master_url)
    return runtime_dir() / f"{end[0]}-{end[1]}.secret" if end else None


def register(master_url: str, secret: str) -> Path:
    """Record ``secret`` for ``master_url``; drop records of masters that no longer listen."""
    path = secret_path(master_url)
    if path is None:
        raise ClusterError(f"cannot register a secret for {master_url!r} (not spark://host:port)")
    _prune(keep=path)
    with atomic_file(path) as fh:  # 0600 from its creation on, renamed into place
        fh.write(secret)
    return path


def unregister(master_url: str) -> None:
    path = secret_path(master_url)
    if path is not None:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()


def lookup(master_url: str) -> str | None:
    """The secret of the iterflow-started cluster at ``master_url``, if there is one."""
    path = secret_path(master_url)
    if path is None or not path.is_file():
        return None
    st = path.lstat()
    if st.st_uid != os.getuid() or stat.S_IMODE(st.st_mode) & 0o077:
        raise ClusterError(f"{path}: secret file is not private to this user (mode "
                           f"{stat.S_IMODE(st.st_mode):o}); stop the cluster and start it again")
    return path.read_text().strip() or None


def auth_conf(master_url: str) -> dict[str, str]:
    """``spark.authenticate`` settings for a driver of ``master_url`` (empty where iterflow
    did not start that cluster)."""
    secret = lookup(master_url)
    return {AUTH: "true", SECRET: secret} if secret else {}


def _prune(keep: Path) -> None:
    for path in keep.parent.glob("*.secret"):
        if path == keep:
            continue
        host, _, port = path.stem.rpartition("-")
        if port.isdigit() and not _listening(host, int(port)):
            with contextlib.suppress(FileNotFoundError):
                path.unlink()


def _listening(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=0.5):
            return True
    except OSError:
        return False
