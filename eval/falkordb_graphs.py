"""`--falkordb` for the evaluations: a FalkorDB server on loopback (tests/servers), started for
the run, and a new graph for each store the run opens, so that the same evaluation measures a
team server's node against the embedded store."""

from __future__ import annotations

import itertools
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

StoreUrls = Callable[[], dict[str, str]]  # open_store's keyword for the next store


def embedded() -> dict[str, str]:
    return {}


@contextmanager
def graphs(on: bool, prefix: str) -> Iterator[StoreUrls]:
    """Without `on`, the embedded store every time; with it, a server for the run and a new
    graph per store."""
    if not on:
        yield embedded
        return
    from tests.servers import falkordb_servers as servers

    counter = itertools.count()
    with (
        tempfile.TemporaryDirectory(prefix="eval-falkordb-") as tmp,
        servers.standalone(Path(tmp)) as server,
    ):
        try:
            yield lambda: {"store_url": server.store_url(f"{prefix}-{next(counter)}")}
        except BaseException:  # the server's own account goes with its directory
            print(f"--- the server's log ({server.log}):\n{server.log_tail()}", file=sys.stderr)
            raise
