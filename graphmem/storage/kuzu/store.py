"""KuzuStore: graphmem.storage.protocols.Store on Kùzu or LadybugDB (the same dialect), composed
of one repository per concern over one connection, as sqlite-utils' Database hands out Tables.

The repositories share the connection (its writer, transactions and change events) and the
search state (graphmem.indexes.search_state), which listens to the connection's events. A
repository that writes through another (memories through vectors and pending work) holds that
one; none reaches into another's state.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from pathlib import Path
from typing import Any, TypeVar

from graphmem.indexes.changes import Change
from graphmem.indexes.search_state import SearchState
from graphmem.models import BackupInfo, CypherResult, DbStatus, MigrationInfo
from graphmem.storage.kuzu import migrations
from graphmem.storage.kuzu.backup import take_backup
from graphmem.storage.kuzu.connection import KuzuConnection
from graphmem.storage.kuzu.copier import KuzuTables
from graphmem.storage.kuzu.documents import KuzuDocuments
from graphmem.storage.kuzu.entities import KuzuEntities
from graphmem.storage.kuzu.knowledge import KuzuKnowledge
from graphmem.storage.kuzu.memories import KuzuMemories
from graphmem.storage.kuzu.pending import KuzuPending
from graphmem.storage.kuzu.scans import KuzuScans
from graphmem.storage.kuzu.sessions import KuzuSessions
from graphmem.storage.kuzu.steward import KuzuSteward
from graphmem.storage.kuzu.vectors import KuzuVectors

_T = TypeVar("_T")


class KuzuStore:
    """One data dir's store; every method is safe to call from several threads."""

    def __init__(self, conn: KuzuConnection) -> None:
        self.conn = conn
        self.scans = KuzuScans(conn)
        self.search = SearchState(self.scans, conn.home)
        conn.listen(self.search)
        self.pending = KuzuPending(conn)
        self.vectors = KuzuVectors(conn, self.search)
        self.memories = KuzuMemories(conn, self.search, self.vectors, self.pending)
        self.knowledge = KuzuKnowledge(conn, self.memories)
        self.entities = KuzuEntities(conn, self.search, self.memories, self.pending)
        self.documents = KuzuDocuments(conn, self.search, self.vectors, self.pending)
        self.sessions = KuzuSessions(conn)
        self.steward = KuzuSteward(conn)
        self.tables = KuzuTables(conn)

    @classmethod
    def open(cls, home: Path, *, lock_timeout: float = 5.0, engine: str | None = None) -> KuzuStore:
        """Open `home` with its own engine; `engine` picks one for a new store, and is refused
        (StorageError naming both) for a store of another engine. Not migrated yet."""
        return cls(KuzuConnection.open(home, lock_timeout=lock_timeout, engine=engine))

    @property
    def home(self) -> Path:
        return self.conn.home

    @property
    def engine_name(self) -> str:
        return self.conn.engine.name

    @property
    def closed(self) -> bool:
        return self.conn.closed

    def close(self) -> None:
        with self.conn.writer_paused():
            if self.conn.closed:
                return
            self.search.save(self.memories.count)
            self.conn.close()

    # -- transactions -------------------------------------------------------------------------

    @property
    def reads_own_writes(self) -> bool:
        return True

    @property
    def write_generation(self) -> int:
        return self.conn.write_generation

    def transaction(self, *, read_only: bool = False) -> AbstractContextManager[None]:
        return self.conn.transaction(read_only=read_only)

    def after_commit(self, callback: Callable[[], None]) -> None:
        self.conn.after_commit(callback)

    def emit(self, change: Change) -> None:
        self.conn.emit(change)

    @contextmanager
    def described_entity_writes(self) -> Iterator[None]:
        with self.conn.described_entity_writes():
            yield

    def until_write(self, name: str, compute: Callable[[], _T], *also: Hashable) -> _T:
        return self.conn.until_write(name, compute, *also)

    def background(self) -> AbstractContextManager[None]:
        return self.conn.background()

    def writer_paused(self) -> AbstractContextManager[None]:
        return self.conn.writer_paused()

    def exclusive(self, work: str, *, wait: float = 0.0) -> AbstractContextManager[bool]:
        return nullcontext(True)  # one process serves the store

    def checkpoint(self) -> None:
        self.conn.checkpoint()

    # -- the store as a whole -----------------------------------------------------------------

    def migrate(self) -> list[MigrationInfo]:
        return migrations.migrate(self.conn)

    def migration_status(self) -> DbStatus:
        return migrations.migration_status(self.conn)

    def cypher(self, query: str, params: dict[str, Any], *, write: bool) -> CypherResult:
        return self.conn.cypher(query, params, write=write)

    def meta_get(self, key: str) -> str | None:
        return self.conn.meta_get(key)

    def meta_set(self, key: str, value: str) -> None:
        self.conn.meta_set(key, value)

    def backup(self, dest: Path) -> BackupInfo:
        return take_backup(self, dest)
