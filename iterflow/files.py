"""What iterflow writes to disk, and the rules for it, in one place.

* :func:`atomic_file` -- a file written under a hidden temporary name in its own directory and
  renamed over the target only when the writing succeeded: a reader sees the old file or the
  whole new one, never a half-written one; on an error the temporary file is removed.
* :func:`atomic_dir` -- the same for a directory (job output, checkpoints).
* :func:`private_dir` -- a directory of this user's only (0700).
* :func:`iterflow_home` -- ``$ITERFLOW_HOME``, default ``~/.iterflow``.
* :func:`is_secret_key` -- whether a setting's or parameter's name suggests a secret, so that
  it is written into no run record (``spec.json``) and logged as no MLflow param.
"""
from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import stat
import tempfile
from pathlib import Path
from typing import IO, Callable, Iterator

from iterflow.errors import IterflowError

#: Parts of a name that mark its value as secret (case-insensitive substrings): Spark's own
#: redaction words (``spark.redaction.regex``) and ``key`` for access keys of storage settings.
SECRET_HINTS = ("secret", "password", "token", "key")


def is_secret_key(name: str) -> bool:
    """Whether a setting or parameter called ``name`` may hold a secret."""
    lowered = name.lower()
    return any(hint in lowered for hint in SECRET_HINTS)


def iterflow_home() -> Path:
    """``$ITERFLOW_HOME`` (default ``~/.iterflow``): runs, the detached cluster's record."""
    return Path(os.environ.get("ITERFLOW_HOME") or Path.home() / ".iterflow")


def private_dir(path: str | os.PathLike[str]) -> Path:
    """``path`` as a directory of this user's, mode 0700 (created with its parents if missing);
    refuses one that is not a directory of this user's (a link, another user's), so nobody can
    plant a directory for us to write private files into."""
    p = Path(path)
    p.mkdir(mode=0o700, parents=True, exist_ok=True)
    st = p.lstat()
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid():
        raise IterflowError(f"{p} is not a directory owned by this user; refusing to keep private files there")
    if stat.S_IMODE(st.st_mode) != 0o700:
        os.chmod(p, 0o700)
    return p


@contextlib.contextmanager
def atomic_file(path: str | os.PathLike[str], mode: int | None = 0o600, *, binary: bool = False,
                fsync: bool = False) -> Iterator[IO]:
    """Write ``path`` atomically: yields an open file (text, UTF-8; ``binary=True``: bytes) on a
    hidden temporary sibling, which is renamed over ``path`` when the block ends without error
    and removed when it raises. Its mode is ``mode`` exactly (default 0600: private from its
    creation on, whatever the umask), or with ``mode=None`` the mode a plain ``open()`` gives
    (0666 less the umask). ``fsync``: flush it to disk before the rename (a crash of the machine
    then leaves the old or the new file, not an empty one)."""
    target = Path(path)
    tmp = target.with_name(f".{target.name}.{secrets.token_hex(8)}.tmp")
    # a new file (never one planted there), 0600 or, for mode=None, 0666 less the umask as open() gives
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o666 if mode is None else 0o600)
    try:
        if mode is not None:
            os.fchmod(fd, mode)  # exactly ``mode``, whatever the umask
        with os.fdopen(fd, "wb" if binary else "w", **({} if binary else {"encoding": "utf-8"})) as fh:
            fd = -1  # closed with fh from here on
            yield fh
            if fsync:
                fh.flush()
                os.fsync(fh.fileno())
        os.replace(tmp, target)
    except BaseException:
        if fd >= 0:
            os.close(fd)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def atomic_dir(target: str | os.PathLike[str], write: Callable[[Path], None]) -> Path:
    """Call ``write(tmp)`` on a new hidden sibling directory of ``target`` (0700) and rename it to
    ``target`` only if it succeeded, replacing what was there; on an error nothing at ``target``
    changes and the temporary directory is removed. Returns the resolved ``target``."""
    target_path = Path(target).resolve()
    target_path.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target_path.name}.inprogress-", dir=target_path.parent))
    try:
        write(tmp)
        if target_path.exists():
            old = target_path.with_name(f".{target_path.name}.old-{os.getpid()}")
            target_path.rename(old)
            tmp.rename(target_path)
            shutil.rmtree(old, ignore_errors=True)
        else:
            tmp.rename(target_path)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return target_path
