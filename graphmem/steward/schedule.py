"""The steward in the owner process: a run every `schedule_hours` (the policy's), and one soon
after a session closes, when what it stored may repeat what the store held; each run is followed
by a sediment cycle. One run at a time, on its own thread, never on a request's.

It runs the steward's services themselves (GraphMemory.start_steward_schedule builds it), so
this module never imports the facade."""

from __future__ import annotations

import logging
import threading
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from graphmem.errors import GraphmemError
from graphmem.models import utcnow

if TYPE_CHECKING:
    from graphmem.steward.ops import StewardOps
    from graphmem.steward.upkeep import UpkeepOps

log = logging.getLogger(__name__)

CHECK_SECONDS = 60.0  # how often the schedule looks at the clock
AFTER_SESSION_SECONDS = 30.0  # a closed session's run waits this long for the next to close


class StewardSchedule:
    def __init__(self, steward: StewardOps, upkeep: UpkeepOps, stopping: threading.Event) -> None:
        self._steward = steward
        self._upkeep = upkeep
        self._stopping = stopping
        self._wake = threading.Event()
        self._session_closed_at: datetime | None = None
        self._lock = threading.Lock()
        self.busy = False

    def start(self) -> None:
        threading.Thread(target=self._loop, name="graphmem-steward", daemon=True).start()

    def session_closed(self) -> None:
        with self._lock:
            self._session_closed_at = utcnow()
        self._wake.set()

    def next_run_at(self) -> datetime | None:
        hours = self._steward.steward_policy().schedule_hours
        if hours <= 0:
            return None
        last = self._steward.steward_status_last_finished()
        return utcnow() if last is None else last + timedelta(hours=hours)

    def _due(self) -> str | None:
        with self._lock:
            closed = self._session_closed_at
        if closed is not None and utcnow() - closed >= timedelta(seconds=AFTER_SESSION_SECONDS):
            return "session"
        due = self.next_run_at()
        return "schedule" if due is not None and due <= utcnow() else None

    def _loop(self) -> None:
        while not self._stopping.is_set():
            self._wake.wait(CHECK_SECONDS)
            self._wake.clear()
            if self._stopping.is_set():
                return
            try:
                reason = self._due()
                if reason is None:
                    continue
                with self._lock:
                    self._session_closed_at = None
                with self._steward.store.exclusive("steward") as mine:
                    if mine:  # else another node of the store's server runs it now
                        self._run(reason)
            except GraphmemError as exc:
                log.warning("steward run failed: %s", exc.message)
            except Exception:  # a bug must not stop the schedule, nor the owner
                log.exception("steward run failed")
            finally:
                self.busy = False

    def _run(self, reason: str) -> None:
        self.busy = True
        # a run keeps to one core itself (steward_run), leaving the rest to requests
        run = self._steward.steward_run("all", dry_run=False, actor="steward")
        log.info(
            "steward (%s): %d found, %d applied, %d filed",
            reason, sum(run.found.values()), run.applied, run.filed,
        )  # fmt: skip
        moved = self._upkeep.sediment_cycle(dry_run=False, actor="steward")
        log.info("sediment: %s", moved.counts or "nothing moved")
