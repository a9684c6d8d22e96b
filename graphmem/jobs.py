"""One worker thread that runs a store's background jobs in order, off the caller's path.

Work is cut short only at a job's boundary or where the job checks `stopping`; what is left is
marked in the store by the job's owner, so the next start picks it up.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor

# how long a job waits for another node of a server store doing the same work
# (Store.exclusive); then its work stays pending for the next start
EXCLUSIVE_WAIT = 300.0


class Jobs:
    def __init__(self, name: str, *, initializer: Callable[[], None] | None = None) -> None:
        self._name = name
        self._initializer = initializer  # run once in the worker thread
        self._lock = threading.Lock()
        self._executor: ThreadPoolExecutor | None = None
        self._pending: set[Future[None]] = set()
        self.stopping = threading.Event()

    def submit(self, job: Callable[[], None]) -> None:
        with self._lock:
            if self._executor is None:
                self._executor = ThreadPoolExecutor(
                    1, thread_name_prefix=self._name, initializer=self._initializer
                )
            future = self._executor.submit(job)
            self._pending.add(future)
        future.add_done_callback(self._done)

    def _done(self, future: Future[None]) -> None:
        with self._lock:
            self._pending.discard(future)

    def queued(self) -> int:
        """Jobs queued or running, the caller's own included."""
        with self._lock:
            return len(self._pending)

    def wait(self, timeout: float | None = None) -> bool:
        """Block until queued jobs are done; False when `timeout` ran out first."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            with self._lock:
                pending = next(iter(self._pending), None)
            if pending is None:
                return True
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                return False
            try:
                pending.exception(timeout=left)
            except TimeoutError:
                return False

    def stop(self) -> None:
        """Let the running job finish (or stop where it checks `stopping`); drop queued ones."""
        self.stopping.set()
        with self._lock:
            executor, self._executor = self._executor, None
        if executor is not None:
            executor.shutdown(wait=True, cancel_futures=True)
        self.stopping.clear()
