"""Embedding providers behind one protocol: a numpy MiniLM by default, hashing for tests, HTTP on request.

Names load on first use: settings need only the config, and a CLI call served by the owner
process never loads numpy, the model code or httpx.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from graphmem.embeddings.base import Embedder, EmbeddingSpace
    from graphmem.embeddings.config import EmbeddingConfig
    from graphmem.embeddings.factory import make_embedder
    from graphmem.embeddings.hashing import HashEmbedder
    from graphmem.embeddings.local import LocalEmbedder
    from graphmem.embeddings.remote import JinaEmbedder, OllamaEmbedder, OpenAIEmbedder

__all__ = [
    "Embedder",
    "EmbeddingConfig",
    "EmbeddingSpace",
    "HashEmbedder",
    "JinaEmbedder",
    "LocalEmbedder",
    "OllamaEmbedder",
    "OpenAIEmbedder",
    "make_embedder",
]

_LAZY = {
    "Embedder": "graphmem.embeddings.base",
    "EmbeddingSpace": "graphmem.embeddings.base",
    "EmbeddingConfig": "graphmem.embeddings.config",
    "make_embedder": "graphmem.embeddings.factory",
    "HashEmbedder": "graphmem.embeddings.hashing",
    "LocalEmbedder": "graphmem.embeddings.local",
    "OllamaEmbedder": "graphmem.embeddings.remote",
    "OpenAIEmbedder": "graphmem.embeddings.remote",
    "JinaEmbedder": "graphmem.embeddings.remote",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'graphmem.embeddings' has no attribute {name!r}")
