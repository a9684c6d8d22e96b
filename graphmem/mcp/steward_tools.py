"""MCP tools for the steward: look for what needs tending, work its inbox, set its policy, undo;
sweep old unused memory, recount references, report open conflicts; move memories through the
sedimentation layers (a cycle, or one by hand).
Same rules as the other tools: one MemoryAPI call each, strict arguments; the text block is a few
lines (steward_text.py), not the JSON of the structured content again."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Annotated, Any, Literal

from mcp.server.mcpserver.tools import Tool
from mcp.types import CallToolResult
from pydantic import ConfigDict, Field, create_model
from pydantic.fields import FieldInfo

from graphmem.mcp import steward_text as text
from graphmem.mcp.tooling import hints, make_tool
from graphmem.models import Model
from graphmem.steward.models import (
    ConflictsReport,
    Finding,
    FindingKind,
    FindingStatus,
    InboxPage,
    InboxSort,
    Layer,
    ReferenceReport,
    SedimentMove,
    SedimentReport,
    StewardPolicy,
    StewardRun,
    StewardScope,
    StewardStatus,
    SweepReport,
    UndoReport,
)

if TYPE_CHECKING:
    from graphmem.api import MemoryAPI as GraphMemory

__all__ = ["StewardPolicyUpdates", "steward_tools"]


class _Updates(Model):
    """Policy fields to change; the ones left out keep their value."""

    model_config = ConfigDict(extra="forbid")


def _optional(info: FieldInfo) -> tuple[Any, Any]:
    """A policy field as an optional argument: its type and bounds, its description."""
    kind: Any = Annotated[(info.annotation, *info.metadata)] if info.metadata else info.annotation
    return kind | None, Field(default=None, description=info.description)


# Every policy field, optional: the schema of `updates` says what the policy takes, and an
# unknown field is refused before the call.
StewardPolicyUpdates: type[_Updates] = create_model(  # type: ignore[call-overload]
    "StewardPolicyUpdates",
    __base__=_Updates,
    **{name: _optional(info) for name, info in StewardPolicy.model_fields.items()},
)


MemoryId = Annotated[str, Field(min_length=1, description="The memory's id.")]
Note = Annotated[str | None, Field(description="Why, kept with the move.")]


def steward_tools(gm: GraphMemory, lock: threading.Lock) -> list[Tool]:
    """The steward tools over `gm`, sharing `lock` with the other tools of the server."""

    def steward_run(
        scope: Annotated[
            StewardScope, Field(description="What to look for (default all).")
        ] = "all",
        dry_run: Annotated[
            bool, Field(description="Only report (default); false files and applies.")
        ] = True,
        context: Annotated[str | None, Field(description="Only memories of this context.")] = None,
        service: Annotated[str | None, Field(description="Only memories of this service.")] = None,
    ) -> Annotated[CallToolResult, StewardRun]:
        run = gm.steward_run(scope, dry_run=dry_run, context=context, service=service, actor="mcp")
        return text.texted(run, text.run_text(run))

    def steward_inbox(
        status: Annotated[
            FindingStatus | None, Field(description="Default pending; null for every status.")
        ] = "pending",
        kind: Annotated[FindingKind | None, Field(description="Only this kind.")] = None,
        limit: Annotated[int, Field(description="Findings at most.")] = 50,
        sort: Annotated[
            InboxSort,
            Field(description="confidence (default, most confident first), newest, oldest."),
        ] = "confidence",
    ) -> Annotated[CallToolResult, InboxPage]:
        page = gm.steward_inbox(status, kind=kind, limit=limit, sort=sort)
        return text.texted(page, text.inbox_text(page))

    def steward_inbox_resolve(
        id: Annotated[str, Field(min_length=1, description="The finding's id.")],
        resolution: Annotated[
            Literal["apply", "dismiss"],
            Field(description="apply does what the finding proposes; dismiss files it away."),
        ],
        note: Annotated[str | None, Field(description="Why, kept on the finding.")] = None,
    ) -> Annotated[CallToolResult, Finding]:
        finding = gm.steward_inbox_resolve(id, resolution, note, actor="mcp")
        return text.texted(finding, text.finding_text(finding))

    def steward_policy(
        updates: Annotated[
            StewardPolicyUpdates | None,  # type: ignore[valid-type]
            Field(description="Fields to change; without it the policy is only returned."),
        ] = None,
    ) -> Annotated[CallToolResult, StewardPolicy]:
        changes = updates.model_dump(exclude_none=True) if updates is not None else None
        policy = gm.steward_policy(changes or None)
        return text.texted(policy, text.policy_text(policy))

    def steward_status() -> Annotated[CallToolResult, StewardStatus]:
        status = gm.steward_status()
        return text.texted(status, text.status_text(status))

    def steward_report(
        run: Annotated[str | None, Field(description="A run's id (default: the newest).")] = None,
    ) -> Annotated[CallToolResult, StewardRun]:
        report = gm.steward_report(run)
        return text.texted(report, text.run_text(report))

    def steward_undo(
        id: Annotated[
            str,
            Field(
                min_length=1,
                description="A run's id (a steward run's, a sweep's or a sediment move's), a "
                "finding's id, or one audit record's id.",
            ),
        ],
    ) -> Annotated[CallToolResult, UndoReport]:
        undone = gm.steward_undo(id, actor="mcp")
        return text.texted(undone, text.undo_text(undone))

    def sweep_archive(
        dry_run: Annotated[
            bool, Field(description="Only list them (default); false archives them.")
        ] = True,
    ) -> Annotated[CallToolResult, SweepReport]:
        report = gm.sweep_archive(dry_run=dry_run, actor="mcp")
        return text.texted(report, text.sweep_text(report))

    def recount_references() -> Annotated[CallToolResult, ReferenceReport]:
        report = gm.recount_references()
        return text.texted(report, text.references_text(report))

    def conflicts_report(
        context: Annotated[str | None, Field(description="Only memories of this context.")] = None,
        service: Annotated[str | None, Field(description="Only memories of this service.")] = None,
    ) -> Annotated[CallToolResult, ConflictsReport]:
        report = gm.conflicts_report(context=context, service=service)
        return text.texted(report, text.conflicts_text(report))

    def sediment_cycle(
        dry_run: Annotated[
            bool, Field(description="Only list the moves (default); false makes them.")
        ] = True,
    ) -> Annotated[CallToolResult, SedimentReport]:
        report = gm.sediment_cycle(dry_run=dry_run, actor="mcp")
        return text.texted(report, text.sediment_text(report))

    def promote_sediment(
        id: MemoryId,
        layer: Annotated[
            Layer | None, Field(description="Up to this layer (default: the next one up).")
        ] = None,
        note: Note = None,
    ) -> Annotated[CallToolResult, SedimentMove]:
        move = gm.promote_sediment(id, layer=layer, note=note, actor="mcp")
        return text.texted(move, text.move_text(move))

    def demote_sediment(
        id: MemoryId,
        layer: Annotated[
            Layer | None, Field(description="Down to this layer (default: the next one down).")
        ] = None,
        note: Note = None,
    ) -> Annotated[CallToolResult, SedimentMove]:
        move = gm.demote_sediment(id, layer=layer, note=note, actor="mcp")
        return text.texted(move, text.move_text(move))

    return [
        make_tool(lock, steward_run, text.RUN,
                  hints("Run the steward", destructive=True, idempotent=False)),
        make_tool(lock, steward_inbox, text.INBOX, hints("Steward inbox")),
        make_tool(lock, steward_inbox_resolve, text.RESOLVE,
                  hints("Resolve a finding", destructive=True)),
        make_tool(lock, steward_policy, text.POLICY, hints("Steward policy")),
        make_tool(lock, steward_status, text.STATUS, hints("Steward status")),
        make_tool(lock, steward_report, text.REPORT, hints("Steward run report")),
        make_tool(lock, steward_undo, text.UNDO,
                  hints("Undo the steward", destructive=True)),
        make_tool(lock, sweep_archive, text.SWEEP,
                  hints("Sweep old memory", destructive=True)),
        make_tool(lock, recount_references, text.RECOUNT,
                  hints("Recount references")),
        make_tool(lock, conflicts_report, text.CONFLICTS, hints("Open conflicts")),
        make_tool(lock, sediment_cycle, text.SEDIMENT,
                  hints("Sediment cycle", idempotent=False)),
        make_tool(lock, promote_sediment, text.PROMOTE,
                  hints("Promote a memory's layer", idempotent=False)),
        make_tool(lock, demote_sediment, text.DEMOTE,
                  hints("Demote a memory's layer", idempotent=False)),
    ]  # fmt: skip
