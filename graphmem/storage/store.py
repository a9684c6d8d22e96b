"""KuzuStore: everything the service needs from the database, in one object per data dir."""

from __future__ import annotations

from graphmem.storage.memories import MemoryRepository


class KuzuStore(MemoryRepository):
    """Connection, migrations, vectors and memories of one data dir (see the base classes)."""
