"""Store: one data dir's store, composed of a repository per concern over one connection."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol

from graphmem.models import BackupInfo, CypherResult, DbStatus, MigrationInfo
from graphmem.storage.protocols.documents import Documents
from graphmem.storage.protocols.entities import Entities
from graphmem.storage.protocols.knowledge import Knowledge
from graphmem.storage.protocols.memories import Memories
from graphmem.storage.protocols.pending import Pending
from graphmem.storage.protocols.sessions import Sessions
from graphmem.storage.protocols.steward import Steward
from graphmem.storage.protocols.tables import Tables
from graphmem.storage.protocols.transactions import Transactions
from graphmem.storage.protocols.vectors import Vectors


class Store(Transactions, Protocol):
    """Everything the domain asks of a store: `store.memories.get(id)`, `store.vectors.
    nearest(...)`, and the transactions they share (`with store.transaction(): ...` joins the
    writes of several repositories into one commit)."""

    @property
    def memories(self) -> Memories: ...

    @property
    def vectors(self) -> Vectors: ...

    @property
    def knowledge(self) -> Knowledge: ...

    @property
    def entities(self) -> Entities: ...

    @property
    def documents(self) -> Documents: ...

    @property
    def sessions(self) -> Sessions: ...

    @property
    def steward(self) -> Steward: ...

    @property
    def pending(self) -> Pending: ...

    @property
    def tables(self) -> Tables: ...

    @property
    def home(self) -> Path:
        """The data dir."""
        ...

    @property
    def engine_name(self) -> str:
        """The engine the store runs on (graphmem.storage.engines)."""
        ...

    @property
    def closed(self) -> bool: ...

    def close(self) -> None:
        """Save the search state of a big store for the next process, then close the
        database and let another process open it. Closing twice is fine."""
        ...

    def migrate(self) -> list[MigrationInfo]:
        """Apply pending schema migrations in order, one transaction each; SchemaError for a
        store newer than this graphmem or a migration that fails."""
        ...

    def migration_status(self) -> DbStatus: ...

    def cypher(self, query: str, params: dict[str, Any], *, write: bool) -> CypherResult:
        """Run a caller's query in the engine's own language; read-only unless `write`
        (InvalidInput when it writes anyway, or names transaction control). A write drops
        the search state, to be read again."""
        ...

    def meta_get(self, key: str) -> str | None: ...

    def meta_set(self, key: str, value: str) -> None: ...

    def backup(self, dest: Path) -> BackupInfo:
        """A consistent copy of the store in a new or empty directory, taken while it keeps
        serving reads; InvalidInput for a directory inside the store, Conflict for one that
        is not empty."""
        ...
