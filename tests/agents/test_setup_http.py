"""`graphmem setup CLIENT --http`: each client's HTTP entry, parsed as the client parses it, with
the store's token in its Authorization header at user scope (in a private file) and only a
reference to it in project files; switching transports and removing leave nothing stale."""

from __future__ import annotations

import json
import os
import stat
import tomllib
from pathlib import Path
from typing import Any

import pytest

from graphmem.agents.clients import CLIENTS, SCOPES
from graphmem.agents.http_entries import default_url
from graphmem.agents.setup import Request, notes, run
from graphmem.errors import InvalidInput

EXE = Path("/opt/tools/venv/bin/graphmem")
URL = "http://127.0.0.1:8765/mcp"
TOKEN = "t0ken-of-the-store-0123456789abcdefghijklmnop"
HTTP_CLIENTS = [c for c in CLIENTS if c != "claude-desktop"]
BEARER = f"Bearer {TOKEN}"
# how each client's project file names the token, from the clients' docs
REFERENCES = {
    "claude-code": "Bearer ${GRAPHMEM_HTTP_TOKEN}",
    "cursor": "Bearer ${env:GRAPHMEM_HTTP_TOKEN}",
    "gemini": "Bearer ${GRAPHMEM_HTTP_TOKEN}",
    "vscode": "Bearer ${input:graphmem-token}",
}


@pytest.fixture
def dirs(tmp_path: Path) -> tuple[Path, Path]:
    project, home = tmp_path / "project", tmp_path / "home"
    project.mkdir()
    home.mkdir()
    return project, home


def request(dirs: tuple[Path, Path], client: str, scope: str, **options: Any) -> Request:
    project, home = dirs
    http = {"http_url": URL, "token": TOKEN, "token_file": project / ".graphmem/http_token"}
    return Request(
        client=client, project=project, store=project / ".graphmem", executable=EXE,
        user_home=home, scope=scope, platform="linux", hooks=False,
        **{**http, **options},
    )  # fmt: skip


def mcp_file(dirs: tuple[Path, Path], client: str, scope: str) -> Path:
    (change,) = run(request(dirs, client, scope), dry_run=True)
    return change.path


def entry(path: Path, client: str) -> dict[str, Any]:
    """The graphmem entry, read as the client reads the file."""
    text = path.read_text(encoding="utf-8")
    doc = tomllib.loads(text) if path.suffix == ".toml" else json.loads(text)
    key = {"codex": "mcp_servers", "vscode": "servers"}.get(client, "mcpServers")
    found: dict[str, Any] = doc[key]["graphmem"]
    return found


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.mark.parametrize("client", HTTP_CLIENTS)
def test_at_user_scope_each_client_gets_its_own_http_entry_with_the_token(
    dirs: tuple[Path, Path], client: str
) -> None:
    run(request(dirs, client, "user"))
    path = mcp_file(dirs, client, "user")
    got = entry(path, client)
    expected: dict[str, Any] = {
        "claude-code": {"type": "http", "url": URL, "headers": {"Authorization": BEARER}},
        "cursor": {"url": URL, "headers": {"Authorization": BEARER}},
        "gemini": {"httpUrl": URL, "headers": {"Authorization": BEARER}},
        "vscode": {"type": "http", "url": URL, "headers": {"Authorization": BEARER}},
        "codex": {"url": URL, "http_headers": {"Authorization": BEARER}},
    }
    assert got == expected[client]
    assert mode(path) == 0o600  # a new file holding the token: private from the start


@pytest.mark.parametrize("client", HTTP_CLIENTS)
def test_a_project_file_names_the_token_and_never_holds_it(
    dirs: tuple[Path, Path], client: str
) -> None:
    changes = run(request(dirs, client, "project"))
    path = mcp_file(dirs, client, "project")
    assert TOKEN not in path.read_text(encoding="utf-8")
    got = entry(path, client)
    if client == "codex":
        assert got == {"url": URL, "bearer_token_env_var": "GRAPHMEM_HTTP_TOKEN"}
    else:
        assert got["headers"] == {"Authorization": REFERENCES[client]}
    said = " ".join(notes(request(dirs, client, "project"), changes))
    assert str(dirs[0] / ".graphmem/http_token") in said
    assert URL in said and "graphmem serve --http" in said


def test_vscode_asks_for_the_token_once_through_its_input_prompt(dirs: tuple[Path, Path]) -> None:
    path = dirs[0] / ".vscode/mcp.json"
    path.parent.mkdir()
    theirs = {"type": "promptString", "id": "other-key", "password": True}
    path.write_text(json.dumps({"servers": {}, "inputs": [theirs]}, indent=2), encoding="utf-8")
    run(request(dirs, "vscode", "project"))
    doc = json.loads(path.read_text(encoding="utf-8"))
    ours = {i["id"]: i for i in doc["inputs"]}
    assert ours["other-key"] == theirs
    assert ours["graphmem-token"]["type"] == "promptString"
    assert ours["graphmem-token"]["password"] is True
    assert {c.action for c in run(request(dirs, "vscode", "project"))} == {"unchanged"}
    run(request(dirs, "vscode", "project", remove=True))
    assert json.loads(path.read_text(encoding="utf-8"))["inputs"] == [theirs]


