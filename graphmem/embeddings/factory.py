"""Build the configured embedder in one place, where the local-only policy is enforced.

Imports are deferred so choosing `hash` or a remote provider never loads the numpy model code,
and choosing `local` never imports httpx.
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING

from graphmem.embeddings.base import Embedder
from graphmem.embeddings.config import DEFAULT_MODELS, EmbeddingConfig
from graphmem.errors import EmbeddingError, InvalidInput

if TYPE_CHECKING:
    import httpx

_LOCAL_ALIASES = {"all-minilm-l6-v2", "sentence-transformers/all-minilm-l6-v2"}
_INT8_ALIASES = {alias + "-int8" for alias in _LOCAL_ALIASES}


def make_embedder(
    config: EmbeddingConfig, *, transport: httpx.BaseTransport | None = None
) -> Embedder:
    """The embedder `config` asks for; `transport` replaces the network (tests use MockTransport)."""
    provider = config.provider
    if config.is_remote and config.mode == "local-only":
        raise EmbeddingError(
            f"the {provider} embedding provider is remote, and remote providers are forbidden by "
            "GRAPHMEM_EMBEDDING_MODE=local-only; use provider 'local' or 'hash'",
            provider=provider,
            mode=config.mode,
        )
    if provider == "local":
        from graphmem.embeddings.local import BATCH, DIM, INT8_MODEL_NAME, MODEL_NAME, LocalEmbedder

        model = config.resolved_model().lower()
        if model not in _LOCAL_ALIASES | _INT8_ALIASES:
            raise InvalidInput(
                f"the local provider ships {INT8_MODEL_NAME} and {MODEL_NAME}; "
                "use ollama or an OpenAI-compatible server for other models",
                model=config.model,
            )
        if config.dim not in (None, DIM):
            raise InvalidInput(f"{MODEL_NAME} has {DIM} dimensions", dim=config.dim)
        return LocalEmbedder(
            batch_size=config.batch_size or BATCH,
            int8=model in _INT8_ALIASES,
            cache_dir=config.cache_dir,
        )
    if provider == "hash":
        from graphmem.embeddings.hashing import HashEmbedder

        if config.resolved_model() != DEFAULT_MODELS["hash"]:
            raise InvalidInput("the hash provider has one model, hash-v1", model=config.model)
        return HashEmbedder(dim=config.dim or 384)

    from graphmem.embeddings.remote import JinaEmbedder, OllamaEmbedder, OpenAIEmbedder

    classes = {"ollama": OllamaEmbedder, "openai": OpenAIEmbedder, "jina": JinaEmbedder}
    return classes[provider].from_config(config, transport=transport)


def warm(embedder: Embedder) -> None:
    """Load a model ahead of use. A failure is left for the first real use to raise."""
    load = getattr(embedder, "load", None)
    if load is not None:
        with contextlib.suppress(Exception):
            load()
