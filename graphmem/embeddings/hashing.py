"""A deterministic feature-hashing embedder: real, instant and offline, for tests and tiny machines.

It knows no meaning, only surface form: texts that share words (or word fragments, via character
trigrams) get similar vectors. Use it for fast tests or where no model can run; use `local` for
real recall quality.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from functools import lru_cache

import numpy as np
from numpy.typing import NDArray

from graphmem.embeddings.base import EmbeddingSpace, check_texts, l2_normalise
from graphmem.errors import InvalidInput

MODEL_NAME = "hash-v1"
_WORD = re.compile(r"\w+")
_WORD_WEIGHT = 1.0
_TRIGRAM_WEIGHT = 0.5
_EMPTY_FEATURE = "\x00empty"  # what a text without any word hashes to, so its row is unit length


@lru_cache(maxsize=65536)
def _bucket(feature: str, dim: int) -> tuple[int, float]:
    """Stable (index, sign) of a feature: blake2b, never Python's per-process salted hash()."""
    digest = int.from_bytes(
        hashlib.blake2b(feature.encode("utf-8"), digest_size=8).digest(), "little"
    )
    return digest % dim, 1.0 if (digest >> 63) & 1 else -1.0


def features(text: str) -> list[tuple[str, float]]:
    """Weighted features of a text: each lowercased word, plus the trigrams of `<word>`."""
    out: list[tuple[str, float]] = []
    for word in _WORD.findall(text.lower()):
        out.append(("w:" + word, _WORD_WEIGHT))
        padded = f"<{word}>"
        out.extend(("t:" + padded[i : i + 3], _TRIGRAM_WEIGHT) for i in range(len(padded) - 2))
    return out or [(_EMPTY_FEATURE, 1.0)]


class HashEmbedder:
    """Signed feature hashing of words and character trigrams into `dim` buckets, L2-normalised."""

    def __init__(self, dim: int = 384) -> None:
        if dim < 8:
            raise InvalidInput("the hash embedder needs dim >= 8", dim=dim)
        self._space = EmbeddingSpace("hash", MODEL_NAME, dim)

    @property
    def space(self) -> EmbeddingSpace:
        return self._space

    def embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        items = check_texts(texts)
        dim = self._space.dim
        out = np.zeros((len(items), dim), dtype=np.float32)
        for row, text in enumerate(items):
            vec = out[row]
            for feature, weight in features(text):
                index, sign = _bucket(feature, dim)
                vec[index] += sign * weight
            if not vec.any():  # every feature cancelled out: fall back to a fixed direction
                index, sign = _bucket(_EMPTY_FEATURE, dim)
                vec[index] = sign
        return l2_normalise(out)

    def embed_query(self, text: str) -> NDArray[np.float32]:
        row: NDArray[np.float32] = self.embed([text])[0]
        return row
