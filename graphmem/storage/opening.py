"""Opening a data dir's database (Kùzu's or LadybugDB's: `engines`): one process at a time, from
before its open until after its close, and a record of who holds it.

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
from typing import TYPE_CHECKING, Any

from graphmem.errors import StorageError, StoreLocked
from graphmem.models import utcnow
from graphmem.storage import engines
from graphmem.storage.engines import Engine

if TYPE_CHECKING:
    import kuzu

WAL_SUFFIX = ".wal"
MIN_BUFFER_POOL = 1 << 30
HOLDER_FILE = "holder.json"
OPEN_LOCK = "store.lock"  # held from before a Database opens until after it closed

# Kùzu's file lock does not stop a second Database on the same file in the same process, which
# would corrupt it; so this process keeps its own list.
_OPEN_HERE: set[Path] = set()
_OPEN_HERE_LOCK = threading.Lock()


def buffer_pool_bytes(home: Path, engine: Engine = engines.KUZU) -> int:
    """Kùzu's page cache for this store: three times the database, at least 1 GiB; 0 (Kùzu's
    default, 80% of the machine's memory) when that is as much. Kùzu sets up its frames for the
    whole pool at every open: the default cost ~30 ms of each cold command on a 24 GiB machine."""
    size = 0
    for name in (engine.db_file, engine.wal_file):
        with suppress(OSError):
            size += (home / name).stat().st_size
    try:
        default = int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") * 0.8)
    except (ValueError, OSError):  # no such names here: leave it to Kùzu
        return 0
    wanted = max(MIN_BUFFER_POOL, 3 * size)
    return 0 if wanted >= default else wanted


def _is_lock_error(exc: Exception) -> bool:
    return "Could not set lock" in str(exc)


def open_database(
    home: Path, lock_timeout: float, engine: Engine = engines.KUZU
) -> tuple[kuzu.Database, int]:
    """The Database of `home` and the fd that holds its open lock: close the fd (release) only
    after the Database. Waits up to `lock_timeout` s for another holder, then StoreLocked.
    `engine` is the store's (`engines.choose`); a new store records it."""
    try:
        home.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise StorageError(f"cannot create data dir {home}: {exc}", path=str(home)) from exc
    key = home.resolve()
    deadline = time.monotonic() + lock_timeout
    open_lock = _take_open_lock(home, deadline)
    delay = 0.05
    try:
        module = engine.module()
        engines.check_storage_version(home, engine)
        while True:
            try:
                with _OPEN_HERE_LOCK:
                    if key in _OPEN_HERE:
                        raise RuntimeError("Could not set lock: already open in this process")
                    db = module.Database(
                        str(home / engine.db_file),
                        auto_checkpoint=False,
                        buffer_pool_size=buffer_pool_bytes(home, engine),
                        **dict(engine.options),
                    )
                    _OPEN_HERE.add(key)
                break
            except RuntimeError as exc:  # a lock error: a process that does not take ours
                if not _is_lock_error(exc):
                    raise StorageError(f"cannot open store {home}: {exc}", path=str(home)) from exc
                if time.monotonic() >= deadline:
                    raise locked_error(home) from None
                time.sleep(delay)
                delay = min(delay * 2, 0.5)
        if not (home / engines.RECORD).exists():
            try:
                engines.record(home, engine)
            except OSError as exc:
                db.close()
                raise StorageError(f"cannot write {home / engines.RECORD}: {exc}") from exc
    except BaseException:
        os.close(open_lock)
        raise
    _write_holder(home)
    return db, open_lock


def release(home: Path, db: kuzu.Database, open_lock: int) -> None:
    """Close the Database, then let the next process open it."""
    with suppress(OSError, ValueError):
        holder = json.loads((home / HOLDER_FILE).read_text(encoding="utf-8"))
        if holder.get("pid") == os.getpid():
            (home / HOLDER_FILE).unlink()
    db.close()
    with _OPEN_HERE_LOCK:
        _OPEN_HERE.discard(home.resolve())
    os.close(open_lock)


def _take_open_lock(home: Path, deadline: float) -> int:
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


def _write_holder(home: Path) -> None:
    info = {"pid": os.getpid(), "command": " ".join(sys.argv)[:300], "since": utcnow().isoformat()}
    with suppress(OSError):
        (home / HOLDER_FILE).write_text(json.dumps(info), encoding="utf-8")
