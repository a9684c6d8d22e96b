"""What every embedding provider promises, so the store and recall code never care which one runs.

An `EmbeddingSpace` names the vector space a provider writes into. Vectors from different
spaces must never be compared, so the store keys its vector tables by `EmbeddingSpace.name`.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np
from numpy.typing import NDArray

from graphmem.errors import InvalidInput

_NOT_IDENT = re.compile(r"[^a-z0-9]+")
_MAX_NAME = 100


def _slug(text: str) -> str:
    return _NOT_IDENT.sub("_", text.lower()).strip("_")


@dataclass(frozen=True)
class EmbeddingSpace:
    """A provider, model and dimension: vectors are comparable only within one space."""

    provider: str
    model: str
    dim: int

    def __post_init__(self) -> None:
        if not self.provider.strip() or not self.model.strip():
            raise InvalidInput("an embedding space needs a provider and a model", space=self.label)
        if self.dim < 1:
            raise InvalidInput("an embedding space needs a positive dimension", dim=self.dim)

    @property
    def name(self) -> str:
        """A lowercase `[a-z0-9_]` identifier, safe inside a table name: `local_all_minilm_l6_v2_384`."""
        parts = [p for p in (_slug(self.provider), _slug(self.model)) if p]
        name = "_".join([*parts, str(self.dim)])
        if not name[0].isalpha():
            name = "e_" + name
        if len(name) > _MAX_NAME:  # keep it short but still unique
            digest = hashlib.blake2b(self.label.encode(), digest_size=4).hexdigest()
            head = name[: _MAX_NAME - 10 - len(str(self.dim))].rstrip("_")
            name = f"{head}_{digest}_{self.dim}"
        return name

    @property
    def label(self) -> str:
        """Human-readable form for messages: `local:all-MiniLM-L6-v2/384`."""
        return f"{self.provider}:{self.model}/{self.dim}"


class Embedder(Protocol):
    """Turns texts into unit-length float32 rows of one `EmbeddingSpace`.

    Implementations raise `graphmem.errors.EmbeddingError` when the provider fails.
    """

    @property
    def space(self) -> EmbeddingSpace: ...

    def embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        """Embed documents: shape (len(texts), dim), float32, every row L2-normalised."""
        ...

    def embed_query(self, text: str) -> NDArray[np.float32]:
        """Embed one search query: shape (dim,), float32, L2-normalised."""
        ...


def check_texts(texts: Sequence[str]) -> list[str]:
    """Reject the classic mistakes (a bare string, non-string items) before any work is done."""
    if isinstance(texts, str | bytes):
        raise InvalidInput("embed() takes a sequence of texts, not a single string")
    out = list(texts)
    for i, text in enumerate(out):
        if not isinstance(text, str):
            raise InvalidInput(
                "every text to embed must be a str", index=i, type=type(text).__name__
            )
    return out


def l2_normalise(rows: NDArray[np.float32]) -> NDArray[np.float32]:
    """Scale every row to unit length in place (rows of zeros are left as they are)."""
    norms = np.sqrt(np.einsum("ij,ij->i", rows, rows, dtype=np.float64)).astype(np.float32)
    norms[norms == 0] = 1.0
    rows /= norms[:, None]
    return rows
