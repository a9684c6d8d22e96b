"""Writes of the entity graph shared by the repositories that make them: a memory's extraction
(entities), a chunk's mentions (documents) and a memory's deletion (memories). Every statement
says it writes the entity graph (`entity_graph=True`; tests/indexes/test_entity_log.py checks).

Entity and Fact tables carry no full-text index, so rows go in with one UNWIND per statement
(the multi-row insert bug only hits FTS-indexed tables).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict
from datetime import datetime

from graphmem.storage.kuzu.connection import KuzuConnection
from graphmem.storage.protocols.entities import EntityRow, FactRow


def put_facts(
    conn: KuzuConnection, facts: Sequence[FactRow], *, extractor: str, at: datetime
) -> list[FactRow]:
    """New facts with their subject and object, and a higher confidence for known ones
    (inside the caller's transaction); returns the new ones. A fact and its two edges are
    always written together, so a known fact has them."""
    if not facts:
        return []
    known = {
        r[0]
        for r in conn.execute(
            "UNWIND $ids AS i MATCH (f:Fact {id: i}) RETURN f.id",
            {"ids": [f.id for f in facts]},
        )
    }
    if known:
        conn.execute(
            "UNWIND $rows AS r MATCH (f:Fact {id: r.id}) "
            "SET f.confidence = CASE WHEN r.confidence > f.confidence "
            "THEN r.confidence ELSE f.confidence END",
            {"rows": [{"id": f.id, "confidence": f.confidence} for f in facts if f.id in known]},
            entity_graph=True,
        )
    created = [f for f in facts if f.id not in known]
    conn.execute_each(
        "MATCH (s:Entity {id: $subject_id}), (o:Entity {id: $object_id}) "
        "CREATE (f:Fact {id: $id, subject: $subject, predicate: $predicate, object: $object, "
        "text: $text, confidence: $confidence, extractor: $x, created_at: $at}), "
        "(f)-[:SUBJECT]->(s), (f)-[:OBJECT]->(o)",
        [asdict(f) for f in created],
        x=extractor,
        at=at,
        entity_graph=True,
    )
    return created


def put_entities(
    conn: KuzuConnection, entities: Sequence[EntityRow], aliases: dict[str, str], *, at: datetime
) -> None:
    """New entities and aliases of an extraction (inside the caller's transaction)."""
    if entities:
        conn.execute(
            "UNWIND $rows AS r MERGE (e:Entity {id: r.id}) "
            "ON CREATE SET e.name = r.name, e.norm = r.norm, e.key = r.key, "
            "e.label = r.label, e.created_at = $at",
            {"rows": [asdict(e) for e in entities], "at": at},
            entity_graph=True,
        )
    if aliases:
        conn.execute(
            "UNWIND $rows AS r MERGE (a:EntityAlias {norm: r.norm}) SET a.entity = r.entity",
            {"rows": [{"norm": n, "entity": e} for n, e in aliases.items()]},
            entity_graph=True,
        )


def forget_extraction(conn: KuzuConnection, memory_ids: list[str]) -> bool:
    """Drop the memories' mentions and provenance, then facts no memory supports any more;
    whether there was anything to drop."""
    mentions = conn.execute(
        "UNWIND $ids AS i MATCH (m:Memory {id: i})-[r:MENTIONS]->(:Entity) DELETE r "
        "RETURN count(*)",
        {"ids": memory_ids},
        entity_graph=True,
    )
    orphans = conn.execute(
        "UNWIND $ids AS i MATCH (f:Fact)-[r:EXTRACTED_FROM]->(m:Memory {id: i}) "
        "DELETE r RETURN DISTINCT f.id",
        {"ids": memory_ids},
        entity_graph=True,
    )
    if orphans:
        conn.execute(
            "UNWIND $f AS i MATCH (f:Fact {id: i}) "
            "WHERE NOT EXISTS { MATCH (f)-[:EXTRACTED_FROM]->() } DETACH DELETE f",
            {"f": [r[0] for r in orphans]},
            entity_graph=True,
        )
    return bool(mentions and mentions[0][0]) or bool(orphans)
