"""No HTTP surface is open by default: without GRAPHMEM_HTTP_TOKEN the store's own token, kept
private in `<data dir>/http_token` and reused across restarts, guards /mcp, the console and
/health's details; only `--insecure-allow-unauthenticated` opens /mcp, and says so. Tried from
outside, against real servers on 127.0.0.1."""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

from graphmem.embeddings.hashing import HashEmbedder
from graphmem.http_token import TOKEN_FILE
from graphmem.mcp.http import MCP_PATH, make_http_server
from graphmem.service import GraphMemory
from graphmem.settings import load_settings
from tests.http_serving import running

REPO_ROOT = Path(__file__).resolve().parents[2]
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


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@contextmanager
def served(home: Path) -> Iterator[tuple[GraphMemory, str]]:
    """The library's server with nothing but defaults: no token set anywhere."""
    gm = GraphMemory(load_settings(home, environ={}, overrides={}), embedder=HashEmbedder())
    try:
        with running(make_http_server(gm, "127.0.0.1", 0, log_level="warning")) as base:
            yield gm, base
    finally:
        gm.close()


# -- the library's server, from outside ------------------------------------------------------------


def test_by_default_mcp_needs_the_stores_token_and_health_says_only_ok(tmp_path: Path) -> None:
    home = tmp_path / "store"
    with served(home) as (gm, base), httpx.Client(base_url=base, timeout=30) as http:
        token = (home / TOKEN_FILE).read_text().strip()
        assert mode(home / TOKEN_FILE) == 0o600

        refused = http.post(MCP_PATH, json=INITIALIZE, headers=MCP_HEADERS)
        assert refused.status_code == 401 and refused.headers["www-authenticate"] == "Bearer"
        wrong = http.post(
            MCP_PATH, json=INITIALIZE, headers={**MCP_HEADERS, "Authorization": "Bearer guess"}
        )
        assert wrong.status_code == 401 and wrong.json() == refused.json()
        assert http.get("/health").json() == {"status": "ok"}
        assert str(gm.path) not in http.get("/health").text

        bearer = {"Authorization": f"Bearer {token}"}
        opened = http.post(MCP_PATH, json=INITIALIZE, headers={**MCP_HEADERS, **bearer})
        assert opened.status_code == 200 and opened.json()["result"]["serverInfo"]
        assert http.get("/health", headers=bearer).json()["store"] == str(gm.path)


def test_the_stores_token_survives_a_restart_so_configured_clients_keep_working(
    tmp_path: Path,
) -> None:
    home = tmp_path / "store"
    with served(home) as (_, base):
        token = (home / TOKEN_FILE).read_text().strip()
        bearer = {"Authorization": f"Bearer {token}"}
        assert httpx.get(f"{base}/health", headers=bearer).json()["version"]
    with served(home) as (_, base):
        assert (home / TOKEN_FILE).read_text().strip() == token
        assert mode(home / TOKEN_FILE) == 0o600
        answer = httpx.post(
            f"{base}{MCP_PATH}", json=INITIALIZE, headers={**MCP_HEADERS, **bearer}, timeout=30
        )
        assert answer.status_code == 200


# -- the CLI, as a person runs it -------------------------------------------------------------------


