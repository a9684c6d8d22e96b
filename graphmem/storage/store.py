"""KuzuStore: everything the service needs from the database, in one object per data dir."""

from __future__ import annotations

from graphmem.storage.documents import DocumentRepository


class KuzuStore(DocumentRepository):
    """Connection, migrations, vectors, memories, knowledge links, entities and documents of one
    data dir."""
