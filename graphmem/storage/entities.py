"""Entities, facts and their provenance in the graph: write an extraction, resolve names to
entities, merge duplicates, list them (the reads every query makes are in entity_reads.py).

Entity and Fact tables carry no full-text index, so rows go in with one UNWIND per statement
(the multi-row insert bug only hits FTS-indexed tables).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any

from graphmem.errors import InvalidInput, NotFound
from graphmem.indexes.entity_index import EntityChange
from graphmem.storage.entity_reads import EntityReads
from graphmem.storage.pending import EXTRACT


@dataclass(frozen=True)
class EntityRow:
    id: str
    name: str
    norm: str
    key: str  # letters and digits only: "billing-service" and "billing_service" share it
    label: str


@dataclass(frozen=True)
class FactRow:
    id: str
    subject_id: str
    predicate: str
    object_id: str
    subject: str
    object: str
    text: str
    confidence: float


@dataclass(frozen=True)
class Mention:
    memory_id: str
    entity_id: str
    name: str


@dataclass(frozen=True)
class Provenance:
    fact_id: str
    memory_id: str
    confidence: float


def fact_id(subject_id: str, predicate: str, object_id: str) -> str:
    """The same triple from two memories is one Fact with two EXTRACTED_FROM edges."""
    digest = hashlib.sha1(f"{subject_id}\x1f{predicate}\x1f{object_id}".encode()).hexdigest()
    return "f" + digest[:20]


def compact_key(norm: str) -> str:
    return "".join(ch for ch in norm if ch.isalnum())


# memory-to-memory relations, and how each reads from either end
_LINKS = (
    ("SUPERSEDES", "supersedes", "superseded_by"),
    ("MERGED_INTO", "merged_into", "merged_from"),
    ("AVOIDS", "avoids", "avoided_by"),
)


class EntityRepository(EntityReads):
    def entities_by_key(self, keys: Sequence[str]) -> dict[str, list[tuple[str, str, str]]]:
        """key -> [(entity id, name, label)]: candidates for a new name that differs only in
        spelling."""
        out: dict[str, list[tuple[str, str, str]]] = {}
        if not keys:
            return out
        for key, entity, name, label in self.read(
            "MATCH (e:Entity) WHERE e.key IN $k RETURN e.key, e.id, e.name, e.label",
            {"k": list(dict.fromkeys(keys))},
        ):
            out.setdefault(key, []).append((entity, name, label))
        return out

    def entity_names(self, entity_ids: Sequence[str]) -> dict[str, tuple[str, str]]:
        """entity id -> (name, label)."""
        if not entity_ids:
            return {}
        return {
            r[0]: (r[1], r[2])
            for r in self.read(
                "UNWIND $i AS x MATCH (e:Entity {id: x}) RETURN e.id, e.name, e.label",
                {"i": list(dict.fromkeys(entity_ids))},
            )
        }

    def people_by_prefix(self, prefixes: Sequence[str]) -> list[tuple[str, str, str]]:
        """(id, norm, name) of one-word person entities whose norm starts with one of the
        prefixes (all of one length): the candidates a short form of a first name may be."""
        if not prefixes:
            return []
        rows = self.read_tuples(
            "MATCH (e:Entity) WHERE e.label = 'person' AND NOT e.norm CONTAINS ' ' "
            "AND substring(e.norm, 1, $size) IN $p RETURN e.id, e.norm, e.name",
            {"p": list(dict.fromkeys(prefixes)), "size": len(prefixes[0])},
        )
        return [(str(i), str(norm), str(name)) for i, norm, name in rows]

    # -- writes -------------------------------------------------------------------------------

    def write_extraction(
        self,
        memory_ids: Sequence[str],
        *,
        extractor: str,
        entities: Sequence[EntityRow],
        aliases: dict[str, str],
        mentions: Sequence[Mention],
        facts: Sequence[FactRow],
        provenance: Sequence[Provenance],
        at: datetime,
    ) -> None:
        """Replace what was extracted from these memories, in one transaction, and mark them."""
        ids = list(memory_ids)
        with self.described_entity_writes() as said:
            removed = self._forget_extraction(ids)
            self._put_entities(entities, aliases, at=at)
            # one row at a time, each node by key: Kùzu runs an UNWIND that matches two tables
            # as joins that read both (2 s for 200 mentions at 100k memories, 0.15 s this way)
            self.execute_each(
                "MATCH (m:Memory {id: $memory_id}), (e:Entity {id: $entity_id}) "
                "CREATE (m)-[:MENTIONS {name: $name, extractor: $x}]->(e)",
                [asdict(m) for m in mentions],
                x=extractor,
                entity_graph=True,
            )
            created = self._put_facts(facts, extractor=extractor, at=at)
            self.execute_each(
                "MATCH (f:Fact {id: $fact_id}), (m:Memory {id: $memory_id}) "
                "CREATE (f)-[:EXTRACTED_FROM {extractor: $x, confidence: $confidence, at: $at}]->(m)",
                [asdict(p) for p in provenance],
                x=extractor,
                at=at,
                entity_graph=True,
            )
            if not removed:  # else the index reads the graph again
                subjects = {f.id: f.subject_id for f in facts}
                said.append(
                    EntityChange(
                        [(e.id, e.name, e.label) for e in entities],
                        aliases,
                        [(m.memory_id, m.entity_id) for m in mentions],
                        [(f.subject_id, f.predicate, f.object_id, f.id) for f in created],
                        [(p.fact_id, p.memory_id, subjects.get(p.fact_id, "")) for p in provenance],
                    )
                )
            self.execute(
                "UNWIND $ids AS i MATCH (m:Memory {id: i}) SET m.extracted_by = $x",
                {"ids": ids, "x": extractor},
            )
            self.finish_pending(EXTRACT, ids)

    def _put_facts(
        self, facts: Sequence[FactRow], *, extractor: str, at: datetime
    ) -> list[FactRow]:
        """New facts with their subject and object, and a higher confidence for known ones
        (inside the caller's transaction); returns the new ones. A fact and its two edges are
        always written together, so a known fact has them."""
        if not facts:
            return []
        known = {
            r[0]
            for r in self.execute(
                "UNWIND $ids AS i MATCH (f:Fact {id: i}) RETURN f.id",
                {"ids": [f.id for f in facts]},
            )
        }
        if known:
            self.execute(
                "UNWIND $rows AS r MATCH (f:Fact {id: r.id}) "
                "SET f.confidence = CASE WHEN r.confidence > f.confidence "
                "THEN r.confidence ELSE f.confidence END",
                {
                    "rows": [
                        {"id": f.id, "confidence": f.confidence} for f in facts if f.id in known
                    ]
                },
                entity_graph=True,
            )
        created = [f for f in facts if f.id not in known]
        self.execute_each(
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

    def _put_entities(
        self, entities: Sequence[EntityRow], aliases: dict[str, str], *, at: datetime
    ) -> None:
        """New entities and aliases of an extraction (inside the caller's transaction)."""
        if entities:
            self.execute(
                "UNWIND $rows AS r MERGE (e:Entity {id: r.id}) "
                "ON CREATE SET e.name = r.name, e.norm = r.norm, e.key = r.key, "
                "e.label = r.label, e.created_at = $at",
                {"rows": [asdict(e) for e in entities], "at": at},
                entity_graph=True,
            )
        if aliases:
            self.execute(
                "UNWIND $rows AS r MERGE (a:EntityAlias {norm: r.norm}) SET a.entity = r.entity",
                {"rows": [{"norm": n, "entity": e} for n, e in aliases.items()]},
                entity_graph=True,
            )

    def delete_memory(self, memory_id: str) -> None:
        """The memory, and with it the facts only it stated (its mentions go with the node)."""
        with self.transaction():
            self._forget_extraction([memory_id])
            super().delete_memory(memory_id)

    def _forget_extraction(self, memory_ids: list[str]) -> bool:
        """Drop the memories' mentions and provenance, then facts no memory supports any more;
        whether there was anything to drop."""
        mentions = self.execute(
            "UNWIND $ids AS i MATCH (m:Memory {id: i})-[r:MENTIONS]->(:Entity) DELETE r "
            "RETURN count(*)",
            {"ids": memory_ids},
            entity_graph=True,
        )
        orphans = self.execute(
            "UNWIND $ids AS i MATCH (f:Fact)-[r:EXTRACTED_FROM]->(m:Memory {id: i}) "
            "DELETE r RETURN DISTINCT f.id",
            {"ids": memory_ids},
            entity_graph=True,
        )
        if orphans:
            self.execute(
                "UNWIND $f AS i MATCH (f:Fact {id: i}) "
                "WHERE NOT EXISTS { MATCH (f)-[:EXTRACTED_FROM]->() } DETACH DELETE f",
                {"f": [r[0] for r in orphans]},
                entity_graph=True,
            )
        return bool(mentions and mentions[0][0]) or bool(orphans)

    @staticmethod
    def _pending(context: str | None, include_done: bool, params: dict[str, Any]) -> str:
        """Live memories still waiting for extraction (or all live ones), of one context."""
        conditions = ["m.lifecycle <> 'archived'"]
        if not include_done:
            conditions.append("m.extracted_by IS NULL")
        if context is not None:
            conditions.append("m.context = $context")
            params["context"] = context
        return " AND ".join(conditions)

    def pending_extraction(
        self, *, limit: int, context: str | None, include_done: bool, after: str | None = None
    ) -> list[tuple[str, str]]:
        """(id, text) of memories not yet extracted (or all, with include_done), oldest id first."""
        params: dict[str, Any] = {"limit": limit}
        where = self._pending(context, include_done, params)
        if after is not None:
            where += " AND m.id > $after"
            params["after"] = after
        rows = self.read(
            f"MATCH (m:Memory) WHERE {where} "
            "RETURN m.id, m.title, m.content ORDER BY m.id LIMIT $limit",
            params,
        )
        return [(r[0], f"{r[1]}. {r[2]}" if r[1] else r[2]) for r in rows]

    def pending_extraction_ids(self) -> list[str]:
        """Memories waiting for extraction, oldest id first (a read of the Pending table)."""
        return self.pending_items(EXTRACT)

    def texts_for_extraction(self, memory_ids: Sequence[str]) -> list[tuple[str, str]]:
        """(id, text) of those memories still waiting for extraction, by id. One that is not
        there has nothing left to extract (`finish_absent`)."""
        waiting = self.pending_among(EXTRACT, memory_ids)
        rows = sorted(self._by_id(waiting, "m.id, m.title, m.content"))
        missing = set(waiting).difference(r[0] for r in rows)
        if missing:
            self.finish_absent(EXTRACT, sorted(missing))
        return [(r[0], f"{r[1]}. {r[2]}" if r[1] else r[2]) for r in rows]

    def mark_pending_extraction(self, memory_ids: Sequence[str]) -> None:
        """Their text changed: what was extracted from the old text is stale."""
        with self.transaction():
            self.execute(  # by key: an update marks one memory, `IN` scanned them all
                "UNWIND $ids AS i MATCH (m:Memory {id: i}) SET m.extracted_by = NULL",
                {"ids": list(memory_ids)},
            )
            self.put_pending(EXTRACT, memory_ids)

    def count_before(self, memory_id: str, *, context: str | None) -> int:
        """Live memories with an id up to `memory_id`: where a resumed backfill starts."""
        params: dict[str, Any] = {"after": memory_id}
        where = self._pending(context, True, params) + " AND m.id <= $after"
        return int(self.read(f"MATCH (m:Memory) WHERE {where} RETURN count(*)", params)[0][0])

    def count_pending_extraction(self, *, context: str | None, include_done: bool) -> int:
        params: dict[str, Any] = {}
        where = self._pending(context, include_done, params)
        return int(self.read(f"MATCH (m:Memory) WHERE {where} RETURN count(*)", params)[0][0])

    def merge_entities(self, primary: str, duplicates: Sequence[str]) -> int:
        """Move every mention and fact end of the duplicates onto the primary, record their
        names as aliases of it, delete them. Returns the number of edges moved."""
        dupes = [d for d in dict.fromkeys(duplicates) if d != primary]
        if not dupes:
            raise InvalidInput("give at least one duplicate that is not the primary")
        known = {
            r[0]
            for r in self.read(
                "MATCH (e:Entity) WHERE e.id IN $i RETURN e.id", {"i": [primary, *dupes]}
            )
        }
        for entity in [primary, *dupes]:
            if entity not in known:
                raise NotFound(f"no entity with id {entity!r}", id=entity)
        moved = 0
        with self.transaction():
            for rel, pattern in (
                ("MENTIONS", "(m:Memory)-[r:MENTIONS]->(d:Entity)"),
                ("MENTIONS", "(m:Chunk)-[r:MENTIONS]->(d:Entity)"),
                ("SUBJECT", "(m:Fact)-[r:SUBJECT]->(d:Entity)"),
                ("OBJECT", "(m:Fact)-[r:OBJECT]->(d:Entity)"),
            ):
                keep = (
                    " ON CREATE SET x.name = r.name, x.extractor = r.extractor"
                    if rel == "MENTIONS"
                    else ""
                )  # a memory that named both keeps one mention
                rows = self.execute(
                    f"MATCH {pattern}, (p:Entity {{id: $p}}) WHERE d.id IN $d "
                    f"MERGE (m)-[x:{rel}]->(p){keep} RETURN count(*)",
                    {"p": primary, "d": dupes},
                    entity_graph=True,
                )
                moved += int(rows[0][0]) if rows else 0
            self.execute(
                "MATCH (a:EntityAlias) WHERE a.entity IN $d SET a.entity = $p",
                {"p": primary, "d": dupes},
                entity_graph=True,
            )
            self.execute(
                "UNWIND $d AS dup MERGE (a:EntityAlias {norm: dup}) SET a.entity = $p",
                {"p": primary, "d": dupes},
                entity_graph=True,
            )
            self.execute(
                "MATCH (e:Entity) WHERE e.id IN $d DETACH DELETE e", {"d": dupes}, entity_graph=True
            )
        return moved

    # -- reads --------------------------------------------------------------------------------

    def memory_entities(self, memory_id: str) -> list[tuple[str, str, str, str]]:
        """(entity id, name, label, the words the memory used) of what a memory names."""
        rows = self.read(
            "MATCH (m:Memory {id: $id})-[r:MENTIONS]->(e:Entity) "
            "RETURN e.id, e.name, e.label, r.name ORDER BY e.name",
            {"id": memory_id},
        )
        return [tuple(r) for r in rows]

    def memory_facts(self, memory_id: str) -> list[tuple[str, str, str, str, str, float]]:
        """(id, subject, predicate, object, text, confidence) of the facts a memory states."""
        rows = self.read(
            "MATCH (f:Fact)-[x:EXTRACTED_FROM]->(m:Memory {id: $id}) "
            "RETURN f.id, f.subject, f.predicate, f.object, f.text, x.confidence "
            "ORDER BY f.subject, f.predicate",
            {"id": memory_id},
        )
        return [tuple(r) for r in rows]

    def linked_memories(self, memory_id: str) -> list[tuple[str, str, Any, str, str, str]]:
        """(relation, id, title, content, kind, lifecycle) of the memories one edge away:
        versions, merges and dead ends, each read from this memory's side."""
        out: list[tuple[str, str, Any, str, str, str]] = []
        for rel, forward, backward in _LINKS:
            for pattern, relation in (
                (f"(m:Memory {{id: $id}})-[:{rel}]->(o:Memory)", forward),
                (f"(o:Memory)-[:{rel}]->(m:Memory {{id: $id}})", backward),
            ):
                rows = self.read(
                    f"MATCH {pattern} RETURN o.id, o.title, o.content, o.kind, o.lifecycle "
                    "ORDER BY o.created_at LIMIT 20",
                    {"id": memory_id},
                )
                out.extend((relation, *row) for row in rows)
        return out

    def list_entities(
        self, *, query: str | None, label: str | None, limit: int
    ) -> list[tuple[str, str, str, int, int, list[str], int]]:
        """(id, name, label, mentions, facts, aliases, chunks mentioning it), most mentioned by
        memories first."""
        conditions: list[str] = []
        params: dict[str, Any] = {"limit": limit}
        if query:
            conditions.append("(e.norm CONTAINS $q OR lower(e.name) CONTAINS $q)")
            params["q"] = query.lower()
        if label:
            conditions.append("e.label = $label")
            params["label"] = label
        where = f"WHERE {' AND '.join(conditions)} " if conditions else ""
        rows = self.read(
            f"MATCH (e:Entity) {where}"
            "OPTIONAL MATCH (m:Memory)-[:MENTIONS]->(e) "
            "WITH e, count(m) AS mentions "
            "OPTIONAL MATCH (c:Chunk)-[:MENTIONS]->(e) "
            "WITH e, mentions, count(c) AS chunks "
            "OPTIONAL MATCH (f:Fact)-[:SUBJECT|OBJECT]->(e) "
            "RETURN e.id, e.name, e.label, mentions, count(DISTINCT f) AS facts, chunks "
            "ORDER BY mentions + chunks DESC, e.id LIMIT $limit",
            params,
        )
        aliases: dict[str, list[str]] = {}
        for norm, entity in self.read(
            "MATCH (a:EntityAlias) WHERE a.entity IN $ids RETURN a.norm, a.entity ORDER BY a.norm",
            {"ids": [r[0] for r in rows]},
        ):
            aliases.setdefault(entity, []).append(norm)
        return [
            (r[0], r[1], r[2], int(r[3]), int(r[4]), aliases.get(r[0], []), int(r[5])) for r in rows
        ]

    def graph_counts(self) -> dict[str, int]:
        return {
            name: int(self.read(f"MATCH (n:{name}) RETURN count(*)")[0][0])
            for name in ("Entity", "Fact")
        } | {
            "mentions": int(self.read("MATCH ()-[r:MENTIONS]->() RETURN count(*)")[0][0]),
            "extracted": int(
                self.read("MATCH (m:Memory) WHERE m.extracted_by IS NOT NULL RETURN count(*)")[0][0]
            ),
        }
