"""Compact MCP results: what an agent needs to act on a hit, without the fields it already knows
(defaults, nulls, bookkeeping). Every result and every hit sits in the agent's context, so the
MCP tools send these by default; `detail="full"` sends the API's own models instead.

Rules (docs/mcp-tools.md#compact-and-full-results):

- a memory is its `id`, `kind`, `content` (cut at CONTENT_CHARS characters at a word boundary,
  then `truncated: true`: get_memory has it whole), `created` (the UTC day) and `title` unless the
  content already says it;
- `tags`, `context`, `service`, `owner`, `valid_to`, `verified_at` and `verify_status` come only
  when set, `lifecycle` only when not active, `superseded_by` only when there is a successor;
- search results keep the score, warnings and whatever says how the hits were found (`degraded`,
  `scope`) only when it is not the usual.

Presentation only: the hits, their order and their scores are the API's.
"""

from __future__ import annotations

from datetime import date
from typing import Any, Literal

from pydantic import Field
from pydantic.json_schema import SkipJsonSchema

from graphmem.documents.models import DocSearchResult
from graphmem.graph.models import MultiHopHit, MultiHopResult, MultiHopSection
from graphmem.knowledge.models import BankView, BankViewName, ProjectContext, Timeline
from graphmem.models import (
    DocHit,
    Hit,
    Lifecycle,
    Memory,
    MemoryKind,
    MemoryPage,
    Model,
    RecallResult,
    RecallScope,
    RecallWarning,
    UtcDateTime,
)

__all__ = [
    "CONTENT_CHARS",
    "CompactBankView",
    "CompactDocSearch",
    "CompactMemory",
    "CompactMultiHop",
    "CompactPage",
    "CompactProjectContext",
    "CompactRecall",
    "CompactTimeline",
    "clip",
    "compact_memory",
]

CONTENT_CHARS = 300

# A field that is left out, never null: the schema says "string" (or ...), not "string or null".
_Unset = SkipJsonSchema[None]


class CompactMemory(Model):
    """A memory in a compact result; get_memory returns the whole record."""

    id: str
    kind: MemoryKind
    title: str | _Unset = Field(default=None, description="when the content does not say it")
    content: str = Field(description=f"cut at {CONTENT_CHARS} characters when longer")
    truncated: bool | _Unset = Field(default=None, description="content was cut")
    created: date = Field(description="the day it was recorded or happened (UTC)")
    tags: list[str] | _Unset = None
    context: str | _Unset = None
    service: str | _Unset = None
    lifecycle: Lifecycle | _Unset = Field(default=None, description="when not active")
    owner: str | _Unset = None
    valid_to: UtcDateTime | _Unset = None
    verified_at: UtcDateTime | _Unset = None
    verify_status: str | _Unset = None


class CompactHit(CompactMemory):
    """A recall hit: the memory, compact, with its score."""

    score: float
    superseded_by: str | _Unset = Field(default=None, description="the newest version of it")
    explain: dict[str, Any] | _Unset = None


class CompactWarning(Model):
    kind: Literal["dead_end", "degraded", "missing_vectors", "backlog"]
    message: str
    id: str | _Unset = Field(default=None, description="the dead end's memory id")


class CompactDocHit(Model):
    """A section of an indexed document; expand_section(path, section_key) reads it whole."""

    path: str
    section_key: str
    section: str = Field(description="document title > headings")
    source_type: str
    lines: list[int]
    snippet: str
    score: float
    explain: dict[str, Any] | _Unset = None


class CompactScoped(Model):
    source: Literal["memory", "section"]
    score: float
    memory: CompactHit | _Unset = None
    section: CompactDocHit | _Unset = None


class CompactRecall(Model):
    query: str
    hits: list[CompactHit] | _Unset = Field(default=None, description="scope memories")
    sections: list[CompactDocHit] | _Unset = Field(default=None, description="scope docs")
    ranking: list[CompactScoped] | _Unset = Field(default=None, description="scope all")
    warnings: list[CompactWarning] | _Unset = None
    degraded: bool | _Unset = Field(default=None, description="keyword-only hits")
    scope: RecallScope | _Unset = Field(default=None, description="when not memories")


class CompactPage(Model):
    memories: list[CompactMemory]
    next_cursor: str | _Unset = Field(default=None, description="pass it back as cursor")


class CompactEntry(CompactMemory):
    superseded_by: str | _Unset = None
    superseded_at: UtcDateTime | _Unset = None
    reason: str | _Unset = None


class CompactDocument(Model):
    path: str
    title: str
    superseded_by: str | _Unset = None


class CompactTimeline(Model):
    anchor_id: str
    entries: list[CompactEntry]
    documents: list[CompactDocument] | _Unset = None


class CompactProjectContext(Model):
    context: str | _Unset = None
    canonical: list[CompactMemory]
    recent: list[CompactMemory]
    counts: dict[str, int]


class CompactBankView(Model):
    view: BankViewName
    memories: list[CompactMemory]


class CompactStep(CompactHit):
    seed: bool | _Unset = Field(default=None, description="a recall hit the walk started from")
    hops: int | _Unset = None
    path_text: str | _Unset = Field(default=None, description="the chain that reached it")


class CompactLinkedSection(Model):
    path: str
    section_key: str
    section: str
    score: float
    route_text: str


class CompactMultiHop(Model):
    query: str
    hits: list[CompactStep]
    sections: list[CompactLinkedSection] | _Unset = None
    warnings: list[CompactWarning] | _Unset = None


