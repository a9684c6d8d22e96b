"""The text block of the steward tools: a few lines that say what the structured content says
(the SDK would send its JSON again), and the tools' descriptions."""

from __future__ import annotations

import json

from mcp.types import CallToolResult, TextContent
from pydantic import BaseModel

from graphmem.steward.models import (
    Finding,
    InboxPage,
    StewardPolicy,
    StewardRun,
    StewardStatus,
    UndoReport,
)

__all__ = [
    "finding_text",
    "inbox_text",
    "policy_text",
    "run_text",
    "status_text",
    "texted",
    "undo_text",
]

RUN = """\
Look over the memory store for what needs tending: duplicates (exact, near, or the same thing in \
other words), conflicts (facts that disagree, two canonical entries on one topic, a decision \
taking an approach a dead end rules out), stale entries (cited files that changed, knowledge \
neither verified nor used for long, expired working memory, superseded memories still live), \
memories worth making canonical, and orphans. Each finding has its evidence, a confidence and \
the action it proposes. `dry_run` (the default) only reports; with `dry_run=false` what is new \
is filed in the inbox (steward_inbox) and what the policy allows is applied (by default: \
exact duplicates merged, expired working memory archived). A finding already filed is not filed \
again unless its evidence changed.

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
and steward_status name runs), or one action (its audit record's id). Merged copies come back, \
retired memories are live again, and the findings return to the inbox as pending."""


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
        done = f"would file {len(run.findings)}, known {run.known}"
    else:
        done = f"filed {run.filed}, applied {run.applied}, failed {run.failed}, known {run.known}"
    lines = [f"{head}: found {_counts(run.found)}; {done}"]
    return "\n".join(lines + [finding_text(f) for f in run.findings])


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
