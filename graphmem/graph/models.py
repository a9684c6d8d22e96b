"""Models of the entity graph: entities, extraction reports, multi-hop hits and their paths."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from graphmem.knowledge.models import CitationState
from graphmem.models import Hit, Model, RecallWarning, UtcDateTime


class EntityInfo(Model):
    id: str
    name: str
    label: str
    mentions: int = Field(description="memories that mention it")
    facts: int = Field(description="facts it is the subject or object of")
    aliases: list[str] = Field(default_factory=list, description="names merged into it")
    chunks: int = Field(default=0, description="chunks of indexed documents that mention it")


class EntityList(Model):
    entities: list[EntityInfo]
    pending: int = Field(
        default=0,
        description="live memories whose entities are not extracted yet, so not listed here",
    )


AUDIT_ID = "the audit row: `steward_undo(audit_id)` puts the entities back"


class MergeEntitiesReport(Model):
    primary: str
    merged: list[str]
    edges_moved: int
    audit_id: str | None = Field(default=None, description=AUDIT_ID)


class EntityAliasReport(Model):
    """An alias added to an entity, or removed from it."""

    entity_id: str
    alias: str = Field(description="the alias as names are resolved by: normalised")
    changed: bool = Field(description="false when the name already resolved to the entity")
    aliases: list[str] = Field(description="the entity's aliases now")
    audit_id: str | None = Field(default=None, description=AUDIT_ID)


class RenameEntityReport(Model):
    entity_id: str = Field(description="unchanged: links and ids keep working")
    name: str
    previous: str = Field(description="the old name, kept as an alias")
    aliases: list[str] = Field(description="the entity's aliases now")
    audit_id: str | None = Field(default=None, description=AUDIT_ID)


class SplitEntityReport(Model):
    """A new entity that took some memories' mentions (and facts) from another."""

    entity_id: str = Field(description="the entity split")
    new_entity_id: str
    name: str
    memories: list[str] = Field(description="memories (or chunks) whose mentions moved")
    facts: list[str] = Field(description="facts moved: only those memories stated them")
    facts_kept: list[str] = Field(
        default_factory=list,
        description="facts those memories stated that other memories state too: they stay",
    )
    audit_id: str | None = Field(default=None, description=AUDIT_ID)


class GlossaryName(Model):
    """One name of the glossary, and the entity it resolves to (or will)."""

    name: str = Field(description="the name as the glossary writes it")
    norm: str = Field(description="the name as names are resolved by: normalised")
    entity_id: str = Field(description="the entity of its entry's canonical name")
    merged: str | None = Field(
        default=None, description="the entity the name resolved to before, folded into it"
    )
    audit_id: str | None = Field(default=None, description=AUDIT_ID)


class GlossarySkip(Model):
    """A name left as it is, and why."""

    name: str
    entity_id: str
    why: str


class GlossaryReport(Model):
    """What applying the project's glossary did (or, with dry_run, would do)."""

    path: str = Field(description="the glossary file")
    found: bool = Field(description="false when there is no such file: no glossary, no change")
    sha256: str | None = Field(default=None, description="the file's content hash")
    dry_run: bool = False
    entries: int = Field(default=0, description="canonical names in the file")
    created: list[GlossaryName] = Field(
        default_factory=list, description="canonical names no entity had yet: entities made"
    )
    merged: list[GlossaryName] = Field(
        default_factory=list, description="aliases that named another entity: it was merged"
    )
    aliased: list[GlossaryName] = Field(
        default_factory=list, description="aliases that named nothing: they resolve here now"
    )
    unchanged: list[GlossaryName] = Field(
        default_factory=list, description="names that already resolved to their entity"
    )
    skipped: list[GlossarySkip] = Field(
        default_factory=list,
        description="aliases naming the entity of another canonical name: left for a person",
    )
    run: str | None = Field(
        default=None,
        description="the changes' run: `steward_undo(run)` takes them all back, newest first",
    )

    audit_ids: list[str] = Field(
        default_factory=list, description="the audit rows written, in order: each undoable"
    )

    @property
    def changed(self) -> bool:
        return bool(self.created or self.merged or self.aliased)


class IndexReport(Model):
    """What a triple backfill did (or, with dry_run, would do)."""

    extractor: str
    memories: int = Field(description="memories processed")
    entities: int = Field(description="entity mentions written")
    facts: int = Field(description="facts written")
    seconds: float
    remaining: int = Field(description="memories in the store still waiting for extraction")
    dry_run: bool = False
    errors: int = Field(default=0, description="texts the extractor could not answer for")
    chunks: int = Field(default=0, description="document chunks processed")


