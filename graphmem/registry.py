"""The operations of the MemoryAPI, each declared once: which service of GraphMemory runs it,
whether it only reads, whether the owner runs it in the background, and the MCP tool that calls
it with its grouped-mode group and action.

Everything that used to list operations by hand derives from this table: the owner's methods and
the client's forwarding (graphmem.daemon), which requests are sent again when an owner dies
(`reads`, `keyed`, `idempotent`), which ones step aside for waited-on requests (`background`),
the MCP tools' read-only hints and the grouped tools' actions (graphmem.mcp). A new operation is
its service's method, a line on the facade and in the MemoryAPI protocol (both typed, both
checked against the method by mypy and tests/test_registry.py), and a line here; an MCP tool
adds its function to its tools module.

The order is grouped mode's: a group's actions are listed in the order of their lines here.
The client side (the CLI, a stdio MCP server) imports this module: it imports nothing of graphmem.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = [
    "BY_NAME",
    "BY_TOOL",
    "OPERATIONS",
    "SERVICES",
    "McpTool",
    "Operation",
    "group_tools",
    "index",
]

# The services of GraphMemory that operations name, as the facade's attributes.
SERVICES = (
    "memories", "admin", "knowledge", "graph", "documents", "sessions", "steward", "upkeep",
    "hooks", "curation", "arrivals", "entity_edits", "glossary",
)  # fmt: skip


@dataclass(frozen=True)
class McpTool:
    """An MCP tool that runs an operation: its name (full mode), and the grouped tool (`group`)
    whose `action` it is in grouped mode."""

    name: str
    group: str
    action: str


@dataclass(frozen=True)
class Operation:
    """One MemoryAPI method.

    `reads`: it changes nothing a second run would not (a recall counts one more access at
    most), so a client may send it again when the owner died before answering; `writes_with`
    names the argument that makes such an operation a write (`cypher(..., write=True)`).
    `keyed`: a store that carries an idempotency key (the client makes one when the caller gave
    none), so a second sending returns the first one's memory. `idempotent`: a write whose
    second run is the first (`update` sets fields to the values given). Any other write may have
    been applied or not when its owner dies: the caller is told so (OutcomeUnknown).
    `background`: long work nobody waits on line by line; in the owner it steps aside for the
    requests that are waited on (graphmem/foreground.py)."""

    name: str
    service: str
    reads: bool
    tools: tuple[McpTool, ...] = ()
    background: bool = False
    keyed: bool = False
    idempotent: bool = False
    writes_with: str | None = None

    def is_read(self, kwargs: Mapping[str, Any]) -> bool:
        return self.reads and not (self.writes_with and kwargs.get(self.writes_with))

    def resendable(self, kwargs: Mapping[str, Any]) -> bool:
        """Whether a request may be sent again when its first sending got no answer."""
        return self.is_read(kwargs) or self.keyed or self.idempotent


def mcp(name: str, group: str, action: str) -> McpTool:
    return McpTool(name, group, action)


def read(name: str, service: str, *tools: McpTool, **flags: Any) -> Operation:
    return Operation(name, service, True, tools, **flags)


def write(name: str, service: str, *tools: McpTool, **flags: Any) -> Operation:
    return Operation(name, service, False, tools, **flags)


OPERATIONS: tuple[Operation, ...] = (
    # -- memories (graphmem/memory_ops.py) ----------------------------------------------------
    write("remember", "memories", mcp("store_memory", "memory", "store"), keyed=True),
    write("remember_many", "memories", keyed=True),
    read("recall", "memories", mcp("recall_memory", "memory", "recall")),
    read("get", "memories", mcp("get_memory", "memory", "get")),
    write("update", "curation", mcp("update_memory", "memory", "update"), idempotent=True),
    write("delete", "memories", mcp("delete_memory", "memory", "delete")),
    read("list", "memories", mcp("list_memories", "memory", "list")),
    read("stats", "memories", mcp("memory_stats", "memory", "stats")),
    # -- the store as a whole (graphmem/admin_ops.py) -----------------------------------------
    read("cypher", "admin", mcp("cypher_query", "admin", "cypher"), writes_with="write"),
    read("db_status", "admin"),
    write("backup", "admin", background=True),
    read("export_page", "admin"),
    write("import_jsonl", "admin", background=True),
    write("reembed", "admin", background=True),
    # -- knowledge over time (graphmem/knowledge/ops.py) --------------------------------------
    read("summarize_project_context", "knowledge",
         mcp("summarize_project_context", "knowledge", "summarize_context")),
    write("store_decision", "knowledge",
          mcp("store_decision", "knowledge", "store_decision"), keyed=True),
    write("store_dead_end", "knowledge",
          mcp("store_dead_end", "knowledge", "store_dead_end"), keyed=True),
    write("store_incident", "knowledge",
          mcp("store_incident", "knowledge", "store_incident"), keyed=True),
    write("store_runbook", "knowledge",
          mcp("store_runbook", "knowledge", "store_runbook"), keyed=True),
    write("store_postmortem", "knowledge",
          mcp("store_postmortem", "knowledge", "store_postmortem"), keyed=True),
    write("mark_outdated", "curation", mcp("mark_outdated", "knowledge", "mark_outdated")),
    write("merge_duplicates", "curation",
          mcp("merge_duplicates", "knowledge", "merge_duplicates")),
    read("search_runbooks", "knowledge", mcp("search_runbooks", "knowledge", "search_runbooks")),
    read("recall_similar_incidents", "knowledge",
         mcp("recall_similar_incidents", "knowledge", "similar_incidents")),
    write("promote_to_canonical", "curation",
          mcp("promote_to_canonical", "knowledge", "promote")),
    read("list_canonical_knowledge", "knowledge",
         mcp("list_canonical_knowledge", "knowledge", "list_canonical")),
    read("recall_canonical_knowledge", "knowledge",
         mcp("recall_canonical_knowledge", "knowledge", "recall_canonical")),
    read("project_bank_view", "knowledge", mcp("project_bank_view", "knowledge", "bank_view")),
    read("recall_as_of", "knowledge", mcp("recall_as_of", "knowledge", "recall_as_of")),
    read("knowledge_timeline", "knowledge", mcp("knowledge_timeline", "knowledge", "timeline")),
    write("cite_source", "knowledge", mcp("cite_source", "knowledge", "cite")),
    write("verify_entry", "curation", mcp("verify_entry", "knowledge", "verify")),
    read("verification_candidates", "knowledge",
         mcp("verification_candidates", "knowledge", "verification_candidates")),
    read("drift_scan", "knowledge", mcp("drift_scan", "knowledge", "drift_scan")),
    # -- the entity graph (graphmem/graph/ops.py) ---------------------------------------------
    read("recall_multihop", "graph", mcp("recall_multihop", "graph", "multihop")),
    read("list_entities", "graph", mcp("list_entities", "graph", "entities")),
    # corrections of entity resolution, audited (graphmem/graph/editing.py)
    write("merge_entities", "entity_edits", mcp("merge_entities", "graph", "merge_entities")),
    write("add_entity_alias", "entity_edits",
          mcp("add_entity_alias", "graph", "add_alias"), idempotent=True),
    write("remove_entity_alias", "entity_edits",
          mcp("remove_entity_alias", "graph", "remove_alias")),
    write("rename_entity", "entity_edits", mcp("rename_entity", "graph", "rename_entity"),
          idempotent=True),
    write("split_entity", "entity_edits", mcp("split_entity", "graph", "split_entity")),
    # the project's glossary of names, applied as those corrections (graphmem/graph/glossary_ops.py)
    write("apply_glossary", "glossary", mcp("apply_glossary", "graph", "apply_glossary"),
          idempotent=True),
    write("index_triples", "graph", mcp("index_triples", "graph", "index_triples"),
          background=True),
    read("memory_graph", "graph"),
    read("entity_page", "graph"),
    read("wait_for_extraction", "graph"),
    # -- documents and files (graphmem/documents/ops.py) --------------------------------------
    read("search_docs", "documents", mcp("semantic_search", "docs", "search")),
    read("expand_section", "documents", mcp("expand_section", "docs", "expand")),
    write("index_documents", "documents", mcp("index_documents", "docs", "index"),
          background=True),
    read("documents_overview", "documents"),
    read("document_page", "documents"),
    read("repo_list", "documents", mcp("repo_list", "repo", "list")),
    read("repo_read", "documents", mcp("repo_read", "repo", "read")),
    read("repo_search", "documents", mcp("repo_search", "repo", "search")),
    # -- sessions and the review queue (graphmem/sessions/ops.py) -----------------------------
    write("close_session", "sessions", mcp("close_session", "session", "close")),
    read("review_session_changes", "sessions",
         mcp("review_session_changes", "session", "review")),
    write("resolve_review_item", "sessions", mcp("resolve_review_item", "session", "resolve")),
    write("accept_session_changes", "sessions",
          mcp("accept_session_changes", "session", "accept")),
    write("resolve_review_queue", "sessions",
          mcp("resolve_review_queue", "session", "resolve_queue")),
    # -- the steward (graphmem/steward/ops.py) and its upkeep (graphmem/steward/upkeep.py) -----
    write("steward_run", "steward", mcp("steward_run", "steward", "run"), background=True),
    read("steward_inbox", "steward", mcp("steward_inbox", "steward", "inbox")),
    write("steward_inbox_resolve", "steward",
          mcp("steward_inbox_resolve", "steward", "resolve")),
    write("steward_policy", "steward", mcp("steward_policy", "steward", "policy")),
    read("steward_status", "steward", mcp("steward_status", "steward", "status")),
    read("steward_report", "steward", mcp("steward_report", "steward", "report")),
    write("steward_undo", "steward", mcp("steward_undo", "steward", "undo")),
    read("audit_log", "curation"),
    # -- what arrived, for the console's landing page (graphmem/feed.py) ----------------------
    read("feed", "arrivals"),
    write("sweep_archive", "upkeep", mcp("sweep_archive", "steward", "sweep"), background=True),
    write("recount_references", "upkeep", mcp("recount_references", "steward", "recount"),
          background=True),
    read("conflicts_report", "steward", mcp("conflicts_report", "steward", "conflicts"),
         background=True),
    write("sediment_cycle", "upkeep", mcp("sediment_cycle", "steward", "sediment"),
          background=True),
    write("promote_sediment", "upkeep", mcp("promote_sediment", "steward", "promote_layer")),
    write("demote_sediment", "upkeep", mcp("demote_sediment", "steward", "demote_layer")),
    # -- what `graphmem hook` asks the owner for (graphmem/agents/context.py) -----------------
    write("hook_context", "hooks"),
    write("hook_checkpoint", "hooks"),
    write("end_session", "hooks"),
)  # fmt: skip


def index(operations: Iterable[Operation]) -> tuple[dict[str, Operation], dict[str, Operation]]:
    """The operations by name and by MCP tool name; an operation, a tool or a grouped action
    declared twice, or a service GraphMemory does not have, is refused."""
    by_name: dict[str, Operation] = {}
    by_tool: dict[str, Operation] = {}
    actions: set[tuple[str, str]] = set()
    for op in operations:
        if op.name in by_name:
            raise ValueError(f"operation {op.name} is declared twice")
        if op.service not in SERVICES:
            raise ValueError(f"operation {op.name}: no service {op.service!r}")
        by_name[op.name] = op
        for tool in op.tools:
            if tool.name in by_tool:
                raise ValueError(f"MCP tool {tool.name} is declared twice")
            if (tool.group, tool.action) in actions:
                raise ValueError(f"grouped action {tool.group}.{tool.action} is declared twice")
            by_tool[tool.name] = op
            actions.add((tool.group, tool.action))
    return by_name, by_tool


BY_NAME, BY_TOOL = index(OPERATIONS)


def group_tools(group: str) -> list[McpTool]:
    """The MCP tools that are the grouped tool `group`'s actions, in order."""
    return [tool for op in OPERATIONS for tool in op.tools if tool.group == group]
