"""Where an owner leaves its traces: `owner.json` (pid + socket) and the socket itself.

Unix socket paths are limited to ~104 bytes, so a deep data dir gets its socket in a private
per-user runtime dir instead; `owner.json` always says where it is.
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
import tempfile
from pathlib import Path

from pydantic import BaseModel

from graphmem.process import pid_alive

OWNER_FILE = "owner.json"
SOCKET_NAME = "owner.sock"
_MAX_SOCKET_PATH = 100


class OwnerInfo(BaseModel):
    pid: int
    socket: str
    started: float


def owner_file(home: Path) -> Path:
    return Path(home) / OWNER_FILE


def socket_path_for(home: Path) -> str:
    path = str(Path(home) / SOCKET_NAME)
    if len(path.encode()) <= _MAX_SOCKET_PATH:
        return path
    runtime = Path(tempfile.gettempdir()) / f"graphmem-{os.getuid()}"
    runtime.mkdir(mode=0o700, exist_ok=True)
    os.chmod(runtime, 0o700)
    digest = hashlib.sha256(str(Path(home).resolve()).encode()).hexdigest()[:16]
    return str(runtime / f"{digest}.sock")


def _answers(path: str) -> bool:
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    probe.settimeout(1.0)
    try:
        probe.connect(path)
        return True
    except OSError:
        return False
    finally:
        probe.close()


def write_owner_record(home: Path, info: OwnerInfo) -> None:
    """Write then rename: a reader never sees half a record (and would delete it as corrupt)."""
    record = owner_file(home)
    partial = record.with_name(f".{record.name}.{os.getpid()}")
    partial.write_text(info.model_dump_json(), encoding="utf-8")
    os.replace(partial, record)


def live_owner(home: Path) -> OwnerInfo | None:
    """The running owner of `home`, or None; a record left by a killed owner is removed."""
    record = owner_file(home)
    try:
        info = OwnerInfo.model_validate(json.loads(record.read_text(encoding="utf-8")))
    except FileNotFoundError:
        return None
    except (OSError, ValueError):
        record.unlink(missing_ok=True)
        return None
    if pid_alive(info.pid) and _answers(info.socket):
        return info
    if not pid_alive(info.pid):
        record.unlink(missing_ok=True)
        Path(info.socket).unlink(missing_ok=True)
    return None
