"""The graphmem MCP server: the memory tools (here) and the knowledge tools (knowledge_tools.py)
over one GraphMemory.

Each tool parses its arguments (the SDK validates them against the type hints below, which also
become the tool's input schema), calls exactly one GraphMemory method and returns the pydantic
model that method returns, so clients get `structuredContent` plus the same JSON as text.

Errors: a GraphmemError raised by GraphMemory becomes an MCP `ToolError` in `_guard` (one place),
so the client sees `isError: true` with the error's code and message. Argument-schema violations
are reported the same way by the SDK. Anything else is a crash: the SDK logs it and the client gets
a generic message. GraphMemory validates before it writes, so a failed call leaves nothing behind.

GraphMemory is synchronous; the SDK runs sync tools on worker threads, and `_guard` serialises the
calls with one lock so the store only ever sees one request at a time from this server.
"""

from __future__ import annotations

import functools
import threading
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, Any, Literal, ParamSpec, TypeVar, cast

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.tools import Tool
from mcp.server.mcpserver.utilities.func_metadata import ArgModelBase
from mcp.types import ToolAnnotations
from pydantic import BaseModel, ConfigDict, Field

from graphmem.errors import GraphmemError, InvalidInput
from graphmem.models import (
    CypherResult,
    Lifecycle,
    Memory,
    MemoryKind,
    MemoryPage,
    MemoryType,
    RecallResult,
    RecallScope,
    StoredMemory,
    StoreStats,
)

if TYPE_CHECKING:
    from graphmem.api import MemoryAPI as GraphMemory

__all__ = [
    "SERVER_NAME",
    "Deleted",
    "build_server",
    "error_text",
    "graphmem_version",
    "serve_stdio",
]

SERVER_NAME = "graphmem"

INSTRUCTIONS = """\
graphmem is a long-term memory for coding agents, local to this project. It keeps what would \
otherwise be lost between sessions: decisions and their reasons, dead ends (what was tried, why it \
failed), facts about the code, services and environment, runbooks, incidents.

- Before starting work, and when you hit an unfamiliar error, call recall_memory with a short \
description of the task or the error; earlier decisions and dead ends save repeating them.
- When you decide something, find something out, or abandon an approach, call store_memory with \
content that stands on its own (name the files, services and errors a later search would use).
- Correct a memory with update_memory instead of storing a near-duplicate; delete_memory only for \
memories that are wrong or unwanted.
- list_memories browses by filter (newest first), memory_stats shows what the store holds, and \
cypher_query answers read-only questions about the graph that the other tools cannot.
- Before starting work, call summarize_project_context (canonical knowledge, then recent events). \
Record engineering knowledge with store_decision, store_dead_end (when an approach failed, so \
nobody tries it again), store_incident, store_runbook and store_postmortem; when something is no \
longer true, mark_outdated it (with superseded_by when a newer memory replaces it) instead of \
deleting it. Recall warns about related dead ends and points at successors (superseded_by).

Memory types: episodic (what happened), semantic (facts), procedural (how to do something), \
working (scratch for the current task). Kinds: note, decision, dead_end, incident, runbook, \
postmortem, summary, checkpoint.\
"""

_LOG_LEVELS: dict[str, Literal["DEBUG", "INFO", "WARNING", "ERROR"]] = {
    "debug": "DEBUG",
    "info": "INFO",
    "warning": "WARNING",
    "error": "ERROR",
}

P = ParamSpec("P")
R = TypeVar("R")


class Deleted(BaseModel):
    """Result of delete_memory."""

    deleted: str = Field(description="id of the memory that was deleted")


def graphmem_version() -> str:
    """graphmem's version, as reported by /health and the MCP initialize result."""
    import graphmem

    return str(getattr(graphmem, "__version__", "0+unknown"))


def error_text(exc: GraphmemError) -> str:
    """What the client reads for a graphmem error: its code, then its message."""
    return f"{exc.code}: {exc.message}"


def _guard(lock: threading.Lock, fn: Callable[P, R]) -> Callable[P, R]:
    """Serialise calls into GraphMemory and turn graphmem errors into MCP tool errors."""

    @functools.wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            with lock:
                return fn(*args, **kwargs)
        except GraphmemError as exc:
            raise ToolError(error_text(exc)) from exc

    return wrapper


