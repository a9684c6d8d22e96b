"""Embedding over HTTP (Ollama, OpenAI-compatible servers, Jina), for users who choose a remote model.

Providers differ only in request and response shapes; retries, batching, validation and
normalisation live once in `RemoteEmbedder`. Every failure becomes an `EmbeddingError` whose
text has passed through `_redact`, so an API key never reaches a message or a log.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from typing import Any, ClassVar, Self

import httpx
import numpy as np
from numpy.typing import NDArray

from graphmem.embeddings.base import EmbeddingSpace, check_texts, l2_normalise
from graphmem.embeddings.config import DEFAULT_MODELS, DEFAULT_URLS, EmbeddingConfig
from graphmem.errors import EmbeddingError, InvalidInput

F32 = NDArray[np.float32]
BACKOFF_BASE = 0.2
BACKOFF_CAP = 2.0
PROBE_TEXT = "graphmem dimension probe"
_DETAIL_CHARS = 200


class RemoteEmbedder:
    """Shared machinery of the HTTP providers; subclasses define `path`, `_body` and `_rows`."""

    provider: ClassVar[str]
    path: ClassVar[str]

    def __init__(
        self,
        *,
        model: str | None = None,
        url: str | None = None,
        api_key: str | None = None,
        dim: int | None = None,
        timeout: float = 30.0,
        retries: int = 3,
        batch_size: int = 64,
        transport: httpx.BaseTransport | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self._model = model or DEFAULT_MODELS[self.provider]
        self._key = api_key or None
        base = (url or DEFAULT_URLS[self.provider]).rstrip("/")
        try:
            parsed = httpx.URL(base)
        except httpx.InvalidURL:
            raise InvalidInput(f"invalid {self.provider} URL", provider=self.provider) from None
        if parsed.scheme not in ("http", "https") or not parsed.host:
            raise InvalidInput(
                f"{self.provider} URL must be http(s)://host...", provider=self.provider
            )
        if dim is not None and dim < 1:
            raise InvalidInput("dim must be positive", dim=dim)
        self._endpoint = base + self.path
        self._shown_url = self._redact(
            str(parsed.copy_with(username=None, password=None)) + self.path
        )
        self._dim = dim
        self._retries = max(0, retries)
        self._batch_size = max(1, batch_size)
        self._sleep = sleep
        headers = {"Authorization": f"Bearer {self._key}"} if self._key else {}
        self._client = httpx.Client(timeout=timeout, transport=transport, headers=headers)

    @classmethod
    def from_config(
        cls,
        config: EmbeddingConfig,
        *,
        transport: httpx.BaseTransport | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> Self:
        return cls(
            model=config.resolved_model(),
            url=config.resolved_url(),
            api_key=config.secret(),
            dim=config.dim,
            timeout=config.timeout,
            retries=config.retries,
            batch_size=config.batch_size or 64,
            transport=transport,
            sleep=sleep,
        )

    # -- the Embedder protocol -------------------------------------------------------------

    @property
    def space(self) -> EmbeddingSpace:
        """The space; if no dim was configured, the first read asks the provider once."""
        if self._dim is None:
            self._embed([PROBE_TEXT], query=False)
        assert self._dim is not None
        return EmbeddingSpace(self.provider, self._model, self._dim)

    def embed(self, texts: Sequence[str]) -> F32:
        return self._embed(check_texts(texts), query=False)

    def embed_query(self, text: str) -> F32:
        row: F32 = self._embed(check_texts([text]), query=True)[0]
        return row

    def close(self) -> None:
        self._client.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"{type(self).__name__}(model={self._model!r}, url={self._shown_url!r})"

    # -- provider shapes -------------------------------------------------------------------

    def _body(self, texts: list[str], query: bool) -> dict[str, Any]:
        return {"model": self._model, "input": texts}

    def _rows(self, payload: Any, count: int) -> list[Any]:
        raise NotImplementedError

    # -- machinery -------------------------------------------------------------------------

    def _embed(self, texts: list[str], query: bool) -> F32:
        if not texts:
            return np.zeros((0, self.space.dim), dtype=np.float32)
        parts = []
        for start in range(0, len(texts), self._batch_size):
            batch = texts[start : start + self._batch_size]
            payload = self._post(self._body(batch, query))
            parts.append(self._matrix(self._rows(payload, len(batch)), len(batch)))
        return l2_normalise(np.concatenate(parts))

    def _matrix(self, rows: list[Any], count: int) -> F32:
        try:
            arr = np.array(rows)
        except ValueError:
            raise self._error("returned vectors of inconsistent dimensions") from None
        if (
            arr.ndim != 2
            or arr.shape[0] != count
            or arr.dtype.kind not in "fiu"
            or arr.shape[1] < 1
        ):
            raise self._error(f"returned malformed vectors (expected {count} lists of numbers)")
        matrix = arr.astype(np.float32)
        if not np.isfinite(matrix).all():
            raise self._error("returned non-finite numbers")
        if not np.any(matrix, axis=1).all():
            raise self._error("returned an all-zero vector")
        dim = matrix.shape[1]
        if self._dim is None:
            self._dim = dim
        elif dim != self._dim:
            raise self._error(f"returned {dim}-dimensional vectors, expected {self._dim}", dim=dim)
        return matrix

    def _post(self, body: dict[str, Any]) -> Any:
        if self._client.is_closed:
            raise self._error("cannot be used: the embedder was closed")
        attempts = self._retries + 1
        for attempt in range(attempts):
            try:
                response = self._client.post(self._endpoint, json=body)
            except httpx.UnsupportedProtocol as exc:
                raise self._error(f"cannot use this URL ({exc})") from None
            except httpx.TimeoutException:
                failure = self._error("timed out", attempts=attempt + 1, reason="timeout")
            except httpx.TransportError as exc:
                failure = self._error(
                    f"is unreachable ({type(exc).__name__}: {exc})",
                    attempts=attempt + 1,
                    reason="network",
                )
            else:
                status = response.status_code
                if status < 300:
                    return self._json(response)
                if status < 400:  # not followed: the key must not travel to another address
                    where = response.headers.get("location", "elsewhere")
                    raise self._error(f"redirects to {where}; configure that URL", status=status)
                failure = self._http_error(response, attempt + 1)
                if status != 429 and status < 500:
                    raise failure
            if attempt + 1 < attempts:
                self._sleep(min(BACKOFF_BASE * 2**attempt, BACKOFF_CAP))
        raise failure

    def _json(self, response: httpx.Response) -> Any:
        try:
            return response.json()
        except (json.JSONDecodeError, UnicodeDecodeError):
            raise self._error("returned malformed JSON", status=response.status_code) from None

    def _http_error(self, response: httpx.Response, attempts: int) -> EmbeddingError:
        status = response.status_code
        if status in (401, 403):  # bodies here may echo (part of) the key: never show them
            hint = (
                "check GRAPHMEM_EMBEDDING_API_KEY" if self.provider != "ollama" else "check the URL"
            )
            return self._error(f"rejected the request (HTTP {status}); {hint}", status=status)
        detail = ""
        try:
            payload = response.json()
            error = (
                payload.get("error", payload.get("detail", "")) if isinstance(payload, dict) else ""
            )
            detail = str(error.get("message", error) if isinstance(error, dict) else error)
        except (json.JSONDecodeError, UnicodeDecodeError):
            detail = response.text
        detail = " ".join(detail.split())[:_DETAIL_CHARS]
        suffix = f": {detail}" if detail else ""
        return self._error(f"answered HTTP {status}{suffix}", status=status, attempts=attempts)

    def _error(self, what: str, **fields: Any) -> EmbeddingError:
        message = self._redact(f"{self.provider} embedding at {self._shown_url} {what}")
        return EmbeddingError(message, provider=self.provider, url=self._shown_url, **fields)

    def _redact(self, text: str) -> str:
        return text.replace(self._key, "***") if self._key else text


class OllamaEmbedder(RemoteEmbedder):
    """Ollama's batch endpoint: POST /api/embed {"model", "input"} -> {"embeddings": [[...]]}."""

    provider = "ollama"
    path = "/api/embed"

    def _rows(self, payload: Any, count: int) -> list[Any]:
        rows = payload.get("embeddings") if isinstance(payload, dict) else None
        if not isinstance(rows, list) or len(rows) != count:
            raise self._error(f"answered without {count} embeddings")
        return rows


class OpenAIEmbedder(RemoteEmbedder):
    """Any OpenAI-compatible server: POST /embeddings -> {"data": [{"index", "embedding"}]}."""

    provider = "openai"
    path = "/embeddings"

    def _rows(self, payload: Any, count: int) -> list[Any]:
        data = payload.get("data") if isinstance(payload, dict) else None
        if not isinstance(data, list) or len(data) != count:
            raise self._error(f"answered without {count} embeddings")
        if not all(isinstance(item, dict) and "embedding" in item for item in data):
            raise self._error("answered items without an embedding")
        if all("index" in item for item in data):
            indexes = [item["index"] for item in data]
            if not all(type(i) is int for i in indexes) or sorted(indexes) != list(range(count)):
                raise self._error("answered with wrong indexes")
            data = sorted(data, key=lambda item: int(item["index"]))
        return [item["embedding"] for item in data]


class JinaEmbedder(OpenAIEmbedder):
    """Jina AI: the OpenAI shape plus a retrieval task, which differs for documents and queries."""

    provider = "jina"

    def _body(self, texts: list[str], query: bool) -> dict[str, Any]:
        return {
            **super()._body(texts, query),
            "task": "retrieval.query" if query else "retrieval.passage",
        }
