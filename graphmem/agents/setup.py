"""`graphmem setup`: compute each client file's new content from its old one, then write it safely.

Planning is pure (old text -> new text, nothing written), so `--dry-run` shows exactly what a run
would write. Our entries are recognised by the server name `graphmem` and by hook commands that
run `graphmem hook`, which is what makes a second run a no-op and `--remove` take out exactly what
setup added and nothing else. A file is never overwritten unless its new content parses back, and
is replaced in one `os.replace` after a `.graphmem-backup` copy of the old content. A file that
gets the HTTP token (`--http` at user scope) is written private (0600) and an existing one made
so; see `graphmem.agents.http_entries`.
"""

from __future__ import annotations

import contextlib
import copy
import difflib
import json
import os
import re
import secrets
import shutil
import sys
import tomllib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from graphmem.agents import http_entries
from graphmem.agents.clients import (
    BACKUP_SUFFIX,
    RULES,
    SERVER_NAME,
    HookFile,
    McpFile,
    Targets,
    Transform,
    hook_entry,
    instructions_file,
    owned_file,
    server_entry,
    targets,
    toml_file,
)
from graphmem.errors import Conflict, GraphmemError, InvalidInput
from graphmem.http_token import http_token, token_path
from graphmem.settings import DATA_DIR_NAME, find_data_dir, load_settings

Action = Literal["created", "updated", "removed", "unchanged"]

# a hook command that runs `graphmem hook EVENT`, whatever the path or quoting of graphmem
_OURS = re.compile(r"""(?:^|[\s/\\'"])graphmem(?:\.exe)?['"]?\s+hook\s+([a-z][a-z-]*)""")


@dataclass(frozen=True)
class Request:
    """One `graphmem setup` run. `extra_env` adds variables to the server entry (tests use it to
    make the server they start fast and short-lived). `http_url` asks for an HTTP entry instead
    of stdio, sending `token` (at user scope; a project file names it instead)."""

    client: str
    project: Path
    store: Path
    executable: Path
    user_home: Path
    scope: str | None = None
    hooks: bool = True
    instructions: bool = False
    remove: bool = False
    extra_env: dict[str, str] = field(default_factory=dict)
    platform: str = sys.platform
    http_url: str | None = None
    token: str | None = field(default=None, repr=False)
    token_file: Path | None = None


@dataclass(frozen=True)
class Change:
    """One file: its content before and after (None: absent), and where the old one is kept."""

    path: Path
    action: Action
    before: str | None
    after: str | None
    backup: Path | None
    private: bool = False  # holds the HTTP token: written 0600, an existing file made so
    loose: int | None = None  # the mode others could read it with, before it is made private

    def to_dict(self) -> dict[str, Any]:
        backup = str(self.backup) if self.backup else None
        return {"path": str(self.path), "action": self.action, "backup": backup}

    def diff(self, secret: str | None = None) -> str:
        """A unified diff; `secret` (the token) is shown as <token>."""
        before, after = self.before or "", self.after or ""
        if secret:
            before, after = before.replace(secret, "<token>"), after.replace(secret, "<token>")
        old = before.splitlines(keepends=True)
        new = after.splitlines(keepends=True)
        lines = difflib.unified_diff(
            old,
            new,
            fromfile=str(self.path) if self.before is not None else "/dev/null",
            tofile=str(self.path) if self.after is not None else "/dev/null",
        )
        return "".join(line if line.endswith("\n") else line + "\n" for line in lines)


def find_executable() -> Path:
    """This install's `graphmem`: the one beside the running Python, else the one on PATH."""
    name = "graphmem.exe" if sys.platform.startswith("win") else "graphmem"
    beside = Path(sys.executable).parent / name
    if beside.is_file():
        return beside.absolute()
    found = shutil.which("graphmem")
    if found:
        return Path(found).absolute()
    raise GraphmemError("cannot find the graphmem executable beside this Python or on PATH")


def request_for(
    client: str,
    *,
    home: Path | None,
    cwd: Path,
    user_home: Path,
    http: bool = False,
    url: str | None = None,
    dry_run: bool = False,
    **options: Any,
) -> Request:
    """The request as `graphmem setup` builds it: the project graphmem finds from `cwd`, its
    store (`home`, else GRAPHMEM_HOME, else `<project>/.graphmem`) and this install's graphmem.
    With `http` (or a `url`): the URL (default: the http_host and http_port settings) and the
    store's token (GRAPHMEM_HTTP_TOKEN, else its token file, made now unless `dry_run`)."""
    settings = load_settings(home, cwd=cwd)
    extra: dict[str, Any] = {}
    if (http or url) and not options.get("remove"):
        http_entries.check_http(client)
        found = http_token(settings, create=not dry_run)
        extra = {
            "http_url": http_entries.check_url(url)
            if url
            else http_entries.default_url(settings.http_host, settings.http_port),
            "token": found.value if found else "<token>",
            "token_file": found.file if found else token_path(settings.home),
        }
    return Request(
        client=client,
        project=find_data_dir(cwd).parent,
        store=settings.home,
        executable=find_executable(),
        user_home=user_home,
        **options,
        **extra,
    )