def cli_env(home: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GRAPHMEM_")}
    path = env.get("PYTHONPATH")
    env["PYTHONPATH"] = f"{REPO_ROOT}{os.pathsep}{path}" if path else str(REPO_ROOT)
    return {
        **env, "GRAPHMEM_DAEMON_IDLE_TIMEOUT": "5", "GRAPHMEM_EMBEDDING_PROVIDER": "hash",
        "GRAPHMEM_EXTRACT_ON_WRITE": "false", "GRAPHMEM_HOME": str(home), **extra,
    }  # fmt: skip


@contextmanager
def console(home: Path, *flags: str) -> Iterator[tuple[dict[str, str], subprocess.Popen[str]]]:
    """`graphmem console --no-open --json` running; yields its JSON line and the process."""
    home.parent.mkdir(parents=True, exist_ok=True)
    child = subprocess.Popen(
        [sys.executable, "-m", "graphmem", "console", "--no-open", "--json", *flags],
        env=cli_env(home), cwd=home.parent, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    try:
        assert child.stdout is not None
        line = child.stdout.readline()
        assert line, child.communicate(timeout=30)[1]
        yield json.loads(line), child
    finally:
        if child.poll() is None:
            child.send_signal(signal.SIGTERM)
            try:
                child.wait(timeout=30)
            except subprocess.TimeoutExpired:
                child.kill()
                child.wait(timeout=10)
        subprocess.run(
            [sys.executable, "-m", "graphmem", "daemon", "stop"], env=cli_env(home),
            capture_output=True, timeout=60,
        )  # fmt: skip


def test_mcp_beside_the_console_needs_the_token_the_console_prints(tmp_path: Path) -> None:
    home = tmp_path / "project" / ".graphmem"
    with console(home) as (started, child):
        token, token_file = started["token"], started["token_file"]
        assert token_file == str(home / TOKEN_FILE) and mode(Path(token_file)) == 0o600
        assert Path(token_file).read_text().strip() == token
        base = started["url"].removesuffix("/console/")
        for method, body in (("POST", INITIALIZE), ("GET", None)):
            response = httpx.request(
                method, f"{base}{MCP_PATH}", json=body, headers=MCP_HEADERS, timeout=30
            )
            assert response.status_code == 401, method
        assert httpx.get(f"{base}/health", timeout=30).json() == {"status": "ok"}
        bearer = {**MCP_HEADERS, "Authorization": f"Bearer {token}"}
        assert httpx.post(f"{base}{MCP_PATH}", json=INITIALIZE, headers=bearer).status_code == 200
        child.send_signal(signal.SIGTERM)
        assert child.wait(timeout=30) == 0
    with console(home) as (again, _):
        assert again["token"] == token  # the same file, the same token


def test_the_insecure_flag_opens_mcp_with_a_warning_and_the_console_keeps_its_login(
    tmp_path: Path,
) -> None:
    home = tmp_path / "project" / ".graphmem"
    with console(home, "--insecure-allow-unauthenticated") as (started, child):
        base = started["url"].removesuffix("/console/")
        opened = httpx.post(f"{base}{MCP_PATH}", json=INITIALIZE, headers=MCP_HEADERS, timeout=30)
        assert opened.status_code == 200
        page = httpx.get(f"{base}/console/stats", headers={"accept": "text/html"}, timeout=30)
        assert page.status_code == 303
        assert httpx.get(f"{base}/health", timeout=30).json() == {"status": "ok"}
        child.send_signal(signal.SIGTERM)
        _, stderr = child.communicate(timeout=30)
    assert "warning: --insecure-allow-unauthenticated" in stderr
    assert "any process on this machine" in stderr and "whole store" in stderr


def test_serve_http_says_where_the_token_is_and_never_prints_it(tmp_path: Path) -> None:
    home = tmp_path / "project" / ".graphmem"
    home.parent.mkdir()
    child = subprocess.Popen(
        [sys.executable, "-m", "graphmem", "serve", "--http", "--port", "0"],
        env=cli_env(home), cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    try:
        assert child.stderr is not None
        lines = []
        while not any("serving MCP" in line for line in lines):
            line = child.stderr.readline()
            assert line, "".join(lines)
            lines.append(line)
        child.send_signal(signal.SIGTERM)
        rest = child.communicate(timeout=30)[1]
    finally:
        if child.poll() is None:
            child.kill()
            child.wait(timeout=10)
        subprocess.run(
            [sys.executable, "-m", "graphmem", "daemon", "stop"], env=cli_env(home),
            capture_output=True, timeout=60,
        )  # fmt: skip
    stderr = "".join(lines) + rest
    token = (home / TOKEN_FILE).read_text().strip()
    assert token not in stderr
    assert f"made the store's HTTP token: {home / TOKEN_FILE} (mode 0600)" in stderr
    assert f"bearer token required (the token in {home / TOKEN_FILE}" in stderr
