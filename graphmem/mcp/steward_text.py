"""The text block of the steward tools: a few lines that say what the structured content says
(the SDK would send its JSON again), and the tools' descriptions."""

from __future__ import annotations

import json

from mcp.types import CallToolResult, TextContent
from pydantic import BaseModel

from graphmem.steward.models import (
    ConflictsReport,
    Finding,
    InboxPage,
    ReferenceReport,
    SedimentMove,
    SedimentReport,
    StewardPolicy,
    StewardRun,
    StewardStatus,
    SweepReport,
    UndoReport,
)

__all__ = [
    "conflicts_text",
    "finding_text",
    "inbox_text",
    "move_text",
    "policy_text",
    "references_text",
    "run_text",
    "sediment_text",
    "status_text",
    "sweep_text",
    "texted",
    "undo_text",
]

RUN = """\
Look over the memory store for what needs tending: duplicates (exact, near, or the same thing in \
other words), conflicts (facts that disagree, two canonical entries on one topic, a decision \
taking an approach a dead end rules out), stale entries (cited files that changed, knowledge \
neither verified nor used for long, expired working memory, superseded memories still live), \
memories worth making canonical, orphans, and entities resolution likely got wrong (two that \
are one thing, a name one took in that names another). Each finding has its evidence, a \
confidence and the action it proposes. `dry_run` (the default) only reports; with `dry_run=false` what is new \
is filed in the inbox (steward_inbox) and what the policy allows is applied (by default: \
exact duplicates merged, expired working memory archived). A finding already filed is not filed \
again unless its evidence changed; a dismissed entity suggestion never is.

Example: {"scope": "duplicates", "dry_run": false}"""

INBOX = """\
List the steward's findings, most confident first: each with its kind, targets, evidence, \
confidence, the action it proposes and its status; and how many are pending in all, by kind."""

RESOLVE = """\
Resolve one pending finding: `apply` does what it proposes (merge, supersede, archive, promote, \
verify...) and records it so steward_undo can put it back; `dismiss` keeps it from being filed \
again until its evidence changes. Returns the finding; an action that fails leaves it pending."""

POLICY = """\
The steward's policy: which finding kinds apply on their own (`auto_apply`), the thresholds \
detection uses, and how often the owner process runs it. Without `updates` it only returns the \
policy; with `updates` those fields change (validated together) and the new policy is returned.

Example: {"updates": {"auto_apply": ["exact_duplicate"], "stale_days": 90}}"""

STATUS = """\
The steward at a glance: its last run (without findings), the pending findings by kind, the \
policy, and when it runs next."""

REPORT = """\
What one run (the newest by default) looked at, found, applied and filed, with its findings."""

UNDO = """\
Put back what the steward changed: every action of a run (give the run's id: steward_report \
and steward_status name runs; sweep_archive, sediment_cycle and the moves by hand return their \
own), what one finding applied (the finding's id), or one action (its audit record's id). Merged \
copies come back, retired and swept memories are live again, layers are as they were, and the \
findings return to the inbox as pending."""

SWEEP = """\
Archive (never delete) old memory of little value, by the policy: episodic and working memory \
older than `sweep_days` (365), at most `sweep_max_importance` (0.3) important, never used \
(recalled or read) and referenced by nothing; decisions, dead ends, incidents, postmortems and \
summaries are never swept. `dry_run` (the default) only lists them; with `dry_run=false` they \
are archived as one run, whose id (`run`) steward_undo takes to put them back.

Example: {"dry_run": false}"""

RECOUNT = """\
Recompute each live memory's reference count from the graph (the knowledge that points at it: \
AVOIDS, SUPERSEDES, MERGED_INTO links, entities shared with canonical entries) and keep it on \
the memory. Returns how many live memories were counted, how many are referenced, and the most \
referenced."""

CONFLICTS = """\
The conflicts the steward finds now (facts that disagree, two canonical entries on one topic, a \
decision taking an approach a dead end rules out), most confident first, with their evidence; \
each says whether it is pending in the inbox already (status pending, its id the finding's) or \
not filed yet (status proposed: steward_run with scope conflicts and dry_run=false files it). \
Files and changes nothing."""


SEDIMENT = """\
Move live memories through the layers surface < episodic < semantic < character, one layer a \
cycle: up as they prove themselves (a day old settles to episodic; asked for by id or filter 3 \
times, or referred to, and a week old, becomes semantic; canonical, or much used and referred \
to, becomes character), down one layer when neither used nor moved for 180 days (the policy's \
`sediment_*` fields). `dry_run` (the default) only lists the moves; with `dry_run=false` they \
are made as one run, whose id (`run`) steward_undo takes to put them back. In recall a layer is \
a small feature, never a filter.

Example: {"dry_run": false}"""

PROMOTE = """\
Move one memory a layer up by hand, or up to `layer` (one not above its own is refused): the \
cycle does not sink it for disuse for `sediment_disuse_days` (180). Returns the move, whose \
`run` steward_undo takes to put it back.

Example: {"id": "01M8S8YZ7Y1ZCHA94T7RJSYV6B", "layer": "character", "note": "team rule"}"""

DEMOTE = """\
Move one memory a layer down by hand, or down to `layer` (one not below its own is refused): \
the cycle does not lift it again for `sediment_disuse_days` (180). Returns the move, whose `run` \
steward_undo takes to put it back."""


def texted(result: BaseModel, text: str) -> CallToolResult:
    """`result` as structured content, with `text` instead of its JSON in the text block."""
    return CallToolResult(
        content=[TextContent(type="text", text=text)],
        structured_content=result.model_dump(mode="json", by_alias=True),
    )


