"""Change the executors of a live application at a barrier, through Spark's allocation client.

``SparkContext.requestTotalExecutors`` / ``killExecutors`` (reached through the py4j gateway)
are the calls Spark's own dynamic allocation makes; they work on standalone, YARN and
Kubernetes. A scale-out at a barrier does not wait (``wait=False``): the request is made and
the next superstep starts; Spark schedules its tasks on the new executors as they register
(``spark.locality.wait`` is 0 in iterflow's sessions, so no task waits for a busy old one).
The loop (:mod:`iterflow.loop.reconfigure`) checks at later barriers that they came, within
``register_timeout``; a scale-out that gets nothing (a full cluster) is then reported and the
request lowered. Before the run (``wait=True``) the scale-out waits for them. Scale-in
removes the executors holding the least cached state. Where Spark's decommissioning is on
(``spark.decommission.enabled``, with ``spark.storage.decommission.enabled`` and
``...rddBlocks.enabled`` for the cached blocks; iterflow's sessions set all three unless told
otherwise), they are *decommissioned* instead of killed
(``decommissionExecutor`` on the scheduler backend, as dynamic allocation does): each moves
its blocks to the executors that stay, then exits. At a barrier (``wait=False``) a scale-in
does not wait for either: once asked, Spark offers those executors no task (its
``isExecutorActive`` is false), so the next superstep starts at once and they exit (~5 s for a
JVM here) while it runs; snapshots stop counting them at once
(:func:`~iterflow.observe.sparkinfo.leaving`). A killed executor's cached input blocks are
recomputed from lineage by the tasks that need them. Either way the state is safe: the driver
copies it to the reliable checkpoint dir before a scale-in and goes on from that copy. Before
the run (``wait=True``) the scale-in waits until they are gone.

The bound on the wait for new executors is ``register_timeout`` seconds, by default the Spark
setting ``spark.iterflow.executorRegisterTimeout`` (e.g. ``--conf
spark.iterflow.executorRegisterTimeout=10``), else 60: on a cluster that is known to be full, a
shorter wait is a shorter stall at the barrier.
"""
from __future__ import annotations

import logging
import time
from typing import Any

from py4j.protocol import Py4JError

from iterflow.loop.ports import Actuation
from iterflow.observe.sparkinfo import (StatusStore, executor_snapshot, executor_start_delays, leaving,
                                        removed_by_driver, scale_out_requests)

log = logging.getLogger(__name__)

REGISTER_TIMEOUT_CONF = "spark.iterflow.executorRegisterTimeout"



