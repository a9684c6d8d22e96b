"""A data dir is opened by one process at a time, from before its database opens until after
it has closed, and says who holds it (`holder.json`). Nothing here knows an engine.

Kùzu 0.11.3 allows one read-write Database per file: a second process gets "Could not set
lock". But it reads (and removes) the database's `.wal` and `.shadow` files before it takes that
lock, while a closing Database checkpoints through those files: a process opening while another
closed failed on a missing `graph.kuzu.shadow` or `.wal` (three processes opening and closing
one file in a loop for 20 s: 1,969 such failures beside 666 opens). So an open first takes
`store.lock` (flock) and holds it until its Database has closed; the kernel drops it when the
process dies. Whoever waits too long is told who holds the store (`holder.json`).
"""

from __future__ import annotations

import fcntl
import json
import os
import sys
import threading
import time
from contextlib import suppress
from pathlib import Path
from typing import Any

from graphmem.errors import StorageError, StoreLocked
from graphmem.models import utcnow

HOLDER_FILE = "holder.json"
OPEN_LOCK = "store.lock"  # held from before a Database opens until after it closed

# An engine's file lock need not stop a second Database on the same file in the same process
# (Kùzu's does not), which would corrupt it; so this process keeps its own list.
OPEN_HERE: set[Path] = set()
OPEN_HERE_LOCK = threading.Lock()


def take_open_lock(home: Path, deadline: float) -> int:
    """Wait until no other process has the store open, or is still closing it; returns the fd
    that holds the lock."""
    try:
        fd = os.open(home / OPEN_LOCK, os.O_RDWR | os.O_CREAT, 0o600)
    except OSError as exc:
        raise StorageError(f"cannot create {home / OPEN_LOCK}: {exc}", path=str(home)) from exc
    delay = 0.01
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return fd
        except BlockingIOError:
            if time.monotonic() >= deadline:
                os.close(fd)
                raise locked_error(home) from None
            time.sleep(delay)
            delay = min(delay * 2, 0.2)


def locked_error(home: Path) -> StoreLocked:
    holder: dict[str, Any] = {}
    with suppress(OSError, ValueError):
        holder = json.loads((home / HOLDER_FILE).read_text(encoding="utf-8"))
    pid = holder.get("pid")
    who = f"process {pid} ({holder.get('command', '?')})" if pid else "another process"
    return StoreLocked(
        f"store {home} is locked by {who}; stop it or wait for it to finish",
        path=str(home),
        pid=pid,
        command=holder.get("command"),
    )


def write_holder(home: Path) -> None:
    info = {"pid": os.getpid(), "command": " ".join(sys.argv)[:300], "since": utcnow().isoformat()}
    with suppress(OSError):
        (home / HOLDER_FILE).write_text(json.dumps(info), encoding="utf-8")


def forget_holder(home: Path) -> None:
    """Remove the record, if it is this process's."""
    with suppress(OSError, ValueError):
        holder = json.loads((home / HOLDER_FILE).read_text(encoding="utf-8"))
        if holder.get("pid") == os.getpid():
            (home / HOLDER_FILE).unlink()
