"""Who mentions what, which facts join which entities, and which memory supersedes which, held
in process for the multi-hop walk; with the entities' labels, where each fact about a person
came from and the merged aliases, for the answer hop.

Kùzu answers a filter on a list of ids with a scan of the whole table, so each round of the walk
cost as much at 100k memories as the store is big, whatever the few memories it started from.
These lists are read once (six arrow scans) and kept up to date after a commit changed the
entity graph (indexes/entity_log.py): an extraction of new memories says what it
added (`EntityChange`) and the index takes that in, anything else reads it again. A walk then
costs what it touches. The mentions and facts are kept only numbered, as arrays (`Numbered`):
a round of the walk takes thousands of them at once, and reading the index again costs what
the scans do, not a Python object per mention (50 ms against 300 ms for 75k mentions).
"""

from __future__ import annotations

import copy
from collections import defaultdict
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc


@dataclass(frozen=True)
class EntityChange:
    """What one write added to the entity graph, with nothing removed: new entities (id, name,
    label), aliases (norm -> entity), mentions (memory, entity), new facts (subject, predicate,
    object, fact), and where facts came from (fact, memory, the fact's subject)."""

    entities: Sequence[tuple[str, str, str]] = ()
    aliases: Mapping[str, str] = field(default_factory=dict)
    mentions: Sequence[tuple[str, str]] = ()
    facts: Sequence[tuple[str, str, str, str]] = ()
    sources: Sequence[tuple[str, str, str]] = ()
    stamps: ClassVar[bool] = False  # not a change of the content stamp (indexes/changes.py)


