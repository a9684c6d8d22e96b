"""`graphmem setup`'s core on temp folders, for every client and scope: the files it writes parse
as the clients parse them, what was there before is kept byte for byte, a second run changes
nothing, `--remove` gives the original bytes back, and a malformed file is never overwritten."""

from __future__ import annotations

import json
import os
import stat
import tomllib
from difflib import SequenceMatcher
from pathlib import Path
from typing import Any

import pytest

from graphmem.agents.clients import CLIENTS, SCOPES
from graphmem.agents.setup import Change, Request, apply, plan, run
from graphmem.errors import Conflict, InvalidInput

EXE = Path("/opt/tools/venv/bin/graphmem")
PAIRS = [(client, scope) for client in CLIENTS for scope in SCOPES[client]]
HOOKED = [pair for pair in PAIRS if pair not in {("vscode", "user"), ("claude-desktop", "user")}]

# each client's own event names and the graphmem events it runs, from the clients' docs
EVENTS: dict[str, dict[str, list[str]]] = {
    "claude-code": {
        "SessionStart": ["session-start"],
        "UserPromptSubmit": ["prompt-submit"],
        "PreCompact": ["pre-compact"],
        "Stop": ["stop"],
        "SessionEnd": ["session-end"],
    },
    "codex": {
        "SessionStart": ["session-start"],
        "UserPromptSubmit": ["prompt-submit"],
        "PreCompact": ["pre-compact"],
        "Stop": ["stop", "session-end"],
    },
    "cursor": {
        "sessionStart": ["session-start"],
        "preCompact": ["pre-compact"],
        "stop": ["stop"],
        "sessionEnd": ["session-end"],
    },
    "gemini": {
        "SessionStart": ["session-start"],
        "BeforeAgent": ["prompt-submit"],
        "PreCompress": ["pre-compact"],
        "AfterAgent": ["stop"],
        "SessionEnd": ["session-end"],
    },
    "vscode": {
        "SessionStart": ["session-start"],
        "UserPromptSubmit": ["prompt-submit"],
        "PreCompact": ["pre-compact"],
        "Stop": ["stop", "session-end"],
    },
}


@pytest.fixture
def dirs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    project, home = tmp_path / "project", tmp_path / "home"
    project.mkdir()
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    return project, home


def request(dirs: tuple[Path, Path], client: str, scope: str | None, **options: Any) -> Request:
    project, home = dirs
    return Request(
        client=client,
        project=project,
        store=project / ".graphmem",
        executable=EXE,
        user_home=home,
        scope=scope,
        platform="linux",
        **options,
    )


def mcp_path(dirs: tuple[Path, Path], client: str, scope: str) -> Path:
    project, home = dirs
    return {
        ("claude-code", "project"): project / ".mcp.json",
        ("claude-code", "user"): home / ".claude.json",
        ("codex", "project"): project / ".codex/config.toml",
        ("codex", "user"): home / ".codex/config.toml",
        ("cursor", "project"): project / ".cursor/mcp.json",
        ("cursor", "user"): home / ".cursor/mcp.json",
        ("gemini", "project"): project / ".gemini/settings.json",
        ("gemini", "user"): home / ".gemini/settings.json",
        ("vscode", "project"): project / ".vscode/mcp.json",
        ("vscode", "user"): home / ".config/Code/User/mcp.json",
        ("claude-desktop", "user"): home / ".config/Claude/claude_desktop_config.json",
    }[(client, scope)]


def hooks_path(dirs: tuple[Path, Path], client: str, scope: str) -> Path:
    project, home = dirs
    base = project if scope == "project" else home
    return {
        "claude-code": base / ".claude/settings.json",
        "codex": base / ".codex/hooks.json",
        "cursor": base / ".cursor/hooks.json",
        "gemini": base / ".gemini/settings.json",
        "vscode": project / ".github/hooks/graphmem.json",
    }[client]


def parse(path: Path) -> Any:
    """As the client reads it."""
    text = path.read_text(encoding="utf-8")
    return tomllib.loads(text) if path.suffix == ".toml" else json.loads(text)


def servers_key(client: str) -> str:
    return {"codex": "mcp_servers", "vscode": "servers"}.get(client, "mcpServers")


def snapshot(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and not p.name.endswith(".graphmem-backup")
    }


