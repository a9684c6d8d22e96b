"""The graphmem MCP server: every tool over one GraphMemory, listed according to the tool mode.

Tools: the memory tools (memory_tools.py), knowledge (knowledge_tools.py), entity graph
(graph_tools.py), documents and files (document_tools.py), sessions (session_tools.py), the
steward (steward_tools.py), and the grouped tools over them all (grouped.py). Each full tool calls
exactly one GraphMemory method; a grouped one calls a full one. The mode (`mcp_tools` setting,
`graphmem serve --tools`) only decides what `tools/list` shows: every tool can be called by its
name in every mode.

Errors: a GraphmemError raised by GraphMemory becomes an MCP `ToolError` in `tooling.guard` (one
place), so the client sees `isError: true` with the error's code and message. Argument-schema
violations are reported the same way by the SDK. Anything else is a crash: the SDK logs it and the
client gets a generic message. GraphMemory validates before it writes, so a failed call leaves
nothing behind.

GraphMemory is synchronous; the SDK runs sync tools on worker threads, and `guard` serialises the
calls with one lock so the store only ever sees one request at a time from this server.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any, Literal

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.tools import Tool
from mcp.types import Tool as MCPTool

from graphmem.mcp.document_tools import document_tools
from graphmem.mcp.graph_tools import graph_tools
from graphmem.mcp.grouped import ToolMode, grouped_tools, listed
from graphmem.mcp.knowledge_tools import knowledge_tools
from graphmem.mcp.memory_tools import Deleted, memory_tools
from graphmem.mcp.session_tools import session_tools
from graphmem.mcp.steward_tools import steward_tools
from graphmem.mcp.tooling import error_text

if TYPE_CHECKING:
    from graphmem.api import MemoryAPI as GraphMemory

__all__ = [
    "SERVER_NAME",
    "Deleted",
    "build_server",
    "error_text",
    "every_tool",
    "graphmem_version",
    "serve_stdio",
]

SERVER_NAME = "graphmem"

_ABOUT = """\
graphmem is a long-term memory for coding agents, local to this project. It keeps what would \
otherwise be lost between sessions: decisions and their reasons, dead ends (what was tried, why it \
failed), facts about the code, services and environment, runbooks, incidents.
"""

_TYPES = """
Memory types: episodic (what happened), semantic (facts), procedural (how to do something), \
working (scratch for the current task). Kinds: note, decision, dead_end, incident, runbook, \
postmortem, summary, checkpoint.\
"""

INSTRUCTIONS: dict[ToolMode, str] = {
    "full": _ABOUT
    + """
- Before starting work, and when you hit an unfamiliar error, call recall_memory with a short \
description of the task or the error; earlier decisions and dead ends save repeating them.
- When you decide something, find something out, or abandon an approach, call store_memory with \
content that stands on its own (name the files, services and errors a later search would use).
- Correct a memory with update_memory instead of storing a near-duplicate; delete_memory only for \
memories that are wrong or unwanted.
- list_memories browses by filter (newest first), memory_stats shows what the store holds, and \
cypher_query answers read-only questions about the graph that the other tools cannot.
- Before starting work, call summarize_project_context (canonical knowledge, then recent events). \
Record engineering knowledge with store_decision, store_dead_end (when an approach failed, so \
nobody tries it again), store_incident, store_runbook and store_postmortem; when something is no \
longer true, mark_outdated it (with superseded_by when a newer memory replaces it) instead of \
deleting it. Recall warns about related dead ends and points at successors (superseded_by).
- At the end of a session, hand its summary to close_session (one statement per bullet); what it \
does not apply waits in review_session_changes.
- When recall turns up copies or contradictions, steward_run finds them all (duplicates, \
conflicts, stale entries); steward_inbox lists what it did not apply on its own.
"""
    + _TYPES,
    "grouped": _ABOUT
    + """
- Before starting work, call knowledge with action summarize_context; before a task and at an \
unfamiliar error, memory with action recall and a short description of the task or the error.
- When you decide something, find something out, or abandon an approach, store it (memory: store; \
knowledge: store_decision, store_dead_end, store_incident, store_runbook, store_postmortem) with \
content that stands on its own (name the files, services and errors a later search would use).
- Correct a memory with memory update instead of storing a near-duplicate; when something is no \
longer true, knowledge mark_outdated it (superseded_by: its successor) instead of deleting it.
- docs searches the project's documents, repo reads its files, graph answers why/how chains \
across memories, admin runs read-only Cypher.
- At the end of a session, hand its summary to session with action close; what it does not apply \
waits in its review queue (session: review).
- When recall turns up copies or contradictions, steward with action run finds them all \
(duplicates, conflicts, stale entries); its inbox lists what it did not apply on its own.
"""
    + _TYPES,
    "core": _ABOUT
    + """
- Before starting work, call summarize_project_context; before a task and when you hit an \
unfamiliar error, call recall_memory with a short description of the task or the error.
- When you decide something (kind=decision, with the reason), find something out, or abandon an \
approach (kind=dead_end, with why it failed), call store_memory with content that stands on its \
own (name the files, services and errors a later search would use).
"""
    + _TYPES,
}

_LOG_LEVELS: dict[str, Literal["DEBUG", "INFO", "WARNING", "ERROR"]] = {
    "debug": "DEBUG",
    "info": "INFO",
    "warning": "WARNING",
    "error": "ERROR",
}


def graphmem_version() -> str:
    """graphmem's version, as reported by /health and the MCP initialize result."""
    import graphmem

    return str(getattr(graphmem, "__version__", "0+unknown"))


class GraphmemServer(MCPServer[Any]):
    """An MCPServer that lists only the tools of its mode and serves every tool it has."""

    def __init__(self, *args: Any, listed: set[str], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.listed = listed

    async def list_tools(self) -> list[MCPTool]:
        return [tool for tool in await super().list_tools() if tool.name in self.listed]


def every_tool(gm: GraphMemory, lock: threading.Lock) -> list[Tool]:
    """Every tool over `gm`: the full ones (each declared by graphmem.registry), then the grouped
    ones over them; `lock` serialises their calls."""
    full = (
        memory_tools(gm, lock)
        + knowledge_tools(gm, lock)
        + graph_tools(gm, lock)
        + document_tools(gm, lock)
        + session_tools(gm, lock)
        + steward_tools(gm, lock)
    )
    return full + grouped_tools(full)


def build_server(gm: GraphMemory, mode: ToolMode | None = None) -> MCPServer[Any]:
    """An MCPServer named "graphmem" whose tools call `gm`; the caller owns (and closes) `gm`.

    `mode` defaults to the `mcp_tools` setting."""
    mode = mode or gm.settings.mcp_tools
    tools = every_tool(gm, threading.Lock())
    return GraphmemServer(
        SERVER_NAME,
        title="graphmem memory store",
        instructions=INSTRUCTIONS[mode],
        version=graphmem_version(),
        tools=tools,
        listed={tool.name for tool in listed(mode, tools)},
        # MCPServer configures the root logger (on stderr, so stdio stays clean) at this level.
        log_level=_LOG_LEVELS[gm.settings.log_level],
    )


def serve_stdio(gm: GraphMemory) -> None:
    """Serve `gm` over stdin/stdout until the client closes stdin (blocks).

    Closing stdin is how an MCP client stops a stdio server; then this returns and the caller closes
    the store. No signal handling is added: the SDK's stdin reader runs on a worker thread that a
    signal cannot interrupt, so a handler could not make the process exit any sooner. Nothing but
    MCP messages may go to stdout; logs go to stderr.
    """
    anyio.run(build_server(gm).run_stdio_async)
