"""The work a write leaves for later, as `Pending` nodes (key `<work>:<item>`, unique), written
in the transaction that writes the item and deleted in the one that does the work."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime

from graphmem.models import utcnow
from graphmem.storage.falkordb.connection import FalkorConnection
from graphmem.storage.protocols.pending import WORKS


def pending_key(work: str, item: str) -> str:
    return f"{work}:{item}"


class FalkorPending:
    """graphmem.storage.protocols.Pending over one connection."""

    def __init__(self, conn: FalkorConnection) -> None:
        self.conn = conn

    def put(self, work: str, items: Sequence[str], *, at: datetime | None = None) -> None:
        """MERGE: an item already waiting keeps its row and its time, whichever node wrote it,
        checked by the server when the transaction lands."""
        if not items:
            return
        rows = [{"k": pending_key(work, i), "i": i} for i in dict.fromkeys(items)]
        self.conn.write(
            "UNWIND $rows AS r MERGE (p:Pending {key: r.k}) "
            "ON CREATE SET p.work = $w, p.item = r.i, p.at = $at",
            {"rows": rows, "w": work, "at": at or utcnow()},
        )

    def finish(self, work: str, items: Iterable[str]) -> None:
        keys = [pending_key(work, i) for i in dict.fromkeys(items)]
        if keys:
            self.conn.write("UNWIND $k AS k MATCH (p:Pending {key: k}) DELETE p", {"k": keys})

    def items(self, work: str, *, limit: int | None = None) -> list[str]:
        query = "MATCH (p:Pending) WHERE p.work = $w RETURN p.item ORDER BY p.key"
        params: dict[str, object] = {"w": work}
        if limit is not None:
            query += " LIMIT $n"
            params["n"] = limit
        return [row[0] for row in self.conn.read(query, params)]

    def among(self, work: str, items: Sequence[str]) -> list[str]:
        keys = {pending_key(work, i): i for i in dict.fromkeys(items)}
        if not keys:
            return []
        found = {
            row[0]
            for row in self.conn.read(
                "UNWIND $k AS k MATCH (p:Pending {key: k}) RETURN p.key", {"k": list(keys)}
            )
        }
        return [item for key, item in keys.items() if key in found]

    def counts(self) -> dict[str, int]:
        counts = dict.fromkeys(WORKS, 0)
        for work, count in self.conn.read("MATCH (p:Pending) RETURN p.work, count(p)"):
            counts[work] = int(count)
        return counts
