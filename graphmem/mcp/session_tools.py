"""MCP tools for sessions and the review queue: close a session with its summary, and review what
it proposed. Same rules as the other tools: one MemoryAPI call each, strict arguments."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Annotated, Literal

from mcp.server.mcpserver.tools import Tool
from pydantic import Field

from graphmem.mcp.args import ContextArg, ServiceArg
from graphmem.mcp.tooling import hints, make_tool
from graphmem.sessions.models import ResolveReport, ReviewQueue, SessionMode, SessionPlan

if TYPE_CHECKING:
    from graphmem.api import MemoryAPI as GraphMemory

__all__ = ["session_tools"]

CLOSE = """\
At the end of a session, hand over its summary: what you decided (and why), what failed, what \
you learnt, runbook steps, caveats, to-dos; one per bullet, in words that stand alone. graphmem \
plans one action per statement against what it already holds (new, update, merge_into, \
supersede, promote, raw_only), each with a risk and a one-line rationale. `dry_run` (the \
default) only returns the plan; with `dry_run=false` the summary is kept as the session's \
memory, low-risk actions apply when `auto_apply_low_risk` (as the session's mode allows: a \
research session applies nothing, an incident never merges) and the rest wait in the review \
queue.

Example: {"summary": "- We decided to keep sessions in Postgres (Redis evicted them)\\n- Tried \
pgbouncer in transaction mode but it didn't work", "dry_run": false, "auto_apply_low_risk": true}"""

REVIEW = """\
List the review queue: changes closed sessions proposed but did not apply (oldest first), each \
with its action, risk, statement, target memory and rationale, and how many are pending in all."""

RESOLVE = """\
Resolve one review item: `accept` applies its change, `reject` and `defer` only record it (a \
rejected change is never proposed again). Returns the item and the memories changed."""

ACCEPT = """\
Accept review items (apply their changes): the `items` given, or every pending item of \
`session`."""

RESOLVE_QUEUE = """\
Resolve every pending review item the filters select (session, change, risk). With `dry_run` \
(the default) it only lists them."""

Resolution = Annotated[
    Literal["accept", "reject", "defer"], Field(description="accept applies the change.")
]
SessionArg = Annotated[str | None, Field(description="A session's id (from close_session).")]


def session_tools(gm: GraphMemory, lock: threading.Lock) -> list[Tool]:
    """The session tools over `gm`, sharing `lock` with the other tools of the server."""

    def close_session(
        summary: Annotated[
            str, Field(min_length=1, description="What the session did and learnt.")
        ],
        mode: Annotated[
            SessionMode | None, Field(description="Inferred from the summary when not given.")
        ] = None,
        context: ContextArg = None,
        service: ServiceArg = None,
        session_id: Annotated[
            str | None, Field(description="Your id for the session (closing it again is safe).")
        ] = None,
        dry_run: Annotated[bool, Field(description="Only plan (default).")] = True,
        auto_apply_low_risk: Annotated[
            bool, Field(description="Apply what the mode lets apply without review.")
        ] = False,
    ) -> SessionPlan:
        return gm.close_session(
            summary, mode=mode, context=context, service=service, session_id=session_id,
            dry_run=dry_run, auto_apply_low_risk=auto_apply_low_risk, client="mcp",
        )  # fmt: skip

    def review_session_changes(
        session: SessionArg = None,
        status: Annotated[
            Literal["pending", "accepted", "rejected", "deferred"] | None,
            Field(description="Default pending; null for all."),
        ] = "pending",
        change: Annotated[
            str | None, Field(description="Only this kind of change, e.g. supersede.")
        ] = None,
        limit: Annotated[int, Field(description="Items at most.")] = 50,
    ) -> ReviewQueue:
        return gm.review_session_changes(session=session, status=status, action=change, limit=limit)

    def resolve_review_item(
        id: Annotated[str, Field(min_length=1, description="The review item's id.")],
        resolution: Resolution,
        note: Annotated[str | None, Field(description="Why, kept on the item.")] = None,
    ) -> ResolveReport:
        return gm.resolve_review_item(id, resolution, note, actor="mcp")

    def accept_session_changes(
        session: SessionArg = None,
        items: Annotated[list[str] | None, Field(description="Review item ids.")] = None,
    ) -> ResolveReport:
        return gm.accept_session_changes(session=session, items=items, actor="mcp")

    def resolve_review_queue(
        resolution: Resolution,
        session: SessionArg = None,
        change: Annotated[str | None, Field(description="Only this kind of change.")] = None,
        risk: Annotated[
            Literal["auto", "soft", "hard"] | None, Field(description="Only this risk.")
        ] = None,
        note: Annotated[str | None, Field(description="Why, kept on each item.")] = None,
        dry_run: Annotated[bool, Field(description="Only list them (default).")] = True,
    ) -> ResolveReport:
        return gm.resolve_review_queue(
            resolution, session=session, action=change, risk=risk, note=note, dry_run=dry_run,
            actor="mcp",
        )  # fmt: skip

    return [
        make_tool(lock, close_session, CLOSE,
                  hints("Close a session", idempotent=False)),
        make_tool(lock, review_session_changes, REVIEW, hints("Review queue")),
        make_tool(lock, resolve_review_item, RESOLVE, hints("Resolve a review item")),
        make_tool(lock, accept_session_changes, ACCEPT,
                  hints("Accept review items")),
        make_tool(lock, resolve_review_queue, RESOLVE_QUEUE,
                  hints("Resolve the review queue")),
    ]  # fmt: skip
