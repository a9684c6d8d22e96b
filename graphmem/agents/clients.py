"""What each agent client reads: its MCP config file and entry shape per scope, its hook file and
event names, its rules and instruction files. Every fact here comes from the client's public docs;
docs/agents.md names the page for each, so a client that moves a file is a one-line change here.
"""

from __future__ import annotations

import shlex
import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import tomlkit
from tomlkit.exceptions import TOMLKitError

from graphmem.agents.http_entries import switch_transport
from graphmem.errors import GraphmemError, InvalidInput

SERVER_NAME = "graphmem"
# the moments `graphmem hook EVENT` handles, whatever each client calls them
EVENTS = ("session-start", "prompt-submit", "pre-compact", "stop", "session-end")
BACKUP_SUFFIX = ".graphmem-backup"
BEGIN = "<!-- graphmem:begin -->"
END = "<!-- graphmem:end -->"

Scope = Literal["project", "user"]
HookStyle = Literal["grouped", "flat"]
Transform = Callable[[str | None], str | None]  # old content (None: absent) -> new (None: delete)


@dataclass(frozen=True)
class McpFile:
    """Where the server entry goes: `key` holds the servers (`mcpServers`, `servers`,
    `mcp_servers`); `typed` entries carry `"type": "stdio"`."""

    path: Path
    key: str
    typed: bool = False

    @property
    def toml(self) -> bool:
        return self.path.suffix == ".toml"


@dataclass(frozen=True)
class HookFile:
    """Where the hook entries go. `grouped`: event -> [{matcher?, hooks: [entry]}] (Claude Code,
    Codex, Gemini CLI); `flat`: event -> [entry] (Cursor, VS Code). `events` pairs each of the
    client's event names with the graphmem events it runs, in the order they are written."""

    path: Path
    style: HookStyle
    events: tuple[tuple[str, tuple[str, ...]], ...]
    matcher: bool = False  # a grouped entry gets "matcher": "" (match every source)
    typed: bool = True  # an entry gets "type": "command"
    named: bool = False  # an entry gets a "name" (Gemini CLI's /hooks enable|disable NAME)
    skeleton: tuple[tuple[str, Any], ...] = ()  # top-level keys a new file starts with


@dataclass(frozen=True)
class Targets:
    """Every file setup writes for one client and scope."""

    client: str
    scope: Scope
    mcp: McpFile
    hooks: HookFile | None = None
    rules: Path | None = (
        None  # a rules file graphmem owns (Cursor's prompt hook cannot add context)
    )
    instructions: Path | None = None  # where --instructions appends its section
    notes: tuple[str, ...] = ()


CLIENTS = ("claude-code", "codex", "cursor", "gemini", "vscode", "claude-desktop")
SCOPES: dict[str, tuple[Scope, ...]] = {
    "claude-code": ("project", "user"),
    "codex": ("project", "user"),
    "cursor": ("project", "user"),
    "gemini": ("project", "user"),
    "vscode": ("project", "user"),
    "claude-desktop": ("user",),
}

_CLAUDE_EVENTS = (
    ("SessionStart", ("session-start",)),
    ("UserPromptSubmit", ("prompt-submit",)),
    ("PreCompact", ("pre-compact",)),
    ("Stop", ("stop",)),
    ("SessionEnd", ("session-end",)),
)
# no session-end event: the session's captured when a turn stops
_CODEX_EVENTS = (
    ("SessionStart", ("session-start",)),
    ("UserPromptSubmit", ("prompt-submit",)),
    ("PreCompact", ("pre-compact",)),
    ("Stop", ("stop", "session-end")),
)
# beforeSubmitPrompt can only allow or block a prompt, not add context: the rules file does that
_CURSOR_EVENTS = (
    ("sessionStart", ("session-start",)),
    ("preCompact", ("pre-compact",)),
    ("stop", ("stop",)),
    ("sessionEnd", ("session-end",)),
)
_GEMINI_EVENTS = (
    ("SessionStart", ("session-start",)),
    ("BeforeAgent", ("prompt-submit",)),
    ("PreCompress", ("pre-compact",)),
    ("AfterAgent", ("stop",)),
    ("SessionEnd", ("session-end",)),
)
_VSCODE_EVENTS = (
    ("SessionStart", ("session-start",)),
    ("UserPromptSubmit", ("prompt-submit",)),
    ("PreCompact", ("pre-compact",)),
    ("Stop", ("stop", "session-end")),
)


def default_scope(client: str) -> Scope:
    return SCOPES[check_client(client)][0]


def check_client(client: str) -> str:
    if client not in CLIENTS:
        raise InvalidInput(
            f"unknown client {client!r}; known clients: {', '.join(CLIENTS)}",
            client=client,
            known=list(CLIENTS),
        )
    return client


