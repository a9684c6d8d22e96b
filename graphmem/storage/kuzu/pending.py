"""The work a write leaves for later, kept in the store as `Pending` rows.

A memory's entities and facts, its passage vectors when an import defers them, a document
chunk's entities: each waits as one row (key `<work>:<item>`), written in the transaction that
writes the item and deleted in the transaction that does the work. So after any exit, kill -9
included, the next start reads exactly what is left from this small table, instead of scanning
every memory's fields and contents to find it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime

import pyarrow as pa

from graphmem.models import utcnow
from graphmem.storage.kuzu.connection import KuzuConnection
from graphmem.storage.protocols.pending import WORKS

# Up to this many keys, one primary-key statement each; beyond, one UNWIND that Kùzu runs as a
# hash join over the (small) table: 2,048 keys in 8 ms at 33k rows, where `IN $keys` took 370.
POINT_KEYS = 32


def pending_key(work: str, item: str) -> str:
    return f"{work}:{item}"


class KuzuPending:
    """graphmem.storage.protocols.Pending over one connection."""

    def __init__(self, conn: KuzuConnection) -> None:
        self.conn = conn

    def put(self, work: str, items: Sequence[str], *, at: datetime | None = None) -> None:
        """Record work to do on the items, in the caller's transaction if any; an item already
        waiting keeps its row. Rows are CREATEd, never MERGEd: a kill -9 during the checkpoint
        after a `LOAD FROM ... MERGE` left stores whose log Kùzu 0.11.3 crashed replaying
        (plain kuzu, at the 12th kill; none in 20 with CREATE; docs/operations.md)."""
        if not items:
            return
        with self.conn.transaction():
            waiting = set(self.among(work, items))
            new = [i for i in dict.fromkeys(items) if i not in waiting]
            if not new:
                return
            table = pa.table(
                {
                    "key": pa.array([pending_key(work, i) for i in new], pa.string()),
                    "item": pa.array(new, pa.string()),
                }
            )
            # an arrow table cannot go through a prepared statement, hence query_result
            self.conn.query_result(
                "LOAD FROM $t CREATE (:Pending {key: key, work: $w, item: item, at: $at})",
                {"t": table, "w": work, "at": at or utcnow()},
            )

    def finish(self, work: str, items: Iterable[str]) -> None:
        """The work on these items is done (or moot: the item is gone); in the caller's
        transaction, so it is done exactly when its result commits."""
        keys = [pending_key(work, i) for i in dict.fromkeys(items)]
        if len(keys) <= POINT_KEYS:
            self.conn.execute_each("MATCH (p:Pending {key: $k}) DELETE p", [{"k": k} for k in keys])
        else:
            self.conn.execute("UNWIND $k AS k MATCH (p:Pending {key: k}) DELETE p", {"k": keys})

    def items(self, work: str, *, limit: int | None = None) -> list[str]:
        """The items waiting for `work`, in key order: a read of the Pending table alone."""
        query = "MATCH (p:Pending) WHERE p.work = $w RETURN p.item ORDER BY p.key"
        params: dict[str, object] = {"w": work}
        if limit is not None:
            query += " LIMIT $n"
            params["n"] = limit
        return [row[0] for row in self.conn.read_tuples(query, params)]

    def among(self, work: str, items: Sequence[str]) -> list[str]:
        """Those of the items still waiting for `work`, in their order."""
        keys = {pending_key(work, i): i for i in dict.fromkeys(items)}
        if len(keys) <= POINT_KEYS:
            found = {
                row[0]
                for key in keys
                for row in self.conn.read("MATCH (p:Pending {key: $k}) RETURN p.key", {"k": key})
            }
        else:
            found = {
                row[0]
                for row in self.conn.read_tuples(
                    "UNWIND $k AS k MATCH (p:Pending {key: k}) RETURN p.key", {"k": list(keys)}
                )
            }
        return [item for key, item in keys.items() if key in found]

    def counts(self) -> dict[str, int]:
        """How many items wait for each kind of work."""
        counts = dict.fromkeys(WORKS, 0)
        for work, count in self.conn.read("MATCH (p:Pending) RETURN p.work, count(*)"):
            counts[work] = int(count)
        return counts