def run(request: Request, *, dry_run: bool = False) -> list[Change]:
    """Plan every file's change and, unless `dry_run`, write them."""
    changes = plan(request)
    if not dry_run:
        apply(changes)
    return changes


def targets_of(request: Request) -> Targets:
    """The files the request's client reads at its scope, and what to tell the user about them."""
    return targets(
        request.client,
        request.scope,
        project=request.project,
        user_home=request.user_home,
        platform=request.platform,
    )


def notes(request: Request, changes: list[Change]) -> list[str]:
    """What to tell the user after a run: the client's own notes and, for --http, that the
    server must run, how a project file gets its token, which file was made private, and a
    token file inside a git work tree."""
    found = targets_of(request)
    said = list(found.notes)
    if request.http_url is None or request.remove:
        return said
    said.append(http_entries.server_note(request.http_url))
    if found.scope == "project":
        said.append(http_entries.reference_note(request.client, request.token_file))
    for change in changes:
        if not change.private:
            continue
        if change.loose is not None:
            modes = f"{change.loose:04o} -> {change.loose & 0o700:04o}"
            said.append(f"made {change.path} private ({modes}): it holds the HTTP token")
        root = http_entries.git_root(_real(change.path))
        if root is not None:
            said.append(
                f"{change.path} holds the HTTP token and is in the git work tree {root}: "
                "never commit it (add it to .gitignore)"
            )
    return said


def plan(request: Request) -> list[Change]:
    """What setup would do to each file the client reads; writes nothing."""
    found = targets_of(request)
    install = not request.remove
    json_ops: dict[Path, list[Callable[[dict[str, Any]], None]]] = {}
    skeletons: dict[Path, dict[str, Any]] = {}
    files: dict[Path, Transform] = {}
    literal = request.http_url is not None and found.scope == "user"  # the token itself
    if request.http_url is not None:
        token = request.token if literal else None
        entry = http_entries.http_entry(request.client, request.http_url, token)
    else:
        entry = server_entry(found.mcp, request.executable, request.store, request.extra_env)
    if found.mcp.toml:
        files[found.mcp.path] = toml_file(found.mcp, entry if install else None)
    else:
        json_ops.setdefault(found.mcp.path, []).append(_server_op(found.mcp, entry, install))
    if request.client == "vscode":  # the prompt a project's HTTP entry names the token by
        prompt = install and request.http_url is not None and not literal
        json_ops[found.mcp.path].append(http_entries.vscode_inputs_op(prompt))
    if found.hooks and (request.hooks or request.remove):
        wanted = _wanted_hooks(found.hooks, request) if install else {}
        json_ops.setdefault(found.hooks.path, []).append(_hooks_op(found.hooks, wanted))
        skeletons[found.hooks.path] = dict(found.hooks.skeleton)
    for path, ops in json_ops.items():
        files[path] = _json_file(path, ops, skeletons.get(path, {}), request.remove)
    if found.rules and (request.hooks or request.remove):
        files[found.rules] = owned_file(None if request.remove else RULES)
    if request.instructions and install and found.instructions is None:
        raise InvalidInput(
            f"{request.client} reads no project instruction file: drop --instructions"
        )
    if found.instructions and (request.instructions or request.remove):
        files[found.instructions] = instructions_file(install)
    private = {found.mcp.path} if literal and install else set()
    return [
        _change(path, transform, request.remove, path in private)
        for path, transform in files.items()
    ]


def _change(path: Path, transform: Transform, removing: bool, private: bool = False) -> Change:
    real = _real(path)
    before = _read(real)
    after = transform(before)
    if removing and before is not None and after is not None and after != before:
        after = _original(real, transform, after)
    loose = None
    if private and before is not None:
        mode = real.stat().st_mode & 0o7777
        loose = mode if mode & 0o077 else None
    if after == before:
        return Change(path, "unchanged", before, before, None, private, loose)
    backup = real.with_name(real.name + BACKUP_SUFFIX) if before is not None else None
    action: Action = "created" if before is None else "removed" if after is None else "updated"
    return Change(path, action, before, after, backup, private, loose)