# -- from the API's models -------------------------------------------------------------------------


def clip(text: str, limit: int = CONTENT_CHARS) -> tuple[str, bool]:
    """`text`, or its first `limit` characters cut at a word boundary plus "…"; and whether cut."""
    if len(text) <= limit:
        return text, False
    cut = text[:limit]
    space = cut.rfind(" ")
    if space > limit * 2 // 3:
        cut = cut[:space]
    return cut.rstrip() + "…", True


def said_in(title: str, content: str) -> bool:
    """Whether the content already says the title (records title themselves "Runbook: <trigger>"
    from a line of their content), so showing both would say it twice."""
    head = title.split(": ", 1)[-1].strip().lower()
    return bool(head) and head in content.lower()


def _memory_fields(m: Memory) -> dict[str, Any]:
    content, cut = clip(m.content)
    return {
        "id": m.id,
        "kind": m.kind,
        "title": m.title if m.title and not said_in(m.title, content) else None,
        "content": content,
        "truncated": cut or None,
        "created": m.created_at.date(),
        "tags": m.tags or None,
        "context": m.context,
        "service": m.service,
        "lifecycle": None if m.lifecycle == "active" else m.lifecycle,
        "owner": m.owner,
        "valid_to": m.valid_to,
        "verified_at": m.verified_at,
        "verify_status": m.verify_status,
    }


def compact_memory(m: Memory) -> CompactMemory:
    return CompactMemory(**_memory_fields(m))


def _hit(h: Hit) -> CompactHit:
    return CompactHit(
        **_memory_fields(h.memory),
        score=round(h.score, 4),
        superseded_by=h.superseded_by,
        explain=h.explain,
    )


def _doc_hit(h: DocHit) -> CompactDocHit:
    return CompactDocHit(
        path=h.path,
        section_key=h.section_key,
        section=" > ".join(h.breadcrumb) or h.title,
        source_type=h.source_type,
        lines=h.lines,
        snippet=clip(h.snippet)[0],
        score=round(h.score, 4),
        explain=h.explain,
    )


def _warnings(warnings: list[RecallWarning]) -> list[CompactWarning] | None:
    shown = [
        CompactWarning(kind=w.kind, message=w.message, id=w.memory.id if w.memory else None)
        for w in warnings
    ]
    return shown or None


def compact_recall(r: RecallResult) -> CompactRecall:
    ranking = [
        CompactScoped(
            source=item.source,
            score=round(item.score, 4),
            memory=_hit(item.memory) if item.memory else None,
            section=_doc_hit(item.section) if item.section else None,
        )
        for item in r.ranking
    ]
    return CompactRecall(
        query=r.query,
        hits=[_hit(h) for h in r.hits] if r.scope == "memories" else None,
        sections=[_doc_hit(h) for h in r.sections] if r.scope == "docs" else None,
        ranking=ranking if r.scope == "all" else None,
        warnings=_warnings(r.warnings),
        degraded=r.degraded or None,
        scope=None if r.scope == "memories" else r.scope,
    )


def compact_page(p: MemoryPage) -> CompactPage:
    return CompactPage(memories=[compact_memory(m) for m in p.memories], next_cursor=p.next_cursor)


def compact_timeline(t: Timeline) -> CompactTimeline:
    return CompactTimeline(
        anchor_id=t.anchor_id,
        entries=[
            CompactEntry(
                **_memory_fields(e.memory),
                superseded_by=e.superseded_by,
                superseded_at=e.superseded_at,
                reason=e.reason,
            )
            for e in t.entries
        ],
        documents=[
            CompactDocument(path=d.path, title=d.title, superseded_by=d.superseded_by)
            for d in t.documents
        ]
        or None,
    )


def compact_context(c: ProjectContext) -> CompactProjectContext:
    return CompactProjectContext(
        context=c.context,
        canonical=[compact_memory(m) for m in c.canonical],
        recent=[compact_memory(m) for m in c.recent],
        counts=c.counts,
    )


def compact_bank(b: BankView) -> CompactBankView:
    return CompactBankView(view=b.view, memories=[compact_memory(m) for m in b.memories])


def _step(h: MultiHopHit) -> CompactStep:
    return CompactStep(
        **_hit(h).model_dump(exclude_none=True),
        seed=h.seed or None,
        hops=h.hops,
        path_text=h.path_text or None,
    )


def _linked(s: MultiHopSection) -> CompactLinkedSection:
    return CompactLinkedSection(
        path=s.path,
        section_key=s.section_key,
        section=" > ".join(s.breadcrumb) or s.title,
        score=round(s.score, 4),
        route_text=s.route_text,
    )


def compact_multihop(r: MultiHopResult) -> CompactMultiHop:
    return CompactMultiHop(
        query=r.query,
        hits=[_step(h) for h in r.hits],
        sections=[_linked(s) for s in r.sections] or None,
        warnings=_warnings(r.warnings),
    )


class CompactDocSearch(Model):
    query: str
    hits: list[CompactDocHit]
    degraded: bool | _Unset = Field(default=None, description="keyword-only hits")
    warnings: list[str] | _Unset = None


def compact_docs(r: DocSearchResult) -> CompactDocSearch:
    return CompactDocSearch(
        query=r.query,
        hits=[_doc_hit(h) for h in r.hits],
        degraded=r.degraded or None,
        warnings=r.warnings or None,
    )