class EntityIndex:
    def __init__(
        self,
        mentions: pa.Table,
        names: pa.Table,
        facts: pa.Table,
        versions: pa.Table,
        sources: pa.Table,
        aliases: pa.Table,
    ):
        """`mentions`: (memory, entity); `names`: (entity, name, label); `facts`: (subject,
        predicate, object, fact); `versions`: (newer, older) memory ids; `sources`: (fact,
        memory) it was extracted from; `aliases`: (norm, entity) merged into it."""
        entities, entity_names, labels = _columns(names, 3)
        self.names: dict[str, str] = dict(zip(entities, entity_names, strict=True))
        self.labels: dict[str, str] = dict(zip(entities, labels, strict=True))
        # memories that name something and entities, each counted from 0
        self.entity_ids: list[str] = list(self.names)
        memory_column = _codes(mentions.column(0))
        self.memory_ids: list[str] = memory_column.dictionary.to_pylist()
        self.memory_at: dict[str, int] = {m: i for i, m in enumerate(self.memory_ids)}
        ends = self._entity_numbers(
            [*mentions.column(1).chunks, *facts.column(0).chunks, *facts.column(2).chunks]
        )
        mentioned, subjects, objects = np.split(
            ends, [mentions.num_rows, mentions.num_rows + facts.num_rows]
        )
        self.entity_at: dict[str, int] = {e: i for i, e in enumerate(self.entity_ids)}
        predicates = _codes(facts.column(1))
        self.fact_ids: list[str] = facts.column(3).to_pylist()
        self.walk = Numbered(
            np.column_stack([_numpy(memory_column.indices), mentioned]),
            np.column_stack([subjects, objects, _numpy(predicates.indices)]),
            len(self.memory_ids),
            self.entity_ids,
            predicates.dictionary.to_pylist(),
        )
        self.versions_of: dict[str, list[tuple[str, str]]] = defaultdict(list)
        for newer, older in zip(*_columns(versions, 2), strict=True):
            self.versions_of[newer].append((newer, older))
            self.versions_of[older].append((newer, older))
        # where the facts about people came from, for the answer hop (graph/answer_hop.py)
        person = np.zeros(len(self.entity_ids), dtype=bool)
        person[: len(labels)] = [label == "person" for label in labels]
        about_people = pa.array(
            [self.fact_ids[row] for row in np.flatnonzero(person[subjects]).tolist()], pa.string()
        )
        wanted = sources.filter(pc.is_in(sources.column(0), value_set=about_people))
        self.sources_of: dict[str, list[str]] = defaultdict(list)
        for fact, memory in zip(*_columns(wanted, 2), strict=True):
            self.sources_of[fact].append(memory)
        self.aliases: dict[str, str] = dict(zip(*_columns(aliases, 2), strict=True))

    def taking(self, changes: Iterable[EntityChange]) -> EntityIndex:
        """This index with the changes of later commits taken in, as a new index: walks in
        flight go on reading this one. It costs what numbering the new rows and regrouping the
        arrays do, not the six scans of a read."""
        changes = [
            c for c in changes if c.entities or c.aliases or c.mentions or c.facts or c.sources
        ]
        if not changes:
            return self  # an extraction that found nothing
        new = copy.copy(self)
        new.names, new.labels, new.aliases = dict(self.names), dict(self.labels), dict(self.aliases)
        new.entity_ids, new.entity_at = list(self.entity_ids), dict(self.entity_at)
        new.memory_ids, new.memory_at = list(self.memory_ids), dict(self.memory_at)
        new.fact_ids = list(self.fact_ids)
        new.sources_of = defaultdict(list, self.sources_of)
        predicates = list(self.walk.predicates)
        predicate_at = {p: i for i, p in enumerate(predicates)}
        mentions: list[tuple[int, int]] = []
        facts: list[tuple[int, int, int]] = []
        for change in changes:
            for entity, name, label in change.entities:
                if entity not in new.names:
                    new.names[entity], new.labels[entity] = name, label
                    _number(new.entity_at, new.entity_ids, entity)
            new.aliases.update(change.aliases)
            for memory, entity in change.mentions:
                mentions.append(
                    (
                        _number(new.memory_at, new.memory_ids, memory),
                        _number(new.entity_at, new.entity_ids, entity),
                    )
                )
            for subject, predicate, obj, fact in change.facts:
                facts.append(
                    (
                        _number(new.entity_at, new.entity_ids, subject),
                        _number(new.entity_at, new.entity_ids, obj),
                        _number(predicate_at, predicates, predicate),
                    )
                )
                new.fact_ids.append(fact)
            for fact, memory, subject in change.sources:
                if new.labels.get(subject) == "person":
                    new.sources_of[fact] = [*new.sources_of.get(fact, ()), memory]
        walk = self.walk
        new.walk = Numbered(
            np.concatenate([walk.mentions, np.array(mentions, np.int64).reshape(-1, 2)]),
            np.concatenate([walk.facts, np.array(facts, np.int64).reshape(-1, 3)]),
            len(new.memory_ids),
            new.entity_ids,
            predicates,
        )
        return new

    def _entity_numbers(self, chunks: list[pa.Array]) -> npt.NDArray[np.int64]:
        """Each id's place in `entity_ids`; an id the names did not have (an entity made
        between the reads) is added at the end."""
        column = pa.chunked_array(chunks, pa.string())
        found = pc.index_in(column, value_set=pa.array(self.entity_ids, pa.string()))
        if found.null_count:
            missing = pc.filter(column, pc.is_null(found))
            self.entity_ids += [e for e in pc.unique(missing).to_pylist() if e not in self.names]
            found = pc.index_in(column, value_set=pa.array(self.entity_ids, pa.string()))
        return _numpy(found)

    def entities_named_by(self, memory: str) -> list[str]:
        """The entities a memory names, in the order the store returned its mentions."""
        at = self.memory_at.get(memory)
        if at is None:
            return []
        walk = self.walk
        numbers = walk.entities_of[walk.memory_ptr[at] : walk.memory_ptr[at + 1]].tolist()
        return [self.entity_ids[k] for k in numbers]

    def memories_naming(self, entity: str) -> list[str]:
        """The memories that name an entity, in the order the store returned its mentions."""
        at = self.entity_at.get(entity)
        if at is None:
            return []
        walk = self.walk
        numbers = walk.memories_of[walk.entity_ptr[at] : walk.entity_ptr[at + 1]].tolist()
        return [self.memory_ids[k] for k in numbers]

    def facts_of(self, entity: str) -> list[tuple[str, str, str, str]]:
        """(subject id, predicate, object id, fact id) of the facts the entity is in, in the
        order the store returned them."""
        at = self.entity_at.get(entity)
        if at is None:
            return []
        walk, ids = self.walk, self.entity_ids
        rows = walk.facts_of[walk.fact_ptr[at] : walk.fact_ptr[at + 1]].tolist()
        return [
            (
                ids[walk.fact_subject[row]],
                walk.predicates[walk.fact_predicate[row]],
                ids[walk.fact_object[row]],
                self.fact_ids[row],
            )
            for row in rows
        ]

    def resolve(self, norms: Iterable[str]) -> dict[str, str]:
        """norm -> entity id, through merged aliases first, then the entity's own id (as
        `EntityRepository.resolve_norms` reads the store)."""
        found = {}
        for norm in norms:
            entity = self.aliases.get(norm) or (norm if norm in self.names else None)
            if entity is not None:
                found[norm] = entity
        return found

    def things_with(
        self, person: str, labels: Collection[str], skip: Collection[str]
    ) -> Iterator[tuple[str, str, str, str]]:
        """(memory, person, entity, name): each entity with one of the labels, other than
        `skip`, that a memory naming the person names too; nothing unless it is a person."""
        if self.labels.get(person) != "person":
            return
        for memory in self.memories_naming(person):
            for entity in self.entities_named_by(memory):
                if entity not in skip and self.labels.get(entity) in labels:
                    yield memory, person, entity, self.names.get(entity, entity)

    def facts_by(
        self, person: str, verbs: Collection[str]
    ) -> Iterator[tuple[str, str, str, str, str]]:
        """(memory, person, predicate, object, object name): facts whose subject is the person
        and whose predicate starts with one of the verbs ("go" of "go_to"), once per memory
        each came from."""
        if self.labels.get(person) != "person":
            return
        for subject, predicate, obj, fact in self.facts_of(person):
            if subject == person and predicate.split("_", 1)[0] in verbs:
                for memory in self.sources_of.get(fact, ()):
                    yield memory, person, predicate, obj, self.names.get(obj, obj)

    def mentions_of(self, memory_ids: Iterable[str]) -> list[tuple[str, str, str]]:
        """(memory id, entity id, entity name) for the memories."""
        return [
            (memory, entity, self.names.get(entity, entity))
            for memory in memory_ids
            for entity in self.entities_named_by(memory)
        ]

    def degrees(self, entity_ids: Iterable[str]) -> dict[str, int]:
        """How many memories name each entity (those none names are left out)."""
        found = {e: at for e in entity_ids if (at := self.entity_at.get(e)) is not None}
        return {e: n for e, at in found.items() if (n := int(self.walk.degree[at]))}

    def memories_mentioning(self, entity_ids: Iterable[str]) -> list[tuple[str, str]]:
        """(entity id, memory id), archived memories included: the caller knows lifecycles."""
        return [(e, m) for e in entity_ids for m in self.memories_naming(e)]

    def facts_between(self, entity_ids: Iterable[str]) -> list[tuple[str, str, str, str]]:
        """(subject id, predicate, object id, fact id) for facts touching the entities."""
        found: dict[str, tuple[str, str, str, str]] = {}
        for entity in entity_ids:
            for fact in self.facts_of(entity):
                found.setdefault(fact[3], fact)
        return list(found.values())

    def supersession_links(self, memory_ids: Sequence[str]) -> list[tuple[str, str]]:
        """(newer, older) pairs touching the memories."""
        return list(dict.fromkeys(pair for m in memory_ids for pair in self.versions_of.get(m, ())))


