"""Writes of the entity graph shared by the repositories that make them: a memory's extraction
(entities), a chunk's mentions (documents) and a memory's deletion (memories), as on the
embedded engines (graphmem/storage/kuzu/graph_writes.py). Each is a buffered statement of the
caller's transaction and reads nothing (a read would not see the transaction's writes), and
each says it writes the entity graph (`entity_graph=True`). What the embedded engine's writes
learn by reading inside their transaction is either decided by the statement when it lands or
read by the caller before it buffers anything (`known_facts`, `extracted_from`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict
from datetime import datetime

from graphmem.storage.falkordb.connection import FalkorConnection
from graphmem.storage.protocols.entities import EntityRow, FactRow


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


def put_facts(
    conn: FalkorConnection, facts: Sequence[FactRow], *, extractor: str, at: datetime
) -> None:
    """New facts with their subject and object, and a higher confidence for known ones. Which
    are known is decided when the query lands (a fact this transaction forgot is new again, one
    another node made meanwhile is known); a caller that must say which it made reads
    `known_facts` before it buffers anything. A fact and its two edges are always written
    together, so a known fact has them."""
    if not facts:
        return
    rows = [asdict(f) | {"confidence": float(f.confidence)} for f in facts]
    conn.write(
        "UNWIND $rows AS r MATCH (f:Fact {id: r.id}) "
        "SET f.confidence = CASE WHEN r.confidence > f.confidence "
        "THEN r.confidence ELSE f.confidence END",
        {"rows": rows},
        entity_graph=True,
    )
    conn.write(
        "UNWIND $rows AS r MATCH (s:Entity {id: r.subject_id}), (o:Entity {id: r.object_id}) "
        "OPTIONAL MATCH (known:Fact {id: r.id}) WITH r, s, o, known WHERE known IS NULL "
        "CREATE (f:Fact {id: r.id, subject: r.subject, predicate: r.predicate, "
        "object: r.object, text: r.text, confidence: r.confidence, extractor: $x, "
        "created_at: $at}), (f)-[:SUBJECT]->(s), (f)-[:OBJECT]->(o)",
        {"rows": rows, "x": extractor, "at": at},
        entity_graph=True,
    )


def known_facts(conn: FalkorConnection, facts: Sequence[FactRow]) -> set[str]:
    """Which of the facts the store holds now: a read, for before the transaction."""
    if not facts:
        return set()
    rows = conn.read(
        "UNWIND $ids AS i MATCH (f:Fact {id: i}) RETURN f.id", {"ids": [f.id for f in facts]}
    )
    return {row[0] for row in rows}


def forget_extraction(conn: FalkorConnection, memory_ids: Sequence[str]) -> None:
    """Drop the memories' mentions and provenance, and the facts no other memory supports. The
    facts to drop are found before their edges go: FalkorDB evaluates a pattern predicate
    written after a DELETE before it (`NOT (f)-[:EXTRACTED_FROM]->()` there kept every fact and
    lost the DELETE too: probed). Whether there was anything to drop is `extracted_from`'s to
    read, before the transaction."""
    if not memory_ids:
        return
    ids = list(memory_ids)
    conn.write(
        "UNWIND $ids AS i MATCH (:Memory {id: i})-[r:MENTIONS]->(:Entity) DELETE r",
        {"ids": ids},
        entity_graph=True,
    )
    conn.write(
        "UNWIND $ids AS i MATCH (f:Fact)-[:EXTRACTED_FROM]->(:Memory {id: i}) WITH DISTINCT f "
        "OPTIONAL MATCH (f)-[:EXTRACTED_FROM]->(o:Memory) WHERE NOT o.id IN $ids "
        "WITH f, count(o) AS others WHERE others = 0 DELETE f",
        {"ids": ids},
        entity_graph=True,
    )
    conn.write(
        "UNWIND $ids AS i MATCH (:Fact)-[r:EXTRACTED_FROM]->(:Memory {id: i}) DELETE r",
        {"ids": ids},
        entity_graph=True,
    )


def extracted_from(conn: FalkorConnection, memory_ids: Sequence[str]) -> bool:
    """Whether the memories have mentions or provenance that `forget_extraction` would drop:
    a read, for before the transaction."""
    if not memory_ids:
        return False
    rows = conn.read(
        "UNWIND $ids AS i MATCH (m:Memory {id: i}) "
        "WHERE (m)-[:MENTIONS]->(:Entity) OR (:Fact)-[:EXTRACTED_FROM]->(m) RETURN m.id LIMIT 1",
        {"ids": list(memory_ids)},
    )
    return bool(rows)
