"""Opening a data dir's Kùzu or LadybugDB database (`engines`), under the data dir's open lock
(graphmem.storage.locking), and closing it before the lock is let go."""

from __future__ import annotations

import os
import time
from contextlib import suppress
from pathlib import Path
from typing import TYPE_CHECKING

from graphmem.errors import StorageError
from graphmem.storage import engines, locking
from graphmem.storage.engines import Engine

if TYPE_CHECKING:
    import kuzu

WAL_SUFFIX = ".wal"
MIN_BUFFER_POOL = 1 << 30


def buffer_pool_bytes(home: Path, engine: Engine = engines.KUZU) -> int:
    """Kùzu's page cache for this store: three times the database, at least 1 GiB; 0 (Kùzu's
    default, 80% of the machine's memory) when that is as much. Kùzu sets up its frames for the
    whole pool at every open: the default cost ~30 ms of each cold command on a 24 GiB machine.
    An engine whose pool cannot follow a store that grows while open takes its default."""
    if not engine.pool_follows_store:
        return 0
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
    open_lock = locking.take_open_lock(home, deadline)
    delay = 0.05
    try:
        module = engine.module()
        engines.check_storage_version(home, engine)
        while True:
            try:
                with locking.OPEN_HERE_LOCK:
                    if key in locking.OPEN_HERE:
                        raise RuntimeError("Could not set lock: already open in this process")
                    db = module.Database(
                        str(home / engine.db_file),
                        auto_checkpoint=False,
                        buffer_pool_size=buffer_pool_bytes(home, engine),
                        **dict(engine.options),
                    )
                    locking.OPEN_HERE.add(key)
                break
            except RuntimeError as exc:  # a lock error: a process that does not take ours
                if not _is_lock_error(exc):
                    raise StorageError(f"cannot open store {home}: {exc}", path=str(home)) from exc
                if time.monotonic() >= deadline:
                    raise locking.locked_error(home) from None
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
    locking.write_holder(home)
    return db, open_lock


def release(home: Path, db: kuzu.Database, open_lock: int) -> None:
    """Close the Database, then let the next process open it."""
    locking.forget_holder(home)
    db.close()
    with locking.OPEN_HERE_LOCK:
        locking.OPEN_HERE.discard(home.resolve())
    os.close(open_lock)
