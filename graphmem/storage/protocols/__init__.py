"""What the domain knows of storage: narrow protocols, one per concern, each method's contract
in its docstring, composed into `Store`. Code outside graphmem/storage/ is typed against these,
never against an engine's classes (see docs/adr/0012-storage-interface.md)."""

from graphmem.storage.protocols.documents import Documents, DocumentWrite, IndexedDocument
from graphmem.storage.protocols.entities import (
    Entities,
    EntityLink,
    EntityRow,
    FactRow,
    Mention,
    Provenance,
    compact_key,
    fact_id,
)
from graphmem.storage.protocols.knowledge import Knowledge
from graphmem.storage.protocols.memories import Memories
from graphmem.storage.protocols.pending import CHUNK_EXTRACT, EXTRACT, PASSAGES, WORKS, Pending
from graphmem.storage.protocols.sessions import Sessions
from graphmem.storage.protocols.steward import POLICY_KEY, Steward
from graphmem.storage.protocols.store import Store
from graphmem.storage.protocols.tables import Digest, Tables, TableSpec
from graphmem.storage.protocols.transactions import Transactions
from graphmem.storage.protocols.vectors import PassageMatch, PassageVectors, Vectors

__all__ = [
    "CHUNK_EXTRACT",
    "EXTRACT",
    "PASSAGES",
    "POLICY_KEY",
    "WORKS",
    "Digest",
    "DocumentWrite",
    "Documents",
    "Entities",
    "EntityLink",
    "EntityRow",
    "FactRow",
    "IndexedDocument",
    "Knowledge",
    "Memories",
    "Mention",
    "PassageMatch",
    "PassageVectors",
    "Pending",
    "Provenance",
    "Sessions",
    "Steward",
    "Store",
    "TableSpec",
    "Tables",
    "Transactions",
    "Vectors",
    "compact_key",
    "fact_id",
]