class PathStep(Model):
    """One edge of the walk: from a node to the next, and what links them."""

    source: str = Field(description="node label, e.g. a memory title or an entity name")
    relation: str = Field(description="mentions, a fact predicate, supersedes or next_in_session")
    target: str
    reverse: bool = Field(
        default=False, description="the relation reads from target to source (b <-rel- a)"
    )


class PathNode(Model):
    """A node of a path: a memory or an entity, by id, with its label."""

    kind: Literal["memory", "entity"]
    id: str
    label: str


class MultiHopHit(Hit):
    seed: bool = Field(description="one of the hybrid-recall hits the walk started from")
    hops: int | None = Field(
        description="memory-to-memory steps from the nearest seed; null when only recall found it"
    )
    path: list[PathStep] = Field(default_factory=list)
    nodes: list[PathNode] = Field(
        default_factory=list,
        description="the path's nodes in order, from the recall hit it starts at to this one",
    )
    path_text: str = Field(default="", description="the path as one line: a -rel-> b -rel-> c")


class MultiHopSection(Model):
    """A section of an indexed document one entity away from a hit (graph.doc_hops)."""

    path: str
    title: str
    heading: str
    breadcrumb: list[str]
    section_key: str
    source_type: str
    lines: list[int]
    score: float
    via_memory: str = Field(description="the hit whose entity links to it")
    route: list[PathStep] = Field(default_factory=list, description="hit -> entity -> section")
    route_text: str = Field(default="", description="the route as one line")


class MultiHopResult(Model):
    query: str
    hits: list[MultiHopHit] = Field(default_factory=list)
    sections: list[MultiHopSection] = Field(
        default_factory=list,
        description="sections of indexed documents that name an entity a hit names",
    )
    warnings: list[RecallWarning] = Field(default_factory=list)
    subgraph: dict[str, int] = Field(
        default_factory=dict, description="memories, entities and edges the walk looked at"
    )


class MemoryEntity(Model):
    id: str
    name: str = Field(description="the entity's name")
    label: str
    mentioned_as: str = Field(description="the words this memory names it with")


class MemoryFact(Model):
    id: str
    subject: str
    predicate: str
    object: str
    text: str
    confidence: float


class Neighbour(Model):
    """A memory one edge away, or one entity away, and what links them."""

    id: str
    label: str = Field(description="its title, or the start of its content")
    kind: str
    lifecycle: str
    relation: str = Field(
        description="supersedes, superseded_by, merged_into, merged_from, avoids, avoided_by, "
        "or mentions (both name `via`)"
    )
    via: str | None = Field(default=None, description="the entity both name, for mentions")


class EntityFact(Model):
    """A fact an entity is the subject or object of, with both ends named."""

    id: str
    subject_id: str
    subject: str
    predicate: str
    object_id: str
    object: str
    sources: list[str] = Field(
        default_factory=list, description="the memories it was extracted from, newest first"
    )
    first_stated: UtcDateTime | None = Field(
        default=None, description="when the oldest memory it was extracted from was written"
    )
    last_stated: UtcDateTime | None = Field(
        default=None, description="when the newest memory it was extracted from was written"
    )


class EntityPage(Model):
    """One entity: its names, the memories that name it and the facts it is in."""

    id: str
    name: str
    label: str
    aliases: list[str] = Field(default_factory=list, description="names merged into it")
    mentions: int = Field(description="memories that name it")
    memories: list[Neighbour] = Field(
        default_factory=list, description="memories that name it, newest first, at most `limit`"
    )
    facts: list[EntityFact] = Field(default_factory=list)
    first_seen: UtcDateTime | None = Field(
        default=None, description="when the oldest live memory that names it was written"
    )
    last_seen: UtcDateTime | None = Field(
        default=None, description="when the newest live memory that names it was written"
    )
    sections: list[EntitySection] = Field(
        default_factory=list, description="document sections whose text names it, at most `limit`"
    )


class EntitySection(Model):
    """A document section one of whose chunks names the entity."""

    path: str
    heading: str
    breadcrumb: list[str] = Field(default_factory=list)


class MemoryGraph(Model):
    """What the graph holds around one memory: its citations, entities, facts and neighbours."""

    memory_id: str
    citations: list[CitationState] = Field(default_factory=list)
    entities: list[MemoryEntity] = Field(default_factory=list)
    facts: list[MemoryFact] = Field(default_factory=list)
    neighbours: list[Neighbour] = Field(default_factory=list)
