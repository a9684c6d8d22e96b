"""Streamable HTTP for the graphmem MCP server: the SDK's app at /mcp plus GET /health, on uvicorn.

Bound to 127.0.0.1 by default; for a loopback host the SDK also turns on DNS-rebinding protection
(only localhost Host/Origin headers are accepted on /mcp).
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from types import FrameType
from typing import TYPE_CHECKING, cast

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from graphmem.mcp.server import build_server, graphmem_version

if TYPE_CHECKING:
    from graphmem.service import GraphMemory

__all__ = [
    "MCP_PATH",
    "build_http_app",
    "make_http_server",
    "serve_http",
    "until_interrupted",
]

MCP_PATH = "/mcp"

Endpoint = Callable[[Request], Awaitable[Response]]


def build_http_app(gm: GraphMemory, *, host: str = "127.0.0.1") -> Starlette:
    """The ASGI app: the MCP streamable HTTP endpoint at /mcp and GET /health.

    `host` is the address the app will be served on; it decides the SDK's DNS-rebinding defaults.
    """
    server = build_server(gm)
    health = {"status": "ok", "version": graphmem_version(), "store": str(gm.path)}

    async def _health(request: Request) -> Response:
        return JSONResponse(health)

    # custom_route() is the SDK's hook for extra routes; its decorator is untyped, hence the cast.
    add_route = cast(
        Callable[[Endpoint], Endpoint], server.custom_route("/health", methods=["GET"])
    )
    add_route(_health)

    return server.streamable_http_app(streamable_http_path=MCP_PATH, host=host)


def make_http_server(
    gm: GraphMemory,
    host: str = "127.0.0.1",
    port: int = 8765,
    *,
    log_level: str | None = None,
) -> uvicorn.Server:
    """A uvicorn server for the app, not yet started: `.run()` blocks, `.should_exit` stops it.

    With port 0 the OS picks a free port; once `.started` is true, read it from
    `server.servers[0].sockets[0].getsockname()[1]`. `log_level` is uvicorn's (default: the
    store's settings.log_level).
    """
    config = uvicorn.Config(
        build_http_app(gm, host=host),
        host=host,
        port=port,
        log_level=log_level or gm.settings.log_level,
        lifespan="on",
    )
    return uvicorn.Server(config)


@contextmanager
def until_interrupted() -> Iterator[None]:
    """Turn Ctrl-C and SIGTERM into a normal return from the block.

    A server stopped by a signal then returns to its caller, whose cleanup (closing the store,
    releasing its lock) runs; SIGTERM's default action would kill the process without it. Only in
    the main thread, the only one that may handle signals; elsewhere the block runs unchanged.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(signum: int, frame: FrameType | None) -> None:
        raise KeyboardInterrupt

    previous = {sig: signal.signal(sig, interrupt) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    except KeyboardInterrupt:
        pass
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def serve_http(
    gm: GraphMemory,
    host: str = "127.0.0.1",
    port: int = 8765,
    *,
    log_level: str | None = None,
) -> None:
    """Serve `gm` over streamable HTTP until Ctrl-C or SIGTERM, then return (blocks).

    uvicorn shuts down gracefully on either signal and then re-raises it; `until_interrupted`
    turns that into a normal return so the caller's cleanup (closing the store) still runs.
    """
    server = make_http_server(gm, host, port, log_level=log_level)
    with until_interrupted():
        server.run()
