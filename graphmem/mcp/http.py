"""Streamable HTTP for the graphmem MCP server: the SDK's app at /mcp plus GET /health, on uvicorn.

Hardening (see docs/security.md), all from the store's settings:

- bind: 127.0.0.1 by default; a host that is not loopback needs a bearer token (`http_token`) or an
  explicit `allow_unauthenticated`, checked before anything binds (`check_bind_security`);
- on a loopback host the SDK's DNS-rebinding protection is on: /mcp accepts only loopback
  Host/Origin headers;
- with a token, every request but GET /health needs `Authorization: Bearer <token>`;
- request bodies are limited to `http_max_body_bytes` (413);
- a request must start its response within `http_request_timeout` seconds (504); /mcp answers
  POSTs with one JSON body (the SDK's JSON response mode), so that bound covers the tool call;
  streams (GET /mcp, subscriptions/listen) start at once and are not cut;
- uvicorn closes idle keep-alive connections after KEEP_ALIVE_TIMEOUT seconds and gives open
  connections SHUTDOWN_GRACE seconds to finish on shutdown.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from types import FrameType
from typing import TYPE_CHECKING, Any, cast

import uvicorn
from mcp.server.transport_security import TransportSecuritySettings
from pydantic import SecretStr
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from graphmem.errors import InvalidInput
from graphmem.mcp.http_guards import (
    BearerTokenMiddleware,
    BodyLimitMiddleware,
    RequestTimeoutMiddleware,
    is_loopback,
)
from graphmem.mcp.server import build_server, graphmem_version

if TYPE_CHECKING:
    from graphmem.api import MemoryAPI as GraphMemory

__all__ = [
    "HEALTH_PATH",
    "KEEP_ALIVE_TIMEOUT",
    "MCP_PATH",
    "SHUTDOWN_GRACE",
    "build_http_app",
    "check_bind_security",
    "is_loopback",
    "make_http_server",
    "serve_http",
    "until_interrupted",
]

MCP_PATH = "/mcp"
HEALTH_PATH = "/health"
CONSOLE_PATH = "/console"
KEEP_ALIVE_TIMEOUT = 5
"""Seconds uvicorn keeps an idle keep-alive connection open."""
SHUTDOWN_GRACE = 5
"""Seconds open connections (an SSE stream, a running call) get to finish once shutdown starts."""

Endpoint = Callable[[Request], Awaitable[Response]]
Token = SecretStr | str | None


def _token_value(token: Token) -> str | None:
    """The token as a string, None when unset; an empty or blank token is refused."""
    if token is None:
        return None
    value = token.get_secret_value() if isinstance(token, SecretStr) else token
    if not value.strip():
        raise InvalidInput(
            "GRAPHMEM_HTTP_TOKEN (http_token) is empty; set it to a long random string, "
            "e.g. the output of: python -c 'import secrets; print(secrets.token_urlsafe(32))'"
        )
    return value


def check_bind_security(host: str, token: Token, allow_unauthenticated: bool = False) -> None:
    """Refuse to serve without authentication on an address other machines can reach.

    Loopback (127.0.0.0/8, ::1, "localhost") is always allowed; any other host ("0.0.0.0" and "::"
    included) needs a token or an explicit `allow_unauthenticated`. Raises InvalidInput (with
    the fix in its message) otherwise, and for an empty token on any host.
    """
    if _token_value(token) is not None or is_loopback(host) or allow_unauthenticated:
        return
    raise InvalidInput(
        f"refusing to serve HTTP on {host}, an address other machines can reach, without "
        "authentication: set GRAPHMEM_HTTP_TOKEN=<a long random string> (clients then send "
        "'Authorization: Bearer <token>'), bind to 127.0.0.1 with --host, or pass "
        "--insecure-allow-unauthenticated to let anyone who can reach the port read and write "
        "the store",
        host=host,
    )


def _transport_security(host: str) -> TransportSecuritySettings | None:
    """DNS-rebinding protection for every loopback host, not only the three the SDK knows."""
    if not is_loopback(host):
        return None  # the SDK's default: no Host/Origin checks
    bare = host.strip().lower().removeprefix("[").removesuffix("]")
    netloc = f"[{bare}]" if ":" in bare else bare
    hosts = ["127.0.0.1", "localhost", "[::1]", netloc]
    unique = list(dict.fromkeys(hosts))
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=[f"{h}:*" for h in unique],
        allowed_origins=[f"http://{h}:*" for h in unique],
    )


def build_http_app(
    gm: GraphMemory, *, host: str = "127.0.0.1", console_token: str | None = None
) -> Starlette:
    """The ASGI app: the MCP streamable HTTP endpoint at /mcp, GET /health and the console at
    /console, behind the guards.

    `host` is the address the app will be served on; it decides the DNS-rebinding protection and
    whether /health shows the store path. Token, body limit and timeout come from `gm.settings`.
    Guards, outermost first: bearer token (when set; the console signs its users in with the
    same token), body limit, request timeout. The console always needs a token: without one in
    the settings it takes `console_token`, and is not served when that is None too.
    """
    settings = gm.settings
    token = _token_value(settings.http_token)
    console_token = token or console_token
    server = build_server(gm)
    health: dict[str, Any] = {"status": "ok", "version": graphmem_version()}
    if token is None and is_loopback(host):
        health["store"] = str(gm.path)  # loopback without a token: shown, as before

    async def _health(request: Request) -> Response:
        return JSONResponse(health)

    # custom_route() is the SDK's hook for extra routes; its decorator is untyped, hence the cast.
    add_route = cast(
        Callable[[Endpoint], Endpoint], server.custom_route(HEALTH_PATH, methods=["GET"])
    )
    add_route(_health)

    app = server.streamable_http_app(
        streamable_http_path=MCP_PATH,
        host=host,
        # one JSON body per POST instead of an SSE stream, so the request timeout bounds the call
        json_response=True,
        max_request_body_size=settings.http_max_body_bytes,
        transport_security=_transport_security(host),
    )
    if console_token is not None:
        from graphmem.console import console_mount

        app.routes.append(console_mount(gm, console_token))
    # add_middleware puts each new one outside the previous ones
    app.add_middleware(RequestTimeoutMiddleware, settings.http_request_timeout)
    app.add_middleware(BodyLimitMiddleware, settings.http_max_body_bytes)
    if token is not None:
        open_routes = [("GET", HEALTH_PATH), ("HEAD", HEALTH_PATH)]
        app.add_middleware(
            BearerTokenMiddleware, token, open_routes=open_routes, own_auth=(CONSOLE_PATH,)
        )
    return app


def _listen_url(server: uvicorn.Server, host: str) -> str:
    """http://host:port, the port the server really listens on."""
    port = server.servers[0].sockets[0].getsockname()[1] if server.servers else "?"
    bare = host.strip().removeprefix("[").removesuffix("]")
    netloc = f"[{bare}]" if ":" in bare else bare
    return f"http://{netloc}:{port}"