def _given(**values: Any) -> dict[str, Any]:
    """The arguments the caller actually gave (None means "not given", so defaults apply)."""
    return {key: value for key, value in values.items() if value is not None}


# An MCP session is a client session for the core (graphmem.idempotency): an exact duplicate it
# stores within the duplicate window is returned, not stored again. Over HTTP a session is named by
# its Mcp-Session-Id header; a stdio server serves one client, so the process names it.
_PROCESS_SESSION = uuid.uuid4().hex


def store_call(ctx: Context | None, idempotency_key: str | None) -> dict[str, str]:
    """The fields that let the core find a retried store."""
    headers = (ctx.headers if ctx is not None else None) or {}
    session = headers.get("mcp-session-id") or _PROCESS_SESSION
    return {**_given(idempotency_key=idempotency_key), "client_session": session}


# -- argument types (their descriptions become the tools' input schemas) ---------------------------

Id = Annotated[str, Field(description="Memory id, as returned by store_memory, recall or list.")]
Content = Annotated[
    str,
    Field(
        min_length=1,
        description="The memory itself, in plain text or Markdown. Make it stand alone: include "
        "the names (files, services, errors, commands) a later search would use.",
    ),
]
Title = Annotated[str | None, Field(description="Optional one-line summary.")]
TypeArg = Annotated[
    MemoryType | None,
    Field(
        description="episodic = what happened (default when storing), semantic = a fact, "
        "procedural = how to do something, working = scratch for the current task."
    ),
]
KindArg = Annotated[
    MemoryKind | None,
    Field(description="What sort of memory this is (default when storing: note)."),
]
Tags = Annotated[
    list[str] | None,
    Field(description='Free-form labels, e.g. ["auth", "flaky-test"].'),
]
ContextArg = Annotated[
    str | None,
    Field(
        description="Project or area the memory belongs to, e.g. a repository or a feature name."
    ),
]
ServiceArg = Annotated[
    str | None,
    Field(description="Service or component the memory is about, e.g. 'billing-api'."),
]
Importance = Annotated[
    float | None,
    Field(
        ge=0.0,
        le=1.0,
        description="0..1, how much this should weigh in recall (default 0.5).",
    ),
]
Metadata = Annotated[
    dict[str, Any] | None,
    Field(description="Any extra JSON object to keep with the memory (links, commit, ticket...)."),
]
IdempotencyKey = Annotated[
    str | None,
    Field(
        min_length=1,
        max_length=200,
        description="Your own unique id for this store (a UUID, say). If the call fails or times "
        "out on your side and you retry it with the same key, the memory is stored once and "
        "the retry returns it with deduplicated=true.",
    ),
]


# -- tool descriptions ----------------------------------------------------------------------------

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
runbooks. Returns `hits`, best first, each with the full `memory`, its `score` and \
`superseded_by` (the id of the newer version when this one was replaced: read that one); \
`warnings` lists dead ends related to the query or the hits (do not repeat them) and says when \
results are keyword-only (`degraded`). Filters (type, kind, context, service, tags) \
narrow the search; every given filter must match. `explain=true` adds each hit's score components.

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
`next_cursor` is not null, pass it back as `cursor` to get the next page.

Example: {"kind": "dead_end", "service": "billing-api", "limit": 20}"""

STATS_DESCRIPTION = """\
Summarise the store: total memories, counts by type, kind, context and lifecycle, size on disk, \
the embedding space in use and how many memories lack a vector. Use it to see what the memory \
holds before browsing or querying it."""

CYPHER_DESCRIPTION = """\
Run a READ-ONLY Cypher query on the underlying Kùzu graph, for questions the other tools cannot \
answer (counts, groupings, scans over fields). Writes (CREATE, MERGE, SET, DELETE, ...) are \
refused: change memories with the memory tools. Pass values as $parameters in `params`. Returns \
`columns` and `rows`.

Main table: Memory(id, kind, type, title, content, tags STRING[], context, service, importance, \
confidence, lifecycle, metadata (JSON string), created_at, updated_at, valid_from, valid_to); \
relation SUPERSEDES(FROM Memory TO Memory, at, reason).

