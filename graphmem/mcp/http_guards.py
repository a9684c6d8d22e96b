"""Pure ASGI middleware that hardens the HTTP transport: security headers, Host check, bearer
token, body size limit, timeout.

Each wraps an ASGI app and passes `lifespan` scopes through untouched. None of them reads a
request body into memory: the size limit counts bytes as the app pulls them through `receive`.
Error responses are small JSON objects `{"error": <code>, "message": <text>}`.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import ipaddress
import json
from collections.abc import Iterable
from urllib.parse import urlsplit

import anyio
from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = [
    "SECURITY_HEADERS",
    "BearerTokenMiddleware",
    "BodyLimitMiddleware",
    "HostGuardMiddleware",
    "HostPolicy",
    "RequestTimeoutMiddleware",
    "SecurityHeadersMiddleware",
    "TokenCheck",
    "is_loopback",
]

CSP = (
    "default-src 'none'; script-src 'none'; style-src 'self'; img-src 'self'; "
    "form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)
SECURITY_HEADERS = [
    (b"content-security-policy", CSP.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"same-origin"),
    (b"x-frame-options", b"DENY"),
    (b"cache-control", b"no-store"),
]
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "::1")
WILDCARDS = ("0.0.0.0", "::", "")


def is_loopback(host: str) -> bool:
    """True for "localhost", 127.0.0.0/8 and ::1 (brackets allowed); "0.0.0.0" and "::" are not.

    Any other name is treated as reachable from the network: a hostname may resolve anywhere.
    """
    name = _bare(host)
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def _bare(host: str) -> str:
    """A host name as compared: lower case, no brackets around an IPv6 address, no final dot."""
    name = host.strip().lower()
    if name.startswith("[") and name.endswith("]"):
        name = name[1:-1]
    return name.rstrip(".")


def _header(scope: Scope, wanted: bytes) -> str | None:
    for name, value in scope.get("headers", ()):
        if name.lower() == wanted:
            return bytes(value).decode("latin-1")
    return None


async def send_json_error(
    send: Send,
    status: int,
    code: str,
    message: str,
    *,
    headers: Iterable[tuple[bytes, bytes]] = (),
    close: bool = False,
) -> None:
    """Send a complete JSON error response; `close` asks the server to drop the connection after."""
    body = json.dumps({"error": code, "message": message}).encode()
    raw_headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        *headers,
    ]
    if close:
        raw_headers.append((b"connection", b"close"))
    await send({"type": "http.response.start", "status": status, "headers": raw_headers})
    await send({"type": "http.response.body", "body": body, "more_body": False})


class SecurityHeadersMiddleware:
    """The same headers on every response of the app: pages, JSON, redirects and every error,
    including those the guards inside it send (401, 413, 421, 429, 504). Put it outermost.

    No page of graphmem runs script and none may be framed; nothing it answers is cached."""

    _NAMES = frozenset(name for name, _ in SECURITY_HEADERS)

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                kept = [
                    (k, v) for k, v in message.get("headers", []) if k.lower() not in self._NAMES
                ]
                message["headers"] = [*kept, *SECURITY_HEADERS]
            await send(message)

        await self.app(scope, receive, with_headers)


class HostPolicy:
    """Which `Host` (and `Origin`) names a server answers, against DNS rebinding: a web page
    whose name an attacker points at 127.0.0.1 still sends its own name as Host.

    On a loopback bind: the loopback names (127.0.0.1, localhost, [::1]) and the bound address.
    On another address: that address. On a wildcard bind (0.0.0.0, ::) any name, since the
    server cannot know the machine's names. `extra` (the http_allowed_hosts setting: the name a
    reverse proxy forwards, say) is added in every case, and on a wildcard bind turns the check
    on with the loopback names besides. Any port is accepted.
    """

    def __init__(self, bound: str, extra: Iterable[str] = ()) -> None:
        host = _bare(bound)
        added = {_bare(name) for name in extra if name.strip()}
        names: set[str] | None
        if is_loopback(host) or (host in WILDCARDS and added):
            names = {*LOOPBACK_NAMES, *added, *([] if host in WILDCARDS else [host])}
        elif host in WILDCARDS:
            names = None
        else:
            names = {host, *added}
        self.names = frozenset(names) if names is not None else None

    @property
    def checks(self) -> bool:
        return self.names is not None

    def allows_host(self, value: str | None) -> bool:
        if self.names is None:
            return True
        if not value:
            return False
        value = value.strip()
        if value.startswith("["):
            name = value[1 : value.find("]")] if "]" in value else value
        else:
            name = value.rsplit(":", 1)[0] if value.count(":") == 1 else value
        return _bare(name) in self.names

    def allows_origin(self, value: str | None) -> bool:
        """No Origin (not a browser, or a same-origin GET) passes; "null" and any other name
        do not."""
        if self.names is None or value is None:
            return True
        try:
            parts = urlsplit(value.strip())
            hostname = parts.hostname
        except ValueError:
            return False
        return parts.scheme in ("http", "https") and _bare(hostname or "") in self.names


class HostGuardMiddleware:
    """421 for a request whose Host the policy does not allow, 403 for such an Origin, on every
    path of the app (the console and /health as well as /mcp)."""

    def __init__(self, app: ASGIApp, policy: HostPolicy) -> None:
        self.app = app
        self.policy = policy

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket") or not self.policy.checks:
            await self.app(scope, receive, send)
            return
        host_ok = self.policy.allows_host(_header(scope, b"host"))
        origin_ok = self.policy.allows_origin(_header(scope, b"origin"))
        if host_ok and origin_ok:
            await self.app(scope, receive, send)
        elif scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008})
        elif not host_ok:
            await send_json_error(
                send, 421, "misdirected_request",
                "this server does not answer to that Host name (DNS rebinding protection); "
                "add the name to http_allowed_hosts if it is yours",
            )  # fmt: skip
        else:
            await send_json_error(
                send, 403, "forbidden_origin", "requests from that Origin are not allowed"
            )


class TokenCheck:
    """Whether a request carries `Authorization: Bearer <token>`.

    The presented token and the configured one are both hashed (SHA-256) and the digests compared
    with `hmac.compare_digest`, so the comparison takes the same time whatever the input, its
    length included."""

    def __init__(self, token: str) -> None:
        if not token:
            raise ValueError("an empty bearer token would let anyone in")
        self._digest = hashlib.sha256(token.encode("utf-8")).digest()

    def authorized(self, scope: Scope) -> bool:
        presented = b""
        value = _header(scope, b"authorization")
        if value is not None:
            scheme, _, credentials = value.encode("latin-1").strip().partition(b" ")
            if scheme.lower() == b"bearer":
                presented = credentials.strip()
        digest = hashlib.sha256(presented).digest()
        # compare even when nothing was presented, so both failures take the same path
        return hmac.compare_digest(digest, self._digest) and bool(presented)


class BearerTokenMiddleware:
    """Require `Authorization: Bearer <token>` on every request but the open (method, path) pairs
    and the paths whose app checks the token itself. A missing header and a wrong token get the
    same 401."""

    UNAUTHORIZED = (
        "missing or invalid bearer token: send 'Authorization: Bearer <token>' with the "
        "store's HTTP token (GRAPHMEM_HTTP_TOKEN, or the http_token file in its data directory)"
    )

    def __init__(
        self,
        app: ASGIApp,
        token: TokenCheck,
        *,
        open_routes: Iterable[tuple[str, str]] = (),
        own_auth: tuple[str, ...] = (),
    ) -> None:
        """`own_auth`: path prefixes whose app checks the token itself (the console, whose
        browser sends a session cookie, not this header)."""
        self.app = app
        self.token = token
        self._open = frozenset(open_routes)
        self._own_auth = own_auth

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope["type"]
        if kind == "lifespan" or (
            kind == "http"
            and (
                (scope["method"], scope["path"]) in self._open
                or any(
                    scope["path"] == prefix or scope["path"].startswith(prefix + "/")
                    for prefix in self._own_auth
                )
            )
        ):
            await self.app(scope, receive, send)
            return
        if self.token.authorized(scope):
            await self.app(scope, receive, send)
            return
        if kind == "http":
            await send_json_error(
                send,
                401,
                "unauthorized",
                self.UNAUTHORIZED,
                headers=[(b"www-authenticate", b"Bearer")],
            )
        else:  # websocket (no such routes exist): refuse the handshake
            await send({"type": "websocket.close", "code": 1008})


class _BodyTooLarge(Exception):
    """Raised from the wrapped `receive` when the body grows past the limit."""


class BodyLimitMiddleware:
    """413 for a request body larger than `max_bytes`, declared or streamed.

    A Content-Length over the limit is refused before the app runs. Otherwise the app's `receive`
    is wrapped: the chunk that takes the running total past the limit is not handed over; instead
    `_BodyTooLarge` is raised into the app, whatever response the app then tries to send is
    dropped, and a 413 goes out in its place, with `Connection: close`. Before that the rest of
    the body is read and thrown away, up to DRAIN_BYTES more bytes and DRAIN_SECONDS, so that a
    client still sending can read the 413 instead of a connection reset. At most `max_bytes` of a
    body is ever handed to the app; none of it is kept by this middleware.
    """

    DRAIN_BYTES = 1024 * 1024
    DRAIN_SECONDS = 2.0

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def _drain(self, receive: Receive) -> None:
        """Read and discard the rest of a streamed body, within DRAIN_BYTES and DRAIN_SECONDS.

        A client still sending when the connection closes gets a reset and may never read the
        413; letting a modestly oversized body finish first avoids that. Nothing is kept.
        """
        drained = 0
        with anyio.move_on_after(self.DRAIN_SECONDS):
            while drained <= self.DRAIN_BYTES:
                message = await receive()
                if message["type"] != "http.request":
                    return
                drained += len(message.get("body", b""))
                if not message.get("more_body", False):
                    return

    def _message(self) -> str:
        return f"request body is larger than {self.max_bytes} bytes (http_max_body_bytes)"

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        for name, value in scope.get("headers", ()):
            if name.lower() == b"content-length":
                try:
                    declared = int(value)
                except ValueError:
                    break  # the HTTP parser rejects these before we see them
                if declared > self.max_bytes:
                    await send_json_error(
                        send, 413, "payload_too_large", self._message(), close=True
                    )
                    return
                break

        received = 0
        too_large = False
        response_started = False

        async def limited_receive() -> Message:
            nonlocal received, too_large
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.max_bytes:
                    too_large = True
                    if message.get("more_body", False):
                        await self._drain(receive)
                    raise _BodyTooLarge
            return message

        async def guarded_send(message: Message) -> None:
            nonlocal response_started
            if too_large:
                return  # the app's own error response; the 413 replaces it
            if message["type"] == "http.response.start":
                response_started = True
            await send(message)

        try:
            await self.app(scope, limited_receive, guarded_send)
        except Exception:
            if not too_large:
                raise
        if too_large and not response_started:
            await send_json_error(send, 413, "payload_too_large", self._message(), close=True)


class RequestTimeoutMiddleware:
    """504 when the app has not started its response within `timeout` seconds.

    The clock runs from the request's arrival until the app sends `http.response.start`; it then
    stops, so a response that streams afterwards (an SSE stream: `GET /mcp`, a
    `subscriptions/listen` POST) is not cut. Reading the request body counts as handling, so a
    client that trickles its body is bounded too.

    A watchdog task sends the 504 at the deadline and cancels the app. The app may not stop at
    once: work it runs on a worker thread (graphmem's tools do) cannot be interrupted, so the
    request's task lives until that call returns, and its result is discarded. The 504 carries
    `Connection: close`.
    """

    def __init__(self, app: ASGIApp, timeout: float) -> None:
        self.app = app
        self.timeout = timeout

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        started = False
        timed_out = False
        app_scope = anyio.CancelScope()

        async def guarded_send(message: Message) -> None:
            nonlocal started
            if timed_out:
                return  # the 504 has been sent; anything the app still says is dropped
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        async def watchdog() -> None:
            nonlocal timed_out
            await anyio.sleep(self.timeout)
            if started:
                return
            timed_out = True
            app_scope.cancel()
            message = f"the request took longer than {self.timeout:g} s (http_request_timeout)"
            with contextlib.suppress(OSError):  # the client may have gone
                await send_json_error(send, 504, "timeout", message, close=True)

        error: Exception | None = None
        async with anyio.create_task_group() as tg:
            tg.start_soon(watchdog)
            try:
                with app_scope:
                    await self.app(scope, receive, guarded_send)
            except Exception as exc:  # re-raised below, outside the task group
                error = exc
            tg.cancel_scope.cancel()
        if error is not None:
            raise error
