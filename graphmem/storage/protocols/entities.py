"""The entity graph: entities, the facts that join them, who mentions what, and what is left to
extract. The reads every query makes come from the in-process entity index."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from graphmem.indexes.entity_index import EntityIndex


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
    memory_id: str  # or a chunk's id (`Documents.write_chunk_mentions`)
    entity_id: str
    name: str


@dataclass(frozen=True)
class EntityLink:
    """An edge into an entity: a memory's or a chunk's mention (`kind` "memory" or "chunk",
    with the words it used and the extractor that found it) or a fact's end ("subject" or
    "object"). What a correction of the entity graph moves, and its undo moves back."""

    kind: str
    source: str  # the memory, chunk or fact
    entity: str
    name: str = ""
    extractor: str = ""


LINK_KINDS = ("memory", "chunk", "subject", "object")


@dataclass(frozen=True)
class Provenance:
    fact_id: str
    memory_id: str
    confidence: float


def fact_id(subject_id: str, predicate: str, object_id: str) -> str:
    """The same triple from two memories is one fact with two sources."""
    digest = hashlib.sha1(f"{subject_id}\x1f{predicate}\x1f{object_id}".encode()).hexdigest()
    return "f" + digest[:20]


def compact_key(norm: str) -> str:
    return "".join(ch for ch in norm if ch.isalnum())


class Entities(Protocol):
    # -- writes -----------------------------------------------------------------------------

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
        """Replace what was extracted from these memories in one transaction (new entities and
        aliases added, known ones kept; a known fact keeps the higher confidence), mark them
        extracted by `extractor` and finish their waiting extraction. Emits the entity change
        when nothing was there before, so the entity index takes it in."""
        ...

    def merge(self, primary: str, duplicates: Sequence[str]) -> int:
        """Move every mention and fact end of the duplicates onto the primary, record their
        names as its aliases, delete them; returns the edges moved. InvalidInput without a
        duplicate other than the primary, NotFound for a missing entity."""
        ...

    def rewrite(
        self,
        *,
        rows: Sequence[dict[str, Any]] = (),
        unalias: Sequence[tuple[str, str]] = (),
        aliases: dict[str, str] | None = None,
        unlink: Sequence[EntityLink] = (),
        link: Sequence[EntityLink] = (),
        delete: Sequence[str] = (),
    ) -> None:
        """One correction of the entity graph, in one transaction, in this order: put `rows`
        (as `row` reads them; their aliases are left alone), drop each (norm, entity) alias
        that still points at that entity, point `aliases` (norm -> entity id) at their
        entities, delete the `unlink` edges, make the `link` ones (once: an edge already there
        is kept), delete the `delete` entities with their edges and aliases. An edge whose
        memory, chunk or fact is gone is skipped. The entity index reads the graph again."""
        ...

    def delete(self, entity_id: str) -> None:
        """The entity, its edges and its aliases."""
        ...

    def restore(self, row: dict[str, Any]) -> None:
        """Put back an entity as `row` read it (its edges are not restored)."""
        ...

    # -- reads from the store ---------------------------------------------------------------

    def by_key(self, keys: Sequence[str]) -> dict[str, list[tuple[str, str, str]]]:
        """key -> [(entity id, name, label)]: candidates for a new name that differs only in
        spelling."""
        ...

    def names(self, entity_ids: Sequence[str]) -> dict[str, tuple[str, str]]:
        """entity id -> (name, label), of those found."""
        ...

    def people_by_prefix(self, prefixes: Sequence[str]) -> list[tuple[str, str, str]]:
        """(id, norm, name) of one-word person entities whose norm starts with one of the
        prefixes (all of one length)."""
        ...

    def row(self, entity_id: str) -> dict[str, Any] | None:
        """The entity's fields and aliases, as `restore` takes them; None when not found."""
        ...

    def resolve_norms(self, norms: Sequence[str]) -> dict[str, str]:
        """norm -> entity id, through merged aliases first, then the entity's own id."""
        ...

    def links(self, entity_ids: Sequence[str]) -> list[EntityLink]:
        """Every mention (of memories and chunks) and fact end pointing at the entities."""
        ...

    def of_memory(self, memory_id: str) -> list[tuple[str, str, str, str]]:
        """(entity id, name, label, the words the memory used) of what a memory names."""
        ...

    def facts_of_memory(self, memory_id: str) -> list[tuple[str, str, str, str, str, float]]:
        """(id, subject, predicate, object, text, confidence) of the facts a memory states."""
        ...

    def fact_sources(self, fact_ids: Sequence[str]) -> dict[str, list[str]]:
        """fact id -> the memories it was extracted from, newest first, of those found."""
        ...

    def overview(
        self, *, query: str | None, label: str | None, limit: int
    ) -> list[tuple[str, str, str, int, int, list[str], int]]:
        """(id, name, label, mentions, facts, aliases, chunks mentioning it), most mentioned
        first; `query` matches the name or norm in any case."""
        ...

    def counts(self) -> dict[str, int]:
        """Entity, Fact, mentions, and memories extracted."""
        ...

    # -- reads from the entity index --------------------------------------------------------

    def index(self, *, while_extracting: bool = False) -> EntityIndex:
        """The entity graph in process, up to date with every commit; `while_extracting`
        takes one read up to a few seconds ago while memories wait for extraction (a walk
        misses what those seconds extracted no more than what the backlog holds)."""
        ...

    def fresh_index(self) -> EntityIndex | None:
        """The entity index if no commit changed the entity graph since it was read."""
        ...

    def resolve_known(self, norms: Sequence[str]) -> dict[str, str]:
        """`resolve_norms`, from the entity index when it is up to date."""
        ...

    def mentions_of(self, memory_ids: Sequence[str]) -> list[tuple[str, str, str]]:
        """(memory id, entity id, entity name) for the memories."""
        ...

    def degrees(self, entity_ids: Sequence[str]) -> dict[str, int]:
        """How many memories (archived ones too) name each entity."""
        ...

    def memories_mentioning(self, entity_ids: Sequence[str]) -> list[tuple[str, str]]:
        """(entity id, memory id) for live memories that mention the entities."""
        ...

    def things_mentioned_with(
        self,
        people: Sequence[str],
        labels: Sequence[str],
        *,
        limit: int,
        besides: Sequence[str] = (),
    ) -> list[tuple[str, str, str, str]]:
        """(memory id, person id, entity id, entity name): live memories that name one of the
        people (only person entities count) beside an entity with one of the labels, other
        than the people and `besides`; the first `limit`, person by person."""
        ...

    def facts_of_people(
        self, people: Sequence[str], verbs: Sequence[str], *, limit: int
    ) -> list[tuple[str, str, str, str, str]]:
        """(memory id, person id, predicate, object id, object name): facts whose subject is
        one of the people and whose predicate starts with one of the verbs, with the live
        memories they came from; the first `limit`, person by person."""
        ...

    def facts_between(self, entity_ids: Sequence[str]) -> list[tuple[str, str, str, str]]:
        """(subject id, predicate, object id, fact id) for facts touching the entities."""
        ...

    def supersession_links(self, memory_ids: Sequence[str]) -> list[tuple[str, str]]:
        """(newer, older) version pairs touching the memories."""
        ...

    # -- what is left to extract ------------------------------------------------------------

    def pending_extraction(
        self, *, limit: int, context: str | None, include_done: bool, after: str | None = None
    ) -> list[tuple[str, str]]:
        """(id, text) of live memories not extracted yet (or all, with include_done), of one
        context, after id `after`, oldest id first."""
        ...

    def pending_extraction_ids(self) -> list[str]:
        """Memories waiting for extraction, oldest id first."""
        ...

    def texts_for_extraction(self, memory_ids: Sequence[str]) -> list[tuple[str, str]]:
        """(id, text) of those memories still waiting for extraction, by id; the work of one
        that is gone is finished."""
        ...

    def mark_pending_extraction(self, memory_ids: Sequence[str]) -> None:
        """Their text changed: what was extracted from the old text is stale."""
        ...

    def count_before(self, memory_id: str, *, context: str | None) -> int:
        """Live memories with an id up to `memory_id`: where a resumed backfill starts."""
        ...

    def count_pending_extraction(self, *, context: str | None, include_done: bool) -> int: ...
