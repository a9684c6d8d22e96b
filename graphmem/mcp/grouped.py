"""Tool modes: which tools `tools/list` offers. `full` lists every tool; `grouped` a few tools with
an `action` argument, each action being one full tool; `core` only store, recall and the project
context. Every tool stays callable by its full name in every mode, so an agent or a hook that
learnt the full names never breaks (the SDK serves any registered tool; a mode only filters the
list).

A grouped call runs the full tool itself (same arguments, same function, same result), so there is
no second implementation. Which full tool each action is comes from graphmem.registry (each
operation's MCP tool names its group and action); a group here says what grouped mode shows of it.
Its input schema (grouped_schema.py) holds each action to exactly its tool's arguments.

Grouped mode exists to weigh little in the model's context, so a grouped tool says each thing
once: what it is for and a few words on each action whose name does not say it, in its
description; a hint on each argument whose name does not say what to give (`Group.hints`,
`HINTS`). The full tools' own, longer descriptions are full mode's.

A grouped tool declares no output schema. Its results are its actions' tools' own structured
content, whose schemas full mode lists; one schema for every result of twenty actions would be an
`anyOf` weighing more than all the grouped tools' inputs together, in a mode whose point is to
weigh little.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.tools import Tool
from mcp.server.mcpserver.utilities.func_metadata import ArgModelBase, FuncMetadata

from graphmem.mcp.grouped_schema import input_schema
from graphmem.mcp.tooling import hints
from graphmem.registry import BY_TOOL, group_tools

__all__ = ["CORE", "GROUPS", "HINTS", "Group", "ToolMode", "grouped_tools", "listed"]

ToolMode = Literal["full", "grouped", "core"]

CORE = ("store_memory", "recall_memory", "summarize_project_context")


@dataclass(frozen=True)
class Group:
    """One grouped tool: its name, what it is for, a few words on each action whose name does
    not say what it does (`notes`), and a hint for each argument whose name does not say what to
    give (added to `HINTS`). Its actions are the registry's."""

    name: str
    title: str
    purpose: str
    notes: dict[str, str] = field(default_factory=dict)
    hints: dict[str, str] = field(default_factory=dict)

    @property
    def actions(self) -> dict[str, tuple[str, str]]:
        """Each action as (its full tool, its note or ""), in the registry's order."""
        return {t.action: (t.name, self.notes.get(t.action, "")) for t in group_tools(self.name)}


# Hints for arguments that several grouped tools take and that mean the same in each.
HINTS = {"context": "project or area", "detail": "full: whole records"}

GROUPS = (
    Group(
        "memory",
        "Project memory",
        "Long-term memory of this project, shared by every agent: recall before a task or at an "
        "unfamiliar error; store what you decide, learn or abandon.",
        {
            "recall": "by meaning and words; warns of dead ends",
            "update": "only the fields given",
            "delete": "for good",
            "list": "by filter, newest first",
        },
    ),
    Group(
        "knowledge",
        "Knowledge over time",
        "Engineering knowledge over time. Start work with summarize_context; retire what is no "
        "longer true with mark_outdated, not delete.",
        {
            "summarize_context": "canonical, then recent",
            "store_dead_end": "a failed approach, so nobody retries it",
            "mark_outdated": "retire; superseded_by links its successor",
            "merge_duplicates": "archive copies into the primary",
            "similar_incidents": "past incidents like a symptom",
            "promote": "to canonical",
            "bank_view": "one kind of record",
            "recall_as_of": "as known at a past date",
            "timeline": "every version of one piece of knowledge",
            "cite": "a memory relies on a file",
            "verify": "record a check and its outcome",
            "verification_candidates": "due for a check",
            "drift_scan": "cited files that changed",
        },
        {
            "as_of": "ISO date, UTC",
            "occurred_at": "ISO date, UTC",
            "avoids": "dead-end ids",
            "cites": "files it relies on",
            "days": "not verified for this many days",
            "method": "how you checked",
            "path": "from the project root",
            "section": "e.g. a heading",
        },
    ),
    Group(
        "graph",
        "Entity graph",
        "Entities and facts extracted from memories.",
        {
            "multihop": "why/how chains, with the path to each hit",
            "entities": "named things memories mention",
            "add_alias": "another name resolves to an entity",
            "remove_alias": "a name resolves there no more",
            "rename_entity": "show another name; the old one stays an alias",
            "split_entity": "some memories' mentions to a new entity",
            "apply_glossary": "the project's names file",
            "index_triples": "extract what waits",
        },
        {
            "seed_k": "recall hits to start from",
            "label": "e.g. service, person",
            "memory_ids": "whose mentions move",
        },
    ),
    Group(
        "docs",
        "Project documents",
        "The project's indexed documents (ADRs, runbooks, postmortems, READMEs...).",
        {
            "search": "sections that answer a question",
            "expand": "a whole section",
            "index": "changed documents",
        },
        {
            "source_type": "e.g. runbook, adr",
            "section_key": 'as found; "" for the top',
            "paths": "default: the configured documents",
        },
    ),
    Group(
        "repo",
        "Project files",
        "The project's files, read-only.",
        {
            "list": "a folder",
            "read": "lines of a text file",
            "search": "lines matching text or a regex",
        },
        {"path": "from the project root", "pattern": "a glob on names"},
    ),
    Group(
        "session",
        "Sessions and review",
        "Close a session with its summary; review the changes it proposed.",
        {
            "close": "plan, or apply, what a summary means",
            "review": "the review queue",
            "resolve": "one item",
            "accept": "items, or a session's pending ones",
            "resolve_queue": "the items filters select",
        },
        {
            "summary": "one statement a bullet",
            "session": "a session's id",
            "change": "e.g. supersede",
            "id": "a review item's id",
            "items": "review item ids",
            "status": "null: any",
        },
    ),
    Group(
        "steward",
        "Memory stewardship",
        "Tend the store: duplicates, conflicts, stale entries, canonical candidates, orphans; "
        "memory layers (surface < episodic < semantic < character).",
        {
            "run": "look; dry_run=false files and applies",
            "inbox": "findings",
            "resolve": "apply or dismiss a finding",
            "policy": "read, or change with updates",
            "report": "one run's findings",
            "undo": "put back a run, a finding or an audit record",
            "sweep": "archive old unused memory",
            "recount": "reference counts",
            "conflicts": "open conflicts",
            "sediment": "move memories through the layers",
            "promote_layer": "one memory up",
            "demote_layer": "one memory down",
        },
        {
            "id": "resolve: a finding; undo: a run, finding or audit record; *_layer: a memory",
            "run": "a run's id; default the newest",
            "status": "null: any",
        },
    ),
    Group(
        "admin",
        "Store internals",
        "Read-only Cypher over the graph, for what the other tools cannot answer.",
        hints={"params": "values of its $parameters"},
    ),
)


