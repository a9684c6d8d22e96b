"""Knowledge over time: lifecycle (outdated, merge), engineering records (decision, dead end,
incident, runbook, postmortem), canonical knowledge, project context and bank views, timelines,
citations, verification and drift. Each command parses, calls one MemoryAPI method and renders."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

import typer

from graphmem.cli.common import HomeOpt, JsonOpt, emit_json, opened, out, short
from graphmem.cli.memories import ContextOpt, ServiceOpt, TagsOpt, show_recall
from graphmem.models import Memory, MemoryPage

app = typer.Typer()
canonical_app = typer.Typer(no_args_is_help=True)

IdArg = Annotated[str, typer.Argument(metavar="ID", help="Memory id.")]
QueryArg = Annotated[str, typer.Argument(help="What you are looking for, in words.")]
TitleOpt = Annotated[str | None, typer.Option("--title", help="One-line summary.")]
ImportanceOpt = Annotated[
    float | None, typer.Option("--importance", help="0..1 (default 0.6 for records).")
]
ListLimitOpt = Annotated[int, typer.Option("--limit", "-n", help="How many at most.")]


def _split(raw: str | None) -> list[str] | None:
    """`a, b,,c` -> ["a", "b", "c"]; None stays None (not given)."""
    if raw is None:
        return None
    return [part.strip() for part in raw.split(",") if part.strip()]


def _given(**values: Any) -> dict[str, Any]:
    return {key: value for key, value in values.items() if value is not None}


def _common(
    title: str | None,
    tags: str | None,
    context: str | None,
    service: str | None,
    importance: float | None,
) -> dict[str, Any]:
    """The fields every engineering record shares, as given on the command line."""
    return _given(
        title=title, tags=_split(tags), context=context, service=service, importance=importance
    )


def _day(value: datetime | None) -> str:
    return f"{value:%Y-%m-%d}" if value else "----------"


def _memory_line(m: Memory, width: int = 70) -> str:
    state = "" if m.lifecycle == "active" else f"  [{m.lifecycle}]"
    return f"{m.id}  {_day(m.created_at)}  {m.kind}{state}  {short(m.title or m.content, width)}"


def _show_memories(memories: list[Memory], empty: str) -> None:
    for m in memories:
        out.print(_memory_line(m), markup=False)
    if not memories:
        out.print(empty)


def _stored(m: Memory, as_json: bool) -> None:
    emit_json(m) if as_json else out.print(f"stored {m.kind} {m.id}")


# -- lifecycle ------------------------------------------------------------------------------------


@app.command()
def outdated(
    memory_id: IdArg,
    reason: Annotated[str, typer.Option("--reason", help="Why it no longer holds.")],
    superseded_by: Annotated[
        str | None,
        typer.Option("--superseded-by", metavar="ID", help="The memory that replaces it."),
    ] = None,
    home: HomeOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Mark a memory outdated, or superseded by a newer one; it stays in the timeline."""
    with opened(home, as_json, writes=True) as gm:
        m = gm.mark_outdated(memory_id, reason=reason, superseded_by=superseded_by)
        if as_json:
            return emit_json(m)
        successor = f" (superseded by {superseded_by})" if superseded_by else ""
        out.print(f"{m.id} is now {m.lifecycle}{successor}", markup=False)


