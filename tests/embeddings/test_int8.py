"""The int8 engine of the local model: its own space, close to float32, and its quantisation."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from graphmem.embeddings import EmbeddingConfig, make_embedder
from graphmem.embeddings import int8 as int8_module
from graphmem.embeddings.bert import Weights, forward
from graphmem.embeddings.int8 import Int8Encoder, PackedModel, cached_model
from graphmem.embeddings.local import LocalEmbedder
from graphmem.embeddings.packing import quantise_columns
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


def tiny_state_dict(dim: int = 16, layers: int = 2, words: int = 50) -> dict[str, np.ndarray]:
    """A random BERT small enough to build in milliseconds, in BertModel's names."""
    rng = np.random.default_rng(7)

    def r(*shape: int) -> np.ndarray:
        return rng.normal(scale=0.3, size=shape).astype(np.float32)

    w = {
        "embeddings.word_embeddings.weight": r(words, dim),
        "embeddings.position_embeddings.weight": r(32, dim),
        "embeddings.token_type_embeddings.weight": r(2, dim),
        "embeddings.LayerNorm.weight": 1 + r(dim),
        "embeddings.LayerNorm.bias": r(dim),
    }
    for i in range(layers):
        p, a = f"encoder.layer.{i}.", f"encoder.layer.{i}.attention."
        for n in ("query", "key", "value"):
            w[f"{a}self.{n}.weight"], w[f"{a}self.{n}.bias"] = r(dim, dim), r(dim)
        w[a + "output.dense.weight"], w[a + "output.dense.bias"] = r(dim, dim), r(dim)
        w[a + "output.LayerNorm.weight"], w[a + "output.LayerNorm.bias"] = 1 + r(dim), r(dim)
        w[p + "intermediate.dense.weight"], w[p + "intermediate.dense.bias"] = (
            r(4 * dim, dim),
            r(4 * dim),
        )
        w[p + "output.dense.weight"], w[p + "output.dense.bias"] = r(dim, 4 * dim), r(dim)
        w[p + "output.LayerNorm.weight"], w[p + "output.LayerNorm.bias"] = 1 + r(dim), r(dim)
    return w


def tiny_bert() -> Weights:
    return Weights.from_bert(tiny_state_dict(), layers=2, heads=2)


@pytest.mark.parametrize("signed", [False, True], ids=["unsigned weights", "signed weights"])
def test_the_int8_graph_computes_what_the_float32_encoder_computes(
    signed: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    if signed and not int8_module.exact_signed_products():
        pytest.skip("this CPU adds signed int8 products in 16 bits (no VNNI): they saturate")
    monkeypatch.setattr(int8_module, "exact_signed_products", lambda: signed)
    weights = tiny_bert()
    texts = [[1, 5, 9, 2], [1, 7, 2], [1, 3, 3, 8, 11, 40, 2], [1, 2]]
    got = Int8Encoder(PackedModel.from_weights(weights)).encode(texts)
    for i, ids in enumerate(texts):  # each alone, without padding
        want = forward(weights, np.array(ids), np.array([len(ids)]))[0]
        assert float(got[i] @ want) > 0.99


def test_a_built_model_is_kept_for_the_next_process_and_rebuilt_for_new_weights(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    builds: list[int] = []
    build = int8_module.build_model
    monkeypatch.setattr(int8_module, "build_model", lambda w: builds.append(1) or build(w))
    source = tmp_path / "model.safetensors"
    source.write_bytes(b"weights")
    model, cache = PackedModel.from_weights(tiny_bert()), tmp_path / "cache"

    first = cached_model(model, source, cache)
    assert cached_model(model, source, cache) == first
    assert len(builds) == 1 and len(list(cache.iterdir())) == 1

    source.write_bytes(b"other weights")  # a new model file
    cached_model(model, source, cache)
    assert len(builds) == 2 and len(list(cache.iterdir())) == 2


def test_building_removes_models_of_other_versions_unused_for_a_month(tmp_path: Path) -> None:
    source = tmp_path / "model.safetensors"
    source.write_bytes(b"weights")
    cache = tmp_path / "cache"
    cache.mkdir()
    stale, recent = cache / "minilm-int8-old.onnx", cache / "minilm-int8-recent.onnx"
    for path in (stale, recent, cache / "unrelated.onnx"):
        path.write_bytes(b"x")
    month_ago = time.time() - 31 * 86400
    for path in (stale, cache / "unrelated.onnx"):
        os.utime(path, (month_ago, month_ago))
    cached_model(PackedModel.from_weights(tiny_bert()), source, cache)
    left = sorted(p.name for p in cache.iterdir())
    assert "minilm-int8-old.onnx" not in left
    assert {"minilm-int8-recent.onnx", "unrelated.onnx"} <= set(left) and len(left) == 3


def test_a_cache_folder_that_cannot_be_written_only_costs_the_build(tmp_path: Path) -> None:
    source = tmp_path / "model.safetensors"
    source.write_bytes(b"weights")
    blocked = tmp_path / "a file"
    blocked.write_text("not a folder")
    model = cached_model(PackedModel.from_weights(tiny_bert()), source, blocked / "cache")
    assert model and blocked.read_text() == "not a folder"


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
    monkeypatch.setitem(sys.modules, "onnxruntime", None)
    with pytest.raises(EmbeddingError, match="pip install onnxruntime"):
        Int8Encoder(PackedModel.from_weights(tiny_bert()))


@model
def test_the_local_embedder_keeps_its_int8_model_in_the_configured_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from graphmem.embeddings import local

    monkeypatch.setattr(local, "_INT8", {})  # as in a new process
    config = EmbeddingConfig(cache_dir=tmp_path / "models")
    embedder = make_embedder(config)
    assert isinstance(embedder, LocalEmbedder)
    embedder.load()
    (kept,) = (tmp_path / "models").iterdir()
    assert kept.name.startswith("minilm-int8-") and kept.stat().st_size > 5_000_000
