"""`graphmem hook EVENT [--client CLIENT] [--home DIR]`: what an agent client runs at its
lifecycle events, reading the client's hook JSON on stdin and writing the client's output format.

It sits on the agent's critical path (a prompt waits for it), so it imports the standard library
only and asks the store's owner process over its socket (graphmem.agents.owner_link); the owner
does the work (graphmem.agents.context). With no owner it starts one and answers with nothing.
Whatever fails, it exits 0 with nothing injected and says why in `<home>/hooks.log`: a memory
hook must never break the agent it serves.
"""

from __future__ import annotations

import json
import os
import select
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, TextIO

from graphmem.agents.owner_link import (
    OwnerFailed,
    OwnerUnavailable,
    call,
    hook_log,
    owner_socket,
    start_owner,
)

EVENTS = ("session-start", "prompt-submit", "pre-compact", "stop", "session-end")
INJECTS = ("session-start", "prompt-submit")
DEFAULT_CLIENT = "claude-code"
DATA_DIR_NAME = ".graphmem"
# seconds to wait for the owner: a prompt waits for us; a checkpoint embeds text
TIMEOUTS = {"session-start": 2.0, "prompt-submit": 1.0, "session-end": 1.0}
CHECKPOINT_TIMEOUT = 20.0
STDIN_WAIT = 1.0  # some clients never close stdin: a complete JSON object is enough
MAX_STDIN = 8 * 1024 * 1024
# the payload fields the owner needs; a prompt is cut to this many characters
FIELDS = ("session_id", "transcript_path", "cwd", "hook_event_name", "prompt", "source",
          "trigger", "reason", "model")  # fmt: skip
MAX_PROMPT = 8000
# each client's name for the events whose output adds context
_EVENT_NAMES = {
    "gemini": {"session-start": "SessionStart", "prompt-submit": "BeforeAgent"},
    None: {"session-start": "SessionStart", "prompt-submit": "UserPromptSubmit"},
}
USAGE = """usage: graphmem hook EVENT [--client CLIENT] [--home DIR]

Run by an agent client at its lifecycle events: reads the client's hook JSON on stdin, writes
what to add to the agent's context in the client's format on stdout, and always exits 0.

EVENT   session-start | prompt-submit | pre-compact | stop | session-end
--client  claude-code (default) | codex | gemini | cursor | vscode
--home    the store's data dir (default: GRAPHMEM_HOME, else the project's .graphmem)
"""


class Usage(Exception):
    pass


def main(
    argv: Sequence[str] | None = None,
    *,
    stdin: TextIO | None = None,
    stdout: TextIO | None = None,
) -> int:
    """Run one hook; always returns 0."""
    out = stdout if stdout is not None else sys.stdout
    try:
        event, client, given_home = parse_args(sys.argv[2:] if argv is None else argv)
    except Usage as exc:
        print(f"{exc}\n\n{USAGE}" if str(exc) else USAGE, file=sys.stderr)
        return 0
    home: Path | None = None
    text: str | None = None
    try:
        payload = normalised(read_payload(stdin if stdin is not None else sys.stdin))
        home = find_home(given_home, payload)
        if home is not None:
            text = run(event, client, payload, home)
    except Exception as exc:  # never break the agent: log it, inject nothing
        if home is not None:
            hook_log(home, f"{event} {client}: failed: {type(exc).__name__}: {exc}")
        text = None
    try:
        rendered = render(client, event, text)
        if rendered:
            out.write(rendered + "\n")
            out.flush()
    except (OSError, ValueError):  # the client closed our stdout
        pass
    return 0


def parse_args(argv: Sequence[str]) -> tuple[str, str, str | None]:
    args = list(argv)
    if not args or args[0] in ("-h", "--help"):
        raise Usage("")
    event, client, home = args.pop(0), DEFAULT_CLIENT, None
    if event not in EVENTS:
        raise Usage(f"unknown event {event!r}")
    while args:
        option = args.pop(0)
        name, _, value = option.partition("=")
        if name not in ("--client", "--home"):
            raise Usage(f"unknown option {option!r}")
        if not value:
            if not args:
                raise Usage(f"{name} needs a value")
            value = args.pop(0)
        if name == "--client":
            client = value
        else:
            home = value
    return event, client, home


def read_payload(stream: TextIO) -> dict[str, Any]:
    """The client's JSON object from stdin; {} when there is none or it is not an object."""
    try:
        fd = stream.fileno()
    except (AttributeError, OSError, ValueError):  # a StringIO (tests)
        data = stream.read().encode()
    else:
        if os.isatty(fd):
            return {}
        data = _read_fd(fd)
    try:
        value = json.loads(data) if data.strip() else {}
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _read_fd(fd: int) -> bytes:
    """Until EOF, or until what was read parses as JSON and nothing more comes, or STDIN_WAIT."""
    deadline = time.monotonic() + STDIN_WAIT
    data = b""
    while len(data) < MAX_STDIN:
        left = deadline - time.monotonic()
        ready, _, _ = select.select([fd], [], [], max(left, 0))
        if not ready:
            break
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            break
        data += chunk
        if data.rstrip().endswith(b"}") and _parses(data):
            break
    return data


