"""Writes of the entity graph shared by the repositories that make them: a memory's extraction
(entities), a chunk's mentions (documents) and a memory's deletion (memories), as on the
embedded engines (graphmem/storage/kuzu/graph_writes.py). Each is a buffered statement of the
caller's transaction and reads nothing (a read would not see the transaction's writes), and
each says it writes the entity graph (`entity_graph=True`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict
from datetime import datetime

from graphmem.storage.falkordb.connection import FalkorConnection
from graphmem.storage.protocols.entities import EntityRow


def put_entities(
    conn: FalkorConnection, entities: Sequence[EntityRow], aliases: dict[str, str], *, at: datetime
) -> None:
    """New entities and aliases of an extraction; an entity there already keeps its fields."""
    if entities:
        conn.write(
            "UNWIND $rows AS r MERGE (e:Entity {id: r.id}) "
            "ON CREATE SET e.name = r.name, e.norm = r.norm, e.key = r.key, "
            "e.label = r.label, e.created_at = $at",
            {"rows": [asdict(e) for e in entities], "at": at},
            entity_graph=True,
        )
    if aliases:
        conn.write(
            "UNWIND $rows AS r MERGE (a:EntityAlias {norm: r.norm}) SET a.entity = r.entity",
            {"rows": [{"norm": n, "entity": e} for n, e in aliases.items()]},
            entity_graph=True,
        )