class ExecutorActuator:
    """Sets the number of executors of the application behind ``sc``."""

    def __init__(self, sc: Any, register_timeout: float | None = None, launched: int | None = None,
                 decommission: bool | None = None) -> None:
        """``launched``: executors the cluster manager starts the application with, where the
        caller knows (see :meth:`_settle`). ``decommission``: remove executors by decommissioning
        (True) or killing them (False); ``None``: as the application's ``spark.decommission.enabled``
        says (the executors' block migration needs the ``spark.storage.decommission.*`` settings
        iterflow's sessions set)."""
        self.sc = sc
        self.decommission = decommission
        self.jsc = sc._jsc.sc()
        self.launched = launched
        if register_timeout is None:
            register_timeout = float(str(sc.getConf().get(REGISTER_TIMEOUT_CONF, "60")).rstrip("s"))
        self.register_timeout = register_timeout

    def _empty_map(self) -> Any:
        jvm = self.sc._jvm
        return getattr(getattr(jvm.scala.collection.immutable, "Map$"), "MODULE$").empty()

    def cached_bytes(self) -> dict[str, float]:
        """Cached memory + disk per executor (the state a removal would lose)."""
        try:
            rows = StatusStore.of(self.sc).executors()
        except Py4JError:
            return {}
        return {e["id"]: float(e.get("memoryUsed", 0) + e.get("diskUsed", 0))
                for e in rows if e["id"] != "driver" and e.get("isActive", True)}

    def registered(self) -> int:
        """Executors registered now."""
        return executor_snapshot(self.sc).executors

    def restore(self, target: int, timeout: float = 30.0) -> Actuation:
        """Back to ``target`` executors once those a scale-in is removing have exited (a
        scale-in does not wait for them, and while they exit they still count): what a borrowed
        session (a notebook's, a test suite's) is given back after a run that resized it."""
        deadline = time.monotonic() + timeout
        while (executor_snapshot(self.sc, count_leaving=True).executors != executor_snapshot(self.sc).executors
               and time.monotonic() < deadline):
            time.sleep(0.25)
        return self.set_executors(target)

    def _log_scale_out(self, target: int) -> None:
        """Note when a scale-out was asked; a repeat of one still pending is not a new one."""
        asked, now = scale_out_requests(self.sc), time.time()
        if not (asked and asked[-1][1] == target and now - asked[-1][0] < self.register_timeout):
            asked.append((now, target))

    def start_delays(self) -> list[float]:
        """Seconds the executors of this application's scale-outs took to register (the live
        cluster's executor start latency; :func:`~iterflow.observe.sparkinfo.executor_start_delays`)."""
        return executor_start_delays(self.sc, self.register_timeout)

    def lower_request(self, active: int) -> None:
        """Ask for what there is, so Spark does not keep asking in the background."""
        self.jsc.requestTotalExecutors(max(active, 1), 0, self._empty_map())

    def set_executors(self, target: int, wait: bool = True) -> Actuation:
        """Request ``target`` executors in total; returns what became active (``wait=False``:
        for a scale-out, what is active at once -- the rest join during the next superstep)."""
        if target < 1:
            raise ValueError(f"executors must be >= 1 (got {target})")
        t0 = time.perf_counter()
        if wait:
            self._settle()
        snap = executor_snapshot(self.sc)
        before = snap.executors
        removed: tuple[str, ...] = ()
        if target > before:
            self._log_scale_out(target)
        self.jsc.requestTotalExecutors(target, 0, self._empty_map())
        if target < before:
            load = self.cached_bytes()
            victims = sorted(snap.ids, key=lambda e: (load.get(e, 0.0), e))[: before - target]
            self._remove(victims)
            removed = tuple(victims)
            if not wait:  # Spark offers them no more tasks: the next superstep need not wait
                return Actuation(target, before, target, time.perf_counter() - t0, removed,
                                 f"removed {len(victims)} executors; they exit while the next superstep runs")
        elif target > before and not wait:
            return Actuation(target, before, before, time.perf_counter() - t0, removed,
                             f"requested {target - before} more executors; they join while the next superstep runs")
        active = self._wait_for(target, before)
        waited = time.perf_counter() - t0
        note = ""
        if active < target:
            note = (f"scale-out to {target} executors got {active} within {self.register_timeout:.0f}s "
                    "(cluster full?); continuing at the current size")
            log.warning(note)
            self.lower_request(active)
        return Actuation(target, before, active, waited, removed, note)

    @property
    def decommissions(self) -> bool:
        """Whether a scale-in decommissions (blocks migrate first) rather than kills."""
        if self.decommission is not None:
            return self.decommission
        return str(self.sc.getConf().get("spark.decommission.enabled", "false")).lower() == "true"

    def _remove(self, victims: list[str]) -> None:
        leaving(self.sc).update(victims)  # snapshots stop counting them now
        removed_by_driver(self.sc).update(victims)  # their end is no loss (the statistics ask)
        if not self.decommissions:
            self.jsc.killExecutors(self.sc._jvm.PythonUtils.toSeq(list(victims)))
            self._forget(victims)
            return
        jvm = self.sc._jvm
        info = jvm.org.apache.spark.scheduler.ExecutorDecommissionInfo(
            "iterflow scale-in at a barrier", jvm.scala.Option.empty())
        backend = self.jsc.schedulerBackend()
        for v in victims:  # the target is already set: do not adjust it again
            backend.decommissionExecutor(v, info, False, False)

    def _settle(self) -> None:
        """Once per application, before its first sizing: wait for the executors the cluster
        manager launched at start-up to register (``launched``, else ``spark.cores.max`` over
        ``spark.executor.cores`` on a standalone master). A standalone application is granted
        its cores at once and those executors register seconds later; sized before they did, a
        run asked to start on 1 executor found 0, asked for 1 and then ran on all 4."""
        if getattr(self.sc, "_iterflow_settled", False):
            return
        self.sc._iterflow_settled = True
        expected = self.launched
        if expected is None:
            conf = self.sc.getConf()
            cores_max, per = conf.get("spark.cores.max"), conf.get("spark.executor.cores")
            if not (cores_max and per and str(self.sc.master).startswith("spark://")):
                return
            expected = int(cores_max) // max(int(per), 1)
        deadline = time.monotonic() + self.register_timeout
        while executor_snapshot(self.sc, count_leaving=True).executors < expected and time.monotonic() < deadline:
            time.sleep(0.25)

    def _forget(self, victims: list[str]) -> None:
        """Tell the scheduler now that killed executors' blocks and shuffle outputs are gone, as
        it would when their JVMs exit (~5 s later): the next superstep then plans to recompute
        what it needs of them instead of fetching from a dying executor (a shuffle fetch that
        fails there costs Spark's fetch retries, 3 x 5 s, and a stage resubmission)."""
        jvm = self.sc._jvm
        try:
            killed = getattr(getattr(jvm.org.apache.spark.scheduler, "ExecutorKilled$"), "MODULE$")
            dag = self.jsc.dagScheduler()
            for v in victims:
                dag.executorLost(v, killed)
        except Py4JError as exc:  # not this Spark's API: they are forgotten when they exit
            log.debug("executors not reported lost ahead of their exit: %s", str(exc).splitlines()[0][:200])

    def _wait_for(self, target: int, before: int) -> int:
        # new executors may take register_timeout to come; a decommissioned one first moves its blocks
        bound = self.register_timeout if target > before or self.decommissions else 30.0
        deadline = time.monotonic() + bound
        active = executor_snapshot(self.sc, count_leaving=True).executors
        while active != target and time.monotonic() < deadline:
            time.sleep(0.25)
            active = executor_snapshot(self.sc, count_leaving=True).executors
        return active
