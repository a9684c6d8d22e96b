"""Memory commands: store, recall, get, list, update, delete, stats, export, import, reembed."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from graphmem.cli.common import (
    HomeOpt,
    JsonOpt,
    emit_json,
    escape,
    opened,
    out,
    progress_bar,
    short,
)
from graphmem.errors import InvalidInput
from graphmem.models import Memory, RecallResult, ScopedHit
from graphmem.transfer import export_jsonl, import_file

app = typer.Typer()

TypeOpt = Annotated[
    str | None, typer.Option("--type", "-t", help="episodic | semantic | procedural | working")
]
KindOpt = Annotated[
    str | None,
    typer.Option(
        "--kind",
        help="note | decision | dead_end | incident | runbook | postmortem | summary | checkpoint",
    ),
]
TagsOpt = Annotated[str | None, typer.Option("--tags", help="Comma-separated tags.")]
ContextOpt = Annotated[str | None, typer.Option("--context", help="Project area or topic.")]
ServiceOpt = Annotated[str | None, typer.Option("--service", help="Service the memory is about.")]


def _metadata(raw: str | None) -> Any:
    if raw is None:
        return None
    try:
        return json.loads(raw)
    except json.JSONDecodeError as exc:
        raise InvalidInput(f"--metadata is not valid JSON: {exc.msg} at char {exc.pos}") from exc


def filter_options(
    type_: str | None,
    kind: str | None,
    context: str | None,
    service: str | None,
    tags: str | None,
    lifecycle: str | None = None,
) -> dict[str, Any]:
    given = {
        "type": type_,
        "kind": kind,
        "context": context,
        "service": service,
        "tags": tags,
        "lifecycle": lifecycle,
    }
    return {k: v for k, v in given.items() if v}


def _show_memory(m: Memory) -> None:
    out.print(
        f"[bold]{m.id}[/bold]  {m.type}/{m.kind}  {m.lifecycle}  layer {m.layer}  "
        f"importance {m.importance:g}"
    )
    if m.title:
        out.print(f"[bold]{m.title}[/bold]")
    out.print(m.content, markup=False)
    details = {
        "tags": ", ".join(m.tags),
        "context": m.context,
        "service": m.service,
        "created": m.created_at.isoformat(sep=" ", timespec="seconds"),
        "metadata": json.dumps(m.metadata) if m.metadata else None,
    }
    for key, value in details.items():
        if value:
            out.print(f"  {key}: {value}", markup=False)


@app.command()
def store(
    content: Annotated[
        str | None, typer.Option("--content", "-c", help="The memory text; '-' reads stdin.")
    ] = None,
    title: Annotated[str | None, typer.Option("--title")] = None,
    type_: TypeOpt = "episodic",
    kind: KindOpt = "note",
    tags: TagsOpt = None,
    context: ContextOpt = None,
    service: ServiceOpt = None,
    importance: Annotated[float, typer.Option("--importance", help="0..1")] = 0.5,
    metadata: Annotated[str | None, typer.Option("--metadata", help="A JSON object.")] = None,
    created_at: Annotated[
        str | None,
        typer.Option(
            "--created-at", help="ISO date-time the memory is about (UTC unless it has an offset)."
        ),
    ] = None,
    idempotency_key: Annotated[
        str | None,
        typer.Option(
            "--idempotency-key",
            help="Your id for this store: running it again with the same key stores nothing "
            "and prints the memory the first run stored.",
        ),
    ] = None,
    home: HomeOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Store a memory."""
    with opened(home, as_json, embeds=True, writes=True) as gm:
        text = sys.stdin.read().rstrip("\n") if content == "-" else content
        if text is None:
            raise InvalidInput(
                "give the memory text with --content TEXT (or --content - to read stdin)"
            )
        m = gm.remember(
            text,
            title=title,
            type=type_,
            kind=kind,
            tags=tags,
            context=context,
            service=service,
            importance=importance,
            metadata=_metadata(metadata),
            created_at=created_at,
            idempotency_key=idempotency_key,
        )
        if as_json:
            emit_json(m)
        else:
            out.print(f"already stored {m.id}" if m.deduplicated else f"stored {m.id}")


