"""Tool modes: which tools `tools/list` offers. `full` lists every tool; `grouped` a few tools with
an `action` argument, each action being one full tool; `core` only store, recall and the project
context. Every tool stays callable by its full name in every mode, so an agent or a hook that
learnt the full names never breaks (the SDK serves any registered tool; a mode only filters the
list).

A grouped call runs the full tool itself (same arguments, same function, same result), so there is
no second implementation. Its input schema holds each action to its tool's own arguments (see
`input_schema`): an object with `action`, every argument once at the root, and per action
`if action is X then <the arguments X takes>` chained through `else`. Not a top-level `oneOf`: the
Anthropic API refuses a tool whose input schema has `oneOf`/`anyOf`/`allOf` at the root, and Claude
clients pass MCP schemas through.

A grouped tool declares no output schema. Its results are its actions' tools' own structured
content, whose schemas full mode lists; one schema for every result of twenty actions would be an
`anyOf` weighing more than all the grouped tools' inputs together, in a mode whose point is to
weigh little.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Literal

from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.tools import Tool
from mcp.server.mcpserver.utilities.func_metadata import ArgModelBase, FuncMetadata

from graphmem.mcp.tooling import hints

__all__ = ["CORE", "GROUPS", "Group", "ToolMode", "grouped_tools", "listed"]

ToolMode = Literal["full", "grouped", "core"]

CORE = ("store_memory", "recall_memory", "summarize_project_context")


@dataclass(frozen=True)
class Group:
    """One grouped tool: its name, what it is for, and its actions as (full tool, one line)."""

    name: str
    title: str
    purpose: str
    actions: dict[str, tuple[str, str]]


GROUPS = (
    Group(
        "memory",
        "Project memory",
        "Long-term memory of this project, shared by every agent. Recall before a task or at an "
        "unfamiliar error; store what you decide, learn or abandon, in words a later search "
        "would use.",
        {
            "store": ("store_memory", "save one memory (content, kind, tags...); returns its id"),
            "recall": ("recall_memory", "search by meaning and exact words; warns of dead ends"),
            "get": ("get_memory", "one whole memory by id"),
            "update": ("update_memory", "change the given fields of a memory"),
            "delete": ("delete_memory", "delete a memory for good"),
            "list": ("list_memories", "browse by filter, newest first; cursor pages"),
            "stats": ("memory_stats", "counts and size of the store"),
        },
    ),
    Group(
        "knowledge",
        "Knowledge over time",
        "Engineering knowledge that stays true: records, supersession, canonical entries, "
        "verification. Start work with summarize_context; retire what is no longer true with "
        "mark_outdated instead of deleting it.",
        {
            "summarize_context": ("summarize_project_context", "canonical knowledge, then recent"),
            "store_decision": ("store_decision", "a decision with its rationale"),
            "store_dead_end": ("store_dead_end", "an approach that failed, so nobody retries it"),
            "store_incident": ("store_incident", "an outage or breakage"),
            "store_runbook": ("store_runbook", "when to do what, step by step"),
            "store_postmortem": ("store_postmortem", "root cause and action items"),
            "mark_outdated": (
                "mark_outdated",
                "retire a memory; superseded_by links its successor",
            ),
            "merge_duplicates": ("merge_duplicates", "archive copies into one primary memory"),
            "search_runbooks": ("search_runbooks", "runbooks for a situation"),
            "similar_incidents": ("recall_similar_incidents", "past incidents like a symptom"),
            "promote": ("promote_to_canonical", "make a memory canonical, with an owner"),
            "list_canonical": ("list_canonical_knowledge", "canonical memories"),
            "recall_canonical": ("recall_canonical_knowledge", "search canonical memories only"),
            "bank_view": ("project_bank_view", "decisions, runbooks, incidents, ... of a project"),
            "recall_as_of": ("recall_as_of", "what was known at a past date"),
            "timeline": ("knowledge_timeline", "every version of one piece of knowledge"),
            "cite": ("cite_source", "a memory relies on a project file"),
            "verify": ("verify_entry", "record that a memory was checked, and the outcome"),
            "verification_candidates": ("verification_candidates", "memories due for a check"),
            "drift_scan": ("drift_scan", "cited files that changed since"),
        },
    ),
    Group(
        "graph",
        "Entity graph",
        "The entities and facts extracted from memories.",
        {
            "multihop": ("recall_multihop", "answer a why/how chain, with the path to each hit"),
            "entities": ("list_entities", "named things memories mention"),
            "merge_entities": ("merge_entities", "fold duplicate entities into one"),
            "index_triples": ("index_triples", "extract entities and facts not done yet"),
        },
    ),
    Group(
        "docs",
        "Project documents",
        "The project's indexed documents (ADRs, runbooks, postmortems, READMEs, CI configs).",
        {
            "search": ("semantic_search", "sections that answer a question"),
            "expand": ("expand_section", "one whole section, by path and section_key"),
            "index": ("index_documents", "index changed documents"),
        },
    ),
    Group(
        "repo",
        "Project files",
        "Read-only access to the project's files (outside paths are refused).",
        {
            "list": ("repo_list", "a folder's files"),
            "read": ("repo_read", "lines of a text file"),
            "search": ("repo_search", "lines matching a string or regex"),
        },
    ),
    Group(
        "session",
        "Sessions and review",
        "Hand over a session's summary at its end; review the changes it proposed.",
        {
            "close": ("close_session", "plan (or apply) what a session's summary means"),
            "review": ("review_session_changes", "the review queue"),
            "resolve": ("resolve_review_item", "accept, reject or defer one item"),
            "accept": ("accept_session_changes", "accept items, or a session's pending ones"),
            "resolve_queue": ("resolve_review_queue", "resolve the items filters select"),
        },
    ),
    Group(
        "steward",
        "Memory stewardship",
        "Tend the store: find duplicates, conflicts, stale entries, canonical candidates and "
        "orphans; work the inbox of what was found; undo what the steward did; sweep old unused "
        "memory, recount references, report open conflicts; move memories through the layers "
        "(surface, episodic, semantic, character).",
        {
            "run": ("steward_run", "look for what needs tending; dry_run=false files and applies"),
            "inbox": ("steward_inbox", "findings, most confident first"),
            "resolve": ("steward_inbox_resolve", "apply or dismiss one finding"),
            "policy": ("steward_policy", "what applies on its own, thresholds; updates changes"),
            "status": ("steward_status", "last run, pending findings by kind"),
            "report": ("steward_report", "one run's findings (the newest by default)"),
            "undo": ("steward_undo", "put back a run, a finding or one audit record"),
            "sweep": ("sweep_archive", "archive old unused memory; dry_run=false archives"),
            "recount": ("recount_references", "recompute reference counts from the graph"),
            "conflicts": ("conflicts_report", "open conflicts, each saying if it is in the inbox"),
            "sediment": ("sediment_cycle", "move memories through the layers; dry_run=false moves"),
            "promote_layer": ("promote_sediment", "move one memory a layer up (or to `layer`)"),
            "demote_layer": ("demote_sediment", "move one memory a layer down (or to `layer`)"),
        },
    ),
    Group(
        "admin",
        "Store internals",
        "The graph under the memories, for questions the other tools cannot answer.",
        {"cypher": ("cypher_query", "a read-only Cypher query (columns and rows)")},
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
    """One GroupedTool per group over the full tools, which must each be in exactly one group."""
    by_name = {tool.name: tool for tool in full}
    grouped = [name for group in GROUPS for name, _ in group.actions.values()]
    if sorted(grouped) != sorted(by_name):
        raise ValueError(
            f"tools in no group: {sorted(set(by_name) - set(grouped))}; "
            f"groups naming no tool or one twice: {sorted(set(grouped) ^ set(by_name))}"
        )
    return [_grouped(group, by_name) for group in GROUPS]


def _never(**_: Any) -> None:
    raise AssertionError("a grouped tool runs its actions' tools, never this")


def _grouped(group: Group, by_name: dict[str, Tool]) -> GroupedTool:
    actions = {action: by_name[name] for action, (name, _) in group.actions.items()}
    lines = "\n".join(f"- {action}: {line}" for action, (_, line) in group.actions.items())
    description = (
        f"{group.purpose}\n\nactions (arguments: the input schema's branch for the action; "
        f'results are compact unless detail="full"):\n{lines}'
    )
    notes = [tool.annotations for tool in actions.values() if tool.annotations]
    annotations = hints(
        group.title,
        writes=not all(note.read_only_hint for note in notes),
        destructive=any(note.destructive_hint for note in notes),
        idempotent=all(note.idempotent_hint for note in notes),
    )
    return GroupedTool(
        fn=_never,
        name=group.name,
        title=group.title,
        description=description,
        parameters=input_schema({action: tool.parameters for action, tool in actions.items()}),
        fn_metadata=FuncMetadata(arg_model=ArgModelBase),
        is_async=False,
        context_kwarg=None,
        annotations=annotations,
        actions=actions,
    )


# -- schemas ---------------------------------------------------------------------------------------


def _types(schema: dict[str, Any]) -> set[str] | None:
    """The JSON types a property schema allows; None when it cannot tell (a $ref, say)."""
    if "type" in schema:
        kind = schema["type"]
        return {kind} if isinstance(kind, str) else set(kind)
    if "anyOf" in schema:
        found: set[str] = set()
        for part in schema["anyOf"]:
            types = _types(part)
            if types is None:
                return None
            found |= types
        return found
    return None


def _add_defs(defs: dict[str, Any], extra: dict[str, Any]) -> None:
    for name, schema in extra.items():
        if defs.setdefault(name, schema) != schema:
            raise ValueError(f"two tools define {name} differently: their schemas cannot merge")


# Keywords that describe a value and never reject one.
_NOTES = ("title", "description", "default", "examples")


def input_schema(branches: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """`action`, every argument once at the root, and per action `if action == X then` the names
    it takes and the ones it requires.

    An argument that every action taking it checks the same way (`context`, `tags`, `limit`...)
    has its whole schema at the root, written once however many actions share it; a branch names
    it with `{}`, or with just the description or default it gives it differently. An argument
    that actions check differently gets its JSON types at the root and its exact schema in each
    branch. So each action is held to exactly its tool's arguments, in about the bytes the
    arguments take once."""
    defs: dict[str, Any] = {}
    uses: dict[str, list[dict[str, Any]]] = {}
    for schema in branches.values():
        _add_defs(defs, schema.get("$defs", {}))
        for name, prop in schema.get("properties", {}).items():
            uses.setdefault(name, []).append(prop)
    if "action" in uses:
        raise ValueError("a tool with an `action` argument cannot be a grouped tool's action")
    shared = {name: _common(props) for name, props in sorted(uses.items())}
    chain: dict[str, Any] = {}
    for action, schema in reversed(branches.items()):
        own = schema.get("properties", {})
        branch = {
            "properties": {
                "action": {},
                **{name: _difference(prop, shared[name]) for name, prop in own.items()},
            },
            "additionalProperties": False,
            **({"required": schema["required"]} if schema.get("required") else {}),
        }
        chain = {
            "if": {"properties": {"action": {"const": action}}},
            "then": branch,
            **({"else": chain} if chain else {}),
        }
    root = {
        "type": "object",
        "properties": {"action": {"type": "string", "enum": list(branches)}, **shared},
        "required": ["action"],
        "additionalProperties": False,
        **chain,
    }
    return {**root, "$defs": defs} if defs else root


def _checks(prop: dict[str, Any]) -> str:
    return json.dumps({k: v for k, v in prop.items() if k not in _NOTES}, sort_keys=True)


def _common(props: list[dict[str, Any]]) -> dict[str, Any]:
    """The root schema of an argument the actions in `props` take."""
    counts: dict[str, int] = {}
    for prop in props:
        key = json.dumps(prop, sort_keys=True)
        counts[key] = counts.get(key, 0) + 1
    commonest: dict[str, Any] = json.loads(max(counts, key=lambda key: counts[key]))
    if len({_checks(prop) for prop in props}) == 1:
        return commonest
    found = [_types(prop) for prop in props]
    union = sorted({kind for types in found if types for kind in types})
    if None in found or not union:  # a type it cannot tell: any value, the branch decides
        return {}
    if len(union) == 1:
        return {"type": union[0]}
    # anyOf, not a type list: some clients (Gemini's) refuse type lists in arguments
    return {"anyOf": [{"type": kind} for kind in union]}


def _difference(prop: dict[str, Any], root: dict[str, Any]) -> dict[str, Any]:
    """What a branch adds to the root schema of one of its arguments: nothing, the annotations
    it words differently, or (when it checks differently) its whole schema."""
    if _checks(prop) != _checks(root):
        return prop
    return {key: prop[key] for key in _NOTES if key in prop and prop[key] != root.get(key)}
