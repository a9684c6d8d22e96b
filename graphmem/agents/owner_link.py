"""A client of the store's owner process in the standard library alone, for hooks.

A hook runs as a new process on every prompt, so it cannot pay the ~0.3-0.5 s that importing
pydantic, numpy and kùzu costs. It reads `owner.json`, sends one request line
`{"id", "method", "args", "kwargs"}` and reads one response line (graphmem.daemon.protocol):
results arrive as JSON, models as `{"$model": name, "data": {...}}`, used here as the dicts they
are. With no owner running it starts one, detached, and does not wait for it.
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
import time
from pathlib import Path
from typing import Any

from graphmem.process import pid_alive

OWNER_FILE = "owner.json"  # graphmem.daemon.paths
START_LOCK = "owner.lock"  # graphmem.daemon.client: serialises owner start-ups
OWNER_LOG = "owner.log"
HOOK_LOG = "hooks.log"
STARTING = "owner-starting.json"  # under hooks/: an owner a hook started, until it serves
START_GRACE = 60.0  # seconds a started owner has to come up before another may be started
MAX_LOG_BYTES = 1 << 20


class OwnerUnavailable(Exception):
    """No owner runs for the store, or it did not answer in time."""


class OwnerFailed(Exception):
    """The owner answered with an error."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(f"{kind}: {message}")
        self.kind = kind


def owner_socket(home: Path) -> str | None:
    """The socket of the store's running owner, or None (its record is left to the CLI, which
    cleans up after a killed owner)."""
    try:
        record = json.loads((home / OWNER_FILE).read_text(encoding="utf-8"))
        pid, path = int(record["pid"]), str(record["socket"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return path if pid_alive(pid) else None


def call(home: Path, method: str, *args: Any, timeout: float = 1.0, **kwargs: Any) -> Any:
    """One request to the owner; its result as plain JSON values."""
    path = owner_socket(home)
    if path is None:
        raise OwnerUnavailable("no owner is running")
    request = {"id": 1, "method": method, "args": list(args), "kwargs": kwargs}
    data = json.dumps(request, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(timeout)
        try:
            sock.connect(path)
            sock.sendall(data)
            line = _read_line(sock)
        except OSError as exc:  # refused, gone, or timed out
            raise OwnerUnavailable(f"the owner did not answer: {exc}") from exc
    if not line:
        raise OwnerUnavailable("the owner closed the connection")
    response = json.loads(line)
    if "error" in response:
        error = response["error"] or {}
        raise OwnerFailed(str(error.get("type")), str(error.get("message")))
    return plain(response.get("result"))


def _read_line(sock: socket.socket) -> bytes:
    chunks: list[bytes] = []
    while True:
        chunk = sock.recv(1 << 16)
        if not chunk:
            break
        chunks.append(chunk)
        if chunk.endswith(b"\n"):
            break
    return b"".join(chunks)


def plain(value: Any) -> Any:
    """A protocol value as plain JSON: a model as its fields, a datetime as its ISO text."""
    if isinstance(value, dict):
        if "$model" in value and isinstance(value.get("data"), dict):
            return plain(value["data"])
        if "$datetime" in value:
            return value["$datetime"]
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value


def start_owner(home: Path) -> bool:
    """Start a detached owner for `home` unless one runs or is already starting; never waits
    for it. True if this call started one."""
    with open(home / START_LOCK, "a+") as lock:
        try:  # a client of graphmem.daemon.client holds it while it starts an owner
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return False
        try:
            if owner_socket(home) is not None or _starting(home):
                return False
            import subprocess
            import sys

            with open(home / OWNER_LOG, "ab") as log:
                process = subprocess.Popen(
                    # -P: a graphmem folder in the working directory must not shadow this one
                    [sys.executable, "-P", "-m", "graphmem", "daemon", "run", "--home", str(home)],
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=log,
                    start_new_session=True,  # outlives the hook, away from the agent's terminal
                )
            marker = home / "hooks" / STARTING
            marker.parent.mkdir(exist_ok=True)
            marker.write_text(json.dumps({"pid": process.pid, "at": time.time()}))
            return True
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _starting(home: Path) -> bool:
    """An owner a hook started recently is still coming up."""
    try:
        record = json.loads((home / "hooks" / STARTING).read_text(encoding="utf-8"))
        pid, at = int(record["pid"]), float(record["at"])
    except (OSError, ValueError, KeyError, TypeError):
        return False
    return pid_alive(pid) and time.time() - at < START_GRACE


def hook_log(home: Path, message: str) -> None:
    """Append a line to `<home>/hooks.log` (halved when it passes 1 MB); never raises."""
    path = home / HOOK_LOG
    line = f"{time.strftime('%Y-%m-%dT%H:%M:%S')} pid={os.getpid()} {message}\n"
    try:
        if path.exists() and path.stat().st_size > MAX_LOG_BYTES:
            kept = path.read_bytes()[-MAX_LOG_BYTES // 2 :]
            path.write_bytes(kept[kept.find(b"\n") + 1 :])
        with path.open("a", encoding="utf-8") as handle:
            handle.write(line)
    except OSError:
        pass
