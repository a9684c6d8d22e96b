"""The memory tools: store, recall, get, update, delete, list, stats and read-only Cypher.

Each tool parses its arguments (the SDK validates them against the type hints below, which also
become the tool's input schema), calls exactly one GraphMemory method and returns its pydantic
model, or for recall and list that model shown compact or full (present.shown)."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Annotated, Any

from mcp.server.mcpserver import Context
from mcp.server.mcpserver.tools import Tool
from mcp.types import CallToolResult
from pydantic import BaseModel, Field

from graphmem.errors import InvalidInput
from graphmem.mcp.args import (
    Content,
    ContextArg,
    DetailArg,
    Id,
    IdempotencyKey,
    Importance,
    KindArg,
    Metadata,
    ServiceArg,
    Tags,
    Title,
    TypeArg,
    given,
    store_call,
)
from graphmem.mcp.present import shown
from graphmem.mcp.tooling import hints, make_tool
from graphmem.models import (
    CypherResult,
    Lifecycle,
    Memory,
    MemoryPage,
    RecallResult,
    RecallScope,
    StoredMemory,
    StoreStats,
)

if TYPE_CHECKING:
    from graphmem.api import MemoryAPI as GraphMemory

__all__ = ["Deleted", "memory_tools"]


class Deleted(BaseModel):
    """Result of delete_memory."""

    deleted: str = Field(description="id of the memory that was deleted")


STORE_DESCRIPTION = """\
Save one memory for later sessions. Use it when you make a decision (kind=decision, with the \
reason), abandon an approach (kind=dead_end, with why it failed), learn a fact about the code or \
environment (type=semantic), work out how to do something (type=procedural, kind=runbook), or \
resolve an incident. Returns the stored memory, including its new `id`.

Example: {"content": "Pinned kuzu to 0.11: 0.12 changed FTS stemming and broke recall tests", \
"title": "kuzu pinned to 0.11", "type": "semantic", "kind": "decision", "tags": ["deps", "kuzu"], \
"service": "graphmem", "importance": 0.8}"""

RECALL_DESCRIPTION = """\
Search memory by meaning and by exact words. Call it before starting a task, when you meet an \
unfamiliar error, or before deciding something, to find earlier decisions, dead ends, facts and \
runbooks. Returns `hits`, best first, each with the memory's id, kind, content (long ones cut: \
get_memory reads them whole), `score` and `superseded_by` when it was replaced (read the newer \
one); `warnings` lists dead ends related to the query or the hits (do not repeat them) and says \
when results are keyword-only (`degraded`). Filters (type, kind, context, service, tags) narrow \
the search; every given filter must match. `explain=true` adds each hit's score components; \
`detail=full` returns whole memory records.

Example: {"query": "why is the test database reset between runs", "limit": 5, "kind": "decision"}"""

GET_DESCRIPTION = """\
Fetch one memory by its id (from store_memory, recall_memory or list_memories). Returns the full \
memory. Fails if no memory has that id."""

UPDATE_DESCRIPTION = """\
Change fields of an existing memory; only the fields you give change, the rest stay as they are. \
Use it to correct or refine a memory instead of storing a near-duplicate. A new content or title \
is re-indexed for recall. Returns the updated memory.

Example: {"id": "<id>", "content": "Retry limit is 5, not 3 (PR 412)", "importance": 0.9}"""

DELETE_DESCRIPTION = """\
Permanently delete one memory by id. This cannot be undone: to correct a memory use update_memory. \
Returns {"deleted": "<id>"}. Fails if no memory has that id."""

LIST_DESCRIPTION = """\
Browse memories newest first, optionally filtered (every given filter must match). Unlike \
recall_memory there is no query and no ranking. Returns `memories` and `next_cursor`; when \
there is a `next_cursor`, pass it back as `cursor` to get the next page.

Example: {"kind": "dead_end", "service": "billing-api", "limit": 20}"""

STATS_DESCRIPTION = """\
Summarise the store: total memories, counts by type, kind, context and lifecycle, size on disk, \
the embedding space in use and how many memories lack a vector. Use it to see what the memory \
holds before browsing or querying it."""

CYPHER_DESCRIPTION = """\
Run a READ-ONLY query on the graph in its storage engine's own dialect (Kùzu's Cypher), for \
questions the other tools cannot answer (counts, groupings, scans over fields). Writes (CREATE, MERGE, SET, DELETE, ...) are \
refused: change memories with the memory tools. Pass values as $parameters in `params`. Returns \
`columns` and `rows`.

Main table: Memory(id, kind, type, title, content, tags STRING[], context, service, importance, \
confidence, lifecycle, metadata (JSON string), created_at, updated_at, valid_from, valid_to); \
relation SUPERSEDES(FROM Memory TO Memory, at, reason).

