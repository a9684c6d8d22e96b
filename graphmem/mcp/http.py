"""Streamable HTTP for the graphmem MCP server: the SDK's app at /mcp, GET /health and the
console at /console, on uvicorn.

Hardening (see docs/security.md), all from the store's settings:

- a token always: the `http_token` setting, else the store's own token file (`graphmem.http_token`),
  so nothing is served without authentication by default, loopback included. /mcp needs
  `Authorization: Bearer <token>`; the console signs its users in with the same token; /health
  answers a bare status without it. Only `allow_unauthenticated` opens /mcp (never the console);
- bind: 127.0.0.1 by default; `check_bind_security` refuses a blank token before anything binds;
- every path checks the Host (and Origin) against the bound address (`HostPolicy`), against DNS
  rebinding (the SDK's narrower check on /mcp alone is replaced by this one);
- every response carries the security headers (CSP, nosniff, no framing, no caching);
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
from graphmem.http_token import HttpToken, http_token
from graphmem.mcp.http_guards import (
    BearerTokenMiddleware,
    BodyLimitMiddleware,
    HostGuardMiddleware,
    HostPolicy,
    RequestTimeoutMiddleware,
    SecurityHeadersMiddleware,
    TokenCheck,
    is_loopback,
)
from graphmem.mcp.server import build_server, graphmem_version

if TYPE_CHECKING:
    from graphmem.api import MemoryAPI as GraphMemory
    from graphmem.console.auth import LoginThrottle

__all__ = [
    "CONSOLE_PATH",
    "HEALTH_PATH",
    "KEEP_ALIVE_TIMEOUT",
    "MCP_PATH",
    "SHUTDOWN_GRACE",
    "build_http_app",
    "check_bind_security",
    "describe_auth",
    "is_loopback",
    "make_http_server",
    "resolve_token",
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
Token = HttpToken | SecretStr | str | None


def _token_value(token: Token) -> str | None:
    """The token as a string, None when unset; an empty or blank token is refused."""
    if token is None:
        return None
    if isinstance(token, HttpToken):
        value = token.value
    else:
        value = token.get_secret_value() if isinstance(token, SecretStr) else token
    if not value.strip():
        raise InvalidInput(
            "GRAPHMEM_HTTP_TOKEN (http_token) is empty; unset it to use the store's own token "
            "file, or set it to a long random string, e.g. the output of: "
            "python -c 'import secrets; print(secrets.token_urlsafe(32))'"
        )
    return value


def check_bind_security(host: str, token: Token, allow_unauthenticated: bool = False) -> None:
    """Refuse to serve without authentication on an address other machines can reach.

    graphmem's own entry points always pass a token (the setting or the store's token file), so
    this refuses only a blank token, on any host, or a caller that passes none for a host that is
    not loopback (127.0.0.0/8, ::1, "localhost") without `allow_unauthenticated`. Raises
    InvalidInput with the fix in its message.
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


def resolve_token(gm: GraphMemory, token: Token = None) -> HttpToken:
    """The token the app will require: `token` when the caller gives one, else the store's
    (`graphmem.http_token.http_token`: the setting, else the token file, made if missing)."""
    if isinstance(token, HttpToken):
        _token_value(token)  # a blank one is refused
        return token
    value = _token_value(token)
    if value is not None:
        return HttpToken(value)
    found = http_token(gm.settings)
    assert found is not None  # create=True always finds or makes one
    return found


def _transport_security() -> TransportSecuritySettings:
    """The SDK's own Host/Origin check on /mcp is off: `HostGuardMiddleware` checks every path
    of the app, /mcp included, and compares names as DNS does, ignoring case."""
    return TransportSecuritySettings(enable_dns_rebinding_protection=False)


