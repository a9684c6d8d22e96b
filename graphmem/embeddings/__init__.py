"""Embedding providers behind one protocol: a numpy MiniLM by default, hashing for tests, HTTP on request.

Only the light modules load here; the model code and httpx load when a provider is built.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from graphmem.embeddings.base import Embedder, EmbeddingSpace
from graphmem.embeddings.config import EmbeddingConfig
from graphmem.embeddings.factory import make_embedder
from graphmem.embeddings.hashing import HashEmbedder

if TYPE_CHECKING:
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
