"""The emulated nodes' cpu quota, on a directory laid out like cgroup v1's cpu controller (no Spark)."""
from __future__ import annotations

import pytest

from iterflow.cluster import cpushare
from iterflow.cluster.cpushare import CpuShare, set_period


def _controller(tmp_path, monkeypatch):
    (tmp_path / "cpu.cfs_quota_us").write_text("-1")
    monkeypatch.setattr(cpushare, "CPU_ROOT", tmp_path)
    return tmp_path


def test_each_worker_gets_its_share_of_the_default_period(tmp_path, monkeypatch):
    root = _controller(tmp_path, monkeypatch)
    share = CpuShare.create("t", 2, 0.45)
    assert share.paths == [str(root / "t-w0"), str(root / "t-w1")]
    for p in share.paths:
        assert int((root / p / "cpu.cfs_period_us").read_text()) == cpushare.PERIOD_US
        assert int((root / p / "cpu.cfs_quota_us").read_text()) == int(0.45 * cpushare.PERIOD_US)


def test_a_period_set_in_place_keeps_the_share(tmp_path, monkeypatch):
    _controller(tmp_path, monkeypatch)
    share = CpuShare.create("u", 1, 0.5)
    set_period(share.paths, 0.5, 10_000)
    path = tmp_path / "u-w0"
    assert (path / "cpu.cfs_period_us").read_text() == "10000"
    assert (path / "cpu.cfs_quota_us").read_text() == "5000"


@pytest.mark.parametrize("period", [999, 1_000_001])
def test_a_period_the_kernel_refuses_is_refused_here_naming_it(tmp_path, period):
    with pytest.raises(ValueError, match="period_us"):
        set_period([str(tmp_path)], 0.5, period)
    assert not (tmp_path / "cpu.cfs_period_us").exists()