def _app_config_dir(user_home: Path, platform: str) -> Path:
    """Where desktop apps keep their settings: what Electron's `appData` resolves to."""
    if platform == "darwin":
        return user_home / "Library" / "Application Support"
    if platform.startswith("win"):
        return user_home / "AppData" / "Roaming"
    return user_home / ".config"


def targets(
    client: str, scope: str | None, *, project: Path, user_home: Path, platform: str
) -> Targets:
    """The files `client` reads at `scope` (its default when None)."""
    chosen = scope or default_scope(client)
    if chosen not in SCOPES[check_client(client)]:
        raise InvalidInput(
            f"{client} has no {chosen!r} scope; use --scope {' or '.join(SCOPES[client])}",
            client=client,
            scope=chosen,
        )
    where: Scope = "project" if chosen == "project" else "user"
    base = project if where == "project" else user_home
    apps = _app_config_dir(user_home, platform)
    agents_md = project / "AGENTS.md"
    if client == "claude-code":
        mcp = project / ".mcp.json" if where == "project" else user_home / ".claude.json"
        hooks = HookFile(base / ".claude/settings.json", "grouped", _CLAUDE_EVENTS, matcher=True)
        note = "Claude Code asks once to approve a project's .mcp.json servers."
        return Targets(
            client, where, McpFile(mcp, "mcpServers", typed=True), hooks,
            instructions=project / "CLAUDE.md", notes=(note,) if where == "project" else (),
        )  # fmt: skip
    if client == "codex":
        note = (
            "Codex reads a project's .codex/ only once you trust the project, and runs new hooks "
            "only once you have reviewed them (/hooks)."
        )
        return Targets(
            client, where, McpFile(base / ".codex/config.toml", "mcp_servers"),
            HookFile(base / ".codex/hooks.json", "grouped", _CODEX_EVENTS),
            instructions=agents_md, notes=(note,),
        )  # fmt: skip
    if client == "cursor":
        hooks = HookFile(
            base / ".cursor/hooks.json", "flat", _CURSOR_EVENTS, typed=False,
            skeleton=(("version", 1),),
        )  # fmt: skip
        return Targets(
            client, where, McpFile(base / ".cursor/mcp.json", "mcpServers"), hooks,
            rules=project / ".cursor/rules/graphmem.mdc", instructions=agents_md,
        )  # fmt: skip
    if client == "gemini":
        settings = base / ".gemini/settings.json"
        note = "Gemini CLI reads a project's .gemini/settings.json only in a trusted folder."
        return Targets(
            client, where, McpFile(settings, "mcpServers"),
            HookFile(settings, "grouped", _GEMINI_EVENTS, named=True),
            instructions=project / "GEMINI.md", notes=(note,) if where == "project" else (),
        )  # fmt: skip
    if client == "vscode" and where == "project":
        return Targets(
            client, where, McpFile(project / ".vscode/mcp.json", "servers", typed=True),
            HookFile(project / ".github/hooks/graphmem.json", "flat", _VSCODE_EVENTS),
            instructions=agents_md,
        )  # fmt: skip
    if client == "vscode":
        note = "VS Code has no user-level hook file of its own: set hooks up per project."
        return Targets(
            client, where, McpFile(apps / "Code/User/mcp.json", "servers", typed=True),
            instructions=agents_md, notes=(note,),
        )  # fmt: skip
    desktop = McpFile(apps / "Claude/claude_desktop_config.json", "mcpServers")
    return Targets(client, where, desktop, notes=("Restart Claude Desktop to load the server.",))


def server_entry(
    mcp: McpFile, executable: Path, store: Path, extra_env: dict[str, str] | None = None
) -> dict[str, Any]:
    """The graphmem server entry: this install's absolute `graphmem serve` on the project's store."""
    entry: dict[str, Any] = {"type": "stdio"} if mcp.typed else {}
    entry["command"] = str(executable)
    entry["args"] = ["serve"]
    entry["env"] = {"GRAPHMEM_HOME": str(store), **(extra_env or {})}
    return entry


def hook_command(executable: Path, event: str, client: str, home: Path | None = None) -> str:
    """A shell command line (clients run hooks through a shell). `home` names a store other than
    the one the hook finds from the project it runs in, so hooks and server share one store."""
    command = f"{shlex.quote(str(executable))} hook {event} --client {client}"
    return f"{command} --home {shlex.quote(str(home))}" if home else command


def hook_entry(
    hooks: HookFile, executable: Path, event: str, client: str, home: Path | None = None
) -> dict[str, Any]:
    entry: dict[str, Any] = {}
    if hooks.named:
        entry["name"] = f"graphmem-{event}"
    if hooks.typed:
        entry["type"] = "command"
    entry["command"] = hook_command(executable, event, client, home)
    return entry


