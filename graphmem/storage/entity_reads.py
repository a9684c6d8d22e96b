"""Reads of the entity graph that recall and the multi-hop walk make on every query: who
mentions what, facts, versions, and the answer hop's people, from the in-process entity index
(indexes/entity_index.py), or from the store by key when that index is out of date and reading
it again would cost more than the question.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, NamedTuple, TypeVar

from graphmem.heap import settled
from graphmem.indexes.entity_index import EntityIndex
from graphmem.storage.knowledge import KnowledgeRepository

_Row = TypeVar("_Row", bound=tuple[str, ...])
REUSE_SECONDS = 10.0  # how old an entity index a walk takes while extraction is behind


class _Held(NamedTuple):
    generation: int  # the entity graph's, when the index was read
    read_at: float  # time.monotonic()
    built: EntityIndex
    exact: bool  # no commit ran during the read: later changes can be taken in


class EntityReads(KnowledgeRepository):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._entity_index: _Held | None = None
        self._entity_index_lock = threading.Lock()

    def fresh_entity_index(self) -> EntityIndex | None:
        """The entity index if no commit changed the entity graph since it was read. Recall's
        answer hop reads it when it can, and the store (three lookups by key) when not: right
        after a write, reading the whole entity graph again would cost it a second at 100k."""
        with self._entity_index_lock:
            held = self._entity_index
            fresh = held is not None and held.generation == self.entity_log.generation
            return held.built if held is not None and fresh else None

    def entity_index(self, *, while_extracting: bool = False) -> EntityIndex:
        """The entity graph in process, kept up to date after a commit changed it: by taking
        in what the commits since said they changed (an extraction of memories extracted for
        the first time, new entities of document chunks), else by reading it again.

        `while_extracting`: a walk takes an index read up to REUSE_SECONDS ago while memories
        wait for extraction. Every batch changes the graph then (one a second or so), and what
        the last seconds extracted is no more missing from the walk than what the backlog still
        holds."""
        with self._entity_index_lock:
            held, log = self._entity_index, self.entity_log
            generation = log.generation
            if held is not None and (
                held.generation == generation
                or (
                    while_extracting
                    and time.monotonic() - held.read_at < REUSE_SECONDS
                    and self.backlog()["extraction"] > 0  # asked only of a stale index
                )
            ):
                return held.built
            changes = None
            if held is not None and held.exact:
                changes = log.between(held.generation, generation)
            if held is not None and changes is not None:
                index, exact = held.built.taking(changes), True
            else:
                begun = log.begun
                index = self._read_entity_index()
                exact = begun == generation == log.begun  # no commit ran meanwhile
            self._entity_index = _Held(generation, time.monotonic(), settled(index), exact)
            return index

    def _read_entity_index(self) -> EntityIndex:
        return EntityIndex(
            self.read_arrow("MATCH (m:Memory)-[:MENTIONS]->(e:Entity) RETURN m.id, e.id"),
            self.read_arrow("MATCH (e:Entity) RETURN e.id, e.name, e.label"),
            self.read_arrow(
                "MATCH (s:Entity)<-[:SUBJECT]-(f:Fact)-[:OBJECT]->(o:Entity) "
                "RETURN s.id, f.predicate, o.id, f.id"
            ),
            self.read_arrow("MATCH (n:Memory)-[:SUPERSEDES]->(o:Memory) RETURN n.id, o.id"),
            self.read_arrow("MATCH (f:Fact)-[:EXTRACTED_FROM]->(m:Memory) RETURN f.id, m.id"),
            self.read_arrow("MATCH (a:EntityAlias) RETURN a.norm, a.entity"),
        )

    def archived_among(self, memory_ids: Sequence[str]) -> set[str]:
        """Those of the memories that are archived, from the in-process columns."""
        with self._search_lock:
            rows = self._memory_columns().values(memory_ids, ("id", "lifecycle"))
        return {k for k, row in rows.items() if row["lifecycle"] == "archived"}

    def resolve_norms(self, norms: Sequence[str]) -> dict[str, str]:
        """norm -> entity id, through merged aliases first, then the entity's own id. Looked up
        by primary key, one UNWIND row a name: `WHERE id IN $list` compares every row of the
        table with every name (4.5 s for 40k names on 20k entities, against 0.1 s)."""
        wanted = list(dict.fromkeys(norms))
        if not wanted:
            return {}
        found = {
            norm: entity
            for norm, entity in self.read(
                "UNWIND $n AS x MATCH (a:EntityAlias {norm: x}) RETURN a.norm, a.entity",
                {"n": wanted},
            )
        }
        rest = [n for n in wanted if n not in found]
        if rest:
            rows = self.read("UNWIND $n AS x MATCH (e:Entity {id: x}) RETURN e.id", {"n": rest})
            found.update({r[0]: r[0] for r in rows})
        return found

    def mentions_of(self, memory_ids: Sequence[str]) -> list[tuple[str, str, str]]:
        """(memory id, entity id, entity name) for the memories."""
        return self.entity_index().mentions_of(memory_ids)

    def entity_degrees(self, entity_ids: Sequence[str]) -> dict[str, int]:
        """How many memories (archived ones too) name each entity."""
        return self.entity_index().degrees(entity_ids)

    def memories_mentioning(self, entity_ids: Sequence[str]) -> list[tuple[str, str]]:
        """(entity id, memory id) for live memories that mention the entities."""
        pairs = self.entity_index().memories_mentioning(entity_ids)
        archived = self.archived_among([m for _, m in pairs]) if self.has_archived() else set()
        return [(e, m) for e, m in pairs if m not in archived]

    def things_mentioned_with(
        self,
        people: Sequence[str],
        labels: Sequence[str],
        *,
        limit: int,
        besides: Sequence[str] = (),
    ) -> list[tuple[str, str, str, str]]:
        """(memory id, person id, entity id, entity name): live memories that name one of the
        people (entity ids; only person entities count) beside an entity with one of the
        labels, other than the people and the entities `besides`."""
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
        """(memory id, person id, predicate, object id, object name): facts whose subject is one
        of the people (entity ids; only person entities count) and whose predicate starts with
        one of the verbs ("visit", "go" of "go_to"), with the live memories they came from."""
        if not people or not verbs:
            return []
        wanted = set(verbs)
        return self._per_person(
            people,
            limit,
            lambda index, person: index.facts_by(person, wanted),
            "MATCH (p:Entity {id: $person})<-[:SUBJECT]-(f:Fact)-[:OBJECT]->(o:Entity), "
            "(f)-[:EXTRACTED_FROM]->(m:Memory) "
            "WHERE p.label = 'person' AND split_part(f.predicate, '_', 1) IN $verbs "
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
        date, else by a walk in the store from each person by primary key (Kùzu 0.11.3 starts
        `WHERE p.id IN $people` with a scan and a join, 0.46 s from a person named 945 times in
        a 10k store, where `{id: $person}` is an index lookup, 3 ms)."""
        index = self.fresh_entity_index()
        if index is not None:
            return self._live_first((from_index(index, p) for p in dict.fromkeys(people)), limit)
        rows: list[_Row] = []
        for person in dict.fromkeys(people):
            if len(rows) >= limit:
                break
            found: list[Any] = self.read_tuples(
                query, {**params, "person": person, "limit": limit - len(rows)}
            )
            rows += found
        return rows

    def _live_first(self, per_person: Iterable[Iterator[_Row]], limit: int) -> list[_Row]:
        """The first `limit` rows, person by person, of live (not archived) memories."""
        rows: list[_Row] = []
        archived = self.has_archived()
        for found in per_person:
            while len(rows) < limit and (chunk := list(itertools.islice(found, 256))):
                if archived:
                    gone = self.archived_among([row[0] for row in chunk])
                    chunk = [row for row in chunk if row[0] not in gone]
                rows += chunk[: limit - len(rows)]
            if len(rows) >= limit:
                break
        return rows

    def resolve_known(self, norms: Sequence[str]) -> dict[str, str]:
        """`resolve_norms`, from the entity index when it is up to date."""
        index = self.fresh_entity_index()
        return index.resolve(norms) if index is not None else self.resolve_norms(norms)

    def facts_between(self, entity_ids: Sequence[str]) -> list[tuple[str, str, str, str]]:
        """(subject id, predicate, object id, fact id) for facts touching the entities."""
        return self.entity_index().facts_between(entity_ids)

    def supersession_links(self, memory_ids: Sequence[str]) -> list[tuple[str, str]]:
        """(newer, older) SUPERSEDES pairs touching the memories."""
        return self.entity_index().supersession_links(memory_ids)