def build_http_app(
    gm: GraphMemory,
    *,
    host: str = "127.0.0.1",
    token: Token = None,
    allow_unauthenticated: bool = False,
    login_throttle: LoginThrottle | None = None,
) -> Starlette:
    """The ASGI app: the MCP streamable HTTP endpoint at /mcp, GET /health and the console at
    /console, behind the guards.

    `token` is what clients must present; by default the store's (see `resolve_token`), so the
    app is never open by accident. `allow_unauthenticated` opens /mcp alone: the console still
    signs in with the token, and /health still gives its details only with it. `host` is the
    address the app is served on: it decides the Host check. Body limit and timeout come from
    `gm.settings`. Guards, outermost first: security headers, Host check, bearer token (but for
    /health and the console, which check it themselves), body limit, request timeout.
    `login_throttle` replaces the console's failed-login limiter (tests give it a fake clock).
    """
    settings = gm.settings
    value = resolve_token(gm, token).value
    check = TokenCheck(value)
    policy = HostPolicy(host, settings.http_allowed_hosts)
    server = build_server(gm)
    details: dict[str, Any] = {"status": "ok", "version": graphmem_version(), "store": str(gm.path)}

    async def _health(request: Request) -> Response:
        """Up or not for anyone; what and where only for a holder of the token."""
        return JSONResponse(details if check.authorized(request.scope) else {"status": "ok"})

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
        transport_security=_transport_security(),
    )
    from graphmem.console import console_mount

    app.routes.append(console_mount(gm, value, throttle=login_throttle))
    # add_middleware puts each new one outside the previous ones
    app.add_middleware(RequestTimeoutMiddleware, settings.http_request_timeout)
    app.add_middleware(BodyLimitMiddleware, settings.http_max_body_bytes)
    if not allow_unauthenticated:
        open_routes = [("GET", HEALTH_PATH), ("HEAD", HEALTH_PATH)]
        app.add_middleware(
            BearerTokenMiddleware, check, open_routes=open_routes, own_auth=(CONSOLE_PATH,)
        )
    app.add_middleware(HostGuardMiddleware, policy)
    app.add_middleware(SecurityHeadersMiddleware)
    return app


def _listen_url(server: uvicorn.Server, host: str) -> str:
    """http://host:port, the port the server really listens on."""
    port = server.servers[0].sockets[0].getsockname()[1] if server.servers else "?"
    bare = host.strip().removeprefix("[").removesuffix("]")
    netloc = f"[{bare}]" if ":" in bare else bare
    return f"http://{netloc}:{port}"


def describe_auth(host: str, token: HttpToken, allow_unauthenticated: bool) -> str:
    """One line on who may use the server, naming where the token is (never the token)."""
    made = " (made now)" if token.created else ""
    if not allow_unauthenticated:
        return f"auth: bearer token required ({token.source}{made})"
    who = (
        "any process on this machine" if is_loopback(host) else "anyone who can reach this address"
    )
    return (
        f"auth: OFF for /mcp (--insecure-allow-unauthenticated): {who} can read and change the "
        f"store; the console still needs {token.source}{made}"
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
    token: Token = None,
    on_started: Callable[[str], None] | None = None,
    login_throttle: LoginThrottle | None = None,
) -> uvicorn.Server:
    """A uvicorn server for the app, not yet started: `.run()` blocks, `.should_exit` stops it.

    The token is resolved here (`resolve_token`: `token`, else the setting, else the store's
    token file, made if missing) and checked by `check_bind_security`, so a bad one fails before
    anything binds. With port 0 the OS picks a free port; once `.started` is true, read it from
    `server.servers[0].sockets[0].getsockname()[1]`. `log_level` is uvicorn's (default: the
    store's settings.log_level). `announce`, if given, receives one line once the server listens:
    its URLs and who may use it, naming where the token is kept, never the token itself.
    `login_throttle`: see `build_http_app`.
    """
    found = resolve_token(gm, token)
    check_bind_security(host, found.value, allow_unauthenticated)
    app = build_http_app(
        gm, host=host, token=found, allow_unauthenticated=allow_unauthenticated,
        login_throttle=login_throttle,
    )  # fmt: skip
    config = uvicorn.Config(
        app,
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
            auth = describe_auth(host, found, allow_unauthenticated)
            announce(
                f"graphmem: serving MCP at {base}{MCP_PATH}; console at {base}{CONSOLE_PATH}/; "
                f"{auth}"
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
    token: Token = None,
) -> None:
    """Serve `gm` over streamable HTTP until Ctrl-C or SIGTERM, then return (blocks).

    Every client needs the token (`token`, else the store's: see `resolve_token`) unless
    `allow_unauthenticated` opens /mcp; a bad token fails (InvalidInput) before binding.
    `announce` receives one line once the server listens (see `make_http_server`).

    uvicorn shuts down gracefully on either signal and then re-raises it; `until_interrupted`
    turns that into a normal return so the caller's cleanup (closing the store) still runs.
    """
    server = make_http_server(
        gm,
        host,
        port,
        log_level=log_level,
        allow_unauthenticated=allow_unauthenticated,
        announce=announce,
        token=token,
    )
    with until_interrupted():
        server.run()