class GroupedTool(Tool):
    """A tool whose `action` argument names the full tool that runs the call."""

    actions: dict[str, Tool]

    async def run(
        self, arguments: dict[str, Any], context: Context[Any, Any], convert_result: bool = False
    ) -> Any:
        action = arguments.get("action")
        tool = self.actions.get(action) if isinstance(action, str) else None
        if tool is None:
            raise ToolError(
                f"Error executing tool {self.name}: action must be one of "
                f"{', '.join(self.actions)}, not {action!r}"
            )
        rest = {key: value for key, value in arguments.items() if key != "action"}
        return await tool.run(rest, context, convert_result=convert_result)


def listed(mode: ToolMode, tools: list[Tool]) -> list[Tool]:
    """The tools `tools/list` shows in `mode`; `tools` holds the full ones, then the grouped."""
    if mode == "full":
        return [t for t in tools if not isinstance(t, GroupedTool)]
    if mode == "grouped":
        return [t for t in tools if isinstance(t, GroupedTool)]
    return [t for t in tools if t.name in CORE]


def grouped_tools(full: list[Tool]) -> list[Tool]:
    """One GroupedTool per group over the full tools: every tool of the registry must be among
    them (and make_tool refuses one the registry does not declare), and every group of the
    registry must be one of GROUPS, so no operation misses a transport it should be on."""
    by_name = {tool.name: tool for tool in full}
    missing = sorted(set(BY_TOOL) - set(by_name))
    groups = {t.group for op in BY_TOOL.values() for t in op.tools}
    unknown = sorted(groups - {group.name for group in GROUPS})
    if missing or unknown or len(by_name) != len(full):
        raise ValueError(
            f"registry tools without a tools module's function: {missing}; "
            f"registry groups with no Group: {unknown}; tools made twice: {len(full) - len(by_name)}"
        )
    return [_grouped(group, by_name) for group in GROUPS]


def _never(**_: Any) -> None:
    raise AssertionError("a grouped tool runs its actions' tools, never this")


def _grouped(group: Group, by_name: dict[str, Tool]) -> GroupedTool:
    actions = {action: by_name[name] for action, (name, _) in group.actions.items()}
    lines = "".join(f"\n{action}: {line}" for action, (_, line) in group.actions.items() if line)
    notes = [tool.annotations for tool in actions.values() if tool.annotations]
    annotations = hints(
        group.title,
        writes=not all(note.read_only_hint for note in notes),
        destructive=any(note.destructive_hint for note in notes),
        idempotent=all(note.idempotent_hint for note in notes),
    )
    branches = {action: tool.parameters for action, tool in actions.items()}
    taken = {name for schema in branches.values() for name in schema.get("properties", {})}
    return GroupedTool(
        fn=_never,
        name=group.name,
        title=group.title,
        description=group.purpose + lines,
        parameters=input_schema(
            branches, {**{k: v for k, v in HINTS.items() if k in taken}, **group.hints}
        ),
        fn_metadata=FuncMetadata(arg_model=ArgModelBase),
        is_async=False,
        context_kwarg=None,
        annotations=annotations,
        actions=actions,
    )