def _counts(counts: dict[str, int]) -> str:
    return ", ".join(f"{kind} {n}" for kind, n in sorted(counts.items())) or "nothing"


def _one_line(text: str) -> str:
    return " ".join(text.split())


def finding_text(f: Finding) -> str:
    """`- pending exact_duplicate 1.00 merge <id>: <summary>`, and why it failed if it did."""
    line = f"- {f.status} {f.kind} {f.confidence:.2f} {f.action} {f.id}: {_one_line(f.summary)}"
    return line + (f" (not applied: {_one_line(f.error)})" if f.error else "")


def run_text(run: StewardRun) -> str:
    where = "".join(
        f", {name} {value}" for name, value in (("context", run.context), ("service", run.service))
        if value
    )  # fmt: skip
    head = f"{'dry run' if run.dry_run else 'run'} {run.id} (scope {run.scope}{where})"
    if run.dry_run:
        done = f"would file {len(run.findings) + run.unlisted}, known {run.known}"
    else:
        done = f"filed {run.filed}, applied {run.applied}, failed {run.failed}, known {run.known}"
    lines = [f"{head}: found {_counts(run.found)}; {done}"]
    more = [f"... and {run.unlisted} more (steward_inbox pages through them)"] * bool(run.unlisted)
    return "\n".join(lines + [finding_text(f) for f in run.findings] + more)


def inbox_text(page: InboxPage) -> str:
    lines = [finding_text(f) for f in page.items] or ["no findings"]
    return "\n".join([*lines, f"{page.pending} pending in all: {_counts(page.by_kind)}"])


def policy_text(policy: StewardPolicy) -> str:
    return "\n".join(
        f"{name}: {json.dumps(value)}" for name, value in policy.model_dump(mode="json").items()
    )


def status_text(status: StewardStatus) -> str:
    last = status.last_run
    lines = ["the steward has not run yet"]
    if last is not None:
        lines = [
            f"last run {last.id} at {last.started_at.isoformat()} (scope {last.scope}): found "
            f"{sum(last.found.values())}, filed {last.filed}, applied {last.applied}, "
            f"failed {last.failed}"
        ]
    lines.append(f"{status.pending} pending: {_counts(status.by_kind)}")
    auto = ", ".join(status.policy.auto_apply) or "nothing"
    nxt = f"; next run at {status.next_run_at.isoformat()}" if status.next_run_at else ""
    lines.append(f"applies on its own: {auto}{nxt}")
    return "\n".join(lines)


def undo_text(report: UndoReport) -> str:
    lines = [f"undone {len(report.undone)} actions: {', '.join(report.undone) or 'none'}"]
    if report.memories:
        lines.append(f"memories restored: {', '.join(report.memories)}")
    if report.findings:
        lines.append(f"back in the inbox: {', '.join(report.findings)}")
    lines += [f"skipped {s.get('audit')}: {s.get('why')}" for s in report.skipped]
    return "\n".join(lines)


def sweep_text(report: SweepReport) -> str:
    count = len(report.archived)
    rule = ", ".join(f"{name} {value:g}" for name, value in report.policy.items())
    if not count:
        head = f"nothing to sweep ({rule})"
    elif report.dry_run:
        head = f"dry run: would archive {count} memories ({rule})"
    else:
        head = f"archived {count} memories in run {report.run} (steward_undo puts them back)"
    return "\n".join([head, *(f"- {memory_id}" for memory_id in report.archived)])


def references_text(report: ReferenceReport) -> str:
    head = f"recounted {report.memories} live memories: {report.referenced} referenced"
    return "\n".join([head, *(f"- {row['id']}: {row['references']}" for row in report.top)])


def _conflict_text(f: Finding) -> str:
    """A finding line with the memories it is about; a conflict not filed has no id to give."""
    filed = f" {f.id}" if f.status == "pending" else ""
    return (
        f"- {f.status} {f.kind} {f.confidence:.2f} {f.action}{filed}: {_one_line(f.summary)} "
        f"(about {', '.join(f.targets)})"
    )


def conflicts_text(report: ConflictsReport) -> str:
    if not report.conflicts:
        return "no conflicts"
    head = f"{len(report.conflicts)} conflicts, {report.in_inbox} pending in the inbox"
    return "\n".join([head, *(_conflict_text(f) for f in report.conflicts)])


def _move_line(move: SedimentMove) -> str:
    return (
        f"- {move.memory} {move.from_layer} -> {move.to_layer} ({move.reason}): "
        f"{_one_line(move.title)}"
    )


def sediment_text(report: SedimentReport) -> str:
    moved = sum(report.counts.values())
    steps = ", ".join(f"{step} {n}" for step, n in report.counts.items())
    if not moved:
        head = f"nothing to move ({report.looked_at} live memories looked at)"
    elif report.dry_run:
        head = f"dry run: would move {moved} of {report.looked_at} live memories ({steps})"
    else:
        head = (
            f"moved {moved} of {report.looked_at} live memories in run {report.run} ({steps}; "
            "steward_undo puts them back)"
        )
    layers = ", ".join(f"{name} {n}" for name, n in report.layers.items())
    lines = [head, f"layers{' as they would be' if report.dry_run else ''}: {layers}"]
    lines += [_move_line(move) for move in report.moves]
    if report.unlisted:
        lines.append(f"... and {report.unlisted} more")
    return "\n".join(lines)


def move_text(move: SedimentMove) -> str:
    note = f" ({_one_line(move.note)})" if move.note else ""
    return (
        f"{move.memory}: {move.from_layer} -> {move.to_layer}{note} in run {move.run} "
        f"(steward_undo puts it back): {_one_line(move.title)}"
    )
