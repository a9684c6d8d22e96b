"""Storage: the only code that imports an engine or writes a query language.

The domain is typed against the protocols (graphmem.storage.protocols) and opens a store here;
which engine serves it, and how, stays inside this package (docs/adr/0012-storage-interface.md).
Imports are deferred, so that naming the protocols loads no engine code.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from graphmem.models import BackupInfo
    from graphmem.settings import Settings
    from graphmem.storage.protocols import Store
    from graphmem.store_url import StoreUrl


def open_store_backend(settings: Settings) -> Store:
    """The store at settings.home, opened with its own engine (settings.engine picks one for a
    new store), waiting settings.lock_timeout s for another process; not migrated yet. With a
    `store_url`, the store is that graph on a FalkorDB server, and the data dir keeps this
    node's settings, tokens and search cache."""
    if settings.store_url is not None:
        from graphmem.storage.falkordb.store import FalkorStore

        return FalkorStore.open(
            settings.store_url,
            settings.home,
            lock_timeout=settings.lock_timeout,
            replicas=1 if settings.durability == "replicated" else 0,
        )
    return open_store_at(settings.home, lock_timeout=settings.lock_timeout, engine=settings.engine)


def open_graph_store(url: StoreUrl, home: Path) -> Store:
    """The store on the graph `url` names, `home` its data dir, migrated (its indexes and
    unique constraints made): where a copy between engines goes."""
    from graphmem.storage.falkordb.store import FalkorStore

    store = FalkorStore.open(url, home)
    store.migrate()
    return store


def open_store_at(home: Path, *, lock_timeout: float = 5.0, engine: str | None = None) -> Store:
    """The store in `home` (made when there is none); StoreLocked when another process holds
    it past `lock_timeout`, StorageError for a store of another engine than `engine`."""
    from graphmem.storage.kuzu.store import KuzuStore

    return KuzuStore.open(home, lock_timeout=lock_timeout, engine=engine)


def saved_space_names(home: Path) -> set[str]:
    """The embedding spaces of the search structures saved last, read without opening the
    store: a guess at the model a store wants, before it is open."""
    from graphmem.indexes.search_state import saved_space_names

    return saved_space_names(home)


def read_backup_manifest(backup: Path) -> BackupInfo:
    """What a backup (`Store.backup`) holds; InvalidInput when it is not one, or damaged."""
    from graphmem.storage.kuzu.backup import read_manifest

    return read_manifest(backup)


def restore_backup_into_graph(store: Store, backup: Path) -> BackupInfo:
    """Replace a server store's graph by a backup of a server store, every table proved by its
    digest (the other nodes read their search state again); InvalidInput for a backup of an
    embedded store, whose database file a graph cannot take."""
    from graphmem.storage.falkordb.backup import restore_tables
    from graphmem.storage.falkordb.store import FalkorStore

    if not isinstance(store, FalkorStore):
        raise TypeError("only a server store's graph takes a backup this way")
    info = read_backup_manifest(backup)
    restore_tables(store, backup)
    return info


def restore_backup_files(backup: Path, home: Path) -> Path | None:
    """Put a backup's database in `home`, where no store is open; the database it replaces is
    kept beside it, never deleted, and returned."""
    from graphmem.storage.kuzu.backup import restore_files

    return restore_files(backup, home)