class Numbered:
    """Mentions and facts as arrays: each memory's entities and each entity's memories (in the
    order the store returned the mentions), how many memories name an entity and its weight,
    the entities' order by id, and each entity's facts, so that a walk works on thousands of
    them at once."""

    def __init__(
        self,
        mentions: npt.NDArray[np.int64],
        facts: npt.NDArray[np.int64],
        count: int,
        entity_ids: Sequence[str],
        predicates: list[str],
    ) -> None:
        """`mentions`: (memory, entity) rows; `facts`: (subject, object, predicate) rows,
        the predicate a place in `predicates`."""
        self.mentions, self.facts = mentions, facts
        self.memory_count = count
        self.entity_count = len(entity_ids)
        memories, entities = mentions[:, 0], mentions[:, 1]
        self.entity_ptr, self.memories_of = grouped(entities, memories, self.entity_count)
        self.memory_ptr, self.entities_of = grouped(memories, entities, count)
        self.degree = np.diff(self.entity_ptr)
        # the fewer memories name a thing, the more naming it says
        self.weight = 1.0 / np.log(2 + np.maximum(self.degree, 1))
        order = pc.sort_indices(pa.array(entity_ids, pa.string())).to_numpy()
        self.rank = np.empty(self.entity_count, dtype=np.int64)
        self.rank[order] = np.arange(self.entity_count)
        self.fact_subject, self.fact_object, self.fact_predicate = facts.T
        self.predicates = predicates
        rows = np.arange(len(facts))
        apart = self.fact_object != self.fact_subject
        rows = np.concatenate([rows, rows[apart]])
        ends = np.concatenate([self.fact_subject, self.fact_object[apart]])
        by_row = np.argsort(rows, kind="stable")  # each entity's facts in the store's order
        self.fact_ptr, self.facts_of = grouped(ends[by_row], rows[by_row], self.entity_count)


def rows_of(
    ptr: npt.NDArray[np.int64], values: npt.NDArray[np.int64], rows: npt.NDArray[np.int64]
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """(row, value) for every value of the rows asked for, row after row in their order."""
    starts = ptr[rows]
    counts = ptr[rows + 1] - starts
    total = int(counts.sum())
    before = np.cumsum(counts) - counts  # where each row's values start in the output
    at = np.repeat(starts - before, counts) + np.arange(total)
    return np.repeat(rows, counts), values[at]


def grouped(
    keys: npt.NDArray[np.int64], values: npt.NDArray[np.int64], count: int
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """Row pointers and values of the values grouped by key (0..count-1), in their order
    within a key: what `rows_of` reads."""
    order = np.argsort(keys, kind="stable")
    ptr = np.zeros(count + 1, dtype=np.int64)
    np.cumsum(np.bincount(keys, minlength=count), out=ptr[1:])
    return ptr, values[order]


def _number(at: dict[str, int], ids: list[str], key: str) -> int:
    found = at.get(key)
    if found is None:
        found = at[key] = len(ids)
        ids.append(key)
    return found


def _codes(column: pa.ChunkedArray) -> pa.DictionaryArray:
    """The column numbered in the order its values first appear."""
    return pc.dictionary_encode(column.combine_chunks())


def _numpy(numbers: pa.Array | pa.ChunkedArray) -> npt.NDArray[np.int64]:
    if isinstance(numbers, pa.ChunkedArray):
        numbers = numbers.combine_chunks()
    found: npt.NDArray[np.int64] = numbers.to_numpy(zero_copy_only=False).astype(np.int64)
    return found


def _columns(table: pa.Table, width: int) -> list[list[str]]:
    return [table.column(i).to_pylist() for i in range(width)]
