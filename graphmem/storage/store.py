"""KuzuStore: everything the service needs from the database, in one object per data dir."""

from __future__ import annotations

from graphmem.storage.entities import EntityRepository


class KuzuStore(EntityRepository):
    """Connection, migrations, vectors, memories, knowledge links and entities of one data dir."""
