"""The hash embedder: deterministic, offline, and similar for texts that share words."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from graphmem.embeddings import EmbeddingSpace, HashEmbedder
from graphmem.errors import InvalidInput


def cos(embedder: HashEmbedder, a: str, b: str) -> float:
    va, vb = embedder.embed([a, b])
    return float(va @ vb)


def test_rows_are_float32_unit_vectors_of_the_chosen_dimension() -> None:
    vectors = HashEmbedder(dim=64).embed(["alpha beta", "gamma", "", "!!!"])
    assert vectors.shape == (4, 64)
    assert vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-6)


def test_empty_input_gives_zero_rows() -> None:
    assert HashEmbedder().embed([]).shape == (0, 384)


def test_texts_sharing_words_are_more_similar_than_texts_that_share_none() -> None:
    e = HashEmbedder()
    related = cos(e, "the store uses a kuzu graph database", "kuzu graph database backups")
    unrelated = cos(e, "the store uses a kuzu graph database", "lunch was pizza and salad")
    assert related > unrelated + 0.2


def test_misspellings_stay_close_through_character_trigrams() -> None:
    e = HashEmbedder()
    assert cos(e, "authentication", "authentcation") > cos(e, "authentication", "pineapple") + 0.3


def test_case_and_punctuation_do_not_matter() -> None:
    e = HashEmbedder()
    np.testing.assert_allclose(*e.embed(["Hello, World!", "hello world"]), atol=1e-7)


def test_the_same_text_always_gives_the_same_vector_even_in_another_process(tmp_path: Path) -> None:
    text = "deterministic across interpreter runs"
    expected = HashEmbedder().embed_query(text)
    out = tmp_path / "v.npy"
    code = (
        "import numpy as np; from graphmem.embeddings.hashing import HashEmbedder; "
        f"np.save({str(out)!r}, HashEmbedder().embed_query({text!r}))"
    )
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONHASHSEED": "12345", "PYTHONPATH": str(root)}
    subprocess.run([sys.executable, "-c", code], check=True, env=env)
    np.testing.assert_array_equal(np.load(out), expected)


def test_embed_query_is_the_row_of_embed() -> None:
    e = HashEmbedder()
    np.testing.assert_array_equal(e.embed_query("a query"), e.embed(["a query"])[0])


def test_the_space_is_named_after_the_hash_model_and_dimension() -> None:
    assert HashEmbedder(dim=128).space == EmbeddingSpace("hash", "hash-v1", 128)
    assert HashEmbedder(dim=128).space.name == "hash_hash_v1_128"


def test_a_tiny_dimension_is_refused() -> None:
    with pytest.raises(InvalidInput):
        HashEmbedder(dim=2)
