"""The steward in the owner: a run when the schedule says, and one soon after a session closes;
never one at a time more, never when the policy turns the schedule off."""

from __future__ import annotations

import threading
import time
from datetime import timedelta

import pytest

from graphmem.models import utcnow
from graphmem.service import GraphMemory
from graphmem.steward import schedule as schedule_module


def wait_for(condition: object, seconds: float = 20.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():  # type: ignore[operator]
            return True
        time.sleep(0.05)
    return False


@pytest.fixture
def fast(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(schedule_module, "CHECK_SECONDS", 0.1)
    monkeypatch.setattr(schedule_module, "AFTER_SESSION_SECONDS", 0.0)


def test_a_store_never_tended_is_tended_at_once_then_on_schedule(
    gm: GraphMemory, fast: None
) -> None:
    gm.remember("scratch", type="working", created_at=utcnow() - timedelta(days=5))
    stopping = threading.Event()
    schedule = gm.start_steward_schedule(stopping)
    try:
        assert wait_for(lambda: gm.steward_status_last_finished() is not None)
        report = gm.steward_report()
        assert (report.actor, report.applied) == ("steward", 1)
        due = schedule.next_run_at()
        assert due is not None and due - utcnow() > timedelta(hours=23)
    finally:
        stopping.set()


def test_a_closed_session_brings_a_run_and_no_schedule_means_none(
    gm: GraphMemory, fast: None
) -> None:
    gm.steward_policy({"schedule_hours": 0})
    stopping = threading.Event()
    assert gm.steward_schedule is None
    schedule = gm.start_steward_schedule(stopping)
    assert gm.steward_schedule is schedule
    try:
        time.sleep(0.5)
        assert gm.steward_status_last_finished() is None  # no schedule, no session: no run
        assert gm.steward_status().next_run_at is None
        gm.close_session("- We decided to keep sessions in Postgres for 30 days", dry_run=False)
        assert wait_for(lambda: gm.steward_status_last_finished() is not None)
    finally:
        stopping.set()
