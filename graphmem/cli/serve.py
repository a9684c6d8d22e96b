"""Long-running commands: the MCP server and the demo."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from graphmem.cli.common import HomeOpt, JsonOpt, emit_json, escape, handle_errors, opened, out

if TYPE_CHECKING:
    from graphmem.http_token import HttpToken

app = typer.Typer()


INSECURE_HELP = (
    "Serve /mcp without the token: any process on this machine (off loopback: anyone who can "
    "reach the port) can read and change the whole store. The console still needs the token."
)


@app.command()
def serve(
    http: Annotated[
        bool, typer.Option("--http", help="Serve MCP over streamable HTTP instead of stdio.")
    ] = False,
    host: Annotated[
        str | None, typer.Option("--host", help="HTTP bind address (default 127.0.0.1).")
    ] = None,
    port: Annotated[int | None, typer.Option("--port", help="HTTP port (default 8765).")] = None,
    tools: Annotated[
        str | None,
        typer.Option(
            "--tools",
            help="full (every tool) | grouped (a few tools with an action argument) | core "
            "(store, recall, project context); default: the mcp_tools setting, full. Every tool "
            "stays callable by its name.",
        ),
    ] = None,
    insecure_allow_unauthenticated: Annotated[
        bool, typer.Option("--insecure-allow-unauthenticated", help=INSECURE_HELP)
    ] = False,
    home: HomeOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Run the MCP server (stdio by default); --json makes start-up errors JSON."""
    from graphmem.mcp.http import serve_http
    from graphmem.mcp.server import serve_stdio

    overrides = {"http_host": host, "http_port": port, "mcp_tools": tools}
    # the token exists, and an unsafe bind is refused, before anything starts
    token = _http_token(home, overrides, insecure_allow_unauthenticated, as_json) if http else None
    with opened(home, as_json, start_owner=True, overrides=overrides) as gm:
        if http:
            serve_http(
                gm,
                host=gm.settings.http_host,
                port=gm.settings.http_port,
                allow_unauthenticated=insecure_allow_unauthenticated,
                announce=lambda line: print(line, file=sys.stderr, flush=True),
                token=token,
            )
        else:
            serve_stdio(gm)


def _http_token(
    home: Path | None, overrides: dict[str, Any], insecure: bool, as_json: bool
) -> HttpToken:
    """The store's HTTP token, made now if it has none (and said so), checked with the bind
    address before the store opens; the warning for --insecure-allow-unauthenticated."""
    from graphmem.http_token import http_token
    from graphmem.mcp.http import check_bind_security, is_loopback
    from graphmem.settings import load_settings

    with handle_errors(as_json):
        given = {k: v for k, v in overrides.items() if v is not None}
        settings = load_settings(home, overrides=given)
        token = http_token(settings)
        assert token is not None
        check_bind_security(settings.http_host, token.value, insecure)
    if token.created:
        print(f"graphmem: made the store's HTTP token: {token.file} (mode 0600)", file=sys.stderr)
    if insecure:
        who = (
            "any process on this machine, under any user,"
            if is_loopback(settings.http_host)
            else "anyone who can reach this address"
        )
        print(
            f"warning: --insecure-allow-unauthenticated: /mcp answers without a token; {who} "
            "can read and change the whole store",
            file=sys.stderr,
            flush=True,
        )
    return token