def _original(real: Path, transform: Transform, after: str) -> str:
    """The backup's exact bytes when taking our entries out leaves what it holds: setup's first
    backup is the file as it was, and a parse/dump round trip need not give its bytes back."""
    old = _read(real.with_name(real.name + BACKUP_SUFFIX))
    with contextlib.suppress(GraphmemError, ValueError):  # a backup that no longer parses
        if old is not None and transform(old) == old and _same(real, old, after):
            return old
    return after


def _same(path: Path, a: str, b: str) -> bool:
    """Equal as parsed, up to empty containers (removal drops those our entries leave)."""
    if path.suffix == ".json":
        return bool(_pruned(json.loads(a)) == _pruned(json.loads(b)))
    if path.suffix == ".toml":
        return bool(_pruned(tomllib.loads(a)) == _pruned(tomllib.loads(b)))
    return a.rstrip() == b.rstrip()


def _pruned(value: Any) -> Any:
    if isinstance(value, dict):
        kept = {key: _pruned(item) for key, item in value.items()}
        return {key: item for key, item in kept.items() if item not in ({}, [])}
    if isinstance(value, list):
        return [_pruned(item) for item in value]
    return value


def apply(changes: list[Change]) -> None:
    """Write the planned changes: backup, parse-checked temp file, atomic replace."""
    for change in changes:
        real = _real(change.path)
        if change.action == "unchanged":
            if change.loose is not None:  # it already holds the token: others must not read it
                os.chmod(real, change.loose & 0o700)
            continue
        if _read(real) != change.before:
            raise Conflict(f"{change.path} changed while setting up; run graphmem setup again")
        if change.backup is not None and change.before is not None:
            _write(change.backup, change.before, like=real, private=change.private)
        if change.after is None:
            real.unlink()
        else:
            _write(real, change.after, like=real, private=change.private)


def _real(path: Path) -> Path:
    """Write through a symlink (dotfiles managers link these files) instead of replacing it."""
    return path.resolve() if path.is_symlink() else path


def _read(path: Path) -> str | None:
    try:
        with open(path, encoding="utf-8", newline="") as handle:
            return handle.read()
    except FileNotFoundError:
        return None
    except UnicodeDecodeError as exc:
        raise InvalidInput(f"{path} is not UTF-8 text ({exc})", path=str(path)) from exc


def _write(path: Path, text: str, *, like: Path, private: bool = False) -> None:
    """A temp file in the same folder, parsed back, then moved over `path` in one step. A private
    one (it holds the token) is 0600 from its first byte, and keeps none of `like`'s group or
    other permissions."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temp = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
    try:
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL
        fd = os.open(temp, flags, 0o600) if private else os.open(temp, flags, 0o666)
        with open(fd, "w", encoding="utf-8", newline="") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        with contextlib.suppress(FileNotFoundError):
            mode = like.stat().st_mode & 0o7777
            os.chmod(temp, mode & 0o700 if private else mode)
        _check(temp, path)
        os.replace(temp, path)
    finally:
        temp.unlink(missing_ok=True)


def _check(temp: Path, path: Path) -> None:
    text = temp.read_text(encoding="utf-8")
    try:
        if path.suffix == ".json":
            json.loads(text)
        elif path.suffix == ".toml":
            tomllib.loads(text)
    except ValueError as exc:  # both decode errors are ValueErrors
        raise GraphmemError(
            f"refusing to write {path}: the new content does not parse ({exc})"
        ) from exc


# --- JSON files: MCP servers and hooks ------------------------------------------------------


def _json_file(
    path: Path,
    ops: list[Callable[[dict[str, Any]], None]],
    skeleton: dict[str, Any],
    removing: bool,
) -> Transform:
    def transform(before: str | None) -> str | None:
        if before is None:
            if removing:
                return None
            doc: dict[str, Any] = copy.deepcopy(skeleton)
        else:
            doc = _load_json(path, before)
        original = copy.deepcopy(doc)
        for op in ops:
            op(doc)
        if before is not None and doc == original:
            return before
        if before is not None and (not doc or doc == skeleton):
            return None  # nothing left but what setup put there
        text = _dump_json(doc, before)
        if json.loads(text) != doc:
            raise GraphmemError(f"refusing to write {path}: its new content does not parse back")
        return text

    return transform


def _load_json(path: Path, text: str) -> dict[str, Any]:
    if not text.strip():
        return {}
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidInput(
            f"{path} is not valid JSON ({exc}); fix it first: graphmem setup will not overwrite it",
            path=str(path),
        ) from exc
    if not isinstance(doc, dict):
        raise InvalidInput(f"{path} does not hold a JSON object; fix it first", path=str(path))
    return doc


def _dump_json(doc: dict[str, Any], before: str | None) -> str:
    """The document in the file's own layout: its indent, escaping, final newline, line ends."""
    indent: int | str | None = 2
    if before and before.strip():
        first = re.search(r"^([ \t]+)\S", before, re.M)
        indent = (first[1] if "\t" in first[1] else len(first[1])) if first else None
    ascii_only = before is not None and before.isascii() and "\\u" in before
    text = json.dumps(doc, indent=indent, ensure_ascii=ascii_only)
    if before is None or before.endswith("\n") or not before.strip():
        text += "\n"
    return text.replace("\n", "\r\n") if before and "\r\n" in before else text


