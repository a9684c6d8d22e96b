"""graphmem: one shared, local-first memory for engineering agents, over an embedded Kùzu graph."""

from graphmem.errors import (
    Conflict,
    EmbeddingError,
    GraphmemError,
    InvalidInput,
    NotFound,
    SchemaError,
    StorageError,
    StoreError,
    StoreLocked,
)
from graphmem.models import (
    Hit,
    Memory,
    MemoryFilter,
    MemoryInput,
    MemoryPage,
    RecallResult,
    StoreStats,
)
from graphmem.recall.config import RecallConfig
from graphmem.service import GraphMemory, open_store
from graphmem.settings import Settings, load_settings

__version__ = "0.1.0"

__all__ = [
    "Conflict",
    "EmbeddingError",
    "GraphMemory",
    "GraphmemError",
    "Hit",
    "InvalidInput",
    "Memory",
    "MemoryFilter",
    "MemoryInput",
    "MemoryPage",
    "NotFound",
    "RecallConfig",
    "RecallResult",
    "SchemaError",
    "Settings",
    "StorageError",
    "StoreError",
    "StoreLocked",
    "StoreStats",
    "load_settings",
    "open_store",
]
