"""Sedimentation: run a cycle that moves memories through the layers (surface, episodic,
semantic, character), or move one by hand. Each command parses, calls one MemoryAPI method and
renders; `graphmem steward undo RUN` puts a move back."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, cast

import typer

from graphmem.cli.common import HomeOpt, JsonOpt, emit_json, opened, out, short

if TYPE_CHECKING:
    from pathlib import Path

    from graphmem.steward.models import Layer, SedimentMove, SedimentReport

sediment_app = typer.Typer(no_args_is_help=True)

LayerOpt = Annotated[
    str | None,
    typer.Option(
        "--layer",
        help="surface | episodic | semantic | character (default: the next layer).",
        show_default=False,
    ),
]
NoteOpt = Annotated[str | None, typer.Option("--note", help="Why, kept in the audit row.")]
IdArg = Annotated[str, typer.Argument(metavar="ID", help="The memory's id.", show_default=False)]


def _steps(counts: dict[str, int]) -> str:
    return ", ".join(f"{step} {n}" for step, n in counts.items())


def _move_line(move: SedimentMove) -> str:
    return (
        f"  {move.from_layer:9} -> {move.to_layer:9} {move.reason:9} {move.memory}  "
        f"{short(move.title, 70)}"
    )


def _show_cycle(report: SedimentReport) -> None:
    moved = sum(report.counts.values())
    if not moved:
        out.print(f"nothing to move ({report.looked_at} live memories looked at)", markup=False)
    elif report.dry_run:
        out.print(
            f"dry run: would move {moved} of {report.looked_at} live memories "
            f"({_steps(report.counts)}); --apply moves them",
            markup=False,
        )
    else:
        out.print(
            f"moved {moved} of {report.looked_at} live memories in run {report.run} "
            f"({_steps(report.counts)})",
            markup=False,
        )
    layers = ", ".join(f"{name} {n}" for name, n in report.layers.items())
    out.print(f"layers{' as they would be' if report.dry_run else ''}: {layers}", markup=False)
    for move in report.moves:
        out.print(_move_line(move), markup=False)
    if report.unlisted:
        out.print(f"  ... and {report.unlisted} more", markup=False)
    if moved and not report.dry_run:
        out.print(f"`graphmem steward undo {report.run}` puts them back", markup=False)


def _show_move(move: SedimentMove) -> None:
    note = f" ({move.note})" if move.note else ""
    out.print(
        f"{move.memory}: {move.from_layer} -> {move.to_layer}{note}  {short(move.title, 70)}",
        markup=False,
    )
    out.print(f"`graphmem steward undo {move.run}` puts it back", markup=False)


@sediment_app.command("cycle")
def cycle(
    apply: Annotated[
        bool,
        typer.Option("--apply", help="Move them (default: dry run, only list the moves)."),
    ] = False,
    home: HomeOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Move live memories a layer up by age, use and references, or down by disuse."""
    with opened(home, as_json, writes=apply) as gm:
        report = gm.sediment_cycle(dry_run=not apply, actor="cli")
        if as_json:
            return emit_json(report)
        _show_cycle(report)


@sediment_app.command("promote")
def promote(
    memory_id: IdArg,
    layer: LayerOpt = None,
    note: NoteOpt = None,
    home: HomeOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Move one memory a layer up, or up to --layer; the cycle leaves it there a while."""
    _by_hand(memory_id, up=True, layer=layer, note=note, home=home, as_json=as_json)


@sediment_app.command("demote")
def demote(
    memory_id: IdArg,
    layer: LayerOpt = None,
    note: NoteOpt = None,
    home: HomeOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Move one memory a layer down, or down to --layer; the cycle does not lift it back soon."""
    _by_hand(memory_id, up=False, layer=layer, note=note, home=home, as_json=as_json)


def _by_hand(
    memory_id: str, *, up: bool, layer: str | None, note: str | None, home: Path | None,
    as_json: bool,
) -> None:  # fmt: skip
    with opened(home, as_json, writes=True) as gm:
        move_to = gm.promote_sediment if up else gm.demote_sediment
        move = move_to(memory_id, layer=cast("Layer | None", layer), note=note, actor="cli")
        if as_json:
            return emit_json(move)
        _show_move(move)