@app.command()
def merge(
    primary: Annotated[str, typer.Argument(metavar="PRIMARY", help="The memory to keep.")],
    duplicates: Annotated[
        list[str], typer.Argument(metavar="DUPLICATE...", help="Memories merged into it.")
    ],
    reason: Annotated[str | None, typer.Option("--reason", help="Why they are the same.")] = None,
    home: HomeOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Merge duplicates into one memory; the duplicates are archived, linked to it."""
    with opened(home, as_json, writes=True) as gm:
        m = gm.merge_duplicates(primary, duplicates, reason=reason)
        if as_json:
            return emit_json(m)
        out.print(f"merged {len(duplicates)} into {m.id}: {', '.join(duplicates)}", markup=False)


# -- engineering records --------------------------------------------------------------------------


@app.command()
def decision(
    decision: Annotated[str, typer.Option("--decision", help="What was decided.")],
    rationale: Annotated[str, typer.Option("--rationale", help="Why.")],
    consequences: Annotated[
        str | None, typer.Option("--consequences", help="What follows from it.")
    ] = None,
    status: Annotated[
        str | None,
        typer.Option("--status", help="proposed | accepted | rejected | deprecated (accepted)"),
    ] = None,
    avoids: Annotated[
        str | None,
        typer.Option("--avoids", metavar="ID,ID", help="Ids of dead ends this steers clear of."),
    ] = None,
    title: TitleOpt = None,
    tags: TagsOpt = None,
    context: ContextOpt = None,
    service: ServiceOpt = None,
    importance: ImportanceOpt = None,
    home: HomeOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Record a decision with its rationale."""
    with opened(home, as_json, writes=True) as gm:
        fields = _given(consequences=consequences, status=status, avoids=_split(avoids))
        m = gm.store_decision(
            decision=decision,
            rationale=rationale,
            **fields,
            **_common(title, tags, context, service, importance),
        )
        _stored(m, as_json)


@app.command("dead-end")
def dead_end(
    attempted: Annotated[str, typer.Option("--attempted", help="The approach that was tried.")],
    why_failed: Annotated[str, typer.Option("--why-failed", help="Why it did not work.")],
    alternative: Annotated[
        str | None, typer.Option("--alternative", help="What to do instead.")
    ] = None,
    title: TitleOpt = None,
    tags: TagsOpt = None,
    context: ContextOpt = None,
    service: ServiceOpt = None,
    importance: ImportanceOpt = None,
    home: HomeOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Record an approach that failed, so nobody tries it again."""
    with opened(home, as_json, writes=True) as gm:
        m = gm.store_dead_end(
            attempted_approach=attempted,
            why_failed=why_failed,
            **_given(alternative=alternative),
            **_common(title, tags, context, service, importance),
        )
        _stored(m, as_json)


@app.command()
def incident(
    summary: Annotated[str, typer.Option("--summary", help="What happened.")],
    impact: Annotated[str | None, typer.Option("--impact", help="Who or what was hit.")] = None,
    root_cause: Annotated[str | None, typer.Option("--root-cause")] = None,
    resolution: Annotated[str | None, typer.Option("--resolution")] = None,
    severity: Annotated[
        str | None, typer.Option("--severity", help="sev1 | sev2 | sev3 | sev4")
    ] = None,
    occurred_at: Annotated[
        str | None, typer.Option("--occurred-at", help="ISO date or date-time.")
    ] = None,
    title: TitleOpt = None,
    tags: TagsOpt = None,
    context: ContextOpt = None,
    service: ServiceOpt = None,
    importance: ImportanceOpt = None,
    home: HomeOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Record an incident."""
    with opened(home, as_json, writes=True) as gm:
        fields = _given(
            impact=impact,
            root_cause=root_cause,
            resolution=resolution,
            severity=severity,
            occurred_at=occurred_at,
        )
        m = gm.store_incident(
            summary=summary, **fields, **_common(title, tags, context, service, importance)
        )
        _stored(m, as_json)


@app.command()
def runbook(
    trigger: Annotated[str, typer.Option("--trigger", help="When to run it.")],
    step: Annotated[
        list[str] | None, typer.Option("--step", help="One step; repeat for each, in order.")
    ] = None,
    verification: Annotated[
        str | None, typer.Option("--verification", help="How to tell it worked.")
    ] = None,
    rollback: Annotated[str | None, typer.Option("--rollback", help="How to undo it.")] = None,
    cites: Annotated[
        str | None,
        typer.Option("--cites", metavar="PATH,PATH", help="Files the runbook relies on."),
    ] = None,
    title: TitleOpt = None,
    tags: TagsOpt = None,
    context: ContextOpt = None,
    service: ServiceOpt = None,
    importance: ImportanceOpt = None,
    home: HomeOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Record a runbook: a trigger and the steps to follow."""
    with opened(home, as_json, writes=True) as gm:
        fields = _given(verification=verification, rollback=rollback, cites=_split(cites))
        m = gm.store_runbook(
            trigger=trigger,
            steps=list(step or []),
            **fields,
            **_common(title, tags, context, service, importance),
        )
        _stored(m, as_json)


@app.command()
def postmortem(
    summary: Annotated[str, typer.Option("--summary", help="What happened.")],
    root_cause: Annotated[str, typer.Option("--root-cause", help="Why it happened.")],
    action_item: Annotated[
        list[str] | None, typer.Option("--action-item", help="A follow-up; repeat for each.")
    ] = None,
    incident_id: Annotated[
        str | None, typer.Option("--incident", metavar="ID", help="The incident it is about.")
    ] = None,
    title: TitleOpt = None,
    tags: TagsOpt = None,
    context: ContextOpt = None,
    service: ServiceOpt = None,
    importance: ImportanceOpt = None,
    home: HomeOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Record a postmortem, optionally linked to its incident."""
    with opened(home, as_json, writes=True) as gm:
        fields = _given(action_items=action_item or None, incident_id=incident_id)
        m = gm.store_postmortem(
            summary=summary,
            root_cause=root_cause,
            **fields,
            **_common(title, tags, context, service, importance),
        )
        _stored(m, as_json)


@app.command()
def runbooks(
    query: QueryArg,
    limit: Annotated[int, typer.Option("--limit", "-n")] = 5,
    home: HomeOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Find runbooks for a situation."""
    with opened(home, as_json) as gm:
        result = gm.search_runbooks(query, limit=limit)
        emit_json(result) if as_json else show_recall(result)


@app.command()
def incidents(
    query: QueryArg,
    limit: Annotated[int, typer.Option("--limit", "-n")] = 5,
    home: HomeOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Find past incidents similar to a symptom or error."""
    with opened(home, as_json) as gm:
        result = gm.recall_similar_incidents(query, limit=limit)
        emit_json(result) if as_json else show_recall(result)


# -- canonical knowledge, context, bank views ---------------------------------------------------


@canonical_app.command("promote")
def canonical_promote(
    memory_id: IdArg,
    owner: Annotated[str, typer.Option("--owner", help="Who keeps it true (person or team).")],
    home: HomeOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Promote a memory to canonical knowledge, with an owner."""
    with opened(home, as_json, writes=True) as gm:
        m = gm.promote_to_canonical(memory_id, owner=owner)
        emit_json(m) if as_json else out.print(f"{m.id} is canonical, owner {owner}", markup=False)


@canonical_app.command("list")
def canonical_list(
    context: ContextOpt = None,
    limit: ListLimitOpt = 50,
    home: HomeOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """List canonical knowledge."""
    with opened(home, as_json) as gm:
        page: MemoryPage = gm.list_canonical_knowledge(context=context, limit=limit)
        if as_json:
            return emit_json(page)
        for m in page.memories:
            owner = f"  owner {m.owner}" if m.owner else ""
            out.print(f"{_memory_line(m)}{owner}", markup=False)
        if not page.memories:
            out.print("no canonical knowledge")


@canonical_app.command("recall")
def canonical_recall(
    query: QueryArg,
    limit: ListLimitOpt = 10,
    home: HomeOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Recall among canonical knowledge only."""
    with opened(home, as_json, embeds=True) as gm:
        result = gm.recall_canonical_knowledge(query, limit=limit)
        emit_json(result) if as_json else show_recall(result)


@app.command("context")
def context_(
    context: ContextOpt = None,
    limit: ListLimitOpt = 10,
    home: HomeOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """What to read before starting work: canonical knowledge first, then what happened lately."""
    with opened(home, as_json) as gm:
        summary = gm.summarize_project_context(context=context, limit=limit)
        if as_json:
            return emit_json(summary)
        out.print(f"[bold]project context[/bold] {summary.context or '(all contexts)'}")
        out.print(f"[bold]canonical ({len(summary.canonical)})[/bold]")
        _show_memories(summary.canonical, "  none; promote with: graphmem canonical promote")
        out.print(f"[bold]recent ({len(summary.recent)})[/bold]")
        _show_memories(summary.recent, "  nothing yet")
        if summary.counts:
            counts = ", ".join(f"{k} {v}" for k, v in sorted(summary.counts.items()))
            out.print(f"counts: {counts}", markup=False)


@app.command()
def bank(
    view: Annotated[
        str,
        typer.Argument(
            metavar="VIEW",
            help="decisions | runbooks | incidents | caveats | migrations | dead_ends | "
            "canonical_overview | review_queue",
        ),
    ],
    context: ContextOpt = None,
    limit: ListLimitOpt = 50,
    home: HomeOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """One view of the project's memory bank."""
    with opened(home, as_json) as gm:
        result = gm.project_bank_view(view, context=context, limit=limit)
        if as_json:
            return emit_json(result)
        out.print(f"[bold]{result.view}[/bold] ({len(result.memories)})")
        _show_memories(result.memories, "  nothing in this view")


# -- time, sources, verification --------------------------------------------------------------


@app.command()
def timeline(
    query: Annotated[
        str | None, typer.Argument(help="Find the knowledge by words (or give --id).")
    ] = None,
    memory_id: Annotated[
        str | None, typer.Option("--id", metavar="ID", help="Start from this memory.")
    ] = None,
    home: HomeOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Versions of one piece of knowledge, oldest first, with when and why each was replaced."""
    with opened(home, as_json) as gm:
        result = gm.knowledge_timeline(query, memory_id=memory_id)
        if as_json:
            return emit_json(result)
        for entry in result.entries:
            m = entry.memory
            line = f"{_day(m.valid_from or m.created_at)}  {m.kind}  {m.id}  {short(m.title or m.content, 60)}"
            ended = _day(m.valid_to or entry.superseded_at)
            why = f": {entry.reason}" if entry.reason else ""
            if entry.superseded_by:
                line += f"  -> superseded {ended} by {entry.superseded_by}{why}"
            elif m.lifecycle in ("outdated", "superseded", "archived"):
                line += f"  -> {m.lifecycle} {ended}{why}"
            else:
                line += f"  ({m.lifecycle}, current)"
            out.print(line, markup=False)
        if not result.entries:
            out.print("no timeline")


@app.command()
def cite(
    memory_id: IdArg,
    path: Annotated[str, typer.Argument(help="File, relative to the project root.")],
    section: Annotated[
        str | None, typer.Option("--section", help="Part of the file, e.g. a heading.")
    ] = None,
    home: HomeOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Record that a memory relies on a file; drift compares the file's hash later."""
    with opened(home, as_json, writes=True) as gm:
        citation = gm.cite_source(memory_id, path, section=section)
        if as_json:
            return emit_json(citation)
        where = f" ({citation.section})" if citation.section else ""
        digest = f", sha256 {citation.sha256[:12]}" if citation.sha256 else ", file not found"
        out.print(f"{citation.memory_id} cites {citation.path}{where}{digest}", markup=False)


@app.command()
def verify(
    memory_id: IdArg,
    method: Annotated[
        str, typer.Option("--method", help="How it was checked, e.g. 'read the code'.")
    ],
    status: Annotated[str, typer.Option("--status", help="verified | failed | needs_update")],
    note: Annotated[str | None, typer.Option("--note", help="What was found.")] = None,
    home: HomeOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Record that a memory was checked against reality, and the outcome."""
    with opened(home, as_json, writes=True) as gm:
        m = gm.verify_entry(memory_id, method=method, status=status, note=note)
        if as_json:
            return emit_json(m)
        when = m.verified_at.isoformat(sep=" ", timespec="seconds") if m.verified_at else "-"
        out.print(f"{m.id}: {m.verify_status} ({method}) at {when}", markup=False)


@app.command("verify-candidates")
def verify_candidates(
    days: Annotated[int, typer.Option("--days", help="Not verified for this many days.")] = 90,
    min_importance: Annotated[
        float, typer.Option("--min-importance", help="Only memories at least this important.")
    ] = 0.7,
    limit: ListLimitOpt = 50,
    home: HomeOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Important memories due for verification."""
    with opened(home, as_json) as gm:
        page = gm.verification_candidates(days=days, min_importance=min_importance, limit=limit)
        if as_json:
            return emit_json(page)
        for m in page.memories:
            last = f"verified {_day(m.verified_at)}" if m.verified_at else "never verified"
            out.print(f"{_memory_line(m, 60)}  ({last})", markup=False)
        if not page.memories:
            out.print("nothing to verify")


@app.command()
def drift(home: HomeOpt = None, as_json: JsonOpt = False) -> None:
    """Check cited files: which changed or disappeared since they were cited or verified."""
    with opened(home, as_json) as gm:
        report = gm.drift_scan()
        if as_json:
            return emit_json(report)
        for item in report.items:
            what = "missing" if item.status == "source_missing" else "changed"
            label = f"  {short(item.title, 50)}" if item.title else ""
            out.print(f"{what:<8} {item.path}  cited by {item.memory_id}{label}", markup=False)
        if report.items:
            out.print(
                f"drift: {len(report.items)} of {report.checked} citations changed or missing; "
                "check those memories, then graphmem verify ID --method ... --status ..."
            )
        else:
            out.print(f"no drift: {report.checked} citations checked")
