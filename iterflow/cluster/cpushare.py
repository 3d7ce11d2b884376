"""CPU share per emulated node through a cgroup v1 cpu quota.

One 2-core box can emulate a cluster of N small nodes: each worker (and every executor
it forks, which inherits the cgroup) gets ``cpu.cfs_quota_us = share * cfs_period_us``.
Where cgroups are not writable the cluster still runs, uncapped, and the note says so.
"""
from __future__ import annotations

import logging
import os
from pathlib import Path

log = logging.getLogger(__name__)

CPU_ROOT = Path(os.environ.get("ITERFLOW_CGROUP_CPU", "/sys/fs/cgroup/cpu"))
PERIOD_US = 100_000


class CpuShare:
    """One cgroup per worker; ``paths`` empty means the quota could not be applied."""

    def __init__(self, paths: list[str], note: str) -> None:
        self.paths = paths
        self.note = note

    @classmethod
    def create(cls, name: str, workers: int, share: float) -> "CpuShare":
        """Create ``workers`` cgroups capped at ``share`` cores each, or explain why not."""
        if not (CPU_ROOT / "cpu.cfs_quota_us").exists():
            return cls([], f"cpu share {share} NOT applied: no cgroup v1 cpu controller at {CPU_ROOT}")
        paths: list[str] = []
        try:
            for i in range(workers):
                path = CPU_ROOT / f"{name}-w{i}"
                path.mkdir(exist_ok=True)
                paths.append(str(path))
                set_period([str(path)], share, PERIOD_US)
        except OSError as exc:
            cls(paths, "").remove()
            return cls([], f"cpu share {share} NOT applied: cgroup not writable ({exc.strerror})")
        return cls(paths, f"cpu share {share} core per worker applied via cgroup v1 cpu quota")

    def add(self, worker: int, pid: int) -> None:
        """Move a worker process (all its threads) into its cgroup; children inherit it."""
        if not self.paths:
            return
        try:
            Path(self.paths[worker], "cgroup.procs").write_text(str(pid))
        except OSError as exc:
            self.note = f"cpu share NOT applied to worker {worker}: {exc.strerror}"
            log.warning(self.note)

    def remove(self) -> None:
        """Remove the cgroups (after their processes are gone; retries briefly while they exit)."""
        import time

        for path in self.paths:
            for _ in range(50):
                try:
                    os.rmdir(path)
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.1)
        self.paths = []


def set_period(paths: list[str], share: float, period_us: int) -> None:
    """Cap each cgroup of ``paths`` at ``share`` cores over CFS periods of ``period_us``: the
    quota is ``share * period_us`` (the kernel takes 1 ms to 1 s). The period is how long a node
    runs flat out before it is throttled for the rest of it -- what a short task may wait."""
    if not 1000 <= period_us <= 1_000_000:
        raise ValueError(f"period_us must be in [1000, 1000000] (got {period_us})")
    for path in paths:
        Path(path, "cpu.cfs_period_us").write_text(str(period_us))
        Path(path, "cpu.cfs_quota_us").write_text(str(int(share * period_us)))
