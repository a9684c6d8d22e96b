"""The hardened HTTP transport end to end: a real uvicorn on 127.0.0.1 (port 0) in a thread, real
httpx requests and a real MCP client over streamable HTTP, against a real store.

Covered: the bind check (a blank token is refused before binding), bearer-token auth (401s, a
/health that says only "ok" without the token), the body limit (413 for declared and chunked
bodies), the request timeout (504) that leaves SSE streams alone, and `graphmem serve --http` as a
child process. The store's own token file and the Host check have their own modules. Nothing
binds anything but 127.0.0.1.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx
import httpx2
import pytest
import uvicorn
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from graphmem.embeddings.hashing import HashEmbedder
from graphmem.errors import InvalidInput
from graphmem.mcp.http import (
    MCP_PATH,
    build_http_app,
    check_bind_security,
    make_http_server,
    serve_http,
)
from graphmem.mcp.http_guards import is_loopback
from graphmem.service import GraphMemory
from graphmem.settings import load_settings
from tests.http_serving import running

pytestmark = pytest.mark.anyio

TOKEN = "s3cret"
REPO_ROOT = Path(__file__).resolve().parents[2]
MCP_HEADERS = {
    "Accept": "application/json, text/event-stream",
    "Content-Type": "application/json",
}
PROTOCOL = "2025-06-18"
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": PROTOCOL,
        "capabilities": {},
        "clientInfo": {"name": "graphmem-test", "version": "0"},
    },
}


@contextmanager
def store(tmp_path: Path, **overrides: Any) -> Iterator[GraphMemory]:
    """A store whose settings come only from `overrides` (never from this process's env)."""
    settings = load_settings(tmp_path / "store", environ={}, overrides=overrides)
    gm = GraphMemory(settings, embedder=HashEmbedder())
    try:
        yield gm
    finally:
        gm.close()


@contextmanager
def serving(gm: GraphMemory, *, app_host: str | None = None, **options: Any) -> Iterator[str]:
    """Run the HTTP server for `gm` on 127.0.0.1, a free port, in a thread; yield its base URL.

    `app_host` builds the app as if it served that host, while still binding only 127.0.0.1.
    `options` go to build_http_app / make_http_server (token=..., allow_unauthenticated=...).
    """
    if app_host is None:
        server = make_http_server(gm, "127.0.0.1", 0, log_level="warning", **options)
    else:
        app = build_http_app(gm, host=app_host, **options)
        server = uvicorn.Server(
            uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning", lifespan="on")
        )
    with running(server) as base:
        yield base


@pytest.fixture
async def http() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(timeout=20) as client:
        yield client


@asynccontextmanager
async def mcp_client(url: str, headers: dict[str, str] | None = None) -> AsyncIterator[Client]:
    """A connected MCP client over streamable HTTP that sends `headers` on every request."""
    timeout = httpx2.Timeout(30, read=60)
    async with (
        httpx2.AsyncClient(headers=headers, timeout=timeout) as http_client,
        Client(streamable_http_client(url, http_client=http_client)) as client,
    ):
        yield client


async def call(client: Client, tool: str, **arguments: Any) -> dict[str, Any]:
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, result.content
    assert isinstance(result.structured_content, dict)
    return dict(result.structured_content)


async def handshake(http: httpx.AsyncClient, url: str, headers: dict[str, str]) -> dict[str, str]:
    """The legacy initialize handshake by hand; returns the headers later requests need."""
    response = await http.post(url, json=INITIALIZE, headers={**MCP_HEADERS, **headers})
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("application/json")  # JSON response mode
    session = {
        **MCP_HEADERS,
        **headers,
        "Mcp-Session-Id": response.headers["mcp-session-id"],
        "MCP-Protocol-Version": PROTOCOL,
    }
    note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    assert (await http.post(url, json=note, headers=session)).status_code == 202
    return session


def tool_call(tool: str, request_id: int = 2) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "tools/call",
        "params": {"name": tool, "arguments": {}},
    }


# -- the bind check --------------------------------------------------------------------------------

