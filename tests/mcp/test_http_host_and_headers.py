"""Two guards of the whole HTTP app, tried from outside against a real server on 127.0.0.1: the
Host check against DNS rebinding (on /mcp, the console and /health alike) and the security
headers, which every response carries, errors and redirects included."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn

from graphmem.console.auth import LoginThrottle
from graphmem.embeddings.hashing import HashEmbedder
from graphmem.mcp.http import MCP_PATH, build_http_app, make_http_server
from graphmem.mcp.http_guards import HostPolicy
from graphmem.service import GraphMemory
from graphmem.settings import load_settings
from tests.http_serving import running

TOKEN = "host-and-headers-token"
BEARER = {"Authorization": f"Bearer {TOKEN}"}
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "graphmem-test", "version": "0"},
    },
}
MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


@contextmanager
def served(tmp_path: Path, app_host: str = "127.0.0.1", **settings: Any) -> Iterator[str]:
    """The app as it would serve `app_host`, bound to 127.0.0.1 whatever `app_host` is."""
    overrides = {"http_token": TOKEN, **settings}
    gm = GraphMemory(
        load_settings(tmp_path / "store", environ={}, overrides=overrides),
        embedder=HashEmbedder(),
    )
    try:
        if app_host == "127.0.0.1":
            server = make_http_server(gm, "127.0.0.1", 0, log_level="warning")
        else:
            config = uvicorn.Config(
                build_http_app(gm, host=app_host), host="127.0.0.1", port=0, log_level="warning"
            )
            server = uvicorn.Server(config)
        with running(server) as base:
            yield base
    finally:
        gm.close()


def port_of(base: str) -> int:
    return int(base.rsplit(":", 1)[1])


# -- the Host check --------------------------------------------------------------------------------


def test_a_rebinding_host_is_refused_on_mcp_the_console_and_health(tmp_path: Path) -> None:
    with served(tmp_path) as base, httpx.Client(base_url=base, timeout=30) as http:
        evil = {"Host": f"evil.example:{port_of(base)}"}
        mcp = http.post(MCP_PATH, json=INITIALIZE, headers={**MCP_HEADERS, **BEARER, **evil})
        assert mcp.status_code == 421 and mcp.json()["error"] == "misdirected_request"
        login = http.post("/console/login", data={"token": TOKEN}, headers=evil)
        assert login.status_code == 421 and "set-cookie" not in login.headers
        assert http.get("/console/login", headers=evil).status_code == 421
        health = http.get("/health", headers={**BEARER, **evil})
        assert health.status_code == 421 and "store" not in health.text
        assert http.get("/health", headers={"Host": "evil.example"}).status_code == 421


@pytest.mark.parametrize(
    "host", ["127.0.0.1:{port}", "localhost:{port}", "[::1]:{port}", "LOCALHOST", "127.0.0.1"]
)
def test_loopback_names_with_any_port_are_answered(tmp_path: Path, host: str) -> None:
    with served(tmp_path) as base, httpx.Client(base_url=base, timeout=30) as http:
        headers = {"Host": host.format(port=port_of(base))}
        assert http.get("/health", headers=headers).json() == {"status": "ok"}
        mcp = http.post(MCP_PATH, json=INITIALIZE, headers={**MCP_HEADERS, **BEARER, **headers})
        assert mcp.status_code == 200
        assert http.get("/console/login", headers=headers).status_code == 200


def test_an_origin_of_another_site_is_refused_everywhere(tmp_path: Path) -> None:
    with served(tmp_path) as base, httpx.Client(base_url=base, timeout=30) as http:
        for origin in ("http://evil.example", "null", f"http://evil.example:{port_of(base)}"):
            headers = {"Origin": origin}
            assert http.get("/health", headers=headers).status_code == 403, origin
            login = http.post("/console/login", data={"token": TOKEN}, headers=headers)
            assert login.status_code == 403 and "set-cookie" not in login.headers
        same = http.get("/health", headers={"Origin": base})
        assert same.status_code == 200


def test_a_name_in_http_allowed_hosts_is_answered_and_others_still_are_not(
    tmp_path: Path,
) -> None:
    # a reverse proxy on this machine forwarding memory.example.com keeps its Host
    with (
        served(tmp_path, http_allowed_hosts="memory.example.com") as base,
        httpx.Client(base_url=base, timeout=30) as http,
    ):
        proxied = {"Host": "memory.example.com", "Origin": "https://memory.example.com"}
        mcp = http.post(MCP_PATH, json=INITIALIZE, headers={**MCP_HEADERS, **BEARER, **proxied})
        assert mcp.status_code == 200
        assert http.get("/console/login", headers=proxied).status_code == 200
        assert http.get("/health", headers={"Host": "evil.example"}).status_code == 421


def test_the_host_policy_of_each_kind_of_bind() -> None:
    loopback = HostPolicy("127.0.0.1")
    assert loopback.allows_host("localhost:1") and loopback.allows_host("[::1]:8765")
    assert not loopback.allows_host("127.0.0.1.evil.example") and not loopback.allows_host(None)
    assert not loopback.allows_host("evil.example:127.0.0.1")
    lan = HostPolicy("192.168.1.20")
    assert lan.allows_host("192.168.1.20:8765") and not lan.allows_host("evil.example")
    wildcard = HostPolicy("0.0.0.0")
    assert not wildcard.checks and wildcard.allows_host("anything")
    listed = HostPolicy("::", ["memory.example.com"])
    assert listed.allows_host("memory.example.com") and listed.allows_host("localhost")
    assert not listed.allows_host("evil.example")


def test_an_app_for_a_specific_network_address_answers_only_that_name(tmp_path: Path) -> None:
    with served(tmp_path, app_host="192.0.2.1") as base, httpx.Client(base_url=base) as http:
        assert http.get("/health", headers={"Host": "192.0.2.1:8765"}).status_code == 200
        assert http.get("/health", headers={"Host": "evil.example"}).status_code == 421


# -- the security headers ----------------------------------------------------------------------------


def assert_hardened(response: httpx.Response) -> None:
    what = f"{response.request.method} {response.request.url.path} -> {response.status_code}"
    csp = response.headers.get("content-security-policy", "")
    assert "script-src 'none'" in csp and "frame-ancestors 'none'" in csp, what
    assert response.headers.get("x-content-type-options") == "nosniff", what
    assert response.headers.get("x-frame-options") == "DENY", what
    assert response.headers.get("cache-control") == "no-store", what
    assert len(response.headers.get_list("content-security-policy")) == 1, what


def test_every_response_of_the_app_carries_the_security_headers(tmp_path: Path) -> None:
    with (
        served(tmp_path, http_max_body_bytes=2048) as base,
        httpx.Client(base_url=base, timeout=30, follow_redirects=False) as http,
    ):
        seen = {
            "ok": http.get("/health"),
            "mcp": http.post(MCP_PATH, json=INITIALIZE, headers={**MCP_HEADERS, **BEARER}),
            "redirect": http.get("/console/stats", headers={"accept": "text/html"}),
            "unauthorized": http.post(MCP_PATH, json=INITIALIZE, headers=MCP_HEADERS),
            "page 401": http.get("/console/stats"),
            "not found": http.get("/console/nowhere"),
            "too large": http.post(
                MCP_PATH, content=b"x" * 5000, headers={**MCP_HEADERS, **BEARER}
            ),
            "misdirected": http.get("/health", headers={"Host": "evil.example"}),
            "forbidden": http.post("/console/login", headers={"sec-fetch-site": "cross-site"}),
            "login page": http.get("/console/login"),
            "stylesheet": http.get("/console/static/console.css"),
        }
        expected = {"ok": 200, "mcp": 200, "redirect": 303, "unauthorized": 401}
        expected |= {"page 401": 401, "not found": 404, "too large": 413, "misdirected": 421}
        expected |= {"forbidden": 403, "login page": 200, "stylesheet": 200}
        assert {k: r.status_code for k, r in seen.items()} == expected
        for response in seen.values():
            assert_hardened(response)


def test_a_chunked_body_over_the_limit_gets_413_with_the_headers(tmp_path: Path) -> None:
    def chunks() -> Iterator[bytes]:
        for _ in range(10):
            yield b"x" * 512

    with served(tmp_path, http_max_body_bytes=2048) as base, httpx.Client(base_url=base) as http:
        response = http.post(MCP_PATH, content=chunks(), headers={**MCP_HEADERS, **BEARER})
        assert response.status_code == 413 and json.loads(response.text)["error"]
        assert_hardened(response)


def test_a_login_backoff_429_and_a_timeout_504_carry_the_headers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    now = [1000.0]
    throttle = LoginThrottle(clock=lambda: now[0])
    settings = {"http_token": TOKEN, "http_request_timeout": 1.0}
    gm = GraphMemory(
        load_settings(tmp_path / "store", environ={}, overrides=settings), embedder=HashEmbedder()
    )
    release = threading.Event()
    real_stats = gm.stats

    def slow_stats() -> Any:
        release.wait(20)
        return real_stats()

    try:
        server = make_http_server(gm, "127.0.0.1", 0, log_level="warning", login_throttle=throttle)
        with running(server) as base, httpx.Client(base_url=base, timeout=30) as http:
            for _ in range(5):
                assert http.post("/console/login", data={"token": "guess"}).status_code == 401
            locked = http.post("/console/login", data={"token": TOKEN})
            assert locked.status_code == 429
            assert_hardened(locked)

            login = http.post("/console/login", data={"token": TOKEN})
            assert login.status_code == 429  # the clock has not moved
            now[0] += 1.5
            assert http.post("/console/login", data={"token": TOKEN}).status_code == 303

            monkeypatch.setattr(gm, "stats", slow_stats)
            try:
                timed_out = http.get("/console/stats")
            finally:
                release.set()
            assert timed_out.status_code == 504
            assert_hardened(timed_out)
    finally:
        gm.close()
