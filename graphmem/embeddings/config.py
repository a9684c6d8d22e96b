"""Which embedding provider to use and how to reach it; one validated object, so providers never parse.

`Settings` fills this from config.toml, `.env` and `GRAPHMEM_EMBEDDING_*` variables. Defaults that
depend on the provider (model, URL) are resolved by `resolved_model` and `resolved_url`.
"""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError

from graphmem.errors import InvalidInput, validation_message

Provider = Literal["local", "hash", "ollama", "openai", "jina"]
REMOTE_PROVIDERS: frozenset[str] = frozenset({"ollama", "openai", "jina"})

FLOAT32_LOCAL_MODEL = "all-MiniLM-L6-v2"  # the default before the int8 model
INT8_LOCAL_MODEL = FLOAT32_LOCAL_MODEL + "-int8"
LOCAL_DIM = 384
DEFAULT_MODELS: dict[str, str] = {
    "local": INT8_LOCAL_MODEL,
    "hash": "hash-v1",
    "ollama": "nomic-embed-text",
    "openai": "text-embedding-3-small",
    "jina": "jina-embeddings-v3",
}
DEFAULT_URLS: dict[str, str] = {
    "ollama": "http://127.0.0.1:11434",
    "openai": "https://api.openai.com/v1",
    "jina": "https://api.jina.ai/v1",
}


def _space_name(provider: str, model: str) -> str:
    from graphmem.embeddings.base import EmbeddingSpace

    return EmbeddingSpace(provider, model, LOCAL_DIM).name


class EmbeddingConfig(BaseModel):
    """Embedding provider settings. `api_key` is a SecretStr: it never shows in repr or logs."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    provider: Provider = "local"
    model: str | None = None
    url: str | None = None
    api_key: SecretStr | None = None
    dim: int | None = Field(default=None, ge=1, le=65536)
    mode: Literal["any", "local-only"] = "any"
    timeout: float = Field(default=30.0, gt=0)
    retries: int = Field(default=3, ge=0, le=10)
    batch_size: int | None = Field(
        default=None,
        ge=1,
        le=4096,
        description="texts per embedding call; None: the provider's own (local 8, servers 64)",
    )
    cache_dir: Path | None = Field(
        default=None, description="where built models are kept; None builds them every load"
    )

    def __init__(self, **data: Any) -> None:
        try:
            super().__init__(**data)
        except ValidationError as exc:
            # Built from locations and messages only: the rejected values may include the key.
            message = validation_message(exc)
            raise InvalidInput(f"invalid embedding config: {message}") from None

    @property
    def is_remote(self) -> bool:
        return self.provider in REMOTE_PROVIDERS

    def resolved_model(self) -> str:
        """The configured model, or the provider's default."""
        return self.model or DEFAULT_MODELS[self.provider]

    def for_store(self, space_names: Collection[str]) -> EmbeddingConfig:
        """This config for a store holding vectors in the spaces named `space_names`.

        The local default became the int8 model; a store whose local vectors are all float32
        (made before) keeps the float32 model until it is re-embedded, rather than having
        every memory missing a vector. A model set explicitly is always used as set.
        """
        if self.provider != "local" or self.model is not None:
            return self
        float32 = _space_name("local", FLOAT32_LOCAL_MODEL)
        if float32 in space_names and _space_name("local", INT8_LOCAL_MODEL) not in space_names:
            return self.model_copy(update={"model": FLOAT32_LOCAL_MODEL})
        return self

    def resolved_url(self) -> str | None:
        """The configured base URL without a trailing slash, or the provider's default (None if local)."""
        url = self.url or DEFAULT_URLS.get(self.provider)
        return url.rstrip("/") if url else None

    def secret(self) -> str | None:
        """The API key in clear, for the one place that sends it; None if unset or blank."""
        if self.api_key is None:
            return None
        return self.api_key.get_secret_value().strip() or None
