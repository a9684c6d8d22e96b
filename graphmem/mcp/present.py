"""How a tool result reaches the client: `shown(result, detail)` builds the CallToolResult of the
tools that return memories or hits. `compact` (the default) sends the compact model
(graphmem/mcp/compact.py) as structured content and a few short lines as text, one per hit; `full`
sends the API's model and its JSON, as every tool did before.

The SDK would put the structured content's JSON in the text block too: the agent would read every
result twice. The lines say what the JSON says, in a third of the bytes or less.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import pydantic_core
from mcp.types import CallToolResult, TextContent
from pydantic import BaseModel

from graphmem.documents.models import DocSearchResult
from graphmem.graph.models import MultiHopResult
from graphmem.knowledge.models import BankView, ProjectContext, Timeline
from graphmem.mcp.args import Detail
from graphmem.mcp.compact import (
    CompactBankView,
    CompactDocHit,
    CompactDocSearch,
    CompactMemory,
    CompactMultiHop,
    CompactPage,
    CompactProjectContext,
    CompactRecall,
    CompactTimeline,
    CompactWarning,
    compact_bank,
    compact_context,
    compact_docs,
    compact_multihop,
    compact_page,
    compact_recall,
    compact_timeline,
)
from graphmem.models import MemoryPage, RecallResult

__all__ = ["FORMS", "Form", "shown"]


@dataclass(frozen=True)
class Form:
    """The compact form of one API model: its type, how to make it, how to write it as text."""

    model: type[BaseModel]
    make: Callable[[Any], BaseModel]
    text: Callable[[Any], str]


def _score(score: float) -> str:
    return f"[{score:.3g}] "


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _memory_line(n: int, m: CompactMemory, score: float | None = None, *extra: str) -> str:
    """`1. [0.93] decision <id> 2026-11-30 — title: content (tags: a, b; ...)`."""
    said = f"{m.title}: {m.content}" if m.title else m.content
    notes = [
        f"tags: {', '.join(m.tags)}" if m.tags else "",
        f"service: {m.service}" if m.service else "",
        f"context: {m.context}" if m.context else "",
        m.lifecycle or "",
        f"owner: {m.owner}" if m.owner else "",
        f"valid to {m.valid_to.date()}" if m.valid_to else "",
        f"verified {m.verify_status}" if m.verify_status else "",
        *extra,
    ]
    noted = "; ".join(note for note in notes if note)
    head = f"{n}. {_score(score) if score is not None else ''}{m.kind} {m.id} {m.created}"
    return f"{head} — {_one_line(said)}" + (f" ({noted})" if noted else "")


def _memory_lines(memories: Iterable[CompactMemory], empty: str = "no memories") -> list[str]:
    lines = [_memory_line(n, m) for n, m in enumerate(memories, start=1)]
    return lines or [empty]


def _section_line(n: int, s: CompactDocHit) -> str:
    where = f"{s.path}#{s.section_key}" if s.section_key else s.path
    lines = f" lines {s.lines[0]}-{s.lines[-1]}" if s.lines else ""
    return f"{n}. {_score(s.score)}{s.source_type} {where}{lines} — {s.section}: " + _one_line(
        s.snippet
    )


def _warning_lines(warnings: list[CompactWarning] | None) -> list[str]:
    return [f"! {_one_line(w.message)}" for w in warnings or []]


def _recall_text(r: CompactRecall) -> str:
    lines: list[str] = []
    for n, hit in enumerate(r.hits or [], start=1):
        onward = f"superseded by {hit.superseded_by}" if hit.superseded_by else ""
        lines.append(_memory_line(n, hit, hit.score, onward))
    lines += [_section_line(n, s) for n, s in enumerate(r.sections or [], start=1)]
    for n, item in enumerate(r.ranking or [], start=1):
        if item.memory is not None:
            lines.append(_memory_line(n, item.memory, item.score))
        elif item.section is not None:
            lines.append(_section_line(n, item.section.model_copy(update={"score": item.score})))
    if not lines:
        lines.append("no hits")
    return "\n".join(lines + _warning_lines(r.warnings))


def _page_text(p: CompactPage) -> str:
    more = [f"next_cursor: {p.next_cursor}"] if p.next_cursor else []
    return "\n".join(_memory_lines(p.memories) + more)


def _timeline_text(t: CompactTimeline) -> str:
    lines = []
    for n, e in enumerate(t.entries, start=1):
        when = f" on {e.superseded_at.date()}" if e.superseded_at else ""
        onward = f"superseded by {e.superseded_by}{when}" if e.superseded_by else ""
        lines.append(_memory_line(n, e, None, onward, f"why: {e.reason}" if e.reason else ""))
    for d in t.documents or []:
        onward = f" (superseded by {d.superseded_by})" if d.superseded_by else ""
        lines.append(f"- document {d.path} — {d.title}{onward}")
    return "\n".join(lines)


def _context_text(c: CompactProjectContext) -> str:
    counts = ", ".join(f"{kind} {n}" for kind, n in c.counts.items())
    canonical, recent = _memory_lines(c.canonical, "none"), _memory_lines(c.recent, "none")
    return "\n".join(["canonical:", *canonical, "recent:", *recent, f"counts: {counts or 'none'}"])


def _bank_text(b: CompactBankView) -> str:
    return "\n".join([f"{b.view}:", *_memory_lines(b.memories)])


def _multihop_text(r: CompactMultiHop) -> str:
    lines = []
    for n, hit in enumerate(r.hits, start=1):
        how = "seed" if hit.seed else f"via {hit.path_text}" if hit.path_text else ""
        lines.append(_memory_line(n, hit, hit.score, how))
    for s in r.sections or []:
        where = f"{s.path}#{s.section_key}" if s.section_key else s.path
        lines.append(f"- section {where} — {s.section} (via {s.route_text})")
    return "\n".join((lines or ["no hits"]) + _warning_lines(r.warnings))


def _docs_text(r: CompactDocSearch) -> str:
    lines = [_section_line(n, s) for n, s in enumerate(r.hits, start=1)] or ["no hits"]
    return "\n".join(lines + [f"! {w}" for w in r.warnings or []])


FORMS: dict[type[BaseModel], Form] = {
    RecallResult: Form(CompactRecall, compact_recall, _recall_text),
    MemoryPage: Form(CompactPage, compact_page, _page_text),
    Timeline: Form(CompactTimeline, compact_timeline, _timeline_text),
    ProjectContext: Form(CompactProjectContext, compact_context, _context_text),
    BankView: Form(CompactBankView, compact_bank, _bank_text),
    MultiHopResult: Form(CompactMultiHop, compact_multihop, _multihop_text),
    DocSearchResult: Form(CompactDocSearch, compact_docs, _docs_text),
}


def shown(result: BaseModel, detail: Detail) -> CallToolResult:
    """`result` as the client gets it: compact (model and lines) or full (model and its JSON)."""
    if detail == "full":
        text = pydantic_core.to_json(result, fallback=str, indent=2).decode()
        return CallToolResult(
            content=[TextContent(type="text", text=text)],
            structured_content=result.model_dump(mode="json", by_alias=True),
        )
    form = FORMS[type(result)]
    compact = form.make(result)
    return CallToolResult(
        content=[TextContent(type="text", text=form.text(compact))],
        structured_content=compact.model_dump(mode="json", exclude_none=True),
    )
