"""The entity graph: backfill extraction (`index-triples`), list entities, correct their
resolution (merge, alias, rename, split; each undone with `graphmem steward undo AUDIT_ID`),
multi-hop recall. Each command parses, calls one MemoryAPI method and renders."""

from __future__ import annotations

from typing import Annotated

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
from graphmem.cli.memories import (
    ContextOpt,
    KindOpt,
    TagsOpt,
    TypeOpt,
    filter_options,
)

app = typer.Typer()


@app.command("index-triples")
def index_triples(
    limit: Annotated[
        int | None, typer.Option("--limit", "-n", help="Process at most this many memories.")
    ] = None,
    context: Annotated[
        str | None, typer.Option("--context", help="Only memories of this context (project).")
    ] = None,
    force: Annotated[
        bool, typer.Option("--force", help="Extract again from memories already processed.")
    ] = False,
    resume: Annotated[
        bool,
        typer.Option(
            "--resume", help="With --force: go on from where an interrupted forced run stopped."
        ),
    ] = False,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Extract and count, write nothing.")
    ] = False,
    batch_size: Annotated[int, typer.Option("--batch-size", help="Memories per batch.")] = 256,
    home: HomeOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Extract entities and facts from memories that have not been processed yet."""
    with opened(home, as_json, writes=True) as gm:
        with progress_bar() as bar:
            task = bar.add_task("extracting", total=None)
            report = gm.index_triples(
                limit=limit, context=context, force=force, resume=resume, dry_run=dry_run,
                batch_size=batch_size,
                on_progress=lambda done, total: bar.update(task, completed=done, total=total),
            )  # fmt: skip
        if as_json:
            return emit_json(report)
        verb = "would write" if report.dry_run else "wrote"
        rate = report.memories / report.seconds if report.seconds else 0.0
        out.print(
            f"{report.memories} memories processed by {report.extractor} in {report.seconds:.1f}s "
            f"({rate:.0f}/s): {verb} {report.entities} entity mentions and {report.facts} facts; "
            f"{report.remaining} memories still pending",
            markup=False,
        )
        if report.errors:
            out.print(f"[yellow]{report.errors} texts got no answer from the extractor[/yellow]")


@app.command()
def entities(
    query: Annotated[
        str | None, typer.Argument(help="Part of the entity's name (all entities if omitted).")
    ] = None,
    label: Annotated[
        str | None, typer.Option("--label", help="Only this label: service, person, ...")
    ] = None,
    limit: Annotated[int, typer.Option("--limit", "-n", help="How many at most.")] = 50,
    home: HomeOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """List entities, most mentioned first."""
    with opened(home, as_json) as gm:
        result = gm.list_entities(query, label=label, limit=limit)
        if as_json:
            return emit_json(result)
        for e in result.entities:
            aliases = f"  aka {', '.join(e.aliases)}" if e.aliases else ""
            out.print(
                f"{e.mentions:>5} mentions {e.facts:>4} facts  {e.label:<12} {e.id}{aliases}",
                markup=False,
            )
        if not result.entities and not result.pending:
            out.print("no entities (run `graphmem index-triples` to extract them)")
        if result.pending:
            out.print(
                f"{result.pending} memories are not extracted yet, so their entities are not "
                "listed: a running owner process works through them, or run "
                "`graphmem index-triples`"
            )


@app.command("merge-entities")
def merge_entities(
    primary: Annotated[str, typer.Argument(help="The entity id to keep.")],
    duplicates: Annotated[list[str], typer.Argument(help="Entity ids to fold into it.")],
    home: HomeOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Fold duplicate entities into one; their names become its aliases."""
    with opened(home, as_json, writes=True) as gm:
        report = gm.merge_entities(primary, duplicates)
        if as_json:
            return emit_json(report)
        out.print(
            f"merged {', '.join(report.merged)} into {report.primary} "
            f"({report.edges_moved} links moved)",
            markup=False,
        )
        _undo_hint(report.audit_id)


EntityArg = Annotated[str, typer.Argument(help="The entity's id (see `graphmem entities`).")]


def _undo_hint(audit_id: str | None) -> None:
    if audit_id:
        out.print(f"undo with: graphmem steward undo {audit_id}", markup=False)