@app.command()
def recall(
    query: Annotated[str, typer.Argument(help="What you want to remember, in words.")],
    limit: Annotated[int, typer.Option("--limit", "-n")] = 10,
    type_: TypeOpt = None,
    kind: KindOpt = None,
    tags: TagsOpt = None,
    context: ContextOpt = None,
    service: ServiceOpt = None,
    recipe: Annotated[
        str | None, typer.Option("--recipe", help="hybrid | bm25 | vector | rrf")
    ] = None,
    explain: Annotated[bool, typer.Option("--explain", help="Show every score component.")] = False,
    as_of: Annotated[
        str | None,
        typer.Option(
            "--as-of",
            metavar="DATE",
            help="Recall what was known then: ISO date or date-time (superseded entries included).",
        ),
    ] = None,
    scope: Annotated[
        str,
        typer.Option(
            "--scope", help="memories | docs (indexed documents' sections) | all (both, fused)"
        ),
    ] = "memories",
    home: HomeOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Recall memories by meaning and by exact words."""
    with opened(home, as_json, embeds=True) as gm:
        filters = filter_options(type_, kind, context, service, tags)
        if as_of is not None:
            if explain or recipe:
                raise InvalidInput("--as-of cannot be combined with --explain or --recipe")
            result = gm.recall_as_of(query, as_of=as_of, limit=limit, filters=filters)
        else:
            result = gm.recall(
                query, limit=limit, filters=filters, explain=explain, recipe=recipe,
                scope=scope,  # type: ignore[arg-type]  # checked by recall
            )  # fmt: skip
        emit_json(result) if as_json else show_recall(result, explain)


def show_recall(result: RecallResult, explain: bool = False) -> None:
    """Warnings (dead ends to avoid, degraded search) first, then one hit per line."""
    for warning in result.warnings:
        out.print(f"[yellow]warning:[/yellow] {escape(warning.message)}")
        if warning.memory is not None and warning.memory.id not in warning.message:
            out.print(f"    see {warning.memory.id}", markup=False)
    if result.scope != "memories":
        return show_scoped(result)
    if not result.hits:
        out.print("no memories found")
    for rank, hit in enumerate(result.hits, start=1):
        m = hit.memory
        when = m.created_at.strftime("%Y-%m-%d")
        state = "" if m.lifecycle == "active" else f"  {m.lifecycle}"
        successor = f"  (superseded by {hit.superseded_by})" if hit.superseded_by else ""
        out.print(
            f"{rank:>2}. [bold]{hit.score:.3f}[/bold]  {m.id}  {m.type}/{m.kind}  {when}"
            f"{state}{successor}"
        )
        out.print(
            f"    {short(m.title + ': ' + m.content if m.title else m.content)}", markup=False
        )
        if explain and hit.explain:
            feats = ", ".join(f"{k}={v:.3f}" for k, v in hit.explain["features"].items())
            out.print(f"    [dim]found by {'+'.join(hit.explain['found_by'])}: {feats}[/dim]")


@app.command()
def get(
    memory_id: Annotated[str, typer.Argument(metavar="ID")],
    home: HomeOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Show one memory."""
    with opened(home, as_json) as gm:
        m = gm.get(memory_id)
        emit_json(m) if as_json else _show_memory(m)


@app.command("list")
def list_(
    type_: TypeOpt = None,
    kind: KindOpt = None,
    tags: TagsOpt = None,
    context: ContextOpt = None,
    service: ServiceOpt = None,
    lifecycle: Annotated[
        str | None,
        typer.Option("--lifecycle", help="active | canonical | outdated | superseded | archived"),
    ] = None,
    limit: Annotated[int, typer.Option("--limit", "-n")] = 20,
    cursor: Annotated[
        str | None, typer.Option("--cursor", help="next_cursor of the previous page")
    ] = None,
    home: HomeOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """List memories, newest first."""
    with opened(home, as_json) as gm:
        page = gm.list(
            filter_options(type_, kind, context, service, tags, lifecycle),
            limit=limit,
            cursor=cursor,
        )
        if as_json:
            return emit_json(page)
        for m in page.memories:
            out.print(
                f"{m.id}  {m.created_at:%Y-%m-%d}  {m.type}/{m.kind}  {short(m.title or m.content, 70)}",
                markup=False,
            )
        if not page.memories:
            out.print("no memories")
        if page.next_cursor:
            out.print(f"more: --cursor {page.next_cursor}")


@app.command()
def update(
    memory_id: Annotated[str, typer.Argument(metavar="ID")],
    content: Annotated[str | None, typer.Option("--content", "-c")] = None,
    title: Annotated[str | None, typer.Option("--title")] = None,
    type_: TypeOpt = None,
    kind: KindOpt = None,
    tags: TagsOpt = None,
    context: ContextOpt = None,
    service: ServiceOpt = None,
    importance: Annotated[float | None, typer.Option("--importance")] = None,
    metadata: Annotated[
        str | None, typer.Option("--metadata", help="A JSON object (replaces the old one).")
    ] = None,
    home: HomeOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Change a memory; new content is re-embedded."""
    with opened(home, as_json, writes=True) as gm:
        changes = {
            "content": content,
            "title": title,
            "type": type_,
            "kind": kind,
            "tags": tags,
            "context": context,
            "service": service,
            "importance": importance,
            "metadata": _metadata(metadata),
        }
        m = gm.update(memory_id, **{k: v for k, v in changes.items() if v is not None})
        emit_json(m) if as_json else out.print(f"updated {m.id}")


@app.command()
def delete(
    memory_id: Annotated[str, typer.Argument(metavar="ID")],
    home: HomeOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Delete a memory and its vectors."""
    with opened(home, as_json, writes=True) as gm:
        gm.delete(memory_id)
        emit_json({"deleted": memory_id}) if as_json else out.print(f"deleted {memory_id}")


@app.command()
def stats(home: HomeOpt = None, as_json: JsonOpt = False) -> None:
    """Counts by type, kind, context, lifecycle and layer; store size; the active embedding
    space; work still waiting (the backlog)."""
    with opened(home, as_json) as gm:
        s = gm.stats()
        if as_json:
            return emit_json(s)
        out.print(f"[bold]{s.total}[/bold] memories in {s.path} ({s.store_bytes / 1e6:.1f} MB)")
        out.print(
            f"embedding space {s.embedding_space}: {s.vectors} vectors, {s.missing_vectors} missing"
        )
        for name, counts in (
            ("type", s.by_type),
            ("kind", s.by_kind),
            ("context", s.by_context),
            ("lifecycle", s.by_lifecycle),
            ("layer", s.by_layer),
        ):
            if counts:
                out.print(
                    f"  by {name}: "
                    + ", ".join(f"{k or '-'} {v}" for k, v in sorted(counts.items()))
                )
        waiting = s.backlog.get("extraction", 0) + s.backlog.get("chunks", 0)
        if waiting:
            out.print(
                f"backlog: {s.backlog.get('extraction', 0)} memories and "
                f"{s.backlog.get('chunks', 0)} document chunks wait for entity extraction "
                "(a running owner works through them; or run `graphmem index-triples`)"
            )


@app.command()
def export(
    path: Annotated[Path | None, typer.Argument(help="Output file (default: stdout).")] = None,
    with_vectors: Annotated[
        bool,
        typer.Option(
            "--with-vectors",
            help="Add each memory's vector: an import into a store with the same embedding "
            "model then skips embedding (5,000+ memories/s).",
        ),
    ] = False,
    home: HomeOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Export every memory as JSON lines (lossless; import reads it back)."""
    with opened(home, as_json) as gm:
        if path is None:
            export_jsonl(gm, sys.stdout, with_vectors=with_vectors)
            return
        try:
            with path.open("w", encoding="utf-8") as handle:
                count = export_jsonl(gm, handle, with_vectors=with_vectors)
        except OSError as exc:
            raise InvalidInput(f"cannot write {path}: {exc.strerror}", path=str(path)) from exc
        if as_json:
            emit_json({"exported": count, "path": str(path)})
        else:
            out.print(f"exported {count} memories to {path}")


@app.command("import")
def import_(
    path: Annotated[
        Path, typer.Argument(help="JSONL file written by export (or one memory object a line).")
    ],
    stop_on_error: Annotated[
        bool,
        typer.Option(
            "--stop-on-error", help="Stop at the first bad line (default: report it and go on)."
        ),
    ] = False,
    home: HomeOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Import memories from JSON lines, in batches, with a progress bar."""
    with opened(home, as_json, writes=True) as gm:
        with progress_bar() as bar:
            task = bar.add_task("importing", total=None)
            report = import_file(
                gm,
                path,
                on_error="stop" if stop_on_error else "continue",
                on_progress=lambda done, total: bar.update(task, completed=done, total=total),
            )
        if as_json:
            return emit_json(report)
        out.print(
            f"imported {report.imported} ({report.vectors_supplied} with their own vectors), "
            f"skipped {report.skipped} (already present), {len(report.errors)} bad lines "
            f"in {report.seconds:.1f}s"
        )
        if report.passages_pending:
            out.print(f"the passages of {report.passages_pending} are embedded in the background")
        for err in report.errors[:20]:
            out.print(f"  line {err['line']}: {err['message']}", markup=False)


@app.command()
def reembed(
    provider: Annotated[
        str | None, typer.Option("--provider", help="local | ollama | openai | jina | hash")
    ] = None,
    model: Annotated[str | None, typer.Option("--model")] = None,
    home: HomeOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Embed every memory into the configured (or given) space; resumes after an interruption."""
    embedding = {"embedding.provider": provider, "embedding.model": model}
    with opened(home, as_json, overrides=embedding) as gm:
        with progress_bar() as bar:
            task = bar.add_task("embedding", total=None)
            report = gm.reembed(
                on_progress=lambda done, total: bar.update(task, completed=done, total=total)
            )
        if as_json:
            return emit_json(report)
        passages = f", {report.passages} given passages" if report.passages else ""
        out.print(
            f"{report.embedded} memories embedded into {report.space}{passages} "
            f"({report.total} in all) in {report.seconds:.1f}s"
        )


def show_scoped(result: RecallResult) -> None:
    """Sections (scope docs), or memories and sections in one ranking (scope all)."""
    ranking = result.ranking or [
        ScopedHit(source="section", score=s.score, section=s) for s in result.sections
    ]
    if not ranking:
        out.print("nothing found")
    for rank, item in enumerate(ranking, start=1):
        if item.memory is not None:
            m = item.memory.memory
            line = f"memory   {m.id}  {short(m.title + ': ' + m.content if m.title else m.content)}"
        elif item.section is not None:
            s = item.section
            line = f"section  {s.path}:{s.lines[0]}  {' > '.join(s.breadcrumb)}: {short(s.snippet)}"
        out.print(f"{rank:>2}. {item.score:.3f}  {line}", markup=False)
