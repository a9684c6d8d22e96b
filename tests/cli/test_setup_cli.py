"""`graphmem setup` as a user runs it: the real CLI in a subprocess, with HOME and the working
directory in temp folders, its files read back as the clients read them."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import httpx
import pytest

GRAPHMEM = Path(sys.executable).parent / "graphmem"
SETTINGS = {
    "permissions": {"allow": ["Bash(make test)"]},
    "hooks": {
        "PostToolUse": [
            {"matcher": "Edit", "hooks": [{"type": "command", "command": "ruff format ."}]}
        ]
    },
}


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A git project, as graphmem finds one."""
    root = tmp_path / "shop"
    (root / ".git").mkdir(parents=True)
    (root / "src").mkdir()
    (tmp_path / "home").mkdir()
    return root


def setup(project: Path, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GRAPHMEM_")}
    env["HOME"] = str(project.parent / "home")
    return subprocess.run(
        [sys.executable, "-m", "graphmem", "setup", *args],
        cwd=cwd or project,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
    )


def read(path: Path) -> Any:
    text = path.read_text(encoding="utf-8")
    return tomllib.loads(text) if path.suffix == ".toml" else json.loads(text)


def test_setup_connects_claude_code_to_the_projects_store(project: Path) -> None:
    done = setup(project, "claude-code", cwd=project / "src")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[:2] == [
        f"created {project / '.mcp.json'}",
        f"created {project / '.claude/settings.json'}",
    ]
    server = read(project / ".mcp.json")["mcpServers"]["graphmem"]
    assert server == {
        "type": "stdio",
        "command": str(GRAPHMEM),
        "args": ["serve"],
        "env": {"GRAPHMEM_HOME": str(project / ".graphmem")},
    }
    assert Path(server["command"]).is_absolute() and Path(server["command"]).is_file()
    hooks = read(project / ".claude/settings.json")["hooks"]
    assert hooks["SessionStart"] == [
        {
            "matcher": "",
            "hooks": [
                {
                    "type": "command",
                    "command": f"{GRAPHMEM} hook session-start --client claude-code",
                }
            ],
        }
    ]
    assert set(hooks) == {"SessionStart", "UserPromptSubmit", "PreCompact", "Stop", "SessionEnd"}


def test_a_second_run_says_it_is_already_set_up(project: Path) -> None:
    setup(project, "claude-code")
    done = setup(project, "claude-code")
    assert done.returncode == 0 and done.stdout.strip() == "already set up"


def test_setup_and_remove_edit_claude_settings_in_place(project: Path) -> None:
    settings = project / ".claude/settings.json"
    settings.parent.mkdir()
    original = json.dumps(SETTINGS, indent=2) + "\n"
    settings.write_text(original, encoding="utf-8")
    done = setup(project, "claude-code", "--scope", "project")
    assert done.returncode == 0, done.stderr
    backup = Path(f"{settings}.graphmem-backup")
    assert f"updated {settings} (backup: {backup})" in done.stdout
    assert backup.read_text(encoding="utf-8") == original
    merged = read(settings)
    assert merged["permissions"] == SETTINGS["permissions"]
    assert merged["hooks"]["PostToolUse"] == SETTINGS["hooks"]["PostToolUse"]
    assert "Stop" in merged["hooks"]
    removed = setup(project, "claude-code", "--scope", "project", "--remove")
    assert removed.returncode == 0, removed.stderr
    assert settings.read_text(encoding="utf-8") == original
    assert not (project / ".mcp.json").exists()


def test_json_output_lists_every_file_with_its_action(project: Path) -> None:
    done = setup(project, "codex", "--scope", "user", "--instructions", "--json")
    assert done.returncode == 0, done.stderr
    home = project.parent / "home"
    assert json.loads(done.stdout) == [
        {"path": str(home / ".codex/config.toml"), "action": "created", "backup": None},
        {"path": str(home / ".codex/hooks.json"), "action": "created", "backup": None},
        {"path": str(project / "AGENTS.md"), "action": "created", "backup": None},
    ]
    config = read(home / ".codex/config.toml")
    assert config["mcp_servers"]["graphmem"]["args"] == ["serve"]
    again = json.loads(setup(project, "codex", "--scope", "user", "--json").stdout)
    assert {row["action"] for row in again} == {"unchanged"}


def test_a_dry_run_prints_a_diff_and_changes_nothing(project: Path) -> None:
    done = setup(project, "cursor", "--dry-run")
    assert done.returncode == 0, done.stderr
    assert f"+++ {project / '.cursor/mcp.json'}" in done.stdout
    assert f"+++ {project / '.cursor/rules/graphmem.mdc'}" in done.stdout
    assert f'+        "command": "{GRAPHMEM} hook session-start --client cursor"' in done.stdout
    assert not (project / ".cursor").exists()


def test_home_chooses_the_store_the_server_entry_points_at(project: Path, tmp_path: Path) -> None:
    done = setup(project, "vscode", "--home", str(tmp_path / "elsewhere"), "--no-hooks")
    assert done.returncode == 0, done.stderr
    server = read(project / ".vscode/mcp.json")["servers"]["graphmem"]
    assert server["env"] == {"GRAPHMEM_HOME": str(tmp_path / "elsewhere")}
    assert not (project / ".github").exists()


def test_claude_desktop_is_set_up_for_the_user(project: Path) -> None:
    done = setup(project, "claude-desktop")
    assert done.returncode == 0, done.stderr
    config = project.parent / "home/.config/Claude/claude_desktop_config.json"
    if sys.platform == "darwin":
        config = project.parent / "home/Library/Application Support/Claude"
        config /= "claude_desktop_config.json"
    assert read(config)["mcpServers"]["graphmem"]["command"] == str(GRAPHMEM)
    assert "Restart Claude Desktop" in done.stdout


def test_an_unknown_client_exits_2_listing_the_known_ones(project: Path) -> None:
    done = setup(project, "emacs")
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    for client in ("claude-code", "codex", "cursor", "gemini", "vscode", "claude-desktop"):
        assert client in done.stderr


def test_a_malformed_config_exits_2_naming_it_and_is_left_alone(project: Path) -> None:
    config = project / ".gemini/settings.json"
    config.parent.mkdir()
    config.write_text('{"mcpServers": {"x": 1,}}', encoding="utf-8")
    done = setup(project, "gemini", "--json")
    assert done.returncode == 2
    error = json.loads(done.stderr)
    assert error["error"] == "invalid_input" and error["path"] == str(config)
    assert "not valid JSON" in error["message"]
    assert config.read_text(encoding="utf-8") == '{"mcpServers": {"x": 1,}}'
    assert sorted(p.name for p in config.parent.iterdir()) == ["settings.json"]


# -- --http ------------------------------------------------------------------------------------------


def test_setup_http_at_user_scope_writes_the_stores_token_privately(project: Path) -> None:
    done = setup(project, "claude-code", "--http", "--scope", "user", "--no-hooks")
    assert done.returncode == 0, done.stderr
    token_file = project / ".graphmem/http_token"
    token = token_file.read_text(encoding="utf-8").strip()
    assert stat.S_IMODE(token_file.stat().st_mode) == 0o600
    config = project.parent / "home/.claude.json"
    assert read(config)["mcpServers"]["graphmem"] == {
        "type": "http",
        "url": "http://127.0.0.1:8765/mcp",
        "headers": {"Authorization": f"Bearer {token}"},
    }
    assert stat.S_IMODE(config.stat().st_mode) == 0o600
    assert token not in done.stdout + done.stderr  # written, never printed
    assert "keep `graphmem serve --http` running" in done.stdout
    again = setup(project, "claude-code", "--http", "--scope", "user", "--no-hooks")
    assert again.stdout.startswith("already set up")
    assert token_file.read_text(encoding="utf-8").strip() == token  # reused, not remade


def test_setup_http_in_a_project_file_names_the_token_and_says_how_to_give_it(
    project: Path,
) -> None:
    done = setup(project, "cursor", "--http", "--url", "http://127.0.0.1:9100/mcp", "--no-hooks")
    assert done.returncode == 0, done.stderr
    server = read(project / ".cursor/mcp.json")["mcpServers"]["graphmem"]
    assert server == {
        "url": "http://127.0.0.1:9100/mcp",
        "headers": {"Authorization": "Bearer ${env:GRAPHMEM_HTTP_TOKEN}"},
    }
    assert f'export GRAPHMEM_HTTP_TOKEN="$(cat {project / ".graphmem/http_token"})"' in done.stdout
    dry = setup(project, "cursor", "--http", "--scope", "user", "--dry-run", "--no-hooks")
    token = (project / ".graphmem/http_token").read_text(encoding="utf-8").strip()
    assert "Bearer <token>" in dry.stdout and token not in dry.stdout


def test_setup_http_for_claude_desktop_exits_2_saying_it_cannot_carry_the_header(
    project: Path,
) -> None:
    done = setup(project, "claude-desktop", "--http")
    assert done.returncode == 2
    assert "only stdio servers" in done.stderr and "Traceback" not in done.stderr
    assert not (project / ".graphmem/http_token").exists()


def test_a_client_set_up_with_http_reaches_the_server_with_the_header_it_was_given(
    project: Path,
) -> None:
    from graphmem.embeddings.hashing import HashEmbedder
    from graphmem.mcp.http import make_http_server
    from graphmem.service import GraphMemory
    from graphmem.settings import load_settings
    from tests.http_serving import running

    settings = load_settings(project / ".graphmem", environ={}, overrides={})
    gm = GraphMemory(settings, embedder=HashEmbedder())
    try:
        with running(make_http_server(gm, "127.0.0.1", 0, log_level="warning")) as base:
            done = setup(project, "gemini", "--http", "--scope", "user", "--url", f"{base}/mcp")
            assert done.returncode == 0, done.stderr
            config = read(project.parent / "home/.gemini/settings.json")["mcpServers"]["graphmem"]
            initialize = {
                "jsonrpc": "2.0", "id": 1, "method": "initialize",
                "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                           "clientInfo": {"name": "gemini-as-configured", "version": "0"}},
            }  # fmt: skip
            headers = {"Accept": "application/json, text/event-stream", **config["headers"]}
            answer = httpx.post(config["httpUrl"], json=initialize, headers=headers, timeout=30)
            assert answer.status_code == 200, answer.text
            bare = {"Accept": "application/json, text/event-stream"}
            refused = httpx.post(config["httpUrl"], json=initialize, headers=bare, timeout=30)
            assert refused.status_code == 401
    finally:
        gm.close()
