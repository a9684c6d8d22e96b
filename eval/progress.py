"""Progress lines for the long loops of a run (stderr, through the runner's `progress`)."""

from __future__ import annotations

from collections.abc import Callable


def every(step: int, what: str, progress: Callable[[str], None]) -> Callable[[int, int], None]:
    """A progress callback that reports about every `step` items, and the last."""
    last = [0]

    def report(done: int, total: int) -> None:
        if done - last[0] >= step or done == total:
            last[0] = done
            progress(f"{what} {done:,} / {total:,}")

    return report