def _describe_auth(host: str, token: str | None) -> str:
    if token is not None:
        return "auth: bearer token required (GRAPHMEM_HTTP_TOKEN)"
    if is_loopback(host):
        return "auth: off (loopback only; set GRAPHMEM_HTTP_TOKEN to require a token)"
    return (
        "auth: OFF (--insecure-allow-unauthenticated): anyone who can reach this address "
        "can read and write the store"
    )


class _Server(uvicorn.Server):
    """uvicorn.Server that reports once it is listening (so the real port is known)."""

    def __init__(self, config: uvicorn.Config, on_started: Callable[[], None] | None) -> None:
        super().__init__(config)
        self._on_started = on_started

    async def startup(self, sockets: Any = None) -> None:
        await super().startup(sockets=sockets)
        if self.started and self._on_started is not None:
            self._on_started()


def make_http_server(
    gm: GraphMemory,
    host: str = "127.0.0.1",
    port: int = 8765,
    *,
    log_level: str | None = None,
    allow_unauthenticated: bool = False,
    announce: Callable[[str], None] | None = None,
    console_token: str | None = None,
    on_started: Callable[[str], None] | None = None,
) -> uvicorn.Server:
    """A uvicorn server for the app, not yet started: `.run()` blocks, `.should_exit` stops it.

    Runs `check_bind_security` first, so a non-loopback host without a token fails here, before
    anything binds. With port 0 the OS picks a free port; once `.started` is true, read it from
    `server.servers[0].sockets[0].getsockname()[1]`. `log_level` is uvicorn's (default: the
    store's settings.log_level). `announce`, if given, receives one line once the server listens:
    its URL and whether auth is on (never the token). `console_token` signs in to the console
    when the settings have no `http_token` (see `build_http_app`).
    """
    check_bind_security(host, gm.settings.http_token, allow_unauthenticated)
    token = _token_value(gm.settings.http_token)
    config = uvicorn.Config(
        build_http_app(gm, host=host, console_token=console_token),
        host=host,
        port=port,
        log_level=log_level or gm.settings.log_level,
        lifespan="on",
        timeout_keep_alive=KEEP_ALIVE_TIMEOUT,
        timeout_graceful_shutdown=SHUTDOWN_GRACE,
        server_header=False,
    )
    server: _Server

    def started() -> None:
        base = _listen_url(server, host)
        if announce is not None:
            console = f"console at {base}{CONSOLE_PATH}/; " if token or console_token else ""
            announce(
                f"graphmem: serving MCP at {base}{MCP_PATH}; {console}{_describe_auth(host, token)}"
            )
        if on_started is not None:
            on_started(base)

    server = _Server(config, started)
    return server


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
    allow_unauthenticated: bool = False,
    announce: Callable[[str], None] | None = None,
    console_token: str | None = None,
) -> None:
    """Serve `gm` over streamable HTTP until Ctrl-C or SIGTERM, then return (blocks).

    Refuses (InvalidInput, before binding) a host other machines can reach unless the store's
    settings have an `http_token` or `allow_unauthenticated` is true; see `check_bind_security`.
    `announce` receives one line once the server listens (see `make_http_server`).

    uvicorn shuts down gracefully on either signal and then re-raises it; `until_interrupted`
    turns that into a normal return so the caller's cleanup (closing the store) still runs.
    """
    check_bind_security(host, gm.settings.http_token, allow_unauthenticated)
    server = make_http_server(
        gm,
        host,
        port,
        log_level=log_level,
        allow_unauthenticated=allow_unauthenticated,
        announce=announce,
        console_token=console_token,
    )
    with until_interrupted():
        server.run()
