"""FalkorStore: a store in one graph of a FalkorDB server, composed of one repository per concern
over one connection, as the embedded engines' KuzuStore is. The data dir (`home`) keeps the
settings, tokens and the search cache; the graph keeps the memories.

Being built (docs/adr/0011-falkordb-engine.md): memories, vectors, pending work, metadata, the
schema and its migrations, the caller's Cypher, the scans the search state is built from and
the follower of the change stream that keeps it in step with the other nodes, the steward's
records and reads, documents, the entity graph, knowledge (versions, merges, dead ends,
citations), sessions with their review items, copying a store table by table between engines
and backups are here.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any, TypeVar

from graphmem.indexes.changes import Change
from graphmem.indexes.search_state import SearchSource, SearchState
from graphmem.models import BackupInfo, CypherResult, DbStatus, MigrationInfo
from graphmem.storage.falkordb import backup, schema
from graphmem.storage.falkordb.connection import FalkorConnection
from graphmem.storage.falkordb.documents import FalkorDocuments
from graphmem.storage.falkordb.entities import FalkorEntities
from graphmem.storage.falkordb.follower import ChangeFollower
from graphmem.storage.falkordb.knowledge import FalkorKnowledge
from graphmem.storage.falkordb.lease import Lease
from graphmem.storage.falkordb.memories import ENGINE, FalkorMemories
from graphmem.storage.falkordb.pending import FalkorPending
from graphmem.storage.falkordb.scans import FalkorScans
from graphmem.storage.falkordb.sessions import FalkorSessions
from graphmem.storage.falkordb.steward import FalkorSteward
from graphmem.storage.falkordb.tables import FalkorTables
from graphmem.storage.falkordb.vectors import FalkorVectors
from graphmem.storage.protocols import (
    Documents,
    Entities,
    Knowledge,
    Memories,
    Pending,
    Sessions,
    Steward,
    Tables,
    Transactions,
    Vectors,
)
from graphmem.store_url import StoreUrl

_T = TypeVar("_T")


class FalkorStore:
    """One project's graph on a FalkorDB server; every method is safe to call from several
    threads."""

    def __init__(self, conn: FalkorConnection, *, follow: bool = True) -> None:
        self.conn = conn
        self.scans = FalkorScans(conn)
        self.search = SearchState(self.scans, conn.home)
        conn.listen(self.search)
        self.pending = FalkorPending(conn)
        self.vectors = FalkorVectors(conn, self.search)
        self.memories = FalkorMemories(conn, self.search, self.vectors, self.pending)
        self.steward = FalkorSteward(conn)
        self.documents = FalkorDocuments(conn, self.search, self.vectors, self.pending)
        self.entities = FalkorEntities(conn, self.search, self.memories, self.pending)
        self.tables = FalkorTables(conn, self.vectors, self.search)
        self.knowledge = FalkorKnowledge(conn, self.memories)
        self.sessions = FalkorSessions(conn)
        # mypy holds each repository to its protocol
        _checked: tuple[
            Memories, Vectors, Pending, Steward, Documents, Entities, Tables, Knowledge,
            Sessions, SearchSource, Transactions,
        ] = (
            self.memories, self.vectors, self.pending, self.steward, self.documents,
            self.entities, self.tables, self.knowledge, self.sessions, self.scans, self,
        )  # fmt: skip
        # the other nodes' writes, from the change stream: from where the search cache was
        # saved, when the others wrote since
        if follow:
            since = self.search.resume()
            self.follower: ChangeFollower | None = ChangeFollower(conn, self.search, since=since)
            self.follower.start()
        else:
            self.follower = None

    @classmethod
    def open(
        cls,
        url: StoreUrl,
        home: Path,
        *,
        follow: bool = True,
        lock_timeout: float = 5.0,
        replicas: int = 0,
    ) -> FalkorStore:
        """Connect to the graph `url` names, the search cache in `home` (this process's while
        open: StoreLocked after `lock_timeout` s); not migrated yet. `follow`: keep the search
        state in step with the other nodes' writes (a thread). `replicas`: a commit returns
        once that many replicas have it (StorageError, written, when they do not in time)."""
        home.mkdir(parents=True, exist_ok=True)
        conn = FalkorConnection.open(url, home, lock_timeout=lock_timeout, replicas=replicas)
        try:
            return cls(conn, follow=follow)
        except BaseException:
            conn.close()
            raise

    # -- the store as a whole -----------------------------------------------------------------

    def backup(self, dest: Path) -> BackupInfo:
        return backup.take_backup(self, dest)

    @property
    def home(self) -> Path:
        return self.conn.home

    @property
    def engine_name(self) -> str:
        return ENGINE

    @property
    def closed(self) -> bool:
        return self.conn.closed

    def close(self) -> None:
        follower = self.follower
        if follower is not None:
            follower.stop()
        with self.conn.writer_paused():
            if self.conn.closed:
                return
            # the cache says where in the stream it is exact: a restart replays from there
            position = follower.catch_up() if follower is not None else None
            self.search.save(self.memories.count, position=position)
            if follower is not None:
                follower.close()
            self.conn.close()

    def migrate(self) -> list[MigrationInfo]:
        return schema.migrate(self.conn)

    def migration_status(self) -> DbStatus:
        return schema.migration_status(self.conn)

    def cypher(self, query: str, params: dict[str, Any], *, write: bool) -> CypherResult:
        return self.conn.cypher(query, params, write=write)

    def meta_get(self, key: str) -> str | None:
        return self.conn.meta_get(key)

    def meta_set(self, key: str, value: str) -> None:
        self.conn.meta_set(key, value)

    # -- transactions -------------------------------------------------------------------------

    @property
    def reads_own_writes(self) -> bool:
        return False

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
        return Lease(self.conn, work).holding(wait=wait)

    def checkpoint(self) -> None:
        self.conn.checkpoint()
