"""The project's glossary of entity names (graphmem.aliases.yaml): check what applying it would
change, or apply it now (indexing applies it too, once it changed). Each command parses, calls
one MemoryAPI method and renders."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from graphmem.cli.common import HomeOpt, JsonOpt, emit_json, escape, opened, out

if TYPE_CHECKING:
    from graphmem.graph.models import GlossaryName, GlossaryReport

glossary_app = typer.Typer(no_args_is_help=True)

FileOpt = Annotated[
    Path | None,
    typer.Option(
        "--file",
        help="The glossary file (default: the `glossary` setting, else graphmem.aliases.yaml "
        "in the project root).",
    ),
]


def _given(file: Path | None) -> str | None:
    """The user's path made absolute here: the owner process has another working directory."""
    return str(file.expanduser().resolve()) if file else None


@glossary_app.command("check")
def check(file: FileOpt = None, home: HomeOpt = None, as_json: JsonOpt = False) -> None:
    """Read the glossary and show what applying it would change; nothing is written."""
    with opened(home, as_json) as gm:
        report = gm.apply_glossary(_given(file), dry_run=True)
        if as_json:
            return emit_json(report)
        _show(report)


@glossary_app.command("apply")
def apply(file: FileOpt = None, home: HomeOpt = None, as_json: JsonOpt = False) -> None:
    """Apply the glossary now: each alias resolves to its canonical name's entity."""
    with opened(home, as_json, writes=True) as gm:
        report = gm.apply_glossary(_given(file))
        if as_json:
            return emit_json(report)
        _show(report)


def _show(report: GlossaryReport) -> None:
    if not report.found:
        out.print(f"no glossary at {report.path}: nothing to apply", markup=False)
        return
    would = "would " if report.dry_run else ""
    entries = f"{report.entries} entr{'y' if report.entries == 1 else 'ies'}"
    out.print(f"{report.path}: {entries}", markup=False)

    def lines(names: list[GlossaryName], verb: str) -> None:
        for n in names:
            merged = f" (merging {n.merged})" if n.merged else ""
            out.print(f"  {would}{verb} {n.name!r} -> {n.entity_id}{merged}", markup=False)

    lines(report.created, "create")
    lines(report.merged, "merge")
    lines(report.aliased, "alias")
    for skip in report.skipped:
        out.print(f"  [yellow]skipped[/yellow] {escape(repr(skip.name))}: {escape(skip.why)}")
    changes = len(report.created) + len(report.merged) + len(report.aliased)
    out.print(
        f"{changes} changes{' to make' if report.dry_run else ''}, "
        f"{len(report.unchanged)} names already in place",
        markup=False,
    )
    if report.run:
        out.print(f"undo with: graphmem steward undo {report.run}", markup=False)
