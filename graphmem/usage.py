"""How often each memory is used: recall and get note their memories here, and a background
flush writes the counts in one statement, so a recall never waits on a write.

An access is targeted when an id or a filter asked for the memory (get, a recall with filters):
the steward and sedimentation weigh those more than a memory that came up in a broad search.
Lookups graphmem makes for itself (closing a session compares its statements with the store) are
not uses: they run inside `unnoticed()`.
"""

from __future__ import annotations

import contextvars
import logging
import threading
from collections import Counter
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from graphmem.models import utcnow

if TYPE_CHECKING:
    from graphmem.storage.protocols import Store

log = logging.getLogger(__name__)

FLUSH_SECONDS = 5.0  # a count waits at most this long for its write
FLUSH_AT = 500  # ... or until this many memories wait
_quiet: contextvars.ContextVar[bool] = contextvars.ContextVar("graphmem_quiet_usage", default=False)


@contextmanager
def unnoticed() -> Iterator[None]:
    """Recalls and gets in this block are not counted as uses."""
    token = _quiet.set(True)
    try:
        yield
    finally:
        _quiet.reset(token)


class UsageLog:
    def __init__(self, store: Store, *, background: bool = True) -> None:
        self._store = store
        self._background = background
        self._lock = threading.Lock()
        self._counts: Counter[str] = Counter()
        self._targeted: Counter[str] = Counter()
        self._timer: threading.Timer | None = None
        self._closed = False

    def note(self, memory_ids: Iterable[str], *, targeted: bool) -> None:
        if _quiet.get():
            return
        with self._lock:
            if self._closed:
                return
            for memory_id in memory_ids:
                self._counts[memory_id] += 1
                if targeted:
                    self._targeted[memory_id] += 1
            waiting = len(self._counts)
            if self._background and self._timer is None and waiting:
                self._timer = threading.Timer(FLUSH_SECONDS, self._flush_quietly)
                self._timer.daemon = True
                self._timer.start()
        if waiting >= FLUSH_AT and self._background:
            threading.Thread(target=self._flush_quietly, daemon=True).start()

    def flush(self) -> int:
        """Write what waits; returns how many memories' counts were written."""
        with self._lock:
            counts, targeted = self._counts, self._targeted
            self._counts, self._targeted = Counter(), Counter()
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
        if counts:
            rows = [
                {"id": memory_id, "n": n, "t": targeted.get(memory_id, 0)}
                for memory_id, n in counts.items()
            ]
            try:
                self._store.memories.add_accesses(rows, at=utcnow())
            except Exception:
                with self._lock:  # kept for the next flush
                    self._counts.update(counts)
                    self._targeted.update(targeted)
                raise
        return len(counts)

    def _flush_quietly(self) -> None:
        try:
            self.flush()
        except Exception:  # a busy or closing store: the counts wait for the next flush
            log.warning("usage counts could not be written yet", exc_info=True)

    def close(self) -> None:
        """Write what waits, then take no more."""
        try:
            self.flush()
        finally:
            with self._lock:
                self._closed = True
