"""Work a barrier starts and a later barrier collects: a scale-out's relayout built while
supersteps go on (Megaphone's migration planned ahead, here run ahead).

Spark runs jobs of several threads of one application side by side; the tasks of a background
job take the slots the superstep's leave free -- the new executors, while the superstep still
runs on the old partitions. The thread tags its jobs with their own job group (a thread's job
group is its own in PySpark's pinned-thread mode), so a superstep's statistics never count them.
"""
from __future__ import annotations

import logging
import threading
import time
from typing import Any, Callable

log = logging.getLogger(__name__)


class Background:
    """``work()`` in a thread of its own, after ``tag()`` (in that thread); ``cancel`` stops its
    jobs. ``seconds``: the work's wall time, once done."""

    def __init__(self, work: Callable[[], Any], tag: Callable[[], None] = lambda: None,
                 cancel: Callable[[], None] = lambda: None, thread: type = threading.Thread) -> None:
        self._work, self._tag, self._cancel = work, tag, cancel
        self._result: Any = None
        self._error: BaseException | None = None
        self.seconds: float | None = None
        self._thread = thread(target=self._run, name="iterflow-background", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        t0 = time.perf_counter()
        try:
            self._tag()
            self._result = self._work()
        except BaseException as exc:  # noqa: BLE001 - handed to whoever collects it
            self._error = exc
        finally:
            self.seconds = time.perf_counter() - t0

    def done(self) -> bool:
        return not self._thread.is_alive()

    def result(self) -> Any:
        """The work's result (waits for it); re-raises what it raised."""
        self._thread.join()
        if self._error is not None:
            raise self._error
        return self._result

    def cancel(self) -> Any:
        """Stop the work's jobs and wait for the thread; what it built anyway, else ``None``."""
        if not self.done():
            self._cancel()
        self._thread.join()
        return None if self._error is not None else self._result