def block(text: str, opening: str) -> str:
    """The lines of the member that starts with `opening`, up to its closing line."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.lstrip().startswith(opening))
    depth = len(lines[start]) - len(lines[start].lstrip())
    end = start
    if opening.endswith(("{", "[")):
        end = next(
            i
            for i in range(start + 1, len(lines))
            if len(lines[i]) - len(lines[i].lstrip()) == depth
        )
    return "\n".join(lines[start : end + 1]).rstrip(",")


def only_insertions(old: str, new: str) -> bool:
    """`new` is `old` with lines added: every old line kept, in order, byte for byte."""
    ops = SequenceMatcher(None, old.splitlines(True), new.splitlines(True)).get_opcodes()
    return all(tag in ("equal", "insert") for tag, *_ in ops)


def our_hooks(doc: dict[str, Any], client: str) -> dict[str, list[str]]:
    """Client event -> the commands of ours under it, in order."""
    found: dict[str, list[str]] = {}
    for event, items in doc.get("hooks", {}).items():
        entries = [h for item in items for h in item.get("hooks", [item])]
        commands = [h["command"] for h in entries if " hook " in h.get("command", "")]
        if commands:
            found[event] = commands
    return found


@pytest.mark.parametrize(("client", "scope"), PAIRS)
def test_a_fresh_setup_writes_the_server_entry_where_the_client_reads_it(
    dirs: tuple[Path, Path], client: str, scope: str
) -> None:
    run(request(dirs, client, scope))
    entry = parse(mcp_path(dirs, client, scope))[servers_key(client)]["graphmem"]
    assert entry["command"] == str(EXE)
    assert entry["args"] == ["serve"]
    assert entry["env"] == {"GRAPHMEM_HOME": str(dirs[0] / ".graphmem")}
    if client in ("claude-code", "vscode"):
        assert entry["type"] == "stdio"


@pytest.mark.parametrize(("client", "scope"), HOOKED)
def test_hooks_run_graphmem_hook_under_the_clients_own_event_names(
    dirs: tuple[Path, Path], client: str, scope: str
) -> None:
    run(request(dirs, client, scope))
    doc = parse(hooks_path(dirs, client, scope))
    expected = {
        event: [f"{EXE} hook {name} --client {client}" for name in names]
        for event, names in EVENTS[client].items()
    }
    assert our_hooks(doc, client) == expected
    groups = [item for items in doc["hooks"].values() for item in items]
    if client == "claude-code":
        assert all(group["matcher"] == "" for group in groups)
    if client == "cursor":
        assert doc["version"] == 1 and all(set(entry) == {"command"} for entry in groups)
    if client == "gemini":
        assert [h["name"] for h in groups[0]["hooks"]] == ["graphmem-session-start"]


def test_cursor_gets_a_rules_file_in_place_of_a_prompt_hook(dirs: tuple[Path, Path]) -> None:
    run(request(dirs, "cursor", "project"))
    rules = (dirs[0] / ".cursor/rules/graphmem.mdc").read_text(encoding="utf-8")
    assert rules.startswith("---\n") and "alwaysApply: true" in rules
    assert "recall" in rules.lower() and "store_dead_end" in rules


@pytest.mark.parametrize(("client", "scope"), PAIRS)
def test_a_second_run_changes_nothing(dirs: tuple[Path, Path], client: str, scope: str) -> None:
    run(request(dirs, client, scope, instructions=client != "claude-desktop"))
    before = snapshot(dirs[0].parent)
    again = run(request(dirs, client, scope, instructions=client != "claude-desktop"))
    assert {change.action for change in again} == {"unchanged"}
    assert snapshot(dirs[0].parent) == before


@pytest.mark.parametrize(("client", "scope"), PAIRS)
def test_remove_after_a_fresh_setup_leaves_no_file_behind(
    dirs: tuple[Path, Path], client: str, scope: str
) -> None:
    run(request(dirs, client, scope, instructions=client != "claude-desktop"))
    removed = run(request(dirs, client, scope, remove=True))
    assert snapshot(dirs[0].parent) == {}
    assert {change.action for change in removed} <= {"removed", "unchanged"}


def existing_json(client: str, indent: int | str) -> str:
    """A config a user already has: another server, another hook, other settings."""
    doc: dict[str, Any] = {
        "theme": "dark",
        servers_key(client): {"other": {"command": "npx", "args": ["-y", "other-mcp"]}},
    }
    if client == "cursor":
        doc = {**doc, "version": 1, "hooks": {"stop": [{"command": "./audit.sh"}]}}
    elif client == "vscode":
        doc["hooks"] = {"Stop": [{"type": "command", "command": "./audit.sh"}]}
    else:
        hook = {"type": "command", "command": "./audit.sh"}
        doc["hooks"] = {"Stop": [{"matcher": "", "hooks": [hook]}]}
    return json.dumps(doc, indent=indent, ensure_ascii=False) + "\n"


JSON_FILES = [
    (client, scope, which)
    for client, scope in HOOKED
    if client != "codex"
    for which in ("mcp", "hooks")
] + [("codex", scope, "hooks") for scope in ("project", "user")]


@pytest.mark.parametrize(("client", "scope", "which"), JSON_FILES)
@pytest.mark.parametrize("indent", [2, 4, "\t"])
def test_an_existing_json_config_keeps_everything_else_and_comes_back_exactly_on_remove(
    dirs: tuple[Path, Path], client: str, scope: str, which: str, indent: int | str
) -> None:
    path = (mcp_path if which == "mcp" else hooks_path)(dirs, client, scope)
    path.parent.mkdir(parents=True, exist_ok=True)
    original = existing_json(client, indent)
    path.write_text(original, encoding="utf-8")
    changes = run(request(dirs, client, scope))
    text = path.read_text(encoding="utf-8")
    for key in ('"other": {', '"theme": "dark"'):
        assert block(original, key) in text  # byte for byte, the file's own indentation
    doc, before = parse(path), json.loads(original)
    assert doc["theme"] == "dark"
    assert doc[servers_key(client)]["other"] == before[servers_key(client)]["other"]
    assert "./audit.sh" in json.dumps(doc["hooks"])
    assert text.startswith("{\n" + (indent if isinstance(indent, str) else " " * indent) + '"')
    changed = next(c for c in changes if c.path == path)
    assert changed.action == "updated" and changed.backup is not None
    assert changed.backup.read_text(encoding="utf-8") == original
    run(request(dirs, client, scope, remove=True))
    assert path.read_text(encoding="utf-8") == original


def test_a_hand_formatted_json_file_comes_back_byte_for_byte_from_its_backup(
    dirs: tuple[Path, Path],
) -> None:
    path = dirs[0] / ".mcp.json"
    original = '{"mcpServers": {"other": {"command": "npx", "args": ["-y", "x"]}},\n "x": [1,2]}'
    path.write_text(original, encoding="utf-8")
    run(request(dirs, "claude-code", "project"))
    assert json.loads(path.read_text(encoding="utf-8"))["x"] == [1, 2]
    run(request(dirs, "claude-code", "project", remove=True))
    assert path.read_text(encoding="utf-8") == original


def test_without_its_backup_remove_still_leaves_exactly_the_other_content(
    dirs: tuple[Path, Path],
) -> None:
    path = dirs[0] / ".mcp.json"
    original = existing_json("claude-code", 2)
    path.write_text(original, encoding="utf-8")
    run(request(dirs, "claude-code", "project"))
    Path(f"{path}.graphmem-backup").unlink()
    run(request(dirs, "claude-code", "project", remove=True))
    assert path.read_text(encoding="utf-8") == original


CODEX_CONFIG = """\
# my Codex settings
model = "o3"  # the default model

