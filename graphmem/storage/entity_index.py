"""Who mentions what, which facts join which entities, and which memory supersedes which, held
in process for the multi-hop walk.

Kùzu answers `WHERE m.id IN $ids` with a scan of the whole table, so each round of the walk
cost as much at 100k memories as the store is big, whatever the few memories it started from.
These lists are read once (three arrow scans) and read again only after a commit changed the
entity graph (`KuzuConnection.entity_generation`); a walk then costs what it touches.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence

import pyarrow as pa


class EntityIndex:
    def __init__(self, mentions: pa.Table, names: pa.Table, facts: pa.Table, versions: pa.Table):
        """`mentions`: (memory, entity); `names`: (entity, name); `facts`: (subject,
        predicate, object, fact); `versions`: (newer, older) memory ids."""
        self.entities_of: dict[str, list[str]] = defaultdict(list)
        self.memories_of: dict[str, list[str]] = defaultdict(list)
        for memory, entity in zip(*_columns(mentions, 2), strict=True):
            self.entities_of[memory].append(entity)
            self.memories_of[entity].append(memory)
        self.names: dict[str, str] = dict(zip(*_columns(names, 2), strict=True))
        self.facts_of: dict[str, list[tuple[str, str, str, str]]] = defaultdict(list)
        for fact in zip(*_columns(facts, 4), strict=True):
            self.facts_of[fact[0]].append(fact)
            if fact[2] != fact[0]:
                self.facts_of[fact[2]].append(fact)
        self.versions_of: dict[str, list[tuple[str, str]]] = defaultdict(list)
        for newer, older in zip(*_columns(versions, 2), strict=True):
            self.versions_of[newer].append((newer, older))
            self.versions_of[older].append((newer, older))

    def mentions_of(self, memory_ids: Iterable[str]) -> list[tuple[str, str, str]]:
        """(memory id, entity id, entity name) for the memories."""
        return [
            (memory, entity, self.names.get(entity, entity))
            for memory in memory_ids
            for entity in self.entities_of.get(memory, ())
        ]

    def degrees(self, entity_ids: Iterable[str]) -> dict[str, int]:
        """How many memories name each entity (those none names are left out)."""
        return {e: len(self.memories_of[e]) for e in entity_ids if e in self.memories_of}

    def memories_mentioning(self, entity_ids: Iterable[str]) -> list[tuple[str, str]]:
        """(entity id, memory id), archived memories included: the caller knows lifecycles."""
        return [(e, m) for e in entity_ids for m in self.memories_of.get(e, ())]

    def facts_between(self, entity_ids: Iterable[str]) -> list[tuple[str, str, str, str]]:
        """(subject id, predicate, object id, fact id) for facts touching the entities."""
        found: dict[str, tuple[str, str, str, str]] = {}
        for entity in entity_ids:
            for fact in self.facts_of.get(entity, ()):
                found.setdefault(fact[3], fact)
        return list(found.values())

    def supersession_links(self, memory_ids: Sequence[str]) -> list[tuple[str, str]]:
        """(newer, older) pairs touching the memories."""
        return list(dict.fromkeys(pair for m in memory_ids for pair in self.versions_of.get(m, ())))


def _columns(table: pa.Table, width: int) -> list[list[str]]:
    return [table.column(i).to_pylist() for i in range(width)]
