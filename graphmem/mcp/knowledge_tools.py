"""MCP tools for knowledge over time: lifecycle, engineering records, canonical knowledge, project
context, as-of recall, timelines, citations, verification and drift.

Same rules as the tools in `server.py`: each calls exactly one MemoryAPI method and returns its
pydantic model; arguments are strict; graphmem errors become tool errors in `_guard`."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Annotated

from mcp.server.mcpserver import Context
from mcp.server.mcpserver.tools import Tool
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
from graphmem.mcp.server import (
    ContextArg,
    Id,
    IdempotencyKey,
    KindArg,
    ServiceArg,
    Tags,
    Title,
    TypeArg,
    _given,
    _hints,
    _tool,
    store_call,
)
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

# -- descriptions (written for the model that calls the tools) -------------------------------------

MARK_OUTDATED = """\
Retire a memory that is no longer true, keeping it in history. Give `superseded_by` (the id of \
the memory that replaces it, usually one you just stored) to link old -> new: the old one becomes \
`superseded`, recall then points at the successor and knowledge_timeline shows both. Without it \
the memory becomes `outdated`. Either way its validity ends, so recall_as_of keeps it for the past \
only. Prefer this over delete_memory for anything that was once true. Returns the retired memory.

Example: {"id": "<old decision>", "reason": "moved sessions to Postgres", "superseded_by": "<new>"}"""

MERGE = """\
Merge near-duplicate memories into one: `primary` is kept, each of `duplicates` is archived and \
linked to it (MERGED_INTO), so recall stops returning the copies. Returns the primary memory."""

STORE_DECISION = """\
Record a decision with its rationale, so later sessions know what was decided and why instead of \
re-deciding. Use `avoids` to name dead ends (ids) this decision steers clear of. When it replaces \
an older decision, store this one, then mark_outdated(old, superseded_by=<this id>). Returns the \
stored memory (kind decision).

Example: {"decision": "Sessions live in Postgres", "rationale": "Redis eviction lost sessions \
under load", "consequences": "one less service to run", "tags": ["auth"], "service": "web"}"""

STORE_DEAD_END = """\
When an approach failed, record it with store_dead_end so nobody tries it again: what was \
attempted, why it failed, and what to do instead. Recall shows dead ends as warnings next to \
related results. Returns the stored memory (kind dead_end).

Example: {"attempted_approach": "Cache JWTs in localStorage", "why_failed": "XSS can read them", \
"alternative": "httpOnly cookies"}"""

STORE_INCIDENT = """\
Record an incident (outage, data problem, broken deploy): summary, impact, root cause, resolution, \
severity (sev1 worst .. sev4) and when it happened. recall_similar_incidents finds it when the \
symptoms come back. Returns the stored memory (kind incident)."""

STORE_RUNBOOK = """\
Record a runbook: when to use it (`trigger`) and the ordered `steps`, with how to verify and roll \
back. `cites` lists project files the runbook relies on (paths relative to the project root); \
drift_scan reports when they change. Returns the stored memory (kind runbook).

Example: {"trigger": "disk full on the db host", "steps": ["run scripts/prune_wal.sh", \
"restart postgres"], "verification": "df -h shows < 80%", "cites": ["scripts/prune_wal.sh"]}"""

STORE_POSTMORTEM = """\
Record a postmortem after an incident: summary, root cause and action items; `incident_id` links \
it to the incident memory. Returns the stored memory (kind postmortem)."""

SEARCH_RUNBOOKS = """\
Find runbooks for a situation (an alert, a task such as "rotate the TLS certificate"). Call it \
before doing operational work by hand. Returns hits best first, like recall_memory."""

SIMILAR_INCIDENTS = """\
Find past incidents similar to what you see now (an error message, a symptom). Call it when \
something breaks: an earlier root cause and resolution may apply. Returns hits best first."""

PROMOTE = """\
Promote a memory to canonical knowledge: the reviewed, authoritative statement on its topic, \
kept true by `owner` (a person or team). Canonical memories come first in \
summarize_project_context. Returns the promoted memory."""

LIST_CANONICAL = """\
List canonical knowledge, optionally for one `context`. Returns `memories` (no ranking)."""

RECALL_CANONICAL = """\
Search canonical knowledge only: the authoritative answer, when you do not want notes, incidents \
or stale memories in the results. Returns hits best first."""

PROJECT_CONTEXT = """\
Before starting work, call summarize_project_context: canonical knowledge first (what is true \
and who owns it), then what happened lately, with counts by kind. Give `context` to narrow it to \
one project area. Returns {context, canonical, recent, counts}."""

BANK_VIEW = """\
One view of the project's memory bank: decisions, runbooks, incidents, caveats, migrations, \
dead_ends, canonical_overview, or review_queue (what needs verification or review). Returns \
{view, memories}."""

RECALL_AS_OF = """\
Recall what was known at a past moment: only memories valid then (valid_from <= as_of < \
valid_to) and recorded before it, including ones superseded since. Use it to understand why \
something was done at the time. `as_of` is an ISO date or date-time (UTC), e.g. "2024-03-01".

Example: {"query": "session storage", "as_of": "2024-02-01"}"""

TIMELINE = """\
Show how one piece of knowledge changed: every version, oldest first, with when and why each was \
superseded or outdated. Give either `query` (finds the knowledge by words) or `id`, not both. \
Returns {anchor_id, entries: [{memory, superseded_by, superseded_at, reason}]}."""

CITE = """\
Record that a memory relies on a file (`path` relative to the project root, `./` optional; the \
file must exist), with an optional `section`. The file's sha256 is kept, so drift_scan can tell when the source \
changed or was deleted. Returns the citation."""

