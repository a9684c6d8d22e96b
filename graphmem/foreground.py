"""Requests someone waits for, and background work that steps aside for them.

The owner counts the requests in flight that a person or an agent waits for (a recall, a store).
Long background work in the same process (a steward run, extraction, passages) calls
`step_aside()` often: after a few milliseconds of work, while such a request runs, it pauses for
a moment. On two cores a steward run beside recalls otherwise shares the interpreter lock and
the cores with them, and their p95 grew several times (eval/steward_load.py). It still gets a
share of the time under steady requests (`WORK_SECONDS` of every `WORK_SECONDS + PAUSE_SECONDS`
at least), so it ends: that share is its rate limit while requests keep coming.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress

WORK_SECONDS = 0.002  # work done between two looks at the requests in flight
PAUSE_SECONDS = 0.05  # the longest pause for them at one look


class Foreground:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._active = 0
        self._since = threading.local()  # when this thread last stepped aside

    @contextmanager
    def request(self) -> Iterator[None]:
        """A request someone waits for is in flight."""
        with self._lock:
            self._active += 1
        try:
            yield
        finally:
            with self._lock:
                self._active -= 1

    def step_aside(self) -> None:
        """Pause while requests run, once this thread has worked WORK_SECONDS since it last
        did; cheap enough to call in any loop."""
        now = time.monotonic()
        since = getattr(self._since, "at", None)
        if since is None or now - since < WORK_SECONDS:
            if since is None:
                self._since.at = now
            return
        deadline = now + PAUSE_SECONDS
        while self._active and time.monotonic() < deadline:
            time.sleep(0.001)
        self._since.at = time.monotonic()


FOREGROUND = Foreground()
BACKGROUND_NICE = 10  # the background threads' niceness: the scheduler runs request threads first


def lower_priority() -> None:
    """Give the calling thread a lower scheduling priority (Linux sets it per thread): the
    parts of background work that run without the interpreter lock (spaCy's and BLAS's
    kernels) then leave the cores to requests as well."""
    with suppress(OSError, AttributeError):  # not Linux, or not allowed: the pauses still work
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), BACKGROUND_NICE)
