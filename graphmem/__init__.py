"""graphmem: one shared, local-first memory for engineering agents, over an embedded Kùzu graph.

Names are imported on first use, so that `import graphmem.cli...` or a hook that talks to the
owner process never pays for Kùzu, numpy or the embedding model it does not need.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

_EXPORTS = {
    "Conflict": "graphmem.errors",
    "EmbeddingError": "graphmem.errors",
    "GraphmemError": "graphmem.errors",
    "InvalidInput": "graphmem.errors",
    "NotFound": "graphmem.errors",
    "OutcomeUnknown": "graphmem.errors",
    "SchemaError": "graphmem.errors",
    "StorageError": "graphmem.errors",
    "StoreError": "graphmem.errors",
    "StoreLocked": "graphmem.errors",
    "Hit": "graphmem.models",
    "Memory": "graphmem.models",
    "MemoryFilter": "graphmem.models",
    "MemoryInput": "graphmem.models",
    "MemoryPage": "graphmem.models",
    "RecallResult": "graphmem.models",
    "RecallWarning": "graphmem.models",
    "StoreStats": "graphmem.models",
    "RecallConfig": "graphmem.recall.config",
    "GraphMemory": "graphmem.service",
    "open_store": "graphmem.service",
    "Settings": "graphmem.settings",
    "load_settings": "graphmem.settings",
}

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
    "OutcomeUnknown",
    "RecallConfig",
    "RecallResult",
    "RecallWarning",
    "SchemaError",
    "Settings",
    "StorageError",
    "StoreError",
    "StoreLocked",
    "StoreStats",
    "load_settings",
    "open_store",
]

if TYPE_CHECKING:
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
        RecallWarning,
        StoreStats,
    )
    from graphmem.recall.config import RecallConfig
    from graphmem.service import GraphMemory, open_store
    from graphmem.settings import Settings, load_settings


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        value = getattr(importlib.import_module(_EXPORTS[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'graphmem' has no attribute {name!r}")
