"""`graphmem setup` as a user runs it: the real CLI in a subprocess, with HOME and the working
directory in temp folders, its files read back as the clients read them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

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