NOT_LOOPBACK = ["0.0.0.0", "::", "[::]", "192.168.1.20", "10.0.0.1", "example.com", "myhost"]
LOOPBACK = ["127.0.0.1", "127.3.2.1", "::1", "[::1]", "localhost", "LOCALHOST"]


@pytest.mark.parametrize("host", LOOPBACK)
def test_loopback_hosts_are_loopback(host: str) -> None:
    assert is_loopback(host)
    check_bind_security(host, None, allow_unauthenticated=False)


@pytest.mark.parametrize("host", NOT_LOOPBACK)
def test_a_non_loopback_host_without_a_token_is_refused_with_the_fix_in_the_message(
    host: str,
) -> None:
    assert not is_loopback(host)
    with pytest.raises(InvalidInput) as raised:
        check_bind_security(host, None, allow_unauthenticated=False)
    message = raised.value.message
    assert "GRAPHMEM_HTTP_TOKEN=" in message
    assert "--insecure-allow-unauthenticated" in message
    assert raised.value.fields["host"] == host


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.168.1.20"])
def test_a_non_loopback_host_passes_with_a_token_or_the_explicit_opt_out(host: str) -> None:
    check_bind_security(host, TOKEN, allow_unauthenticated=False)
    check_bind_security(host, None, allow_unauthenticated=True)


def test_an_empty_token_is_refused_on_any_host() -> None:
    for host in ("127.0.0.1", "0.0.0.0"):
        with pytest.raises(InvalidInput, match="empty"):
            check_bind_security(host, "  ", allow_unauthenticated=True)


