"""Backups: a checkpointed copy of the database file taken while no write can run, and restore.

The copy is made under the writer's lock after a CHECKPOINT, so the file holds every committed
transaction and nothing half-written; reads carry on meanwhile. A backup is a directory with the
database file, the engine record (`engines`) and a manifest saying what it holds.
"""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path
from typing import TYPE_CHECKING

from graphmem.errors import Conflict, InvalidInput, StorageError
from graphmem.models import BackupInfo, utcnow
from graphmem.storage import engines
from graphmem.storage.kuzu.opening import WAL_SUFFIX

if TYPE_CHECKING:
    from graphmem.storage.kuzu.store import KuzuStore

MANIFEST = "manifest.json"


def _prepare_target(dest: Path) -> None:
    if dest.exists() and any(dest.iterdir()):
        raise Conflict(
            f"backup target {dest} exists and is not empty; choose a new path", path=str(dest)
        )
    try:
        dest.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InvalidInput(f"cannot create {dest}: {exc.strerror}", path=str(dest)) from exc


def take_backup(store: KuzuStore, dest: Path) -> BackupInfo:
    started = time.perf_counter()
    dest = Path(dest).resolve()
    if dest == store.home.resolve() or store.home.resolve() in dest.parents:
        raise InvalidInput("a backup cannot go inside the store it copies", path=str(dest))
    _prepare_target(dest)
    with store.writer_paused():
        memories = store.memories.count()
        schema_version = store.migration_status().schema_version
        store.checkpoint()
        engine = store.conn.engine
        db_file = engine.db_file
        try:
            shutil.copy2(store.home / db_file, dest / db_file)
            engines.record(dest, engine)
        except OSError as exc:
            raise StorageError(f"backup failed: {exc}", path=str(dest)) from exc
    info = BackupInfo(
        path=str(dest),
        source=str(store.home),
        schema_version=schema_version,
        memories=memories,
        bytes=(dest / db_file).stat().st_size,
        created_at=utcnow(),
        seconds=round(time.perf_counter() - started, 3),
    )
    (dest / MANIFEST).write_text(info.model_dump_json(indent=2), encoding="utf-8")
    return info


def read_manifest(backup: Path) -> BackupInfo:
    try:
        return BackupInfo.model_validate(
            json.loads((backup / MANIFEST).read_text(encoding="utf-8"))
        )
    except FileNotFoundError:
        raise InvalidInput(
            f"{backup} is not a graphmem backup (no {MANIFEST})", path=str(backup)
        ) from None
    except ValueError as exc:
        raise InvalidInput(f"{backup}/{MANIFEST} is damaged: {exc}", path=str(backup)) from exc


def restore_files(backup: Path, home: Path) -> Path | None:
    """Put the backup's database (and its engine record) in place; the old one is kept beside
    it, never deleted."""
    made_by = engines.recorded(backup)
    engine = engines.BY_NAME[made_by["engine"]] if made_by else engines.KUZU
    source = backup / engine.db_file
    if not source.is_file():
        raise InvalidInput(f"{backup} holds no database file", path=str(backup))
    home.mkdir(parents=True, exist_ok=True)
    kept = None
    was = engines.recorded(home)
    current = home / engines.BY_NAME[was["engine"]].db_file if was else None
    if current is not None and current.exists():
        kept = home / f"{current.name}.before-restore-{utcnow():%Y%m%dT%H%M%S}"
        current.rename(kept)
        wal = current.with_name(current.name + WAL_SUFFIX)
        if wal.exists():
            wal.rename(kept.with_name(kept.name + WAL_SUFFIX))
    shutil.copy2(source, home / engine.db_file)
    if (backup / engines.RECORD).exists():
        shutil.copy2(backup / engines.RECORD, home / engines.RECORD)
    else:  # a backup made before the record: Kùzu's
        (home / engines.RECORD).unlink(missing_ok=True)
    return kept
