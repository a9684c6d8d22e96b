"""The steward: look for duplicates, conflicts, stale entries, canonical candidates and orphans,
work the inbox of what it found, set its policy, undo what it did; sweep old unused memory,
recount references, report open conflicts. Each command parses, calls one MemoryAPI method and
renders."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Annotated, Any

import typer

from graphmem.cli.common import (
    HomeOpt,
    JsonOpt,
    emit_json,
    escape,
    handle_errors,
    opened,
    out,
)
from graphmem.errors import InvalidInput

if TYPE_CHECKING:
    from graphmem.steward.models import Finding, StewardPolicy, StewardRun, SweepReport

steward_app = typer.Typer(no_args_is_help=True)
policy_app = typer.Typer()
steward_app.add_typer(
    policy_app,
    name="policy",
    help="Show the policy; `policy set KEY=VALUE...` changes it.",
    invoke_without_command=True,
)

STATUSES = ("pending", "applied", "dismissed", "proposed")


def _counts(counts: dict[str, int]) -> str:
    return ", ".join(f"{kind} {n}" for kind, n in sorted(counts.items())) or "none"


def _finding_line(finding: Finding, *, with_id: bool = True) -> None:
    """`status kind confidence action summary id`, then the last error when there is one."""
    out.print(
        f"  {finding.status:9} {finding.kind:19} {finding.confidence:.2f} {finding.action:12} "
        f"{' '.join(finding.summary.split())}" + (f"  {finding.id}" if with_id else ""),
        markup=False,
    )
    if finding.error:
        out.print(f"  [yellow]not applied:[/yellow] {escape(finding.error)}")


def _show_run(run: StewardRun) -> None:
    how = "dry run" if run.dry_run else "run"
    where = "".join(
        f", {name} {value}" for name, value in (("context", run.context), ("service", run.service))
        if value
    )  # fmt: skip
    out.print(f"{how} {run.id} (scope {run.scope}{where}), {run.seconds:g} s", markup=False)
    out.print(f"found: {_counts(run.found)}", markup=False)
    if run.dry_run:
        would = len(run.findings) + run.unlisted
        out.print(f"would file {would}, known {run.known}; --apply files them")
    else:
        out.print(
            f"filed {run.filed}, applied {run.applied}, failed {run.failed}, known {run.known}"
        )
    for finding in run.findings:
        _finding_line(finding)
    if run.unlisted:
        out.print(f"  ... and {run.unlisted} more (`graphmem steward inbox` pages through them)")


@steward_app.command("run")
def run(
    scope: Annotated[
        str,
        typer.Option(
            "--scope", help="all | duplicates | conflicts | stale | canonical | orphans | entities"
        ),
    ] = "all",
    apply: Annotated[
        bool,
        typer.Option(
            "--apply",
            help="File what is new in the inbox and apply what the policy allows (default: "
            "dry run).",
        ),
    ] = False,
    context: Annotated[str | None, typer.Option("--context", help="Only this context.")] = None,
    service: Annotated[str | None, typer.Option("--service", help="Only this service.")] = None,
    home: HomeOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Look for what needs tending; with --apply, file it and apply what the policy allows."""
    with opened(home, as_json, writes=apply) as gm:
        report = gm.steward_run(
            scope, dry_run=not apply, context=context, service=service, actor="cli"
        )
        if as_json:
            return emit_json(report)
        _show_run(report)


