"""Operations on a whole store that need more than one open store: restore from a backup."""

from __future__ import annotations

from pathlib import Path

from graphmem.daemon.link import start_lock, stop_owner
from graphmem.daemon.paths import OwnerInfo, live_owner
from graphmem.errors import Conflict, SchemaError, StoreLocked
from graphmem.models import BackupInfo, RestoreReport
from graphmem.schema import migrations
from graphmem.service import GraphMemory
from graphmem.settings import Settings
from graphmem.storage import (
    engines,
    open_store_at,
    open_store_backend,
    read_backup_manifest,
    restore_backup_files,
    restore_backup_into_graph,
)


def restore(backup: Path, settings: Settings, *, force: bool = False) -> RestoreReport:
    """Replace the store at settings.home with a backup.

    Refused without `force` when the store is served by an owner or already holds memories; with
    `force` the owner is stopped (it drains first) and the old database is kept beside the new one.
    """
    if settings.store_url is not None:
        with start_lock(settings.home):
            return _restore_graph(backup, settings, force=force)
    info = read_backup_manifest(backup)
    latest = migrations()[-1].version
    if info.schema_version > latest:
        raise SchemaError(
            f"the backup has schema version {info.schema_version}, newer than this graphmem "
            f"understands ({latest}); upgrade graphmem",
            store_version=info.schema_version,
        )
    # no client starts an owner, nor opens the store, until the restored one is in place
    with start_lock(settings.home):
        return _restore(backup, info, settings, force=force)


def _stop_owner_for_restore(home: Path, *, force: bool) -> OwnerInfo | None:
    """The owner serving the store, stopped (it drains first) with `force`; Conflict without."""
    owner = live_owner(home)
    if owner is None:
        return None
    if not force:
        raise Conflict(
            f"store {home} is live (served by owner process {owner.pid}); "
            "pass --force to stop it and restore",
            pid=owner.pid,
        )
    return stop_owner(home)


def _restore(backup: Path, info: BackupInfo, settings: Settings, *, force: bool) -> RestoreReport:
    home = settings.home
    stopped = _stop_owner_for_restore(home, force=force)
    if engines.has_store(home):
        try:
            current = open_store_at(home, lock_timeout=0)
        except StoreLocked as exc:
            raise Conflict(
                f"{exc.message}; it cannot be restored while in use", **exc.fields
            ) from exc
        try:
            count = current.memories.count()
        finally:
            current.close()
        if count and not force:
            raise Conflict(
                f"store {home} holds {count} memories; pass --force to replace them "
                "(the current database is kept beside the restored one)",
                memories=count,
            )
    kept = restore_backup_files(backup, home)
    # opens, migrates and proves the restored file is sound
    with GraphMemory(settings, extract_in_background=False) as gm:
        gm.db_status()
    return RestoreReport(
        path=str(home),
        backup=info,
        previous_kept_at=str(kept) if kept else None,
        stopped_owner_pid=stopped.pid if stopped else None,
    )


def _restore_graph(backup: Path, settings: Settings, *, force: bool) -> RestoreReport:
    """A backup of a server store into the graph `store_url` names. The graph's content is
    replaced, not kept beside: back it up first."""
    stopped = _stop_owner_for_restore(settings.home, force=force)
    store = open_store_backend(settings)
    try:
        store.migrate()
        count = store.memories.count()
        if count and not force:
            raise Conflict(
                f"the graph {settings.store_url} holds {count} memories; pass --force to replace "
                "them (they are not kept: back the graph up first)",
                memories=count,
            )
        info = restore_backup_into_graph(store, backup)
    finally:
        store.close()
    with GraphMemory(settings, extract_in_background=False) as gm:  # opens as a node would
        gm.db_status()
    return RestoreReport(
        path=str(settings.store_url),
        backup=info,
        stopped_owner_pid=stopped.pid if stopped else None,
    )