def _parses(data: bytes) -> bool:
    try:
        json.loads(data)
    except ValueError:
        return False
    return True


def find_home(given: str | None, payload: Mapping[str, Any]) -> Path | None:
    """The store: --home, else GRAPHMEM_HOME, else the `.graphmem` of the project holding the
    payload's cwd (the nearest one up, or the one beside the nearest `.git`), as
    graphmem.settings.find_data_dir finds it. None when that folder does not exist: hooks never
    create a store."""
    # an entry point reads its environment, as graphmem/cli/common.py does
    chosen = given or os.getenv("GRAPHMEM_HOME")
    if chosen:
        home = Path(chosen).expanduser().resolve()
    else:
        cwd = payload.get("cwd")
        start = Path(cwd if isinstance(cwd, str) and cwd else os.getcwd()).expanduser().resolve()
        home = start / DATA_DIR_NAME
        for directory in (start, *start.parents):
            if (directory / DATA_DIR_NAME).is_dir() or (directory / ".git").exists():
                home = directory / DATA_DIR_NAME
                break
    return home if home.is_dir() else None


def normalised(payload: Mapping[str, Any]) -> dict[str, Any]:
    """The fields the owner reads, under one name whatever the client calls them (VS Code says
    `sessionId`, Cursor `conversation_id` and `workspace_roots`)."""
    sent = {k: payload[k] for k in FIELDS if payload.get(k) is not None}
    for alias in ("sessionId", "conversation_id"):
        if "session_id" not in sent and isinstance(payload.get(alias), str):
            sent["session_id"] = payload[alias]
    roots = payload.get("workspace_roots")
    if "cwd" not in sent and isinstance(roots, list) and roots and isinstance(roots[0], str):
        sent["cwd"] = roots[0]
    if isinstance(sent.get("prompt"), str):
        sent["prompt"] = sent["prompt"][:MAX_PROMPT]
    return sent


def run(event: str, client: str, payload: Mapping[str, Any], home: Path) -> str | None:
    """Ask the owner; the text to inject, or None."""
    sent = normalised(payload)
    try:
        if event in INJECTS:
            result = call(home, "hook_context", event, sent, client=client,
                          timeout=TIMEOUTS[event])  # fmt: skip
            text = result.get("text") if isinstance(result, dict) else None
            return text if isinstance(text, str) and text.strip() else None
        if event == "session-end":
            call(home, "end_session", sent, client=client, timeout=TIMEOUTS[event])
        else:
            result = call(home, "hook_checkpoint", sent, client=client, event=event,
                          timeout=CHECKPOINT_TIMEOUT)  # fmt: skip
            if isinstance(result, dict) and result.get("error"):
                hook_log(home, f"{event} {client}: {result['error']}")
        return None
    except OwnerUnavailable as exc:
        if event not in INJECTS:  # keep the capture for the owner to take on when it runs
            save_pending(home, event, client, sent)
        if owner_socket(home) is not None:
            note = "it runs but did not answer in time"
        else:
            note = "started one" if start_owner(home) else "one is starting"
        hook_log(home, f"{event} {client}: no answer from the owner ({exc}); {note}")
        return None
    except OwnerFailed as exc:
        hook_log(home, f"{event} {client}: the owner failed: {exc}")
        return None


def save_pending(home: Path, event: str, client: str, payload: Mapping[str, Any]) -> bool:
    """Keep a capture for the owner to run at its next hook request (it may not be running
    yet); False when the payload names no session."""
    if not payload.get("session_id"):
        return False
    folder = home / "hooks" / "pending"
    folder.mkdir(parents=True, exist_ok=True)
    name = f"{time.time_ns()}-{os.getpid()}.json"
    record = {"event": event, "client": client, "payload": dict(payload)}
    partial = folder / f".{name}"
    partial.write_text(json.dumps(record), encoding="utf-8")
    os.replace(partial, folder / name)
    return True


def render(client: str, event: str, text: str | None) -> str:
    """The client's stdout for the event: JSON that adds `text` to the agent's context, or
    what the client reads as "nothing to add"."""
    if client == "gemini":  # stdout must be JSON, and only JSON
        if not text or event not in INJECTS:
            return "{}"
        name = _EVENT_NAMES["gemini"][event]
        return _json({"hookSpecificOutput": {"hookEventName": name, "additionalContext": text}})
    if not text or event not in INJECTS:
        return ""
    if client == "cursor":
        if event == "session-start":
            return _json({"additional_context": text})
        return _json({"continue": True, "additional_context": text})
    # Claude Code, Codex (which rejects fields it does not know), VS Code
    name = _EVENT_NAMES[None][event]
    return _json({"hookSpecificOutput": {"hookEventName": name, "additionalContext": text}})


def _json(value: dict[str, Any]) -> str:
    return json.dumps(value)  # ASCII with \u escapes: whatever encoding stdout has
