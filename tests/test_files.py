"""The one place for writing files (:mod:`iterflow.files`) and the rules that go with it: atomic
renames, private modes, ``ITERFLOW_HOME``, secret-looking names, one validation of a job spec.
No Spark."""
from __future__ import annotations

import dataclasses
import os
import stat
from pathlib import Path
from unittest import mock

import pytest

from iterflow.errors import InputError, IterflowError
from iterflow.files import atomic_dir, atomic_file, is_secret_key, iterflow_home, private_dir


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture
def umask_022():
    old = os.umask(0o022)
    yield
    os.umask(old)


def test_atomic_file_is_private_and_replaces_the_old_file_whole(tmp_path, umask_022):
    path = tmp_path / "doc.json"
    path.write_text("old")
    inode = path.stat().st_ino
    with atomic_file(path) as fh:
        fh.write("new")
        assert path.read_text() == "old"  # readers see the old file until the rename
        (tmp,) = [p for p in tmp_path.iterdir() if p.name.startswith(".doc.json.")]
        assert _mode(tmp) == 0o600
    assert path.read_text() == "new" and path.stat().st_ino != inode and _mode(path) == 0o600
    assert sorted(p.name for p in tmp_path.iterdir()) == ["doc.json"]


def test_atomic_file_modes(tmp_path, umask_022):
    with atomic_file(tmp_path / "plain.png", mode=None, binary=True) as fh:
        fh.write(b"\x89PNG")
    assert _mode(tmp_path / "plain.png") == 0o644  # what open() gives under the umask
    with atomic_file(tmp_path / "exact", mode=0o640) as fh:
        fh.write("x")
    assert _mode(tmp_path / "exact") == 0o640
    os.umask(0o277)  # the mode is exact whatever the umask
    with atomic_file(tmp_path / "private") as fh:
        fh.write("x")
    assert _mode(tmp_path / "private") == 0o600


def test_atomic_file_leaves_the_old_file_and_no_temporary_on_error(tmp_path):
    path = tmp_path / "stats.csv"
    path.write_text("old")
    with pytest.raises(RuntimeError), atomic_file(path) as fh:
        fh.write("half")
        raise RuntimeError("killed while writing")
    assert path.read_text() == "old" and sorted(p.name for p in tmp_path.iterdir()) == ["stats.csv"]


def test_atomic_dir_replaces_the_target_only_when_the_write_succeeded(tmp_path):
    target = tmp_path / "out"

    def write(tmp: Path) -> None:
        assert tmp.parent == tmp_path and tmp.name.startswith(".out.inprogress-") and _mode(tmp) == 0o700
        (tmp / "part-0").write_text("1")

    assert atomic_dir(target, write) == target.resolve()
    assert (target / "part-0").read_text() == "1"

    def fail(tmp: Path) -> None:
        (tmp / "part-0").write_text("2")
        raise RuntimeError("run failed")

    with pytest.raises(RuntimeError):
        atomic_dir(target, fail)
    assert (target / "part-0").read_text() == "1" and sorted(p.name for p in tmp_path.iterdir()) == ["out"]
    atomic_dir(target, lambda tmp: (tmp / "part-1").write_text("3"))
    assert sorted(p.name for p in target.iterdir()) == ["part-1"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]


def test_private_dir_is_0700_and_refuses_a_link(tmp_path):
    loose = tmp_path / "loose"
    loose.mkdir(mode=0o755)
    os.chmod(loose, 0o755)
    assert private_dir(loose) == loose and _mode(loose) == 0o700
    assert _mode(private_dir(tmp_path / "a" / "b")) == 0o700
    (tmp_path / "link").symlink_to(loose)
    with pytest.raises(IterflowError, match="not a directory owned by this user"):
        private_dir(tmp_path / "link")


def test_iterflow_home(monkeypatch, tmp_path):
    monkeypatch.setenv("ITERFLOW_HOME", str(tmp_path))
    assert iterflow_home() == tmp_path
    monkeypatch.delenv("ITERFLOW_HOME")
    assert iterflow_home() == Path.home() / ".iterflow"
    monkeypatch.setenv("ITERFLOW_HOME", "")  # as ${ITERFLOW_HOME:-$HOME/.iterflow} in the README
    assert iterflow_home() == Path.home() / ".iterflow"


def test_one_rule_for_secret_names():
    from iterflow.app.tracking import _public
    from iterflow.app.spec import JobSpec
    from iterflow.faults.resume import spec_document

    for name in ("spark.authenticate.secret", "db.PASSWORD", "api_token", "spark.hadoop.fs.s3a.access.key"):
        assert is_secret_key(name), name
    for name in ("spark.executor.cores", "k", "policy", "input"):
        assert not is_secret_key(name), name
    conf = {"spark.hadoop.fs.s3a.access.key": "AKIA", "spark.authenticate.secret": "s", "spark.executor.cores": "1"}
    assert spec_document(JobSpec("pagerank", "g.txt", "out", conf=conf))["conf"] == {"spark.executor.cores": "1"}
    assert _public({**conf, "k": 3}) == {"spark.executor.cores": "1", "k": 3}


def test_run_store_files_are_private_and_checkpoints_atomic(tmp_path, monkeypatch):
    from iterflow.app.spec import JobSpec
    from iterflow.faults.recovery import Anchor
    from iterflow.faults.resume import RunStore
    from iterflow.loop.program import State

    monkeypatch.setenv("ITERFLOW_HOME", str(tmp_path / "home"))
    store = RunStore.create("run-1", JobSpec("wcc", "g.txt", "out"))
    assert _mode(tmp_path / "home") == _mode(tmp_path / "home" / "runs") == _mode(store.dir) == 0o700
    assert _mode(store.dir / "spec.json") == _mode(store.dir / "status.json") == 0o600
    (store.dir / ".ckpt-1.inprogress-left-by-a-killed-driver").mkdir()
    for k in (1, 2):
        anchor = Anchor(k, State({}, {"centers": [k]}), "default")
        store.save(anchor, "default", [{"superstep": k, "wall_seconds": 1.0}])
    assert sorted(p.name for p in store.dir.iterdir()) == ["ckpt-2", "latest.json", "lock", "spec.json", "status.json"]
    ckpt = store.dir / "ckpt-2"
    assert _mode(ckpt) == 0o700 and all(_mode(p) == 0o600 for p in ckpt.iterdir() if p.is_file())
    resumed = store.load(spark=None)
    assert resumed.superstep == 2 and resumed.state.values == {"centers": [2]}


def test_a_spec_is_validated_once_and_its_policy_built_once(tmp_path):
    from iterflow.app import spec as specs

    graph = tmp_path / "g.txt"
    graph.write_text("1 2\n")
    spec = specs.JobSpec("pagerank", str(graph), str(tmp_path / "out"))
    with mock.patch.object(specs, "policy_for", wraps=specs.policy_for) as built:
        spec.validate()
        spec.validate()
        assert spec.validated and built.call_count == 1
        spec.iterations = 0  # a changed spec is checked again
        assert not spec.validated
        with pytest.raises(InputError, match="--iterations"):
            spec.validate()
    assert "_validated_as" not in dataclasses.asdict(spec)  # nor in spec.json
