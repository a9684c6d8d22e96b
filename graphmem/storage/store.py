"""KuzuStore: everything the service needs from the database, in one object per data dir."""

from __future__ import annotations

from graphmem.storage.knowledge import KnowledgeRepository


class KuzuStore(KnowledgeRepository):
    """Connection, migrations, vectors, memories and knowledge links of one data dir."""
