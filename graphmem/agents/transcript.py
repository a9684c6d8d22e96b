"""An agent's transcript as checkpoint text: the user's and the assistant's words since a byte
position, without what the client itself wrote there (tool calls and results, thinking, hook
output, system reminders, command output).

Claude Code writes one JSON object a line (`type` user/assistant/..., `message.content` a string
or a list of blocks); Codex's rollout wraps messages in `response_item` records; Gemini CLI's
lines have `type` user/gemini and `content` text or parts. Anything else is skipped, as is a line
that is not JSON: a transcript is another program's file, and reading it must never fail a hook.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

MAX_READ = 8 * 1024 * 1024  # bytes since the last position; an older part is skipped
HOOKS_DIR = "hooks"

_TEXT_BLOCKS = {"text", "input_text", "output_text"}
# what clients wrap around text they add to a turn themselves
_NOISE_TAGS = (
    "system-reminder", "command-name", "command-message", "command-args", "command-contents",
    "local-command-stdout", "local-command-stderr", "local-command-caveat", "bash-input",
    "bash-stdout", "bash-stderr", "user-prompt-submit-hook", "session-start-hook",
    "environment_context", "user_instructions", "INSTRUCTIONS", "turn_aborted",
    "user_shell_command",
)  # fmt: skip
_NOISE_BLOCK = re.compile(
    r"<(" + "|".join(map(re.escape, _NOISE_TAGS)) + r")\b[^>]*>.*?</\1>", re.DOTALL
)
_NOISE_TAG = re.compile(r"</?(?:" + "|".join(map(re.escape, _NOISE_TAGS)) + r")\b[^>]*>")
# a terminal's tool-call bullets and their result lines, pasted or echoed into a turn
_TOOL_LINE = re.compile(r"^\s*[⏺●⎿✻✽]")
_INTERRUPTED = re.compile(r"^\s*\[Request interrupted by user[^\]]*\]\s*$")
_HOOK_KEYS = {"hook_event_name", "hookEventName", "hookSpecificOutput", "transcript_path"}
_BLANK_LINES = re.compile(r"\n{3,}")
_SAFE = re.compile(r"[^A-Za-z0-9_.-]")


@dataclass(frozen=True)
class Capture:
    """The conversation read from `start` to `end` (a position after a complete line)."""

    text: str
    start: int
    end: int
    turns: int


def read_since(path: Path, offset: int) -> Capture:
    """The turns of the complete lines after byte `offset`; a file now shorter than `offset`
    was rewritten, and is read from its start."""
    size = path.stat().st_size
    start = offset if 0 <= offset <= size else 0
    skipped = max(start, size - MAX_READ)
    with path.open("rb") as handle:
        handle.seek(skipped)
        data = handle.read(size - skipped)
    if skipped > start:  # begin at the first whole line of the part read
        data = data[data.find(b"\n") + 1 :] if b"\n" in data else b""
        skipped = size - len(data)
    last = data.rfind(b"\n")
    if last < 0:  # no complete line yet: a client may be writing it
        return Capture("", start, start, 0)
    turns: dict[object, str] = {}  # Gemini CLI writes a message again, by its id, as it grows
    for number, raw in enumerate(data[: last + 1].splitlines()):
        record = _record(raw)
        turn = _turn(record) if record is not None else None
        if turn is not None:
            key = record.get("id") if record is not None else None
            turns[key if isinstance(key, str) else number] = turn
    return Capture("\n\n".join(turns.values()), start, skipped + last + 1, len(turns))


def last_assistant_turn(path: Path) -> str:
    """The text of the session's last assistant turn: agents end a session by summing it up."""
    size = path.stat().st_size
    with path.open("rb") as handle:
        handle.seek(max(size - MAX_READ, 0))
        data = handle.read()
    for raw in reversed(data.splitlines()):
        record = _record(raw)
        if record is not None and _role_and_content(record)[0] == "assistant":
            text = clean_text(_content_text(_role_and_content(record)[1]))
            if text:
                return text
    return ""


def _record(raw: bytes) -> dict[str, Any] | None:
    try:
        record = json.loads(raw)
    except ValueError:
        return None
    return record if isinstance(record, dict) else None


def _turn(record: dict[str, Any]) -> str | None:
    role, content = _role_and_content(record)
    if role is None:
        return None
    text = clean_text(_content_text(content))
    return f"{'User' if role == 'user' else 'Assistant'}: {text}" if text else None


def _role_and_content(record: dict[str, Any]) -> tuple[str | None, Any]:
    kind = record.get("type") or record.get("role")
    if kind == "response_item":  # Codex rollout
        payload = record.get("payload")
        if isinstance(payload, dict) and payload.get("type") == "message":
            role = payload.get("role")
            return (role if role in ("user", "assistant") else None), payload.get("content")
        return None, None
    if kind not in ("user", "assistant", "gemini"):
        return None, None
    if record.get("isMeta") or record.get("isSidechain") or record.get("isCompactSummary"):
        return None, None  # Claude Code's own notes, a subagent's turns, a compaction summary
    message = record.get("message")
    content = message.get("content") if isinstance(message, dict) else record.get("content")
    return ("user" if kind == "user" else "assistant"), content


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    parts = []
    for block in content:
        if isinstance(block, str):
            parts.append(block)
        elif (
            isinstance(block, dict)
            and isinstance(block.get("text"), str)
            and block.get("type", "text") in _TEXT_BLOCKS  # not tool_use, tool_result, thinking
        ):
            parts.append(block["text"])
    return "\n".join(parts)


def clean_text(text: str) -> str:
    """A turn's own words: what the client wrapped in its tags, tool bullets, interruption
    markers and JSON of hook metadata removed."""
    text = _NOISE_TAG.sub("", _NOISE_BLOCK.sub("", text))
    if _hook_json(text.strip()):
        return ""
    lines = [
        line
        for line in text.splitlines()
        if not _TOOL_LINE.match(line) and not _INTERRUPTED.match(line) and not _hook_json(line)
    ]
    return _BLANK_LINES.sub("\n\n", "\n".join(lines)).strip()


def _hook_json(text: str) -> bool:
    text = text.strip()
    if not (text.startswith("{") and text.endswith("}")):
        return False
    try:
        value = json.loads(text)
    except ValueError:
        return False
    return isinstance(value, dict) and bool(_HOOK_KEYS & value.keys())


# -- where each session's capture stopped ------------------------------------------------------


def state_file(home: Path, session_id: str) -> Path:
    """`<home>/hooks/<session id>.json`; an id unsafe as a file name is hashed into it."""
    safe = _SAFE.sub("_", session_id)[:80]
    if safe != session_id:
        safe += "-" + hashlib.sha256(session_id.encode()).hexdigest()[:12]
    return home / HOOKS_DIR / f"{safe}.json"


def load_state(home: Path, session_id: str) -> dict[str, Any]:
    try:
        state = json.loads(state_file(home, session_id).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return state if isinstance(state, dict) else {}


def save_state(home: Path, session_id: str, state: dict[str, Any]) -> None:
    """Write then rename: a crash leaves the old position, never half a file."""
    path = state_file(home, session_id)
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.{os.getpid()}")
    partial.write_text(json.dumps(state), encoding="utf-8")
    os.replace(partial, path)