Example: {"query": "MATCH (m:Memory) WHERE m.kind = $kind RETURN m.service, count(*) AS n \
ORDER BY n DESC", "params": {"kind": "dead_end"}}"""


def memory_tools(gm: GraphMemory, lock: threading.Lock) -> list[Tool]:
    """The memory tools over `gm`, sharing `lock` with the other tools of the server."""

    def store_memory(
        content: Content,
        title: Title = None,
        type: TypeArg = None,
        kind: KindArg = None,
        tags: Tags = None,
        context: ContextArg = None,
        service: ServiceArg = None,
        importance: Importance = None,
        metadata: Metadata = None,
        idempotency_key: IdempotencyKey = None,
        ctx: Context | None = None,
    ) -> StoredMemory:
        fields = given(
            title=title,
            type=type,
            kind=kind,
            tags=tags,
            context=context,
            service=service,
            importance=importance,
            metadata=metadata,
        )
        return gm.remember(content, **fields, **store_call(ctx, idempotency_key))

    def recall_memory(
        query: Annotated[
            str,
            Field(min_length=1, description="What you are looking for, in your own words."),
        ],
        limit: Annotated[int, Field(description="How many hits to return at most.")] = 10,
        type: TypeArg = None,
        kind: KindArg = None,
        context: ContextArg = None,
        service: ServiceArg = None,
        tags: Annotated[
            list[str] | None,
            Field(description="Only memories carrying all of these tags."),
        ] = None,
        explain: Annotated[
            bool, Field(description="Include each hit's score components in `explain`.")
        ] = False,
        scope: Annotated[
            RecallScope,
            Field(
                description="memories (default); docs: the indexed documents' sections "
                "(`sections`); all: both, in one `ranking` where each hit says which it is."
            ),
        ] = "memories",
        detail: DetailArg = "compact",
    ) -> Annotated[CallToolResult, RecallResult]:
        filters = given(type=type, kind=kind, context=context, service=service, tags=tags)
        found = gm.recall(query, limit=limit, filters=filters or None, explain=explain, scope=scope)
        return shown(found, detail)

    def get_memory(id: Id) -> Memory:
        return gm.get(id)

    def update_memory(
        id: Id,
        content: Annotated[str | None, Field(min_length=1, description="New content.")] = None,
        title: Annotated[str | None, Field(description="New title.")] = None,
        type: TypeArg = None,
        kind: KindArg = None,
        tags: Annotated[
            list[str] | None, Field(description="New tags; replaces the existing list.")
        ] = None,
        context: ContextArg = None,
        service: ServiceArg = None,
        importance: Importance = None,
        metadata: Annotated[
            dict[str, Any] | None,
            Field(description="New metadata object; replaces the existing one."),
        ] = None,
    ) -> Memory:
        changes = given(
            content=content,
            title=title,
            type=type,
            kind=kind,
            tags=tags,
            context=context,
            service=service,
            importance=importance,
            metadata=metadata,
        )
        if not changes:
            raise InvalidInput("nothing to update: give at least one field to change besides id")
        return gm.update(id, **changes)

    def delete_memory(id: Id) -> Deleted:
        gm.delete(id)
        return Deleted(deleted=id)

    def list_memories(
        type: TypeArg = None,
        kind: KindArg = None,
        context: ContextArg = None,
        service: ServiceArg = None,
        tags: Annotated[
            list[str] | None,
            Field(description="Only memories carrying all of these tags."),
        ] = None,
        lifecycle: Annotated[
            Lifecycle | None,
            Field(description="Only memories in this lifecycle state (new memories are active)."),
        ] = None,
        limit: Annotated[int, Field(description="Page size.")] = 50,
        cursor: Annotated[
            str | None,
            Field(description="`next_cursor` from the previous page, to continue."),
        ] = None,
        detail: DetailArg = "compact",
    ) -> Annotated[CallToolResult, MemoryPage]:
        filters = given(
            type=type, kind=kind, context=context, service=service, tags=tags, lifecycle=lifecycle
        )
        return shown(gm.list(filters or None, limit=limit, cursor=cursor), detail)

    def memory_stats() -> StoreStats:
        return gm.stats()

    def cypher_query(
        query: Annotated[str, Field(min_length=1, description="A read-only Cypher query.")],
        params: Annotated[
            dict[str, Any] | None,
            Field(
                description='Values for the $parameters in the query, e.g. {"kind": "decision"}.'
            ),
        ] = None,
    ) -> CypherResult:
        return gm.cypher(query, params, write=False)

    return [
        make_tool(
            lock,
            store_memory,
            STORE_DESCRIPTION,
            hints("Store a memory", idempotent=False),
        ),
        make_tool(lock, recall_memory, RECALL_DESCRIPTION, hints("Recall memories")),
        make_tool(lock, get_memory, GET_DESCRIPTION, hints("Get a memory")),
        make_tool(
            lock,
            update_memory,
            UPDATE_DESCRIPTION,
            hints("Update a memory", destructive=True),
        ),
        make_tool(
            lock,
            delete_memory,
            DELETE_DESCRIPTION,
            hints("Delete a memory", destructive=True),
        ),
        make_tool(lock, list_memories, LIST_DESCRIPTION, hints("List memories")),
        make_tool(lock, memory_stats, STATS_DESCRIPTION, hints("Memory statistics")),
        make_tool(lock, cypher_query, CYPHER_DESCRIPTION, hints("Read-only Cypher query")),
    ]
