"""KuzuStore: everything the service needs from the database, in one object per data dir."""

from __future__ import annotations

from graphmem.storage.sessions import SessionRepository


class KuzuStore(SessionRepository):
    """Connection, migrations, vectors, memories, knowledge links, entities, documents and
    sessions of one data dir."""
