"""`--embedding` values: a provider (`local`), or a provider and model (`local:all-MiniLM-L6-v2-int8`)."""

from __future__ import annotations

from graphmem.embeddings.config import EmbeddingConfig

HELP = "embedding provider, or provider:model (local | hash | local:all-MiniLM-L6-v2-int8)"


def _split(spec: str) -> tuple[str, str | None]:
    provider, _, model = spec.partition(":")
    return provider, model or None


def config(spec: str) -> EmbeddingConfig:
    provider, model = _split(spec)
    return EmbeddingConfig(provider=provider, model=model)


def environ(spec: str) -> dict[str, str]:
    """The variables that give a child `graphmem` process the same embedder."""
    provider, model = _split(spec)
    return {
        "GRAPHMEM_EMBEDDING_PROVIDER": provider,
        **({"GRAPHMEM_EMBEDDING_MODEL": model} if model else {}),
    }
