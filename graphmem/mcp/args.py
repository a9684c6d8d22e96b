"""Argument types shared by the MCP tools: their descriptions become the tools' input schemas, so
they are written for the model that calls the tools."""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import Field

from graphmem.models import MemoryKind, MemoryType

if TYPE_CHECKING:
    from mcp.server.mcpserver import Context

__all__ = [
    "Content",
    "ContextArg",
    "Detail",
    "DetailArg",
    "Id",
    "IdempotencyKey",
    "Importance",
    "KindArg",
    "Metadata",
    "ServiceArg",
    "Tags",
    "Title",
    "TypeArg",
    "given",
    "store_call",
]

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

Detail = Literal["compact", "full"]
DetailArg = Annotated[
    Detail,
    Field(
        description="compact (default): per memory its id, kind, title, content (cut at 300 "
        "characters), score and only the fields that are set; full: whole records."
    ),
]


def given(**values: Any) -> dict[str, Any]:
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
    return {**given(idempotency_key=idempotency_key), "client_session": session}