@steward_app.command("inbox")
def inbox(
    status: Annotated[
        str,
        typer.Option("--status", help="pending | applied | dismissed | proposed | all"),
    ] = "pending",
    kind: Annotated[str | None, typer.Option("--kind", help="Only this kind of finding.")] = None,
    limit: Annotated[int, typer.Option("--limit", "-n", help="Findings at most.")] = 50,
    sort: Annotated[
        str, typer.Option("--sort", help="confidence | newest | oldest")
    ] = "confidence",
    home: HomeOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """List findings, most confident first."""
    with opened(home, as_json) as gm:
        if status != "all" and status not in STATUSES:
            raise InvalidInput(f"status must be one of {', '.join(STATUSES)} or all", status=status)
        page = gm.steward_inbox(
            None if status == "all" else status, kind=kind, limit=limit, sort=sort
        )
        if as_json:
            return emit_json(page)
        for finding in page.items:
            _finding_line(finding)
        out.print(f"{page.pending} pending in all: {_counts(page.by_kind)}", markup=False)


@steward_app.command("resolve")
def resolve(
    finding: Annotated[str, typer.Argument(help="The finding's id.")],
    action: Annotated[
        str, typer.Argument(help="apply (do what it proposes) | dismiss", show_default=False)
    ],
    note: Annotated[str | None, typer.Option("--note", help="Why; kept on the finding.")] = None,
    home: HomeOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Apply or dismiss one finding of the inbox."""
    with opened(home, as_json, writes=True) as gm:
        resolved = gm.steward_inbox_resolve(finding, action, note, actor="cli")
        if as_json:
            return emit_json(resolved)
        out.print(f"{resolved.status} {resolved.id}: {resolved.summary}", markup=False)


def _show_policy(policy: StewardPolicy) -> None:
    for name, value in policy.model_dump(mode="json").items():
        out.print(f"{name:24} {json.dumps(value)}", markup=False)


@policy_app.callback()
def policy(
    ctx: typer.Context,
    home: HomeOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Show the policy: what applies on its own, the thresholds, the schedule."""
    if ctx.invoked_subcommand is not None:
        return
    with opened(home, as_json) as gm:
        current = gm.steward_policy()
        if as_json:
            return emit_json(current)
        _show_policy(current)


def parse_assignments(pairs: list[str]) -> dict[str, Any]:
    """KEY=VALUE pairs; a value is read as JSON when it is JSON, else kept as a string."""
    updates: dict[str, Any] = {}
    for pair in pairs:
        key, sep, text = pair.partition("=")
        if not sep or not key.strip():
            raise InvalidInput(f"expected KEY=VALUE, not {pair!r}")
        try:
            updates[key.strip()] = json.loads(text)
        except ValueError:
            updates[key.strip()] = text
    return updates


@policy_app.command("set")
def policy_set(
    pairs: Annotated[
        list[str],
        typer.Argument(
            help="KEY=VALUE, the value as JSON when it parses: auto_apply='[\"exact_duplicate\"]' "
            "stale_days=90.",
            show_default=False,
        ),
    ],
    home: HomeOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Change fields of the policy (validated together); prints the policy now in force."""
    with handle_errors(as_json):
        updates = parse_assignments(pairs)
    with opened(home, as_json, writes=True) as gm:
        changed = gm.steward_policy(updates)
        if as_json:
            return emit_json(changed)
        _show_policy(changed)


@steward_app.command("status")
def status(home: HomeOpt = None, as_json: JsonOpt = False) -> None:
    """The last run, the pending findings by kind, the policy in short."""
    with opened(home, as_json) as gm:
        current = gm.steward_status()
        if as_json:
            return emit_json(current)
        last = current.last_run
        if last is None:
            out.print("the steward has not run yet")
        else:
            when = last.started_at.strftime("%Y-%m-%d %H:%M UTC")
            out.print(
                f"last run {last.id} at {when} (scope {last.scope}): found "
                f"{sum(last.found.values())}, filed {last.filed}, applied {last.applied}, "
                f"failed {last.failed}, known {last.known}",
                markup=False,
            )
        out.print(f"{current.pending} pending: {_counts(current.by_kind)}", markup=False)
        auto = ", ".join(current.policy.auto_apply) or "nothing"
        hours = current.policy.schedule_hours
        every = f"every {hours:g} h" if hours else "never on a schedule"
        nxt = current.next_run_at.strftime("%Y-%m-%d %H:%M UTC") if current.next_run_at else None
        out.print(
            f"applies on its own: {auto}; runs {every}" + (f", next at {nxt}" if nxt else ""),
            markup=False,
        )


@steward_app.command("report")
def report(
    run_id: Annotated[
        str | None, typer.Argument(help="A run's id (default: the newest run).")
    ] = None,
    home: HomeOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """What a run looked at, found, applied and filed."""
    with opened(home, as_json) as gm:
        found = gm.steward_report(run_id)
        if as_json:
            return emit_json(found)
        _show_run(found)


@steward_app.command("undo")
def undo(
    target: Annotated[
        str,
        typer.Argument(
            help="A run's id (a steward run's, a sweep's or a sediment move's), a finding's "
            "id, or one audit record's id.",
            show_default=False,
        ),
    ],
    home: HomeOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Put back what a run, a finding or one audit record changed; findings return to the inbox."""
    with opened(home, as_json, writes=True) as gm:
        undone = gm.steward_undo(target, actor="cli")
        if as_json:
            return emit_json(undone)
        out.print(f"undone {len(undone.undone)} actions", markup=False)
        if undone.memories:
            out.print(f"memories restored: {', '.join(undone.memories)}", markup=False)
        if undone.entities:
            out.print(f"entities put back: {', '.join(undone.entities)}", markup=False)
        if undone.findings:
            out.print(f"back in the inbox: {', '.join(undone.findings)}", markup=False)
        for skipped in undone.skipped:
            out.print(f"skipped {skipped.get('audit')}: {skipped.get('why')}", markup=False)


def _sweep_rule(report: SweepReport) -> str:
    days, importance = report.policy["sweep_days"], report.policy["sweep_max_importance"]
    return (
        f"episodic and working memory older than {days:g} days, importance at most "
        f"{importance:g}, never used, referenced by nothing"
    )


@steward_app.command("sweep")
def sweep(
    apply: Annotated[
        bool,
        typer.Option("--apply", help="Archive them (default: dry run, only list them)."),
    ] = False,
    home: HomeOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Archive (never delete) old memory of little value, by the policy; undo with its run."""
    with opened(home, as_json, writes=apply) as gm:
        report = gm.sweep_archive(dry_run=not apply, actor="cli")
        if as_json:
            return emit_json(report)
        count = len(report.archived)
        if not count:
            out.print(f"nothing to sweep ({_sweep_rule(report)})", markup=False)
            return None
        if report.dry_run:
            out.print(
                f"dry run: would archive {count} memories ({_sweep_rule(report)}); "
                "--apply archives them",
                markup=False,
            )
        else:
            out.print(
                f"archived {count} memories in run {report.run}; "
                f"`graphmem steward undo {report.run}` puts them back",
                markup=False,
            )
        for memory_id in report.archived:
            out.print(f"  {memory_id}", markup=False)


@steward_app.command("recount")
def recount(home: HomeOpt = None, as_json: JsonOpt = False) -> None:
    """Recompute each live memory's reference count from the graph (what points at it)."""
    with opened(home, as_json, writes=True) as gm:
        report = gm.recount_references()
        if as_json:
            return emit_json(report)
        out.print(
            f"recounted {report.memories} live memories: {report.referenced} referenced",
            markup=False,
        )
        if report.top:
            out.print("most referenced:")
        for row in report.top:
            out.print(f"  {row['id']}  {row['references']}", markup=False)


@steward_app.command("conflicts")
def conflicts(
    context: Annotated[str | None, typer.Option("--context", help="Only this context.")] = None,
    service: Annotated[str | None, typer.Option("--service", help="Only this service.")] = None,
    home: HomeOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """The conflicts the steward finds now, with whether each waits in the inbox; files nothing."""
    with opened(home, as_json) as gm:
        report = gm.conflicts_report(context=context, service=service)
        if as_json:
            return emit_json(report)
        count = len(report.conflicts)
        if not count:
            out.print("no conflicts")
            return None
        out.print(f"{count} conflicts, {report.in_inbox} pending in the inbox", markup=False)
        for finding in report.conflicts:
            # a conflict not filed has no finding to resolve yet: its id would name nothing
            _finding_line(finding, with_id=finding.status == "pending")
            out.print(f"    about: {', '.join(finding.targets)}", markup=False)
        if report.in_inbox < count:
            out.print(
                "`graphmem steward run --scope conflicts --apply` files those not in the inbox yet"
            )