def _shape(path: Path, where: str, expected: str) -> InvalidInput:
    return InvalidInput(f"{path}: {where} is not {expected}; fix it first", path=str(path))


def _server_op(mcp: McpFile, entry: dict[str, Any], install: bool) -> Callable[[Any], None]:
    def op(doc: dict[str, Any]) -> None:
        servers = doc.get(mcp.key)
        if servers is None and not install:
            return
        if servers is None:
            servers = doc[mcp.key] = {}
        if not isinstance(servers, dict):
            raise _shape(mcp.path, mcp.key, "an object")
        if not install:
            if servers.pop(SERVER_NAME, None) is not None and not servers:
                del doc[mcp.key]
            return
        current = servers.get(SERVER_NAME)
        if not isinstance(current, dict):
            servers[SERVER_NAME] = entry
            return
        current = dict(current)
        http_entries.switch_transport(current, entry)
        updated = {**current, **entry}  # in place: its position and any keys of its own stay
        for merged in ("env", "headers"):  # the user's own variables and headers stay
            if isinstance(current.get(merged), dict) and merged in entry:
                updated[merged] = {**current[merged], **entry[merged]}
        servers[SERVER_NAME] = updated

    return op


def _wanted_hooks(hooks: HookFile, request: Request) -> dict[str, list[dict[str, Any]]]:
    own = request.store != request.project / DATA_DIR_NAME  # --home or GRAPHMEM_HOME chose it
    home = request.store if own else None
    return {
        name: [hook_entry(hooks, request.executable, ev, request.client, home) for ev in events]
        for name, events in hooks.events
    }


def _our_event(entry: Any) -> str | None:
    """The graphmem event a hook entry runs, or None when it is not ours."""
    command = entry.get("command") if isinstance(entry, dict) else None
    found = _OURS.search(command) if isinstance(command, str) else None
    return found[1] if found else None


def _hooks_op(hooks: HookFile, wanted: dict[str, list[dict[str, Any]]]) -> Callable[[Any], None]:
    def op(doc: dict[str, Any]) -> None:
        table = doc.get("hooks")
        if table is None:
            if not any(wanted.values()):
                return
            table = doc["hooks"] = {}
        if not isinstance(table, dict):
            raise _shape(hooks.path, "hooks", "an object")
        touched = False
        for name in [*table, *(name for name in wanted if name not in table)]:
            touched |= _sync_event(hooks, table, name, wanted.get(name, []))
        if touched and not table:
            del doc["hooks"]

    return op


def _sync_event(
    hooks: HookFile, table: dict[str, Any], name: str, want: list[dict[str, Any]]
) -> bool:
    """Make our entries under one client event exactly `want`: ours already there are updated
    where they stand, stale ones go (with a group they leave empty), missing ones are appended."""
    current = table.get(name, [])
    if not isinstance(current, list):
        if want:
            raise _shape(hooks.path, f"hooks.{name}", "a list")
        return False
    by_event = {_our_event(entry): entry for entry in want}
    present: set[str] = set()
    kept: list[Any] = []
    touched = False
    for item in current:
        inner = item.get("hooks") if isinstance(item, dict) else None
        if hooks.style == "grouped" and isinstance(inner, list):
            entries, changed = _reconcile(inner, by_event, present)
            touched |= changed
            if not changed:
                kept.append(item)
            elif entries:
                kept.append({**item, "hooks": entries})
        else:
            entries, changed = _reconcile([item], by_event, present)
            touched |= changed
            kept.extend(entries)
    missing = [entry for event, entry in by_event.items() if event not in present]
    if missing:
        touched = True
        if hooks.style == "flat":
            kept.extend(missing)
        else:
            kept.append({"matcher": "", "hooks": missing} if hooks.matcher else {"hooks": missing})
    if touched:
        if kept:
            table[name] = kept
        else:
            table.pop(name, None)
    return touched


def _reconcile(
    entries: list[Any], by_event: dict[str | None, dict[str, Any]], present: set[str]
) -> tuple[list[Any], bool]:
    kept: list[Any] = []
    changed = False
    for entry in entries:
        event = _our_event(entry)
        if event is None:
            kept.append(entry)
        elif event in by_event and event not in present:
            present.add(event)
            updated = {**entry, **by_event[event]}
            changed |= updated != entry
            kept.append(updated)
        else:
            changed = True
    return kept, changed