@pytest.mark.parametrize("client", HTTP_CLIENTS)
def test_switching_stdio_to_http_and_back_leaves_no_key_of_the_other_transport(
    dirs: tuple[Path, Path], client: str
) -> None:
    stdio = request(dirs, client, "user", http_url=None, token=None)
    run(stdio)
    path = mcp_file(dirs, client, "user")
    run(request(dirs, client, "user"))
    http = entry(path, client)
    assert not {"command", "args", "env"} & set(http)
    run(stdio)
    back = entry(path, client)
    assert back["command"] == str(EXE) and back["args"] == ["serve"]
    assert not {"url", "httpUrl", "headers", "http_headers"} & set(back)
    if client in ("claude-code", "vscode"):
        assert back["type"] == "stdio"


def test_an_existing_entrys_own_keys_and_headers_stay(dirs: tuple[Path, Path]) -> None:
    path = dirs[1] / ".claude.json"
    mine = {"command": "/old/graphmem", "args": ["serve"], "timeout": 30}
    path.write_text(json.dumps({"mcpServers": {"graphmem": mine}}), encoding="utf-8")
    run(request(dirs, "claude-code", "user"))
    got = entry(path, "claude-code")
    assert got == {"timeout": 30, "type": "http", "url": URL, "headers": {"Authorization": BEARER}}
    got["headers"]["X-Trace"] = "1"
    path.write_text(json.dumps({"mcpServers": {"graphmem": got}}), encoding="utf-8")
    run(request(dirs, "claude-code", "user"))
    assert entry(path, "claude-code")["headers"] == {"X-Trace": "1", "Authorization": BEARER}


def test_a_codex_toml_keeps_its_comments_and_gets_an_inline_header_table(
    dirs: tuple[Path, Path],
) -> None:
    path = dirs[1] / ".codex/config.toml"
    path.parent.mkdir()
    original = '# mine\nmodel = "o3"\n\n[mcp_servers.docs]\ncommand = "npx"  # keep\n'
    path.write_text(original, encoding="utf-8")
    run(request(dirs, "codex", "user"))
    text = path.read_text(encoding="utf-8")
    assert text.startswith(original)
    assert tomllib.loads(text)["mcp_servers"]["graphmem"]["http_headers"] == {
        "Authorization": BEARER
    }
    Path(f"{path}.graphmem-backup").unlink()
    run(request(dirs, "codex", "user", remove=True))
    assert path.read_text(encoding="utf-8") == original


@pytest.mark.parametrize("client", HTTP_CLIENTS)
def test_remove_takes_an_http_entry_out_and_leaves_no_file_behind(
    dirs: tuple[Path, Path], client: str
) -> None:
    for scope in SCOPES[client]:
        run(request(dirs, client, scope))
        run(request(dirs, client, scope, remove=True, http_url=None, token=None))
    files = [p for p in dirs[0].parent.rglob("*") if p.is_file()]
    assert [p for p in files if not p.name.endswith(".graphmem-backup")] == []
    for backup in files:  # a backup of a file that held the token is as private as it was
        if TOKEN in backup.read_text(encoding="utf-8"):
            assert mode(backup) == 0o600, backup


def test_an_existing_readable_config_is_made_private_once_it_holds_the_token(
    dirs: tuple[Path, Path],
) -> None:
    path = dirs[1] / ".gemini/settings.json"
    path.parent.mkdir()
    path.write_text('{"ui": {"theme": "GitHub"}}\n', encoding="utf-8")
    os.chmod(path, 0o644)
    changes = run(request(dirs, "gemini", "user"))
    assert mode(path) == 0o600
    backup = Path(f"{path}.graphmem-backup")
    assert mode(backup) == 0o600
    said = notes(request(dirs, "gemini", "user"), changes)
    assert any("made" in n and "private (0644 -> 0600)" in n for n in said)
    os.chmod(path, 0o640)  # loosened again by hand: a second run tightens it, changing nothing else
    again = run(request(dirs, "gemini", "user"))
    assert {c.action for c in again} == {"unchanged"} and mode(path) == 0o600


def test_a_token_file_inside_a_git_work_tree_is_flagged(dirs: tuple[Path, Path]) -> None:
    (dirs[1] / ".git").mkdir()  # a home folder kept in git
    changes = run(request(dirs, "cursor", "user"))
    said = " ".join(notes(request(dirs, "cursor", "user"), changes))
    assert "git work tree" in said and "never commit it" in said


def test_claude_desktop_cannot_carry_the_header_and_says_so(dirs: tuple[Path, Path]) -> None:
    with pytest.raises(InvalidInput) as raised:
        run(request(dirs, "claude-desktop", "user"))
    assert "only stdio servers" in raised.value.message and "without --http" in raised.value.message
    assert not any(p.is_file() for p in dirs[1].rglob("*"))


def test_a_dry_run_shows_the_token_as_a_placeholder(dirs: tuple[Path, Path]) -> None:
    (change,) = run(request(dirs, "cursor", "user"), dry_run=True)
    diff = change.diff(TOKEN)
    assert TOKEN not in diff and '"Authorization": "Bearer <token>"' in diff
    assert not (dirs[1] / ".cursor").exists()


@pytest.mark.parametrize(
    ("host", "port", "url"),
    [
        ("127.0.0.1", 8765, "http://127.0.0.1:8765/mcp"),
        ("0.0.0.0", 9000, "http://127.0.0.1:9000/mcp"),
        ("::1", 8765, "http://[::1]:8765/mcp"),
        ("memory.lan", 80, "http://memory.lan:80/mcp"),
    ],
)
def test_the_default_url_is_where_serve_http_listens(host: str, port: int, url: str) -> None:
    assert default_url(host, port) == url
