"""The int8 engine of the local model: its own space, close to float32, and its quantisation."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from graphmem.embeddings import EmbeddingConfig, make_embedder
from graphmem.embeddings.int8 import quantise_columns
from graphmem.embeddings.local import LocalEmbedder
from graphmem.errors import EmbeddingError

model = pytest.mark.model

SENTENCES = [
    "The billing service moved from Postgres 13 to 15 last week.",
    "Rollback the payments deploy when p99 latency goes above 800 ms.",
    "We chose Kùzu over SQLite because recall walks the graph.",
    "hi",
    "",
    " ".join(f"token{i}" for i in range(300)),  # truncated at 256 tokens
]


@pytest.fixture(scope="module")
def int8() -> LocalEmbedder:
    return LocalEmbedder(int8=True)


@pytest.fixture(scope="module")
def fp32() -> LocalEmbedder:
    return LocalEmbedder()


def test_quantised_columns_rebuild_the_weights_within_half_a_step() -> None:
    rng = np.random.default_rng(3)
    w = rng.normal(size=(64, 16)).astype(np.float32)
    w[:, 5] *= 100  # a column with a far larger range keeps its own scale
    w[:, 9] = 0  # and an all-zero column stays zero
    q, scale = quantise_columns(w)
    assert q.dtype == np.int8 and scale.shape == (16,)
    assert np.abs(q).max() == 127
    error = np.abs(q * scale - w)
    assert (error <= scale / 2 + 1e-6).all()
    assert (q[:, 9] == 0).all()


def test_int8_is_the_local_default_and_a_space_apart_from_float32() -> None:
    default = make_embedder(EmbeddingConfig())
    float32 = make_embedder(EmbeddingConfig(model="all-MiniLM-L6-v2"))
    assert default.space.label == "local:all-MiniLM-L6-v2-int8/384"
    assert float32.space.label == "local:all-MiniLM-L6-v2/384"
    assert default.space.name != float32.space.name  # never mixed in one vector table


@model
def test_int8_vectors_are_unit_rows_close_to_the_float32_model(
    int8: LocalEmbedder, fp32: LocalEmbedder
) -> None:
    a, b = int8.embed(SENTENCES), fp32.embed(SENTENCES)
    assert a.shape == (len(SENTENCES), 384) and a.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(a, axis=1), 1.0, atol=1e-5)
    cosines = np.einsum("ij,ij->i", a, b)
    assert cosines.min() > 0.97  # the empty text, two special tokens, is the farthest
    assert cosines.mean() > 0.99


@model
def test_int8_ranks_a_paraphrase_above_unrelated_text(int8: LocalEmbedder) -> None:
    query = int8.embed_query("how do we undo a bad payments release?")
    docs = int8.embed(SENTENCES[:3])
    assert int(np.argmax(docs @ query)) == 1


@model
def test_a_text_embeds_alike_alone_and_in_a_batch(int8: LocalEmbedder) -> None:
    batch = int8.embed(SENTENCES)
    for i, text in enumerate(SENTENCES):
        # activations are quantised row by row, so the company a text keeps cannot move it
        assert float(int8.embed_query(text) @ batch[i]) > 0.9999


def test_without_onnx_runtime_the_int8_model_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from graphmem.embeddings import bert, int8

    monkeypatch.setitem(sys.modules, "onnxruntime", None)
    weights = bert.Weights(
        word=np.zeros((2, 4), np.float32),
        position=np.zeros((2, 4), np.float32),
        ln_g=np.ones(4, np.float32),
        ln_b=np.zeros(4, np.float32),
        layers=(),
        heads=1,
    )
    with pytest.raises(EmbeddingError, match="pip install onnxruntime"):
        int8.Int8Encoder(weights)
