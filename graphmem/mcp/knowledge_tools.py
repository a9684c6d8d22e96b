"""MCP tools for knowledge over time: lifecycle, engineering records, canonical knowledge, project
context, as-of recall, timelines, citations, verification and drift.

Same rules as the memory tools: each calls exactly one MemoryAPI method and returns its pydantic
model, or (for the tools that return memories or hits) that model shown compact or full;
arguments are strict; graphmem errors become tool errors in `tooling.guard`."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Annotated

from mcp.server.mcpserver import Context
from mcp.server.mcpserver.tools import Tool
from mcp.types import CallToolResult
from pydantic import Field

from graphmem.knowledge.models import (
    BankView,
    BankViewName,
    Citation,
    DecisionStatus,
    DriftReport,
    ProjectContext,
    Severity,
    Timeline,
    VerifyStatus,
)
from graphmem.mcp.args import (
    ContextArg,
    DetailArg,
    Id,
    IdempotencyKey,
    KindArg,
    ServiceArg,
    Tags,
    Title,
    TypeArg,
    given,
    store_call,
)
from graphmem.mcp.knowledge_text import (
    BANK_VIEW,
    CANDIDATES,
    CITE,
    DRIFT,
    LIST_CANONICAL,
    MARK_OUTDATED,
    MERGE,
    PROJECT_CONTEXT,
    PROMOTE,
    RECALL_AS_OF,
    RECALL_CANONICAL,
    SEARCH_RUNBOOKS,
    SIMILAR_INCIDENTS,
    STORE_DEAD_END,
    STORE_DECISION,
    STORE_INCIDENT,
    STORE_POSTMORTEM,
    STORE_RUNBOOK,
    TIMELINE,
    VERIFY,
)
from graphmem.mcp.present import shown
from graphmem.mcp.tooling import hints, make_tool
from graphmem.models import Memory, MemoryPage, RecallResult, StoredMemory

if TYPE_CHECKING:
    from graphmem.api import MemoryAPI as GraphMemory

__all__ = ["knowledge_tools"]

# -- argument types --------------------------------------------------------------------------------

Query = Annotated[str, Field(min_length=1, description="What you are looking for, in your words.")]
Limit = Annotated[int, Field(description="How many results at most.")]
Importance = Annotated[
    float | None,
    Field(ge=0.0, le=1.0, description="0..1, how much this should weigh (default 0.6)."),
]
Reason = Annotated[str, Field(min_length=1, description="Why, in one sentence.")]
FilterTags = Annotated[
    list[str] | None, Field(description="Only memories carrying all of these tags.")
]


def knowledge_tools(gm: GraphMemory, lock: threading.Lock) -> list[Tool]:
    """The knowledge tools over `gm`, sharing `lock` with the other tools of the server."""

    def mark_outdated(
        id: Id,
        reason: Reason,
        superseded_by: Annotated[
            str | None, Field(description="Id of the memory that replaces this one.")
        ] = None,
    ) -> Memory:
        return gm.mark_outdated(id, reason=reason, superseded_by=superseded_by)

    def merge_duplicates(
        primary: Annotated[str, Field(description="Id of the memory to keep.")],
        duplicates: Annotated[
            list[str], Field(min_length=1, description="Ids of the copies to merge into it.")
        ],
        reason: Annotated[str | None, Field(description="Why they are the same.")] = None,
    ) -> Memory:
        return gm.merge_duplicates(primary, duplicates, reason=reason)

    def store_decision(
        decision: Annotated[str, Field(min_length=1, description="What was decided.")],
        rationale: Annotated[str, Field(min_length=1, description="Why.")],
        consequences: Annotated[str | None, Field(description="What follows from it.")] = None,
        status: Annotated[DecisionStatus | None, Field(description="Default accepted.")] = None,
        avoids: Annotated[
            list[str] | None, Field(description="Ids of dead ends this decision steers clear of.")
        ] = None,
        title: Title = None,
        tags: Tags = None,
        context: ContextArg = None,
        service: ServiceArg = None,
        importance: Importance = None,
        idempotency_key: IdempotencyKey = None,
        ctx: Context | None = None,
    ) -> StoredMemory:
        return gm.store_decision(
            decision=decision,
            rationale=rationale,
            **given(consequences=consequences, status=status, avoids=avoids, title=title,
                     tags=tags, context=context, service=service, importance=importance),
            **store_call(ctx, idempotency_key),
        )  # fmt: skip

    def store_dead_end(
        attempted_approach: Annotated[str, Field(min_length=1, description="What was tried.")],
        why_failed: Annotated[str, Field(min_length=1, description="Why it did not work.")],
        alternative: Annotated[str | None, Field(description="What to do instead.")] = None,
        title: Title = None,
        tags: Tags = None,
        context: ContextArg = None,
        service: ServiceArg = None,
        importance: Importance = None,
        idempotency_key: IdempotencyKey = None,
        ctx: Context | None = None,
    ) -> StoredMemory:
        return gm.store_dead_end(
            attempted_approach=attempted_approach,
            why_failed=why_failed,
            **given(alternative=alternative, title=title, tags=tags, context=context,
                     service=service, importance=importance),
            **store_call(ctx, idempotency_key),
        )  # fmt: skip

    def store_incident(
        summary: Annotated[str, Field(min_length=1, description="What happened.")],
        impact: Annotated[str | None, Field(description="Who or what was affected.")] = None,
        root_cause: Annotated[str | None, Field(description="Why it happened.")] = None,
        resolution: Annotated[str | None, Field(description="How it was fixed.")] = None,
        severity: Annotated[Severity | None, Field(description="sev1 (worst) .. sev4.")] = None,
        occurred_at: Annotated[
            str | None, Field(description="ISO date or date-time it happened (UTC).")
        ] = None,
        title: Title = None,
        tags: Tags = None,
        context: ContextArg = None,
        service: ServiceArg = None,
        importance: Importance = None,
        idempotency_key: IdempotencyKey = None,
        ctx: Context | None = None,
    ) -> StoredMemory:
        return gm.store_incident(
            summary=summary,
            **given(impact=impact, root_cause=root_cause, resolution=resolution,
                     severity=severity, occurred_at=occurred_at, title=title, tags=tags,
                     context=context, service=service, importance=importance),
            **store_call(ctx, idempotency_key),
        )  # fmt: skip

    def store_runbook(
        trigger: Annotated[str, Field(min_length=1, description="When to use this runbook.")],
        steps: Annotated[list[str], Field(min_length=1, description="The steps, in order.")],
        verification: Annotated[str | None, Field(description="How to tell it worked.")] = None,
        rollback: Annotated[str | None, Field(description="How to undo it.")] = None,
        cites: Annotated[
            list[str] | None,
            Field(description="Files it relies on, relative to the project root."),
        ] = None,
        title: Title = None,
        tags: Tags = None,
        context: ContextArg = None,
        service: ServiceArg = None,
        importance: Importance = None,
        idempotency_key: IdempotencyKey = None,
        ctx: Context | None = None,
    ) -> StoredMemory:
        return gm.store_runbook(
            trigger=trigger,
            steps=steps,
            **given(verification=verification, rollback=rollback, cites=cites, title=title,
                     tags=tags, context=context, service=service, importance=importance),
            **store_call(ctx, idempotency_key),
        )  # fmt: skip

    def store_postmortem(
        summary: Annotated[str, Field(min_length=1, description="What happened.")],
        root_cause: Annotated[str, Field(min_length=1, description="Why it happened.")],
        action_items: Annotated[list[str] | None, Field(description="Follow-ups.")] = None,
        incident_id: Annotated[str | None, Field(description="Id of the incident.")] = None,
        title: Title = None,
        tags: Tags = None,
        context: ContextArg = None,
        service: ServiceArg = None,
        importance: Importance = None,
        idempotency_key: IdempotencyKey = None,
        ctx: Context | None = None,
    ) -> StoredMemory:
        return gm.store_postmortem(
            summary=summary,
            root_cause=root_cause,
            **given(action_items=action_items, incident_id=incident_id, title=title, tags=tags,
                     context=context, service=service, importance=importance),
            **store_call(ctx, idempotency_key),
        )  # fmt: skip

    def search_runbooks(
        query: Query, limit: Limit = 5, detail: DetailArg = "compact"
    ) -> Annotated[CallToolResult, RecallResult]:
        return shown(gm.search_runbooks(query, limit=limit), detail)

    def recall_similar_incidents(
        query: Query, limit: Limit = 5, detail: DetailArg = "compact"
    ) -> Annotated[CallToolResult, RecallResult]:
        return shown(gm.recall_similar_incidents(query, limit=limit), detail)

    def promote_to_canonical(
        id: Id,
        owner: Annotated[
            str, Field(min_length=1, description="Who keeps it true: a person or a team.")
        ],
    ) -> Memory:
        return gm.promote_to_canonical(id, owner=owner)

    def list_canonical_knowledge(
        context: ContextArg = None, limit: Limit = 50, detail: DetailArg = "compact"
    ) -> Annotated[CallToolResult, MemoryPage]:
        return shown(gm.list_canonical_knowledge(context=context, limit=limit), detail)

    def recall_canonical_knowledge(
        query: Query, limit: Limit = 10, detail: DetailArg = "compact"
    ) -> Annotated[CallToolResult, RecallResult]:
        return shown(gm.recall_canonical_knowledge(query, limit=limit), detail)

    def summarize_project_context(
        context: ContextArg = None, limit: Limit = 10, detail: DetailArg = "compact"
    ) -> Annotated[CallToolResult, ProjectContext]:
        return shown(gm.summarize_project_context(context=context, limit=limit), detail)

    def project_bank_view(
        view: Annotated[BankViewName, Field(description="Which view.")],
        context: ContextArg = None,
        limit: Limit = 50,
        detail: DetailArg = "compact",
    ) -> Annotated[CallToolResult, BankView]:
        return shown(gm.project_bank_view(view, context=context, limit=limit), detail)

    def recall_as_of(
        query: Query,
        as_of: Annotated[
            str, Field(min_length=1, description='ISO date or date-time (UTC), e.g. "2024-03-01".')
        ],
        limit: Limit = 10,
        type: TypeArg = None,
        kind: KindArg = None,
        context: ContextArg = None,
        service: ServiceArg = None,
        tags: FilterTags = None,
        detail: DetailArg = "compact",
    ) -> Annotated[CallToolResult, RecallResult]:
        filters = given(type=type, kind=kind, context=context, service=service, tags=tags)
        found = gm.recall_as_of(query, as_of=as_of, limit=limit, filters=filters or None)
        return shown(found, detail)

    def knowledge_timeline(
        query: Annotated[
            str | None, Field(min_length=1, description="Find the knowledge by words.")
        ] = None,
        id: Annotated[str | None, Field(description="Or start from this memory id.")] = None,
        detail: DetailArg = "compact",
    ) -> Annotated[CallToolResult, Timeline]:
        return shown(gm.knowledge_timeline(query, memory_id=id), detail)

    def cite_source(
        id: Id,
        path: Annotated[
            str, Field(min_length=1, description="File path relative to the project root.")
        ],
        section: Annotated[
            str | None, Field(description="Part of the file, e.g. a heading.")
        ] = None,
    ) -> Citation:
        return gm.cite_source(id, path, section=section)

    def verify_entry(
        id: Id,
        method: Annotated[str, Field(min_length=1, description="How you checked it.")],
        status: Annotated[VerifyStatus, Field(description="The outcome.")],
        note: Annotated[str | None, Field(description="What you found.")] = None,
    ) -> Memory:
        return gm.verify_entry(id, method=method, status=status, note=note)

    def verification_candidates(
        days: Annotated[int, Field(ge=0, description="Not verified for this many days.")] = 90,
        min_importance: Annotated[
            float, Field(ge=0.0, le=1.0, description="Only memories at least this important.")
        ] = 0.7,
        limit: Limit = 50,
        detail: DetailArg = "compact",
    ) -> Annotated[CallToolResult, MemoryPage]:
        due = gm.verification_candidates(days=days, min_importance=min_importance, limit=limit)
        return shown(due, detail)

    def drift_scan() -> DriftReport:
        return gm.drift_scan()

    return [
        make_tool(lock, mark_outdated, MARK_OUTDATED,
              hints("Mark a memory outdated", destructive=True, idempotent=False)),
        make_tool(lock, merge_duplicates, MERGE,
              hints("Merge duplicates", destructive=True, idempotent=False)),
        make_tool(lock, store_decision, STORE_DECISION,
              hints("Store a decision", idempotent=False)),
        make_tool(lock, store_dead_end, STORE_DEAD_END,
              hints("Store a dead end", idempotent=False)),
        make_tool(lock, store_incident, STORE_INCIDENT,
              hints("Store an incident", idempotent=False)),
        make_tool(lock, store_runbook, STORE_RUNBOOK,
              hints("Store a runbook", idempotent=False)),
        make_tool(lock, store_postmortem, STORE_POSTMORTEM,
              hints("Store a postmortem", idempotent=False)),
        make_tool(lock, search_runbooks, SEARCH_RUNBOOKS, hints("Search runbooks")),
        make_tool(lock, recall_similar_incidents, SIMILAR_INCIDENTS, hints("Similar incidents")),
        make_tool(lock, promote_to_canonical, PROMOTE, hints("Promote to canonical")),
        make_tool(lock, list_canonical_knowledge, LIST_CANONICAL, hints("List canonical knowledge")),
        make_tool(lock, recall_canonical_knowledge, RECALL_CANONICAL,
              hints("Recall canonical knowledge")),
        make_tool(lock, summarize_project_context, PROJECT_CONTEXT,
              hints("Summarize project context")),
        make_tool(lock, project_bank_view, BANK_VIEW, hints("Project bank view")),
        make_tool(lock, recall_as_of, RECALL_AS_OF, hints("Recall as of a date")),
        make_tool(lock, knowledge_timeline, TIMELINE, hints("Knowledge timeline")),
        make_tool(lock, cite_source, CITE, hints("Cite a source file")),
        make_tool(lock, verify_entry, VERIFY, hints("Verify a memory")),
        make_tool(lock, verification_candidates, CANDIDATES, hints("Verification candidates")),
        make_tool(lock, drift_scan, DRIFT, hints("Scan cited sources for drift")),
    ]  # fmt: skip
