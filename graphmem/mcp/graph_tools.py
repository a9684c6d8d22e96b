"""MCP tools for the entity graph: multi-hop recall, entities, correcting their resolution
(merge, alias, rename, split), backfilling extraction. Same rules as the memory tools: one MemoryAPI call each, strict arguments; multi-hop
hits are shown compact unless `detail="full"`."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Annotated

from mcp.server.mcpserver.tools import Tool
from mcp.types import CallToolResult
from pydantic import Field

from graphmem.graph.models import (
    EntityAliasReport,
    EntityList,
    GlossaryReport,
    IndexReport,
    MergeEntitiesReport,
    MultiHopResult,
    RenameEntityReport,
    SplitEntityReport,
)
from graphmem.mcp.args import ContextArg, DetailArg, KindArg, Tags, TypeArg, given
from graphmem.mcp.present import shown
from graphmem.mcp.tooling import hints, make_tool

if TYPE_CHECKING:
    from graphmem.api import MemoryAPI as GraphMemory

__all__ = ["graph_tools"]

RECALL_MULTIHOP = """\
Answer a question that chains several facts ("why did we choose X, what broke because of it, \
which runbook fixed it"): starts from the best recall hits, walks the entities and facts they \
mention (and superseded versions, neighbouring turns of a session), and ranks what it reaches. \
Each hit has `path_text`, the chain that reached it, e.g. "billing migration -caused-> index \
lock <-mentions- Rollback runbook". Use recall_memory for plain lookups; this for why/how chains.

