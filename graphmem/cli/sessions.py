"""Sessions and the review queue: close a session with its summary, review and resolve what it
proposed. Each command parses, calls one MemoryAPI method and renders."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from graphmem.cli.common import HomeOpt, JsonOpt, emit_json, escape, opened, out, short
from graphmem.errors import InvalidInput
from graphmem.sessions.models import ResolveReport

session_app = typer.Typer(no_args_is_help=True)

SessionOpt = Annotated[str | None, typer.Option("--session", help="Only this session's items.")]


@session_app.command("close")
def close(
    summary: Annotated[
        str,
        typer.Option("--summary", "-s", help="What the session did and learnt; '-' reads stdin."),
    ],
    mode: Annotated[
        str | None,
        typer.Option(
            "--mode", help="coding | incident | migration | research | cleanup (inferred)."
        ),
    ] = None,
    context: Annotated[str | None, typer.Option("--context", help="Project or area.")] = None,
    service: Annotated[str | None, typer.Option("--service", help="Service it was about.")] = None,
    session_id: Annotated[
        str | None, typer.Option("--session-id", help="The client's id for the session.")
    ] = None,
    apply: Annotated[
        bool,
        typer.Option(
            "--apply", help="Store the summary and queue the changes (default: plan only)."
        ),
    ] = False,
    auto_apply_low_risk: Annotated[
        bool,
        typer.Option("--auto-apply-low-risk", help="With --apply: apply what the mode lets apply."),
    ] = False,
    home: HomeOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Plan what a session's summary means for the memory; with --apply, do it."""
    text = sys.stdin.read() if summary == "-" else summary
    with opened(home, as_json, embeds=True, writes=True) as gm:
        plan = gm.close_session(
            text, mode=mode, context=context, service=service, dry_run=not apply,
            auto_apply_low_risk=auto_apply_low_risk, session_id=session_id, client="cli",
        )  # fmt: skip
        if as_json:
            return emit_json(plan)
        how = "inferred" if plan.mode_inferred else "given"
        out.print(f"session {plan.session_id}, mode {plan.mode} ({how})", markup=False)
        for action in plan.actions:
            state = "applied" if action.applied else ("queued" if action.review_item else "plan")
            target = f" -> {action.target}" if action.target else ""
            out.print(
                f"  {state:7} {action.action:10} {action.risk:4} {action.confidence:.2f}  "
                f"[{action.statement_kind}] {short(action.statement, 70)}{target}",
                markup=False,
            )
            out.print(f"          {action.rationale}", markup=False)
        if plan.skipped:
            out.print(f"  {plan.skipped} statements left out: the same change was resolved before")


@session_app.command("review")
def review(
    session: SessionOpt = None,
    status: Annotated[
        str, typer.Option("--status", help="pending | accepted | rejected | deferred | all")
    ] = "pending",
    action: Annotated[str | None, typer.Option("--action", help="Only this action.")] = None,
    limit: Annotated[int, typer.Option("--limit", "-n")] = 50,
    home: HomeOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """List review items, oldest first."""
    with opened(home, as_json) as gm:
        queue = gm.review_session_changes(
            session=session, status=None if status == "all" else status, action=action, limit=limit
        )
        if as_json:
            return emit_json(queue)
        for item in queue.items:
            target = f" -> {item.target}" if item.target else ""
            out.print(
                f"{item.id}  {item.status:8} {item.action:10} {item.risk:4} "
                f"[{item.statement_kind}] {short(item.statement, 70)}{target}",
                markup=False,
            )
        out.print(f"{queue.pending} pending in all")


def _show(report: ResolveReport, as_json: bool) -> None:
    if as_json:
        return emit_json(report)
    verb = "would resolve" if report.dry_run else "resolved"
    for item in report.resolved:
        out.print(f"{verb} {item.id}: {item.status} ({escape(short(item.statement, 60))})")
    for failed in report.failed:
        out.print(f"[yellow]not applied[/yellow] {failed['item']}: {escape(failed['error'])}")


@session_app.command("accept")
def accept(
    items: Annotated[list[str] | None, typer.Argument(help="Review item ids.")] = None,
    session: SessionOpt = None,
    home: HomeOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Accept review items (apply their changes): the ones given, or a session's pending ones."""
    with opened(home, as_json, embeds=True, writes=True) as gm:
        _show(gm.accept_session_changes(session=session, items=items or None), as_json)


@session_app.command("resolve")
def resolve(
    item: Annotated[str, typer.Argument(help="The review item's id.")],
    resolution: Annotated[str, typer.Option("--resolution", "-r", help="accept | reject | defer")],
    note: Annotated[str | None, typer.Option("--note", help="Why.")] = None,
    home: HomeOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Accept, reject or defer one review item."""
    with opened(home, as_json, embeds=True, writes=True) as gm:
        _show(gm.resolve_review_item(item, resolution, note), as_json)


@session_app.command("resolve-queue")
def resolve_queue(
    resolution: Annotated[str, typer.Option("--resolution", "-r", help="accept | reject | defer")],
    session: SessionOpt = None,
    action: Annotated[str | None, typer.Option("--action", help="Only this action.")] = None,
    risk: Annotated[str | None, typer.Option("--risk", help="auto | soft | hard")] = None,
    note: Annotated[str | None, typer.Option("--note", help="Why.")] = None,
    apply: Annotated[
        bool, typer.Option("--apply", help="Resolve them (default: list only).")
    ] = False,
    home: HomeOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Resolve every pending item the filters select."""
    with opened(home, as_json, embeds=True, writes=True) as gm:
        if risk is not None and risk not in ("auto", "soft", "hard"):
            raise InvalidInput("risk must be auto, soft or hard")
        report = gm.resolve_review_queue(
            resolution, session=session, action=action, risk=risk, note=note, dry_run=not apply
        )
        _show(report, as_json)