[mcp_servers.docs]
command = "npx"   # keep this comment
args = ["-y", "docs-mcp"]

[profiles.fast]
model = "gpt-5-mini"
"""


@pytest.mark.parametrize("scope", ["project", "user"])
def test_codex_toml_keeps_its_comments_and_layout_and_comes_back_exactly(
    dirs: tuple[Path, Path], scope: str
) -> None:
    path = mcp_path(dirs, "codex", scope)
    path.parent.mkdir(parents=True)
    path.write_text(CODEX_CONFIG, encoding="utf-8")
    run(request(dirs, "codex", scope))
    text = path.read_text(encoding="utf-8")
    assert only_insertions(CODEX_CONFIG, text)
    config = tomllib.loads(text)
    assert config["mcp_servers"]["docs"]["args"] == ["-y", "docs-mcp"]
    assert config["mcp_servers"]["graphmem"]["command"] == str(EXE)
    assert config["profiles"]["fast"]["model"] == "gpt-5-mini"
    Path(f"{path}.graphmem-backup").unlink()  # the layout itself must survive, not the backup
    run(request(dirs, "codex", scope, remove=True))
    assert path.read_text(encoding="utf-8") == CODEX_CONFIG


def test_an_existing_graphmem_entry_is_updated_where_it_stands(dirs: tuple[Path, Path]) -> None:
    path = dirs[0] / ".mcp.json"
    old = {"command": "/old/venv/bin/graphmem", "args": ["serve"], "timeout": 30, "env": {"A": "1"}}
    servers = {"first": {"command": "a"}, "graphmem": old, "last": {"command": "b"}}
    path.write_text(json.dumps({"mcpServers": servers}, indent=2), encoding="utf-8")
    run(request(dirs, "claude-code", "project"))
    after = parse(path)["mcpServers"]
    assert list(after) == ["first", "graphmem", "last"]
    assert after["graphmem"]["command"] == str(EXE)
    assert after["graphmem"]["timeout"] == 30
    assert after["graphmem"]["env"] == {"A": "1", "GRAPHMEM_HOME": str(dirs[0] / ".graphmem")}


def test_a_toml_graphmem_entry_is_updated_in_place_with_its_comments(
    dirs: tuple[Path, Path],
) -> None:
    path = dirs[0] / ".codex/config.toml"
    path.parent.mkdir()
    path.write_text(
        '[mcp_servers.graphmem]\ncommand = "/old/graphmem"  # mine\nargs = ["serve"]\n'
        'startup_timeout_sec = 30\n\n[mcp_servers.other]\ncommand = "x"\n',
        encoding="utf-8",
    )
    run(request(dirs, "codex", "project"))
    text = path.read_text(encoding="utf-8")
    assert f'command = "{EXE}"  # mine' in text
    assert text.index("graphmem]") < text.index("other]")
    assert tomllib.loads(text)["mcp_servers"]["graphmem"]["startup_timeout_sec"] == 30


def test_hooks_of_an_older_install_are_replaced_in_place_not_added_twice(
    dirs: tuple[Path, Path],
) -> None:
    path = dirs[0] / ".claude/settings.json"
    path.parent.mkdir()
    stale = {
        "type": "command",
        "command": "'/old venv/bin/graphmem' hook stop --client claude-code",
    }
    mine = {"type": "command", "command": "./lint.sh"}
    doc = {"hooks": {"Stop": [{"matcher": "", "hooks": [mine, stale]}]}}
    path.write_text(json.dumps(doc, indent=2), encoding="utf-8")
    run(request(dirs, "claude-code", "project"))
    stop = parse(path)["hooks"]["Stop"]
    assert stop == [
        {
            "matcher": "",
            "hooks": [mine, {**stale, "command": f"{EXE} hook stop --client claude-code"}],
        }
    ]
    run(request(dirs, "claude-code", "project", remove=True))
    assert parse(path) == {"hooks": {"Stop": [{"matcher": "", "hooks": [mine]}]}}


def test_remove_takes_out_only_our_entries_and_the_groups_they_leave_empty(
    dirs: tuple[Path, Path],
) -> None:
    path = dirs[0] / ".claude/settings.json"
    path.parent.mkdir()
    empty_of_mine: dict[str, Any] = {"matcher": "Bash", "hooks": []}
    doc = {"permissions": {"allow": ["Bash(ls)"]}, "hooks": {"PreToolUse": [empty_of_mine]}}
    path.write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
    run(request(dirs, "claude-code", "project"))
    Path(f"{path}.graphmem-backup").unlink()
    run(request(dirs, "claude-code", "project", remove=True))
    assert parse(path) == doc


@pytest.mark.parametrize(
    ("relative", "content", "words"),
    [
        (".mcp.json", '{"mcpServers": {', "not valid JSON"),
        (".mcp.json", "[1, 2]", "JSON object"),
        (".mcp.json", '{"mcpServers": []}', "mcpServers is not an object"),
        (".claude/settings.json", '{"hooks": {"Stop": {}}}', "hooks.Stop is not a list"),
        (".codex/config.toml", "[mcp_servers\ncommand = 1", "not valid TOML"),
        (".codex/config.toml", 'mcp_servers = "x"\n', "mcp_servers is not a table"),
    ],
)
def test_a_malformed_config_is_refused_by_name_and_left_untouched(
    dirs: tuple[Path, Path], relative: str, content: str, words: str
) -> None:
    path = dirs[0] / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(content, encoding="utf-8")
    client = "codex" if relative.endswith(".toml") else "claude-code"
    with pytest.raises(InvalidInput) as raised:
        run(request(dirs, client, "project"))
    assert str(path) in raised.value.message and words in raised.value.message
    assert raised.value.exit_code == 2
    assert path.read_text(encoding="utf-8") == content
    assert not Path(f"{path}.graphmem-backup").exists()


@pytest.mark.parametrize(("client", "scope"), PAIRS)
def test_a_dry_run_writes_nothing_and_diffs_what_it_would_write(
    dirs: tuple[Path, Path], client: str, scope: str
) -> None:
    changes = run(request(dirs, client, scope), dry_run=True)
    assert snapshot(dirs[0].parent) == {}
    assert changes and all(change.action == "created" for change in changes)
    assert all(change.diff().startswith("--- /dev/null\n+++ ") for change in changes)
    assert str(EXE) in changes[0].diff()


def test_instructions_are_appended_once_and_removed_exactly(dirs: tuple[Path, Path]) -> None:
    agents = dirs[0] / "AGENTS.md"
    original = "# Agents\n\nRun `make test` before you push."
    agents.write_text(original, encoding="utf-8")
    run(request(dirs, "codex", "project", instructions=True))
    text = agents.read_text(encoding="utf-8")
    assert text.startswith(original + "\n\n<!-- graphmem:begin -->\n")
    assert text.count("<!-- graphmem:begin -->") == 1 and text.endswith("<!-- graphmem:end -->\n")
    for words in ("before you start work", "dead ends", "runbooks", "update_memory"):
        assert words in text
    cursor = run(request(dirs, "cursor", "project", instructions=True))  # reads AGENTS.md too
    assert next(c for c in cursor if c.path == agents).action == "unchanged"
    assert agents.read_text(encoding="utf-8") == text
    run(request(dirs, "codex", "project", remove=True))
    assert agents.read_text(encoding="utf-8") == original


def test_an_edited_instruction_section_is_replaced_in_place(dirs: tuple[Path, Path]) -> None:
    claude_md = dirs[0] / "CLAUDE.md"
    claude_md.write_text(
        "# Top\n\n<!-- graphmem:begin -->\nold words\n<!-- graphmem:end -->\n\n# Bottom\n",
        encoding="utf-8",
    )
    run(request(dirs, "claude-code", "project", instructions=True))
    text = claude_md.read_text(encoding="utf-8")
    assert text.startswith("# Top\n\n<!-- graphmem:begin -->\n## Project memory")
    assert text.endswith("<!-- graphmem:end -->\n\n# Bottom\n") and "old words" not in text


def test_each_client_gets_the_instruction_file_it_reads(dirs: tuple[Path, Path]) -> None:
    for client, name in (
        ("claude-code", "CLAUDE.md"),
        ("gemini", "GEMINI.md"),
        ("vscode", "AGENTS.md"),
    ):
        run(request(dirs, client, "project", instructions=True))
        assert "<!-- graphmem:begin -->" in (dirs[0] / name).read_text(encoding="utf-8")
    with pytest.raises(InvalidInput, match="no project instruction file"):
        run(request(dirs, "claude-desktop", None, instructions=True))


def test_a_rules_file_that_is_not_ours_is_left_on_remove(dirs: tuple[Path, Path]) -> None:
    rules = dirs[0] / ".cursor/rules/graphmem.mdc"
    rules.parent.mkdir(parents=True)
    rules.write_text("my own rules\n", encoding="utf-8")
    run(request(dirs, "cursor", "project", remove=True))
    assert rules.read_text(encoding="utf-8") == "my own rules\n"


def test_no_hooks_writes_only_the_server_entry(dirs: tuple[Path, Path]) -> None:
    changes = run(request(dirs, "cursor", "project", hooks=False))
    assert [c.path for c in changes] == [dirs[0] / ".cursor/mcp.json"]


def test_gemini_keeps_servers_hooks_and_settings_in_one_file(dirs: tuple[Path, Path]) -> None:
    path = dirs[1] / ".gemini/settings.json"
    path.parent.mkdir()
    original = json.dumps({"ui": {"theme": "GitHub"}, "mcpServers": {}}, indent=2) + "\n"
    path.write_text(original, encoding="utf-8")
    changes = run(request(dirs, "gemini", "user"))
    assert [c.path for c in changes] == [path]
    doc = parse(path)
    assert doc["ui"] == {"theme": "GitHub"} and "graphmem" in doc["mcpServers"]
    assert set(doc["hooks"]) == set(EVENTS["gemini"])
    run(request(dirs, "gemini", "user", remove=True))
    assert path.read_text(encoding="utf-8") == original


@pytest.mark.parametrize(("client", "scope"), [("codex", "global"), ("claude-desktop", "project")])
def test_a_scope_the_client_lacks_is_refused(
    dirs: tuple[Path, Path], client: str, scope: str
) -> None:
    with pytest.raises(InvalidInput, match=f"{client} has no '{scope}' scope"):
        plan(request(dirs, client, scope))


def test_an_unknown_client_is_refused_with_the_known_ones(dirs: tuple[Path, Path]) -> None:
    with pytest.raises(InvalidInput) as raised:
        plan(request(dirs, "emacs", None))
    assert raised.value.exit_code == 2
    assert all(client in raised.value.message for client in CLIENTS)


def test_a_symlinked_config_is_written_through_its_link(dirs: tuple[Path, Path]) -> None:
    real = dirs[1] / "dotfiles/claude.json"
    real.parent.mkdir()
    real.write_text('{"numStartups": 3}\n', encoding="utf-8")
    link = dirs[1] / ".claude.json"
    link.symlink_to(real)
    run(request(dirs, "claude-code", "user", hooks=False))
    assert link.is_symlink()
    assert json.loads(real.read_text(encoding="utf-8"))["mcpServers"]["graphmem"]


def test_a_private_config_stays_private(dirs: tuple[Path, Path]) -> None:
    path = dirs[1] / ".claude.json"
    path.write_text("{}\n", encoding="utf-8")
    os.chmod(path, 0o600)
    run(request(dirs, "claude-code", "user", hooks=False))
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_a_file_changed_after_planning_is_not_overwritten(dirs: tuple[Path, Path]) -> None:
    changes: list[Change] = plan(request(dirs, "claude-code", "project", hooks=False))
    (dirs[0] / ".mcp.json").write_text('{"mcpServers": {"new": {}}}', encoding="utf-8")
    with pytest.raises(Conflict):
        apply(changes)
    assert json.loads((dirs[0] / ".mcp.json").read_text(encoding="utf-8")) == {
        "mcpServers": {"new": {}}
    }


def test_extra_environment_goes_into_the_server_entry(dirs: tuple[Path, Path]) -> None:
    run(request(dirs, "vscode", "project", extra_env={"GRAPHMEM_EMBEDDING_PROVIDER": "hash"}))
    env = parse(dirs[0] / ".vscode/mcp.json")["servers"]["graphmem"]["env"]
    assert env["GRAPHMEM_EMBEDDING_PROVIDER"] == "hash"


def test_a_files_line_ends_and_missing_final_newline_are_kept(dirs: tuple[Path, Path]) -> None:
    path = dirs[0] / ".cursor/mcp.json"
    path.parent.mkdir()
    original = '{\r\n    "mcpServers": {}\r\n}'
    path.write_bytes(original.encode())
    run(request(dirs, "cursor", "project", hooks=False))
    text = path.read_bytes().decode()
    assert "\r\n" in text and "\n" not in text.replace("\r\n", "")
    assert text.startswith('{\r\n    "mcpServers": {\r\n        "graphmem": {')
    assert not text.endswith("\n")


def test_hooks_name_a_store_chosen_elsewhere_so_they_share_the_servers(
    dirs: tuple[Path, Path],
) -> None:
    elsewhere = dirs[1] / "stores/shop"
    own = Request(
        client="claude-code", project=dirs[0], store=elsewhere, executable=EXE, user_home=dirs[1]
    )
    run(own)
    hooks = our_hooks(parse(dirs[0] / ".claude/settings.json"), "claude-code")
    assert hooks["Stop"] == [f"{EXE} hook stop --client claude-code --home {elsewhere}"]
    assert {c.action for c in run(own)} == {"unchanged"}
    run(Request(**{**own.__dict__, "remove": True}))
    assert not (dirs[0] / ".claude/settings.json").exists()
