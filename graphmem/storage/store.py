"""KuzuStore: everything the service needs from the database, in one object per data dir."""

from __future__ import annotations

from graphmem.storage.steward import StewardRepository


class KuzuStore(StewardRepository):
    """Connection, migrations, vectors, memories, knowledge links, entities, documents,
    sessions and the steward's records of one data dir."""