def test_serve_http_refuses_a_blank_token_before_binding(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    started: list[bool] = []

    async def startup(self: uvicorn.Server, sockets: Any = None) -> None:
        started.append(True)  # binding happens in startup(); it must never be reached
        raise AssertionError("serve_http got as far as starting uvicorn")

    monkeypatch.setattr(uvicorn.Server, "startup", startup)
    with store(tmp_path, http_token="   ") as gm:
        for host in ("127.0.0.1", "0.0.0.0"):
            with pytest.raises(InvalidInput, match="empty"):
                serve_http(gm, host, 8765)
            with pytest.raises(InvalidInput, match="empty"):
                make_http_server(gm, host, 8765)
    assert started == []


def _cli_env(home: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GRAPHMEM_")}
    env["GRAPHMEM_DAEMON_IDLE_TIMEOUT"] = "5"  # the owner `serve` starts must not outlive the test
    path = env.get("PYTHONPATH")
    env["PYTHONPATH"] = f"{REPO_ROOT}{os.pathsep}{path}" if path else str(REPO_ROOT)
    return {**env, "GRAPHMEM_EMBEDDING_PROVIDER": "hash", "GRAPHMEM_HOME": str(home), **extra}


def test_cli_serve_http_with_a_blank_token_exits_2_before_binding(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "graphmem", "serve", "--http", "--port", "0"],
        env=_cli_env(tmp_path / "home", GRAPHMEM_HTTP_TOKEN=" "),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 2, result.stderr
    assert "GRAPHMEM_HTTP_TOKEN" in result.stderr and "empty" in result.stderr
    assert "serving MCP" not in result.stderr


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_cli_serve_http_with_a_token_says_where_it_listens_and_that_auth_is_on(
    tmp_path: Path,
) -> None:
    port = _free_port()
    token = "a-long-random-token-for-the-cli-test"
    child = subprocess.Popen(
        [sys.executable, "-m", "graphmem", "serve", "--http", "--port", str(port)],
        env=_cli_env(tmp_path / "home", GRAPHMEM_HTTP_TOKEN=token),
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            assert child.poll() is None, child.communicate()[1].decode(errors="replace")
            try:
                health = httpx.get(f"http://127.0.0.1:{port}/health", timeout=5)
                break
            except httpx.TransportError:
                assert time.monotonic() < deadline, "graphmem serve did not answer within 60 s"
                time.sleep(0.1)
        assert health.status_code == 200
        assert health.json() == {"status": "ok"}
        assert httpx.post(f"http://127.0.0.1:{port}{MCP_PATH}", timeout=5).status_code == 401

        child.send_signal(signal.SIGTERM)
        _, stderr_bytes = child.communicate(timeout=30)
        stderr = stderr_bytes.decode(errors="replace")
        assert child.returncode == 0, stderr
        lines = [line for line in stderr.splitlines() if "serving MCP" in line]
        assert len(lines) == 1, stderr
        assert f"http://127.0.0.1:{port}{MCP_PATH}" in lines[0]
        assert "bearer token required (GRAPHMEM_HTTP_TOKEN)" in lines[0]
        assert token not in stderr
        assert not (tmp_path / "home" / "http_token").exists()  # the setting is the token
    finally:
        if child.poll() is None:
            child.kill()
            child.wait(timeout=10)
        for stream in (child.stdout, child.stderr):
            if stream is not None:
                stream.close()


# -- bearer token -----------------------------------------------------------------------------------


async def test_with_a_token_a_request_without_the_header_gets_401(
    tmp_path: Path, http: httpx.AsyncClient
) -> None:
    with store(tmp_path, http_token=TOKEN) as gm, serving(gm) as base:
        for method in ("POST", "GET", "DELETE"):
            response = await http.request(
                method, f"{base}{MCP_PATH}", json=INITIALIZE, headers=MCP_HEADERS
            )
            assert response.status_code == 401, method
            assert response.headers["www-authenticate"] == "Bearer"
            assert response.json()["error"] == "unauthorized"
            assert response.json()["message"]
        # any other path too, not only /mcp
        assert (await http.get(f"{base}/anything")).status_code == 401
        assert gm.stats().total == 0


async def test_with_a_token_a_wrong_token_gets_the_same_401_as_no_token(
    tmp_path: Path, http: httpx.AsyncClient
) -> None:
    url_headers = {**MCP_HEADERS}
    with store(tmp_path, http_token=TOKEN) as gm, serving(gm) as base:
        url = f"{base}{MCP_PATH}"
        missing = await http.post(url, json=INITIALIZE, headers=url_headers)
        for wrong in (
            f"Bearer {TOKEN}x",
            f"Bearer {TOKEN[:-1]}",
            "Bearer",
            f"Basic {TOKEN}",
            TOKEN,
            f"Bearer{TOKEN}",
        ):
            response = await http.post(
                url, json=INITIALIZE, headers={**url_headers, "Authorization": wrong}
            )
            assert response.status_code == 401, wrong
            assert response.headers["www-authenticate"] == "Bearer"
            assert response.json() == missing.json()  # nothing says which check failed


async def test_with_the_right_token_an_mcp_client_lists_tools_and_stores_a_memory(
    tmp_path: Path,
) -> None:
    with store(tmp_path, http_token=TOKEN) as gm, serving(gm) as base:
        headers = {"Authorization": f"Bearer {TOKEN}"}
        with anyio.fail_after(30):
            async with mcp_client(f"{base}{MCP_PATH}", headers) as client:
                names = {tool.name for tool in (await client.list_tools()).tools}
                assert {"store_memory", "recall_memory", "cypher_query"} <= names
                stored = await call(client, "store_memory", content="Stored with a bearer token")
                fetched = await call(client, "get_memory", id=stored["id"])
                assert fetched["content"] == "Stored with a bearer token"
        assert gm.stats().total == 1


async def test_with_the_right_token_raw_requests_get_200_and_the_scheme_is_case_insensitive(
    tmp_path: Path, http: httpx.AsyncClient
) -> None:
    with store(tmp_path, http_token=TOKEN) as gm, serving(gm) as base:
        url = f"{base}{MCP_PATH}"
        session = await handshake(http, url, {"Authorization": f"bearer {TOKEN}"})
        response = await http.post(url, json=tool_call("memory_stats"), headers=session)
        assert response.status_code == 200
        assert response.json()["result"]["structuredContent"]["total"] == gm.stats().total


async def test_health_says_only_ok_without_the_token_and_more_with_it(
    tmp_path: Path, http: httpx.AsyncClient
) -> None:
    with store(tmp_path, http_token=TOKEN) as gm, serving(gm) as base:
        for headers in ({}, {"Authorization": f"Bearer {TOKEN}x"}, {"Authorization": TOKEN}):
            response = await http.get(f"{base}/health", headers=headers)
            assert response.status_code == 200
            assert response.json() == {"status": "ok"}
            assert str(gm.path) not in response.text
        assert (await http.head(f"{base}/health")).status_code == 200
        # only GET/HEAD /health is open
        assert (await http.post(f"{base}/health")).status_code == 401

        full = await http.get(f"{base}/health", headers={"Authorization": f"Bearer {TOKEN}"})
        assert full.json() == {
            "status": "ok",
            "version": full.json()["version"],
            "store": str(gm.path),
        }
        assert full.json()["version"]


@pytest.mark.parametrize("app_host", ["127.0.0.1", "0.0.0.0"])
async def test_the_insecure_flag_opens_mcp_but_not_health_details_nor_the_console(
    tmp_path: Path, http: httpx.AsyncClient, app_host: str
) -> None:
    # 0.0.0.0: the app as `--host 0.0.0.0 --insecure-allow-unauthenticated` builds it, bound to
    # loopback
    with (
        store(tmp_path, http_token=TOKEN) as gm,
        serving(gm, app_host=app_host, allow_unauthenticated=True) as base,
    ):
        session = await handshake(http, f"{base}{MCP_PATH}", {})
        stats = await http.post(
            f"{base}{MCP_PATH}", json=tool_call("memory_stats"), headers=session
        )
        assert stats.status_code == 200
        assert (await http.get(f"{base}/health")).json() == {"status": "ok"}
        page = await http.get(f"{base}/console/stats", headers={"accept": "text/html"})
        assert page.status_code == 303 and page.headers["location"].startswith("/console/login")
        wrong = await http.post(f"{base}/console/login", data={"token": "guess"})
        assert wrong.status_code == 401


async def test_dns_rebinding_protection_stays_on_with_a_token_on_loopback(
    tmp_path: Path, http: httpx.AsyncClient
) -> None:
    with store(tmp_path, http_token=TOKEN) as gm, serving(gm) as base:
        headers = {**MCP_HEADERS, "Authorization": f"Bearer {TOKEN}"}
        evil_host = await http.post(
            f"{base}{MCP_PATH}", json=INITIALIZE, headers={**headers, "Host": "evil.example:80"}
        )
        assert evil_host.status_code == 421
        evil_origin = await http.post(
            f"{base}{MCP_PATH}",
            json=INITIALIZE,
            headers={**headers, "Origin": "http://evil.example"},
        )
        assert evil_origin.status_code == 403


# -- body size limit --------------------------------------------------------------------------------


async def test_a_body_over_the_limit_gets_413_whether_declared_or_chunked(
    tmp_path: Path, http: httpx.AsyncClient
) -> None:
    with store(tmp_path, http_max_body_bytes=2048, http_token=TOKEN) as gm, serving(gm) as base:
        url = f"{base}{MCP_PATH}"
        headers = {**MCP_HEADERS, "Authorization": f"Bearer {TOKEN}"}
        big = {**INITIALIZE, "params": {**INITIALIZE["params"], "padding": "x" * 3000}}
        payload = json.dumps(big).encode()

        declared = await http.post(url, content=payload, headers=headers)
        assert declared.status_code == 413
        assert declared.json()["error"] == "payload_too_large"
        assert "2048" in declared.json()["message"]

        async def chunks() -> AsyncIterator[bytes]:
            for start in range(0, len(payload), 512):
                yield payload[start : start + 512]

        chunked = await http.post(url, content=chunks(), headers=headers)
        assert "content-length" not in chunked.request.headers  # sent chunked
        assert chunked.status_code == 413
        assert chunked.json()["error"] == "payload_too_large"

        # a body under the limit still works on a fresh connection
        session = await handshake(http, url, {"Authorization": f"Bearer {TOKEN}"})
        ok = await http.post(url, json=tool_call("memory_stats"), headers=session)
        assert ok.status_code == 200
        assert gm.stats().total == 0


async def test_an_unauthenticated_oversized_body_gets_401_not_413(
    tmp_path: Path, http: httpx.AsyncClient
) -> None:
    with store(tmp_path, http_max_body_bytes=2048, http_token=TOKEN) as gm, serving(gm) as base:
        response = await http.post(f"{base}{MCP_PATH}", content=b"x" * 5000, headers=MCP_HEADERS)
        assert response.status_code == 401


# -- request timeout ----------------------------------------------------------------------------------


async def test_a_call_slower_than_the_request_timeout_gets_504_and_the_server_keeps_serving(
    tmp_path: Path, http: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    release = threading.Event()
    with store(tmp_path, http_request_timeout=1.0, http_token=TOKEN) as gm:
        real_stats = gm.stats

        def slow_stats() -> Any:
            release.wait(20)  # bounded: the test sets it as soon as it has the 504
            return real_stats()

        with serving(gm) as base:
            url = f"{base}{MCP_PATH}"
            session = await handshake(http, url, {"Authorization": f"Bearer {TOKEN}"})
            monkeypatch.setattr(gm, "stats", slow_stats)
            started = time.monotonic()
            try:
                response = await http.post(url, json=tool_call("memory_stats"), headers=session)
            finally:
                release.set()
            elapsed = time.monotonic() - started
            assert response.status_code == 504
            assert response.json()["error"] == "timeout"
            assert elapsed < 10, f"the 504 took {elapsed:.1f} s"

            monkeypatch.setattr(gm, "stats", real_stats)
            with anyio.fail_after(20):
                while True:  # the slow call may still hold the store's lock for a moment
                    again = await http.post(url, json=tool_call("memory_stats", 3), headers=session)
                    if again.status_code == 200:
                        break
                    assert again.status_code == 504
            assert again.json()["result"]["structuredContent"]["total"] == 0


async def test_an_open_sse_stream_outlives_the_request_timeout(
    tmp_path: Path, http: httpx.AsyncClient
) -> None:
    with store(tmp_path, http_request_timeout=1.0, http_token=TOKEN) as gm, serving(gm) as base:
        url = f"{base}{MCP_PATH}"
        session = await handshake(http, url, {"Authorization": f"Bearer {TOKEN}"})
        stream_headers = {**session, "Accept": "text/event-stream"}
        async with http.stream("GET", url, headers=stream_headers) as stream:
            assert stream.status_code == 200
            assert stream.headers["content-type"].startswith("text/event-stream")
            ended = False
            with anyio.move_on_after(2.5):  # well past the 1 s timeout
                async for _ in stream.aiter_bytes():
                    pass
                ended = True
            assert not ended, "the SSE stream was closed by the request timeout"
            # and the session still serves calls while its stream is open
            response = await http.post(url, json=tool_call("memory_stats"), headers=session)
            assert response.status_code == 200
        await http.delete(url, headers=session)


async def test_a_slow_call_from_an_mcp_client_fails_at_the_timeout_not_when_the_call_ends(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The SDK's client speaks the per-request protocol, where the tool runs on a worker thread in
    # the request's own task: the 504 must still go out at the deadline.
    release = threading.Event()
    with store(tmp_path, http_request_timeout=1.0, http_token=TOKEN) as gm, serving(gm) as base:
        real_stats = gm.stats

        def slow_stats() -> Any:
            release.wait(20)
            return real_stats()

        async with mcp_client(f"{base}{MCP_PATH}", {"Authorization": f"Bearer {TOKEN}"}) as client:
            monkeypatch.setattr(gm, "stats", slow_stats)
            started = time.monotonic()
            try:
                with anyio.fail_after(15), pytest.raises(MCPError):
                    await client.call_tool("memory_stats", {})
            finally:
                release.set()
            assert time.monotonic() - started < 10