_GUIDANCE = """\
This project keeps a shared memory in graphmem (the `graphmem` MCP server).

- Recall before you start work (`summarize_project_context`, `recall_memory`), and again when you
  meet an error you do not recognise: someone may have solved it before.
- Store what the next session needs, as self-contained text: decisions with their reasons
  (`store_decision`), dead ends with why they failed (`store_dead_end`), procedures that worked
  as runbooks (`store_runbook`).
- Prefer `update_memory` over storing a near-duplicate, and `mark_outdated` over deleting what is
  no longer true.
"""

INSTRUCTIONS = f"{BEGIN}\n## Project memory (graphmem)\n\n{_GUIDANCE}{END}\n"

RULES = f"""\
---
description: Shared project memory (graphmem): recall before work, store decisions and dead ends
alwaysApply: true
---
{BEGIN}
{_GUIDANCE}{END}
"""


# --- Codex's config.toml ----------------------------------------------------------------------


def toml_file(mcp: McpFile, entry: dict[str, Any] | None) -> Transform:
    """tomlkit keeps every comment and the layout of everything we do not touch."""

    def transform(before: str | None) -> str | None:
        if before is None and entry is None:
            return None
        try:
            doc = tomlkit.parse(before or "")
        except TOMLKitError as exc:
            raise InvalidInput(
                f"{mcp.path} is not valid TOML ({exc}); fix it first: graphmem setup will not "
                "overwrite it",
                path=str(mcp.path),
            ) from exc
        servers = doc.get(mcp.key)
        if servers is not None and not isinstance(servers, dict):
            raise InvalidInput(
                f"{mcp.path}: {mcp.key} is not a table; fix it first", path=str(mcp.path)
            )
        if entry is None:
            if servers is None or SERVER_NAME not in servers:
                return before
            del servers[SERVER_NAME]
            if not servers:
                del doc[mcp.key]
        else:
            if servers is None:
                servers = tomlkit.table(is_super_table=True)
                doc[mcp.key] = servers
            _toml_entry(servers, entry)
        text = tomlkit.dumps(doc)
        if before is not None and not text.strip():
            return None
        if text.endswith("\n\n") and not (before or "").endswith("\n\n"):
            text = text.rstrip("\n") + "\n"  # the blank line that parts our table from the next
        if tomllib.loads(text) != doc.unwrap():
            raise GraphmemError(
                f"refusing to write {mcp.path}: its new content does not parse back"
            )
        return text

    return transform


def _toml_entry(servers: Any, entry: dict[str, Any]) -> None:
    current = servers.get(SERVER_NAME)
    if isinstance(current, dict):  # update in place, comments and extra keys kept
        switch_transport(current, entry)
        for key, value in entry.items():
            if isinstance(value, dict) and isinstance(current.get(key), dict):
                for name, setting in value.items():  # env, http_headers: the user's own stay
                    if current[key].get(name) != setting:
                        current[key][name] = setting
            elif current.get(key) != value:
                current[key] = _toml_value(value)
        return
    table = tomlkit.table()
    for key, value in entry.items():
        table[key] = _toml_value(value)
    table.add(tomlkit.nl())
    servers[SERVER_NAME] = table


def _toml_value(value: Any) -> Any:
    """A table value as Codex's docs write it: a mapping inline (`env = { ... }`)."""
    if not isinstance(value, dict):
        return value
    inline = tomlkit.inline_table()
    inline.update(value)
    return inline


# --- Markdown: the instruction section and Cursor's rules file --------------------------------


def instructions_file(install: bool) -> Transform:
    """Our section between marker comments: appended once, updated in place, taken out whole."""

    def transform(before: str | None) -> str | None:
        text = before or ""
        start = text.find(BEGIN)
        end = text.find(END, start) if start >= 0 else -1
        if start >= 0 and end >= 0:
            stop = end + len(END)
            stop += text[stop : stop + 1] == "\n"
            head, tail = text[:start], text[stop:]
            if install:
                new = head + INSTRUCTIONS + tail
            else:
                new = (head[:-1] if not tail and head.endswith("\n\n") else head) + tail
        elif install:
            gap = "" if not text else "\n" if text.endswith("\n") else "\n\n"
            new = text + gap + INSTRUCTIONS
        else:
            return before
        if new == text:
            return before
        return new if new.strip() else None

    return transform


def owned_file(content: str | None) -> Transform:
    """A file that is wholly ours (it carries our marker): written whole, deleted on removal."""

    def transform(before: str | None) -> str | None:
        if content is None:
            return None if before is not None and BEGIN in before else before
        return content

    return transform
