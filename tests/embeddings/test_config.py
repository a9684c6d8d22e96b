"""Embedding config defaults and validation, space names, and the factory's local providers."""

from __future__ import annotations

import pytest

from graphmem.embeddings import (
    EmbeddingConfig,
    EmbeddingSpace,
    HashEmbedder,
    LocalEmbedder,
    make_embedder,
)
from graphmem.errors import InvalidInput


@pytest.mark.parametrize(
    ("provider", "model", "url"),
    [
        ("local", "all-MiniLM-L6-v2-int8", None),
        ("hash", "hash-v1", None),
        ("ollama", "nomic-embed-text", "http://127.0.0.1:11434"),
        ("openai", "text-embedding-3-small", "https://api.openai.com/v1"),
        ("jina", "jina-embeddings-v3", "https://api.jina.ai/v1"),
    ],
)
def test_each_provider_has_a_default_model_and_url(
    provider: str, model: str, url: str | None
) -> None:
    config = EmbeddingConfig(provider=provider)  # type: ignore[arg-type]
    assert config.resolved_model() == model
    assert config.resolved_url() == url


def test_the_defaults_are_local_any_mode_with_short_retries() -> None:
    config = EmbeddingConfig()
    assert (config.provider, config.mode, config.timeout, config.retries, config.batch_size) == (
        "local",
        "any",
        30.0,
        3,
        None,  # each provider's own: small batches for the local model, larger for servers
    )


@pytest.mark.parametrize(
    "bad",
    [
        {"provider": "cohere"},
        {"mode": "offline"},
        {"dim": 0},
        {"timeout": 0},
        {"retries": -1},
        {"batch_size": 0},
        {"unknown": 1},
    ],
)
def test_bad_config_raises_invalid_input(bad: dict[str, object]) -> None:
    with pytest.raises(InvalidInput):
        EmbeddingConfig(**bad)  # type: ignore[arg-type]


def test_an_invalid_config_never_echoes_the_api_key() -> None:
    with pytest.raises(InvalidInput) as info:
        EmbeddingConfig(api_key="sk-SECRET-123", dim="sk-SECRET-123")  # type: ignore[arg-type]
    assert "SECRET" not in str(info.value)


@pytest.mark.parametrize(
    ("space", "name"),
    [
        (EmbeddingSpace("local", "all-MiniLM-L6-v2", 384), "local_all_minilm_l6_v2_384"),
        (
            EmbeddingSpace("openai", "text-embedding-3-small", 1536),
            "openai_text_embedding_3_small_1536",
        ),
        (
            EmbeddingSpace("ollama", "nomic-embed-text:v1.5", 768),
            "ollama_nomic_embed_text_v1_5_768",
        ),
        (EmbeddingSpace("1x", "Ünï/Cödé", 8), "e_1x_n_c_d_8"),
    ],
)
def test_space_names_are_lowercase_identifiers(space: EmbeddingSpace, name: str) -> None:
    assert space.name == name


def test_long_model_names_still_give_short_distinct_space_names() -> None:
    a = EmbeddingSpace("openai", "x" * 300 + "a", 1024).name
    b = EmbeddingSpace("openai", "x" * 300 + "b", 1024).name
    assert a != b
    assert len(a) <= 100 and a.endswith("_1024")
    assert set(a) <= set("abcdefghijklmnopqrstuvwxyz0123456789_")


def test_the_space_label_reads_provider_model_and_dim() -> None:
    assert EmbeddingSpace("local", "all-MiniLM-L6-v2", 384).label == "local:all-MiniLM-L6-v2/384"


def test_a_space_without_a_positive_dim_is_refused() -> None:
    with pytest.raises(InvalidInput):
        EmbeddingSpace("local", "m", 0)


def test_local_only_mode_still_allows_the_local_and_hash_providers() -> None:
    assert isinstance(make_embedder(EmbeddingConfig(mode="local-only")), LocalEmbedder)
    hashed = make_embedder(EmbeddingConfig(provider="hash", dim=64, mode="local-only"))
    assert isinstance(hashed, HashEmbedder)
    assert hashed.space.dim == 64


@pytest.mark.parametrize(
    "config",
    [
        EmbeddingConfig(model="bge-small"),
        EmbeddingConfig(dim=768),
        EmbeddingConfig(provider="hash", model="hash-v2"),
    ],
)
def test_local_providers_refuse_models_and_dims_they_cannot_serve(config: EmbeddingConfig) -> None:
    with pytest.raises(InvalidInput):
        make_embedder(config)


FLOAT32, INT8 = "local_all_minilm_l6_v2_384", "local_all_minilm_l6_v2_int8_384"


@pytest.mark.parametrize(
    ("config", "spaces", "model"),
    [
        (EmbeddingConfig(), set(), "all-MiniLM-L6-v2-int8"),  # a new store
        (EmbeddingConfig(), {FLOAT32}, "all-MiniLM-L6-v2"),  # made before int8 was the default
        (EmbeddingConfig(), {FLOAT32, INT8}, "all-MiniLM-L6-v2-int8"),  # re-embedded since
        (EmbeddingConfig(), {"hash_hash_v1_384"}, "all-MiniLM-L6-v2-int8"),
        (EmbeddingConfig(model="all-MiniLM-L6-v2-int8"), {FLOAT32}, "all-MiniLM-L6-v2-int8"),
        (EmbeddingConfig(provider="hash"), {FLOAT32}, "hash-v1"),
    ],
)
def test_the_local_default_follows_the_float32_vectors_a_store_already_has(
    config: EmbeddingConfig, spaces: set[str], model: str
) -> None:
    assert config.for_store(spaces).resolved_model() == model
