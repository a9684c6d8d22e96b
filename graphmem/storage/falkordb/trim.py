"""Trimming what the change stream keeps: entries older than the retention, and the commit
markers (`_Txn`) they name; the newest entry trimmed is recorded beside the stream. Run by the node holding the `trim` lease
(graphmem.storage.falkordb.lease); a node whose last applied entry was trimmed rebuilds its
search state from the scans (docs/adr/0011-falkordb-engine.md)."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from graphmem.models import utcnow
from graphmem.storage.falkordb.connection import FalkorConnection
from graphmem.storage.falkordb.values import micros

RETENTION = timedelta(hours=1)
# markers outlive their entries a while: a follower reading an entry just before it is trimmed
# still finds its marker
MARKER_MARGIN = timedelta(minutes=5)
# `{GRAPH}:trimmed`: the id of the newest entry trimmed, so a follower that had not read it
# knows it missed entries (graphmem.storage.falkordb.follower)
TRIMMED_SUFFIX = "trimmed"


def trim(
    conn: FalkorConnection, *, retention: timedelta = RETENTION, now: datetime | None = None
) -> int:
    """Drop stream entries older than `retention` and the markers older than it plus the
    margin; returns how many entries went."""
    now = now or utcnow()
    oldest_ms = int((now - retention).timestamp() * 1000)
    client: Any = conn.stream_client()  # entries hold raw bytes
    try:
        doomed = client.xrevrange(conn.stream_key, max=f"({oldest_ms}-0", min="-", count=1)
        dropped = int(client.xtrim(conn.stream_key, minid=f"{oldest_ms}-0", approximate=False))
        if doomed:
            client.set(conn.url.key(TRIMMED_SUFFIX), doomed[0][0])
    finally:
        client.close()
    conn.write(
        "MATCH (t:_Txn) WHERE t.at < $before DELETE t",
        {"before": micros(now - retention - MARKER_MARGIN)},
    )
    return dropped