@app.command("alias-entity")
def alias_entity(
    entity_id: EntityArg,
    alias: Annotated[str, typer.Argument(help="Another name of it, as text says it.")],
    home: HomeOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Make another name resolve to an entity from now on, without a merge."""
    with opened(home, as_json, writes=True) as gm:
        report = gm.add_entity_alias(entity_id, alias)
        if as_json:
            return emit_json(report)
        if not report.changed:
            out.print(f"{report.alias!r} already resolves to {entity_id}", markup=False)
            return None
        out.print(f"{report.alias!r} now resolves to {entity_id}", markup=False)
        _undo_hint(report.audit_id)


@app.command("unalias-entity")
def unalias_entity(
    entity_id: EntityArg,
    alias: Annotated[str, typer.Argument(help="The alias to remove.")],
    home: HomeOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Stop a name resolving to an entity; what it links stays linked."""
    with opened(home, as_json, writes=True) as gm:
        report = gm.remove_entity_alias(entity_id, alias)
        if as_json:
            return emit_json(report)
        out.print(f"{report.alias!r} no longer resolves to {entity_id}", markup=False)
        _undo_hint(report.audit_id)


@app.command("rename-entity")
def rename_entity(
    entity_id: EntityArg,
    name: Annotated[str, typer.Argument(help="The name to show.")],
    home: HomeOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Show an entity under another name; the old name stays an alias."""
    with opened(home, as_json, writes=True) as gm:
        report = gm.rename_entity(entity_id, name)
        if as_json:
            return emit_json(report)
        out.print(f"{entity_id}: {report.previous!r} -> {report.name!r}", markup=False)
        _undo_hint(report.audit_id)


@app.command("split-entity")
def split_entity(
    entity_id: EntityArg,
    memory_ids: Annotated[
        list[str], typer.Argument(help="Memories (or chunks) whose mentions move.")
    ],
    name: Annotated[
        str | None,
        typer.Option("--name", help="The new entity's name (default: the original's)."),
    ] = None,
    home: HomeOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Give some memories' mentions of an entity (and the facts only they stated) to a new one."""
    with opened(home, as_json, writes=True) as gm:
        report = gm.split_entity(entity_id, memory_ids, name=name)
        if as_json:
            return emit_json(report)
        out.print(
            f"{report.new_entity_id} ({report.name!r}) took {len(report.memories)} mentions "
            f"and {len(report.facts)} facts from {entity_id}",
            markup=False,
        )
        if report.facts_kept:
            out.print(
                f"{len(report.facts_kept)} facts stay with {entity_id}: other memories state "
                "them too",
                markup=False,
            )
        _undo_hint(report.audit_id)


@app.command()
def multihop(
    query: Annotated[str, typer.Argument(help="The question, in words.")],
    max_hops: Annotated[
        int, typer.Option("--max-hops", help="Memory-to-memory steps from a seed (0-4).")
    ] = 2,
    seed_k: Annotated[int, typer.Option("--seeds", help="Hybrid-recall hits to start from.")] = 3,
    limit: Annotated[int, typer.Option("--limit", "-n")] = 10,
    type_: TypeOpt = None,
    kind: KindOpt = None,
    tags: TagsOpt = None,
    context: ContextOpt = None,
    home: HomeOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Multi-hop recall: walk entities and facts from the best hits; show each hit's path."""
    with opened(home, as_json, embeds=True) as gm:
        result = gm.recall_multihop(
            query, max_hops=max_hops, seed_k=seed_k, limit=limit,
            filters=filter_options(type_, kind, context, None, tags),
        )  # fmt: skip
        if as_json:
            return emit_json(result)
        for warning in result.warnings:
            out.print(f"[yellow]warning:[/yellow] {escape(warning.message)}")
        if not result.hits:
            out.print("no memories found")
        for rank, hit in enumerate(result.hits, start=1):
            m = hit.memory
            if hit.seed or hit.hops is None:
                how = "seed" if hit.seed else "recall"
            else:
                how = f"{hit.hops} hop{'s' if hit.hops != 1 else ''}"
            out.print(f"{rank:>2}. [bold]{hit.score:.4f}[/bold]  {m.id}  {how}")
            out.print(
                f"    {short(m.title + ': ' + m.content if m.title else m.content)}", markup=False
            )
            if hit.path_text:
                out.print(f"    [dim]{escape(hit.path_text)}[/dim]")