VERIFY = """\
Record that you checked a memory against reality: how (`method`, e.g. "read src/auth.py", "ran \
the test suite") and the outcome: verified, failed (it is wrong) or needs_update (partly wrong). \
`verified` also records the current hashes of the files it cites, clearing their drift. Returns \
the memory."""

CANDIDATES = """\
List memories due for verification: canonical or at least `min_importance` important, and not \
verified in the last `days` days. Check them (read the code, run the command), then call \
verify_entry."""

DRIFT = """\
Check every cited file against the sha256 recorded when it was cited or last verified. Returns \
{checked, items}: each item names the memory, the path and whether the source changed or is \
missing. Re-check those memories, then verify_entry or mark_outdated them."""


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
            **_given(consequences=consequences, status=status, avoids=avoids, title=title,
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
            **_given(alternative=alternative, title=title, tags=tags, context=context,
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
            **_given(impact=impact, root_cause=root_cause, resolution=resolution,
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
            **_given(verification=verification, rollback=rollback, cites=cites, title=title,
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
            **_given(action_items=action_items, incident_id=incident_id, title=title, tags=tags,
                     context=context, service=service, importance=importance),
            **store_call(ctx, idempotency_key),
        )  # fmt: skip

    def search_runbooks(query: Query, limit: Limit = 5) -> RecallResult:
        return gm.search_runbooks(query, limit=limit)

    def recall_similar_incidents(query: Query, limit: Limit = 5) -> RecallResult:
        return gm.recall_similar_incidents(query, limit=limit)

    def promote_to_canonical(
        id: Id,
        owner: Annotated[
            str, Field(min_length=1, description="Who keeps it true: a person or a team.")
        ],
    ) -> Memory:
        return gm.promote_to_canonical(id, owner=owner)

    def list_canonical_knowledge(context: ContextArg = None, limit: Limit = 50) -> MemoryPage:
        return gm.list_canonical_knowledge(context=context, limit=limit)

    def recall_canonical_knowledge(query: Query, limit: Limit = 10) -> RecallResult:
        return gm.recall_canonical_knowledge(query, limit=limit)

    def summarize_project_context(context: ContextArg = None, limit: Limit = 10) -> ProjectContext:
        return gm.summarize_project_context(context=context, limit=limit)

    def project_bank_view(
        view: Annotated[BankViewName, Field(description="Which view.")],
        context: ContextArg = None,
        limit: Limit = 50,
    ) -> BankView:
        return gm.project_bank_view(view, context=context, limit=limit)

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
    ) -> RecallResult:
        filters = _given(type=type, kind=kind, context=context, service=service, tags=tags)
        return gm.recall_as_of(query, as_of=as_of, limit=limit, filters=filters or None)

    def knowledge_timeline(
        query: Annotated[
            str | None, Field(min_length=1, description="Find the knowledge by words.")
        ] = None,
        id: Annotated[str | None, Field(description="Or start from this memory id.")] = None,
    ) -> Timeline:
        return gm.knowledge_timeline(query, memory_id=id)

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
    ) -> MemoryPage:
        return gm.verification_candidates(days=days, min_importance=min_importance, limit=limit)

    def drift_scan() -> DriftReport:
        return gm.drift_scan()

    return [
        _tool(lock, mark_outdated, MARK_OUTDATED,
              _hints("Mark a memory outdated", writes=True, destructive=True, idempotent=False)),
        _tool(lock, merge_duplicates, MERGE,
              _hints("Merge duplicates", writes=True, destructive=True, idempotent=False)),
        _tool(lock, store_decision, STORE_DECISION,
              _hints("Store a decision", writes=True, idempotent=False)),
        _tool(lock, store_dead_end, STORE_DEAD_END,
              _hints("Store a dead end", writes=True, idempotent=False)),
        _tool(lock, store_incident, STORE_INCIDENT,
              _hints("Store an incident", writes=True, idempotent=False)),
        _tool(lock, store_runbook, STORE_RUNBOOK,
              _hints("Store a runbook", writes=True, idempotent=False)),
        _tool(lock, store_postmortem, STORE_POSTMORTEM,
              _hints("Store a postmortem", writes=True, idempotent=False)),
        _tool(lock, search_runbooks, SEARCH_RUNBOOKS, _hints("Search runbooks")),
        _tool(lock, recall_similar_incidents, SIMILAR_INCIDENTS, _hints("Similar incidents")),
        _tool(lock, promote_to_canonical, PROMOTE, _hints("Promote to canonical", writes=True)),
        _tool(lock, list_canonical_knowledge, LIST_CANONICAL, _hints("List canonical knowledge")),
        _tool(lock, recall_canonical_knowledge, RECALL_CANONICAL,
              _hints("Recall canonical knowledge")),
        _tool(lock, summarize_project_context, PROJECT_CONTEXT,
              _hints("Summarize project context")),
        _tool(lock, project_bank_view, BANK_VIEW, _hints("Project bank view")),
        _tool(lock, recall_as_of, RECALL_AS_OF, _hints("Recall as of a date")),
        _tool(lock, knowledge_timeline, TIMELINE, _hints("Knowledge timeline")),
        _tool(lock, cite_source, CITE, _hints("Cite a source file", writes=True)),
        _tool(lock, verify_entry, VERIFY, _hints("Verify a memory", writes=True)),
        _tool(lock, verification_candidates, CANDIDATES, _hints("Verification candidates")),
        _tool(lock, drift_scan, DRIFT, _hints("Scan cited sources for drift")),
    ]  # fmt: skip