Example: {"query": "what did the billing migration break and how was it fixed", "max_hops": 2}"""

LIST_ENTITIES = """\
List the named things memories mention (services, packages, people, tickets, files...), most \
mentioned first, with how many facts each is part of. `query` matches part of a name. Use it to \
see what the memory knows about, or to find duplicates to merge."""

MERGE_ENTITIES = """\
Merge duplicate entities (the same thing under two names, e.g. "postgres" and "postgresql"): \
`primary` is kept; mentions and facts of `duplicates` move to it, and their names become its \
aliases so later extraction resolves them to it. Returns how many links moved and `audit_id`: steward_undo(audit_id) brings the duplicates back with their links."""

ADD_ENTITY_ALIAS = """\
Make another name resolve to an entity from now on, without merging anything: later extraction \
links text that says `alias` to `entity_id` (e.g. "pg" for "postgresql"). Refused when the name \
already resolves to another entity: merge the two with merge_entities if they are one thing. \
Audited: steward_undo(audit_id) takes it back."""

REMOVE_ENTITY_ALIAS = """\
Stop a name resolving to an entity (an alias a merge, a rename or add_entity_alias left): what \
is linked stays linked; later text with the name gets an entity of its own. Audited."""

RENAME_ENTITY = """\
Show an entity under another name; its id stays, and the old name stays an alias so text that \
says it still resolves here. Refused when the new name already names another entity (merge \
them instead). Audited: steward_undo(audit_id) takes it back."""

SPLIT_ENTITY = """\
Split an entity in two: a new entity of the same label (named `name`, by default as the \
original) takes the mentions of `entity_id` in `memory_ids` (document chunk ids work too) and \
the facts about it only those memories stated. Use it to undo part of a wrong merge or to tell \
apart two things of one name. Audited: steward_undo(audit_id) puts them back together."""

APPLY_GLOSSARY = """\
Apply the project's glossary (graphmem.aliases.yaml: canonical names and the other names text \
uses for them): each alias is made to resolve to its canonical name's entity, merging an entity \
it named before, and a canonical name nothing names yet gets an entity. `dry_run` shows what \
would change. Indexing applies it too once the file changes. Audited: steward_undo(run) takes \
it all back."""

INDEX_TRIPLES = """\
Extract entities and facts from memories not processed yet (normally done in the background \
after each write; call this to catch up). Processes at most `limit` memories per call; \
`remaining` in the answer says how many still wait. Returns counts and timing."""

Limit = Annotated[int, Field(description="How many results at most.")]
EntityId = Annotated[str, Field(min_length=1, description="Id of the entity (list_entities).")]


def graph_tools(gm: GraphMemory, lock: threading.Lock) -> list[Tool]:
    """The entity-graph tools over `gm`, sharing `lock` with the other tools of the server."""

    def recall_multihop(
        query: Annotated[str, Field(min_length=1, description="The question, in your words.")],
        max_hops: Annotated[
            int, Field(ge=0, le=4, description="Memory-to-memory steps from a seed (default 2).")
        ] = 2,
        seed_k: Annotated[
            int, Field(ge=1, le=100, description="Plain-recall hits to start from (default 3).")
        ] = 3,
        limit: Limit = 10,
        type: TypeArg = None,
        kind: KindArg = None,
        tags: Tags = None,
        context: ContextArg = None,
        detail: DetailArg = "compact",
    ) -> Annotated[CallToolResult, MultiHopResult]:
        filters = given(type=type, kind=kind, tags=tags, context=context)
        found = gm.recall_multihop(
            query, max_hops=max_hops, seed_k=seed_k, limit=limit, filters=filters or None
        )
        return shown(found, detail)

    def list_entities(
        query: Annotated[str | None, Field(description="Part of the entity's name.")] = None,
        label: Annotated[
            str | None, Field(description="Only this label: service, package, person, ...")
        ] = None,
        limit: Limit = 50,
    ) -> EntityList:
        return gm.list_entities(query, label=label, limit=limit)

    def merge_entities(
        primary: Annotated[str, Field(min_length=1, description="Id of the entity to keep.")],
        duplicates: Annotated[
            list[str], Field(min_length=1, description="Ids of the entities to fold into it.")
        ],
    ) -> MergeEntitiesReport:
        return gm.merge_entities(primary, duplicates)

    def add_entity_alias(
        entity_id: EntityId,
        alias: Annotated[str, Field(min_length=1, description="The other name, as text says it.")],
    ) -> EntityAliasReport:
        return gm.add_entity_alias(entity_id, alias)

    def remove_entity_alias(
        entity_id: EntityId,
        alias: Annotated[str, Field(min_length=1, description="The alias to remove.")],
    ) -> EntityAliasReport:
        return gm.remove_entity_alias(entity_id, alias)

    def rename_entity(
        entity_id: EntityId,
        name: Annotated[str, Field(min_length=1, description="The name to show.")],
    ) -> RenameEntityReport:
        return gm.rename_entity(entity_id, name)

    def split_entity(
        entity_id: EntityId,
        memory_ids: Annotated[
            list[str],
            Field(min_length=1, description="Memories (or chunks) whose mentions move."),
        ],
        name: Annotated[
            str | None, Field(description="The new entity's name (default: the original's).")
        ] = None,
    ) -> SplitEntityReport:
        return gm.split_entity(entity_id, memory_ids, name=name)

    def apply_glossary(
        dry_run: Annotated[
            bool, Field(description="Show what would change; write nothing.")
        ] = False,
    ) -> GlossaryReport:
        return gm.apply_glossary(dry_run=dry_run)

    def index_triples(
        limit: Annotated[
            int, Field(ge=1, le=5000, description="Memories to process in this call.")
        ] = 500,
        context: ContextArg = None,
    ) -> IndexReport:
        return gm.index_triples(limit=limit, context=context)

    return [
        make_tool(lock, recall_multihop, RECALL_MULTIHOP, hints("Multi-hop recall")),
        make_tool(lock, list_entities, LIST_ENTITIES, hints("List entities")),
        make_tool(lock, merge_entities, MERGE_ENTITIES,
              hints("Merge entities", destructive=True, idempotent=False)),
        make_tool(lock, add_entity_alias, ADD_ENTITY_ALIAS,
              hints("Add an entity alias", destructive=False, idempotent=True)),
        make_tool(lock, remove_entity_alias, REMOVE_ENTITY_ALIAS,
              hints("Remove an entity alias", destructive=True, idempotent=False)),
        make_tool(lock, rename_entity, RENAME_ENTITY,
              hints("Rename an entity", destructive=False, idempotent=True)),
        make_tool(lock, split_entity, SPLIT_ENTITY,
              hints("Split an entity", destructive=False, idempotent=False)),
        make_tool(lock, apply_glossary, APPLY_GLOSSARY,
              hints("Apply the glossary", destructive=True, idempotent=True)),
        make_tool(lock, index_triples, INDEX_TRIPLES,
              hints("Extract entities and facts")),
    ]  # fmt: skip
