"""The entity graph in FalkorDB: write an extraction, resolve names to entities, list them
(merges and other corrections are in entity_edits.py); and the reads recall and the multi-hop walk make on every query, from the search
state's entity index, or from the store by key when that index is out of date, as on the
embedded engines (graphmem/storage/kuzu/entities.py).

A transaction here is one query sent at its end (graphmem.storage.falkordb.connection): what a
write reports (whether an extraction replaced an earlier one, which facts it made, how many
edges a merge moved) is read before it buffers anything, and what must hold when it lands is
decided by the statement.

Another node's writes of the entity graph come in through the change stream: a commit that
changes it says so in its entry, with what it described, and the follower records that in
this node's entity log, so the index takes the change in, or reads the graph again when the
change was not described (graphmem.storage.falkordb.stream.entity_part).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import asdict
from datetime import datetime
from typing import Any, TypeVar

from graphmem.indexes.entity_index import EntityChange, EntityIndex
from graphmem.indexes.search_state import SearchState
from graphmem.storage.falkordb.connection import FalkorConnection
from graphmem.storage.falkordb.entity_edits import FalkorEntityEdits
from graphmem.storage.falkordb.graph_writes import (
    extracted_from,
    forget_extraction,
    known_facts,
    put_entities,
    put_facts,
)
from graphmem.storage.falkordb.memories import FalkorMemories
from graphmem.storage.falkordb.pending import FalkorPending
from graphmem.storage.falkordb.values import from_micros
from graphmem.storage.protocols.entities import (
    EntityRow,
    FactRow,
    Mention,
    Provenance,
)
from graphmem.storage.protocols.pending import EXTRACT

_Row = TypeVar("_Row", bound=tuple[str, ...])


def _text(title: str | None, content: str) -> str:
    return f"{title}. {content}" if title else content


class FalkorEntities(FalkorEntityEdits):
    """graphmem.storage.protocols.Entities over one connection and the search state."""

    def __init__(
        self,
        conn: FalkorConnection,
        state: SearchState,
        memories: FalkorMemories,
        pending: FalkorPending,
    ) -> None:
        self.conn = conn
        self.state = state
        self.memories = memories
        self.pending = pending

    # -- the entity index ---------------------------------------------------------------------

    def index(self, *, while_extracting: bool = False) -> EntityIndex:
        """From the search state: it takes in what this node's commits since it was read said
        they changed, else reads the graph again (FalkorScans.entity_graph)."""
        return self.state.entity_index(
            while_extracting=while_extracting,
            backlog=lambda: self.memories.backlog()["extraction"],
        )

    def fresh_index(self) -> EntityIndex | None:
        return self.state.fresh_entity_index()

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
        """Replace what was extracted from these memories, in one query, and mark them. Whether
        anything was there before and which facts are new are read first: the change event the
        entity index takes in says only what was added."""
        ids = list(memory_ids)
        conn = self.conn
        removed = extracted_from(conn, ids)
        known = known_facts(conn, facts) if not removed else set()
        with conn.described_entity_writes():
            forget_extraction(conn, ids)
            put_entities(conn, entities, aliases, at=at)
            if mentions:
                conn.write(
                    "UNWIND $rows AS r "
                    "MATCH (m:Memory {id: r.memory_id}), (e:Entity {id: r.entity_id}) "
                    "CREATE (m)-[:MENTIONS {name: r.name, extractor: $x}]->(e)",
                    {"rows": [asdict(m) for m in mentions], "x": extractor},
                    entity_graph=True,
                )
            put_facts(conn, facts, extractor=extractor, at=at)
            if provenance:
                conn.write(
                    "UNWIND $rows AS r MATCH (f:Fact {id: r.fact_id}), (m:Memory {id: r.memory_id}) "
                    "CREATE (f)-[:EXTRACTED_FROM {extractor: $x, confidence: r.confidence, "
                    "at: $at}]->(m)",
                    {
                        "rows": [
                            asdict(p) | {"confidence": float(p.confidence)} for p in provenance
                        ],
                        "x": extractor,
                        "at": at,
                    },
                    entity_graph=True,
                )
            if not removed:  # else the index reads the graph again
                created = [f for f in facts if f.id not in known]
                subjects = {f.id: f.subject_id for f in facts}
                conn.emit(
                    EntityChange(
                        [(e.id, e.name, e.label) for e in entities],
                        aliases,
                        [(m.memory_id, m.entity_id) for m in mentions],
                        [(f.subject_id, f.predicate, f.object_id, f.id) for f in created],
                        [(p.fact_id, p.memory_id, subjects.get(p.fact_id, "")) for p in provenance],
                    )
                )
            if ids:
                conn.write(
                    "UNWIND $ids AS i MATCH (m:Memory {id: i}) SET m.extracted_by = $x",
                    {"ids": ids, "x": extractor},
                )
            self.pending.finish(EXTRACT, ids)

    # -- reads from the store -----------------------------------------------------------------

    def by_key(self, keys: Sequence[str]) -> dict[str, list[tuple[str, str, str]]]:
        out: dict[str, list[tuple[str, str, str]]] = {}
        if not keys:
            return out
        for key, entity, name, label in self.conn.read(
            "UNWIND $k AS k MATCH (e:Entity {key: k}) RETURN e.key, e.id, e.name, e.label",
            {"k": list(dict.fromkeys(keys))},
        ):
            out.setdefault(key, []).append((entity, name, label))
        return out

    def names(self, entity_ids: Sequence[str]) -> dict[str, tuple[str, str]]:
        if not entity_ids:
            return {}
        return {
            r[0]: (r[1], r[2])
            for r in self.conn.read(
                "UNWIND $i AS x MATCH (e:Entity {id: x}) RETURN e.id, e.name, e.label",
                {"i": list(dict.fromkeys(entity_ids))},
            )
        }

    def people_by_prefix(self, prefixes: Sequence[str]) -> list[tuple[str, str, str]]:
        """(id, norm, name) of one-word person entities whose norm starts with one of the
        prefixes (all of one length): the candidates a short form of a first name may be."""
        if not prefixes:
            return []
        rows = self.conn.read(
            "MATCH (e:Entity {label: 'person'}) WHERE NOT e.norm CONTAINS ' ' "
            "AND substring(e.norm, 0, $size) IN $p RETURN e.id, e.norm, e.name",
            {"p": list(dict.fromkeys(prefixes)), "size": len(prefixes[0])},
        )
        return [(str(i), str(norm), str(name)) for i, norm, name in rows]

    def row(self, entity_id: str) -> dict[str, Any] | None:
        rows = self.conn.read(
            "MATCH (e:Entity {id: $id}) RETURN e.name, e.norm, e.key, e.label, e.created_at",
            {"id": entity_id},
        )
        if not rows:
            return None
        aliases = self.conn.read(
            "MATCH (a:EntityAlias) WHERE a.entity = $id RETURN a.norm", {"id": entity_id}
        )
        name, norm, key, label, created = rows[0]
        return {"id": entity_id, "name": name, "norm": norm, "key": key, "label": label,
                "created_at": from_micros(created), "aliases": [a for (a,) in aliases]}  # fmt: skip

    def resolve_norms(self, norms: Sequence[str]) -> dict[str, str]:
        """norm -> entity id, through merged aliases first, then the entity's own id."""
        wanted = list(dict.fromkeys(norms))
        if not wanted:
            return {}
        found = {
            norm: entity
            for norm, entity in self.conn.read(
                "UNWIND $n AS x MATCH (a:EntityAlias {norm: x}) RETURN a.norm, a.entity",
                {"n": wanted},
            )
        }
        rest = [n for n in wanted if n not in found]
        if rest:
            rows = self.conn.read(
                "UNWIND $n AS x MATCH (e:Entity {id: x}) RETURN e.id", {"n": rest}
            )
            found.update({r[0]: r[0] for r in rows})
        return found

    def of_memory(self, memory_id: str) -> list[tuple[str, str, str, str]]:
        rows = self.conn.read(
            "MATCH (m:Memory {id: $id})-[r:MENTIONS]->(e:Entity) "
            "RETURN e.id, e.name, e.label, r.name ORDER BY e.name",
            {"id": memory_id},
        )
        return [(r[0], r[1], r[2], r[3]) for r in rows]

    def facts_of_memory(self, memory_id: str) -> list[tuple[str, str, str, str, str, float]]:
        rows = self.conn.read(
            "MATCH (f:Fact)-[x:EXTRACTED_FROM]->(m:Memory {id: $id}) "
            "RETURN f.id, f.subject, f.predicate, f.object, f.text, x.confidence "
            "ORDER BY f.subject, f.predicate",
            {"id": memory_id},
        )
        return [(r[0], r[1], r[2], r[3], r[4], float(r[5])) for r in rows]

    def fact_sources(self, fact_ids: Sequence[str]) -> dict[str, list[str]]:
        if not fact_ids:
            return {}
        rows = self.conn.read(
            "UNWIND $ids AS i MATCH (f:Fact {id: i})-[:EXTRACTED_FROM]->(m:Memory) "
            "RETURN f.id, m.id ORDER BY m.created_at DESC, m.id DESC",
            {"ids": list(dict.fromkeys(fact_ids))},
        )
        found: dict[str, list[str]] = {}
        for fact, memory in rows:
            found.setdefault(fact, []).append(memory)
        return found

    def overview(
        self, *, query: str | None, label: str | None, limit: int
    ) -> list[tuple[str, str, str, int, int, list[str], int]]:
        """(id, name, label, mentions, facts, aliases, chunks mentioning it), most mentioned by
        memories and chunks first."""
        conditions: list[str] = []
        params: dict[str, Any] = {"limit": limit}
        if query:
            conditions.append("(e.norm CONTAINS $q OR toLower(e.name) CONTAINS $q)")
            params["q"] = query.lower()
        if label:
            conditions.append("e.label = $label")
            params["label"] = label
        where = f"WHERE {' AND '.join(conditions)} " if conditions else ""
        rows = self.conn.read(
            f"MATCH (e:Entity) {where}"
            "OPTIONAL MATCH (m:Memory)-[:MENTIONS]->(e) "
            "WITH e, count(m) AS mentions "
            "OPTIONAL MATCH (c:Chunk)-[:MENTIONS]->(e) "
            "WITH e, mentions, count(c) AS chunks "
            "OPTIONAL MATCH (f:Fact)-[:SUBJECT|OBJECT]->(e) "
            "WITH e, mentions, chunks, count(DISTINCT f) AS facts "
            "RETURN e.id, e.name, e.label, mentions, facts, chunks "
            "ORDER BY mentions + chunks DESC, e.id LIMIT $limit",
            params,
        )
        aliases: dict[str, list[str]] = {}
        for norm, entity in self.conn.read(
            "MATCH (a:EntityAlias) WHERE a.entity IN $ids RETURN a.norm, a.entity ORDER BY a.norm",
            {"ids": [r[0] for r in rows]},
        ):
            aliases.setdefault(entity, []).append(norm)
        return [
            (r[0], r[1], r[2], int(r[3]), int(r[4]), aliases.get(r[0], []), int(r[5])) for r in rows
        ]

    def counts(self) -> dict[str, int]:
        def count(query: str) -> int:
            rows = self.conn.read(query)
            return int(rows[0][0]) if rows else 0

        return {
            "Entity": count("MATCH (n:Entity) RETURN count(n)"),
            "Fact": count("MATCH (n:Fact) RETURN count(n)"),
            "mentions": count("MATCH ()-[r:MENTIONS]->() RETURN count(r)"),
            "extracted": count("MATCH (m:Memory) WHERE m.extracted_by IS NOT NULL RETURN count(m)"),
        }

    # -- reads of the walk ---------------------------------------------------------------------

    def resolve_known(self, norms: Sequence[str]) -> dict[str, str]:
        index = self.fresh_index()
        return index.resolve(norms) if index is not None else self.resolve_norms(norms)

    def mentions_of(self, memory_ids: Sequence[str]) -> list[tuple[str, str, str]]:
        return self.index().mentions_of(memory_ids)

    def degrees(self, entity_ids: Sequence[str]) -> dict[str, int]:
        return self.index().degrees(entity_ids)

    def memories_mentioning(self, entity_ids: Sequence[str]) -> list[tuple[str, str]]:
        pairs = self.index().memories_mentioning(entity_ids)
        memories = self.memories
        archived = (
            memories.archived_among([m for _, m in pairs]) if memories.has_archived() else set()
        )
        return [(e, m) for e, m in pairs if m not in archived]

    def things_mentioned_with(
        self,
        people: Sequence[str],
        labels: Sequence[str],
        *,
        limit: int,
        besides: Sequence[str] = (),
    ) -> list[tuple[str, str, str, str]]:
        if not people or not labels:
            return []
        skip, wanted = {*people, *besides}, set(labels)
        return self._per_person(
            people,
            limit,
            lambda index, person: index.things_with(person, wanted, skip),
            "MATCH (p:Entity {id: $person})<-[:MENTIONS]-(m:Memory)-[:MENTIONS]->(x:Entity) "
            "WHERE p.label = 'person' AND x.label IN $labels AND NOT x.id IN $skip "
            "AND m.lifecycle <> 'archived' RETURN m.id, p.id, x.id, x.name LIMIT $limit",
            {"labels": list(labels), "skip": list(skip)},
        )

    def facts_of_people(
        self, people: Sequence[str], verbs: Sequence[str], *, limit: int
    ) -> list[tuple[str, str, str, str, str]]:
        if not people or not verbs:
            return []
        wanted = set(verbs)
        return self._per_person(
            people,
            limit,
            lambda index, person: index.facts_by(person, wanted),
            "MATCH (p:Entity {id: $person})<-[:SUBJECT]-(f:Fact)-[:OBJECT]->(o:Entity), "
            "(f)-[:EXTRACTED_FROM]->(m:Memory) "
            "WHERE p.label = 'person' AND split(f.predicate, '_')[0] IN $verbs "
            "AND m.lifecycle <> 'archived' "
            "RETURN m.id, p.id, f.predicate, o.id, o.name LIMIT $limit",
            {"verbs": list(verbs)},
        )

    def _per_person(
        self,
        people: Sequence[str],
        limit: int,
        from_index: Callable[[EntityIndex, str], Iterator[_Row]],
        query: str,
        params: dict[str, Any],
    ) -> list[_Row]:
        """The first `limit` rows, person by person: from the entity index when it is up to
        date, else by a walk in the store from each person by key."""
        index = self.fresh_index()
        if index is not None:
            return self._live_first((from_index(index, p) for p in dict.fromkeys(people)), limit)
        rows: list[_Row] = []
        for person in dict.fromkeys(people):
            if len(rows) >= limit:
                break
            found: list[Any] = [
                tuple(r)
                for r in self.conn.read(
                    query, {**params, "person": person, "limit": limit - len(rows)}
                )
            ]
            rows += found
        return rows

    def _live_first(self, per_person: Iterable[Iterator[_Row]], limit: int) -> list[_Row]:
        """The first `limit` rows, person by person, of live (not archived) memories."""
        rows: list[_Row] = []
        archived = self.memories.has_archived()
        for found in per_person:
            while len(rows) < limit and (chunk := list(itertools.islice(found, 256))):
                if archived:
                    gone = self.memories.archived_among([row[0] for row in chunk])
                    chunk = [row for row in chunk if row[0] not in gone]
                rows += chunk[: limit - len(rows)]
            if len(rows) >= limit:
                break
        return rows

    def facts_between(self, entity_ids: Sequence[str]) -> list[tuple[str, str, str, str]]:
        return self.index().facts_between(entity_ids)

    def supersession_links(self, memory_ids: Sequence[str]) -> list[tuple[str, str]]:
        return self.index().supersession_links(memory_ids)

    # -- what is left to extract --------------------------------------------------------------

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
        params: dict[str, Any] = {"limit": limit}
        where = self._pending(context, include_done, params)
        if after is not None:
            # as a list: a string range on the indexed id matches every node (memories.page)
            where += " AND [m.id] > [$after]"
            params["after"] = after
        rows = self.conn.read(
            f"MATCH (m:Memory) WHERE {where} "
            "RETURN m.id, m.title, m.content ORDER BY m.id LIMIT $limit",
            params,
        )
        return [(r[0], _text(r[1], r[2])) for r in rows]

    def pending_extraction_ids(self) -> list[str]:
        return self.pending.items(EXTRACT)

    def texts_for_extraction(self, memory_ids: Sequence[str]) -> list[tuple[str, str]]:
        """(id, text) of those memories still waiting for extraction, by id. One that is not
        there has nothing left to extract (`finish_absent`)."""
        waiting = self.pending.among(EXTRACT, memory_ids)
        if not waiting:
            return []
        rows = sorted(
            (r[0], r[1], r[2])
            for r in self.conn.read(
                "UNWIND $ids AS i MATCH (m:Memory {id: i}) RETURN m.id, m.title, m.content",
                {"ids": waiting},
            )
        )
        missing = set(waiting).difference(r[0] for r in rows)
        if missing:
            self.memories.finish_absent(EXTRACT, sorted(missing))
        return [(r[0], _text(r[1], r[2])) for r in rows]

    def mark_pending_extraction(self, memory_ids: Sequence[str]) -> None:
        """Their text changed: what was extracted from the old text is stale."""
        with self.conn.transaction():
            self.conn.write(  # NULL removes the property: `extracted_by IS NULL` again
                "UNWIND $ids AS i MATCH (m:Memory {id: i}) SET m.extracted_by = NULL",
                {"ids": list(memory_ids)},
            )
            self.pending.put(EXTRACT, memory_ids)

    def count_before(self, memory_id: str, *, context: str | None) -> int:
        params: dict[str, Any] = {"after": memory_id}
        where = self._pending(context, True, params) + " AND [m.id] <= [$after]"
        rows = self.conn.read(f"MATCH (m:Memory) WHERE {where} RETURN count(m)", params)
        return int(rows[0][0]) if rows else 0

    def count_pending_extraction(self, *, context: str | None, include_done: bool) -> int:
        params: dict[str, Any] = {}
        where = self._pending(context, include_done, params)
        rows = self.conn.read(f"MATCH (m:Memory) WHERE {where} RETURN count(m)", params)
        return int(rows[0][0]) if rows else 0