@app.command()
def console(
    host: Annotated[
        str | None, typer.Option("--host", help="Bind address (default 127.0.0.1).")
    ] = None,
    port: Annotated[int, typer.Option("--port", help="Port (default 0: any free port).")] = 0,
    no_open: Annotated[
        bool, typer.Option("--no-open", help="Print the address; do not open a browser.")
    ] = False,
    insecure_allow_unauthenticated: Annotated[
        bool, typer.Option("--insecure-allow-unauthenticated", help=INSECURE_HELP)
    ] = False,
    home: HomeOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Open the console: the store in a browser, served through the owner process until Ctrl-C.
    Sign in with the store's HTTP token (GRAPHMEM_HTTP_TOKEN, or the token file it prints)."""
    import threading
    import webbrowser

    from graphmem.mcp.http import CONSOLE_PATH, make_http_server, until_interrupted

    overrides = {"http_host": host}
    token = _http_token(home, overrides, insecure_allow_unauthenticated, as_json)
    with opened(home, as_json, start_owner=True, overrides=overrides) as gm:

        def started(base: str) -> None:
            url = f"{base}{CONSOLE_PATH}/"
            if as_json:
                shown = token.value if token.file else None  # never the one set by the user
                file = str(token.file) if token.file else None
                print(json.dumps({"url": url, "token": shown, "token_file": file}), flush=True)
            else:
                print(f"graphmem console: {url}", file=sys.stderr)
                print(
                    f"sign in with the store's token ({token.file}): {token.value}"
                    if token.file
                    else "sign in with GRAPHMEM_HTTP_TOKEN",
                    file=sys.stderr,
                    flush=True,
                )
            if not no_open:  # a browser that takes long to start must not hold the server up
                threading.Thread(target=webbrowser.open, args=(url,), daemon=True).start()

        server = make_http_server(
            gm, gm.settings.http_host, port, log_level="warning",
            allow_unauthenticated=insecure_allow_unauthenticated, token=token,
            on_started=started,
        )  # fmt: skip
        with until_interrupted():
            server.run()


DEMO_CONTEXT = "graphmem-demo"
DEMO_MEMORIES: list[dict[str, Any]] = [
    {
        "content": "Deploys go through ArgoCD; never kubectl apply to production by hand.",
        "type": "procedural",
        "kind": "runbook",
        "tags": ["deploy", "argocd"],
        "importance": 0.8,
    },
    {
        "content": "JWT refresh raced in the auth middleware when two tabs refreshed at once; fixed by a per-user lock (PAY-1).",
        "type": "episodic",
        "kind": "incident",
        "tags": ["auth", "jwt"],
        "service": "auth-api",
    },
    {
        "content": "We chose Kùzu over SQLite for memory because recall walks relations (supersedes, mentions).",
        "type": "semantic",
        "kind": "decision",
        "tags": ["storage"],
        "importance": 0.9,
    },
    {
        "content": "Migration #47 broke the orders.created_at index; rebuilding it concurrently took 40 minutes.",
        "type": "episodic",
        "kind": "incident",
        "tags": ["postgres", "migration"],
        "service": "orders",
    },
    {
        "content": "The broken orders index from migration #47 was mitigated by the concurrent reindex runbook.",
        "type": "episodic",
        "kind": "note",
        "tags": ["postgres"],
        "service": "orders",
    },
    {
        "content": "Concurrent reindex runbook: REINDEX INDEX CONCURRENTLY orders_created_at_idx, then ANALYZE orders.",
        "type": "procedural",
        "kind": "runbook",
        "tags": ["postgres"],
    },
    {
        "content": "Tried caching sessions in Redis v2 cluster mode: failed, MULTI is not supported across slots.",
        "type": "episodic",
        "kind": "dead_end",
        "tags": ["redis", "sessions"],
    },
    {
        "content": "The gateway returns 502 when the upstream pod is OOM-killed; check memory limits first.",
        "type": "semantic",
        "kind": "note",
        "tags": ["gateway", "oncall"],
        "service": "edge",
    },
]
DEMO_QUERIES = [
    "how do we deploy to production?",
    "why did token refresh break?",
    "502 errors",
    "#47",
]
DEMO_MULTIHOP = "what did migration #47 break, and what fixed it?"


@app.command()
def demo(home: HomeOpt = None, as_json: JsonOpt = False) -> None:
    """Store a few engineering memories (once) and show hybrid recall over them."""
    with opened(home, as_json, writes=True) as gm:
        present = gm.list({"context": DEMO_CONTEXT}, limit=1).memories
        if not present:
            gm.remember_many([{**m, "context": DEMO_CONTEXT} for m in DEMO_MEMORIES])
        results = [
            gm.recall(q, limit=3, filters={"context": DEMO_CONTEXT}, explain=True)
            for q in DEMO_QUERIES
        ]
        gm.index_triples(context=DEMO_CONTEXT)  # entities and facts, if not extracted yet
        chain = gm.recall_multihop(
            DEMO_MULTIHOP, seed_k=1, limit=5, filters={"context": DEMO_CONTEXT}
        )
        if as_json:
            return emit_json({"store": str(gm.path), "results": results, "multihop": chain})
        out.print(f"store: {gm.path} ({gm.stats().total} memories)\n")
        for result in results:
            out.print(f"[bold]recall[/bold] {result.query!r}")
            for rank, hit in enumerate(result.hits, start=1):
                found = "+".join(hit.explain["found_by"]) if hit.explain else ""
                out.print(
                    f"  {rank}. {hit.score:.3f} {escape(f'[{hit.memory.kind}]')} "
                    f"{escape(hit.memory.content)}  [dim]({found})[/dim]"
                )
            out.print()
        out.print(f"[bold]multihop[/bold] {chain.query!r}")
        for rank, step in enumerate(chain.hits, start=1):
            kind = escape(f"[{step.memory.kind}]")
            out.print(f"  {rank}. {step.score:.3f} {kind} {escape(step.memory.content)}")
            if step.path_text:
                out.print(f"     [dim]{escape(step.path_text)}[/dim]")