Example: {"query": "MATCH (m:Memory) WHERE m.kind = $kind RETURN m.service, count(*) AS n \
ORDER BY n DESC", "params": {"kind": "dead_end"}}"""


def _hints(
    title: str,
    *,
    writes: bool = False,
    destructive: bool = False,
    idempotent: bool = True,
) -> ToolAnnotations:
    """Tool annotations; every tool works on the local store only (openWorldHint false)."""
    return ToolAnnotations(
        title=title,
        read_only_hint=not writes,
        destructive_hint=destructive,
        idempotent_hint=idempotent,
        open_world_hint=False,
    )


def _tool(
    lock: threading.Lock, fn: Callable[..., BaseModel], description: str, hints: ToolAnnotations
) -> Tool:
    """Register `fn` as a structured-output tool that rejects arguments it does not know.

    The SDK ignores unknown arguments by default, so a misspelt `tag` for `tags` would be dropped
    without a word; forbidding extras turns it into a tool error that names the argument.
    """
    tool = Tool.from_function(
        _guard(lock, fn),
        name=fn.__name__,
        title=hints.title,
        description=description,
        annotations=hints,
        structured_output=True,
    )
    loose = tool.fn_metadata.arg_model
    strict = cast(
        "type[ArgModelBase]",
        type(loose.__name__, (loose,), {"model_config": ConfigDict(extra="forbid")}),
    )
    tool.fn_metadata.arg_model = strict
    tool.parameters = strict.model_json_schema(by_alias=True)
    return tool


def build_server(gm: GraphMemory) -> MCPServer:
    """An MCPServer named "graphmem" whose tools call `gm`; the caller owns (and closes) `gm`."""
    lock = threading.Lock()

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
        fields = _given(
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
    ) -> RecallResult:
        filters = _given(type=type, kind=kind, context=context, service=service, tags=tags)
        return gm.recall(query, limit=limit, filters=filters or None, explain=explain, scope=scope)

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
        changes = _given(
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
    ) -> MemoryPage:
        filters = _given(
            type=type,
            kind=kind,
            context=context,
            service=service,
            tags=tags,
            lifecycle=lifecycle,
        )
        return gm.list(filters or None, limit=limit, cursor=cursor)

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

    tools = [
        _tool(
            lock,
            store_memory,
            STORE_DESCRIPTION,
            _hints("Store a memory", writes=True, idempotent=False),
        ),
        _tool(lock, recall_memory, RECALL_DESCRIPTION, _hints("Recall memories")),
        _tool(lock, get_memory, GET_DESCRIPTION, _hints("Get a memory")),
        _tool(
            lock,
            update_memory,
            UPDATE_DESCRIPTION,
            _hints("Update a memory", writes=True, destructive=True),
        ),
        _tool(
            lock,
            delete_memory,
            DELETE_DESCRIPTION,
            _hints("Delete a memory", writes=True, destructive=True),
        ),
        _tool(lock, list_memories, LIST_DESCRIPTION, _hints("List memories")),
        _tool(lock, memory_stats, STATS_DESCRIPTION, _hints("Memory statistics")),
        _tool(lock, cypher_query, CYPHER_DESCRIPTION, _hints("Read-only Cypher query")),
    ]
    from graphmem.mcp.document_tools import document_tools
    from graphmem.mcp.graph_tools import graph_tools
    from graphmem.mcp.knowledge_tools import knowledge_tools  # they import this module's helpers

    tools += knowledge_tools(gm, lock) + graph_tools(gm, lock) + document_tools(gm, lock)
    server: MCPServer = MCPServer(
        SERVER_NAME,
        title="graphmem memory store",
        instructions=INSTRUCTIONS,
        version=graphmem_version(),
        tools=tools,
        # MCPServer configures the root logger (on stderr, so stdio stays clean) at this level.
        log_level=_LOG_LEVELS[gm.settings.log_level],
    )
    return server


def serve_stdio(gm: GraphMemory) -> None:
    """Serve `gm` over stdin/stdout until the client closes stdin (blocks).

    Closing stdin is how an MCP client stops a stdio server; then this returns and the caller closes
    the store. No signal handling is added: the SDK's stdin reader runs on a worker thread that a
    signal cannot interrupt, so a handler could not make the process exit any sooner. Nothing but
    MCP messages may go to stdout; logs go to stderr.
    """
    anyio.run(build_server(gm).run_stdio_async)
