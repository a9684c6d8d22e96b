"""Background work steps aside for requests someone waits for, and still gets its share."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from graphmem import foreground
from graphmem.foreground import PAUSE_SECONDS, WORK_SECONDS, Foreground


class Clock:
    """time.monotonic and time.sleep on a clock that moves only when slept on."""

    def __init__(self) -> None:
        self.now = 100.0
        self.slept = 0.0
        self.on_sleep: Callable[[], None] = lambda: None

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds
        self.slept += seconds
        self.on_sleep()


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    fake = Clock()
    monkeypatch.setattr(foreground, "time", fake)
    return fake


def test_it_works_on_when_no_request_is_in_flight(clock: Clock) -> None:
    fg = Foreground()
    for _ in range(100):
        fg.step_aside()
        clock.now += WORK_SECONDS

    assert clock.slept == 0


def test_it_pauses_for_a_request_but_never_longer_than_its_pause(clock: Clock) -> None:
    fg = Foreground()
    fg.step_aside()  # starts the work clock
    clock.now += WORK_SECONDS / 2
    with fg.request():
        fg.step_aside()  # not enough work done yet: no look at the requests
        assert clock.slept == 0
        clock.now += WORK_SECONDS
        fg.step_aside()  # the request lasts: a pause, then back to work

    assert clock.slept == pytest.approx(PAUSE_SECONDS, abs=0.002)


def test_it_goes_back_to_work_when_the_request_ends(clock: Clock) -> None:
    fg = Foreground()
    fg.step_aside()
    clock.now += 2 * WORK_SECONDS
    request = fg.request()
    request.__enter__()
    clock.on_sleep = lambda: clock.slept >= 0.003 and request.__exit__(None, None, None)

    fg.step_aside()

    assert clock.slept == pytest.approx(0.003, abs=0.0015)
