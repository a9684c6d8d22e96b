"""HTTP providers against httpx.MockTransport: request shapes, retries, validation, secrecy."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import httpx
import numpy as np
import pytest

from graphmem.embeddings import EmbeddingConfig, make_embedder
from graphmem.embeddings.remote import JinaEmbedder, OllamaEmbedder, OpenAIEmbedder, RemoteEmbedder
from graphmem.errors import EmbeddingError

KEY = "sk-test-SECRET-0123456789abcdef"

Reply = httpx.Response | Exception | Callable[[httpx.Request], httpx.Response]


class FakeServer:
    """Answers with the scripted replies in turn (the last one repeats) and records requests."""

    def __init__(self, *replies: Reply) -> None:
        self.replies = list(replies)
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        reply = self.replies.pop(0) if len(self.replies) > 1 else self.replies[0]
        if isinstance(reply, Exception):
            raise reply
        if isinstance(reply, httpx.Response):
            return reply
        return reply(request)

    @property
    def transport(self) -> httpx.MockTransport:
        return httpx.MockTransport(self)

    def body(self, i: int = 0) -> Any:
        return json.loads(self.requests[i].content)


def ollama_reply(request: httpx.Request) -> httpx.Response:
    texts = json.loads(request.content)["input"]
    return httpx.Response(200, json={"embeddings": [[len(t), 1.0, 0.0] for t in texts]})


def openai_reply(request: httpx.Request) -> httpx.Response:
    texts = json.loads(request.content)["input"]
    data = [
        {"object": "embedding", "index": i, "embedding": [len(t), 0.0, 1.0]}
        for i, t in enumerate(texts)
    ]
    # out of order on purpose: clients must sort by index
    return httpx.Response(200, json={"object": "list", "data": data[::-1]})


def make(cls: type[RemoteEmbedder], server: FakeServer, **kwargs: Any) -> Any:
    sleeps: list[float] = []
    embedder = cls(transport=server.transport, sleep=sleeps.append, **kwargs)
    embedder.sleeps = sleeps
    return embedder


def unit(v: list[float]) -> np.ndarray:
    a = np.array(v, dtype=np.float32)
    return a / np.linalg.norm(a)


def test_ollama_posts_model_and_inputs_to_api_embed_and_normalises_rows() -> None:
    server = FakeServer(ollama_reply)
    vectors = make(OllamaEmbedder, server).embed(["ab", "abcd"])
    request = server.requests[0]
    assert request.method == "POST"
    assert str(request.url) == "http://127.0.0.1:11434/api/embed"
    assert server.body() == {"model": "nomic-embed-text", "input": ["ab", "abcd"]}
    assert "authorization" not in request.headers
    assert vectors.dtype == np.float32
    np.testing.assert_allclose(vectors, [unit([2, 1, 0]), unit([4, 1, 0])], atol=1e-6)


def test_openai_sends_the_bearer_key_and_rows_are_sorted_by_index() -> None:
    server = FakeServer(openai_reply)
    embedder = make(OpenAIEmbedder, server, api_key=KEY, url="http://localhost:8080/v1/")
    vectors = embedder.embed(["a", "bbb", "cc"])
    assert str(server.requests[0].url) == "http://localhost:8080/v1/embeddings"
    assert server.requests[0].headers["authorization"] == f"Bearer {KEY}"
    assert server.body() == {"model": "text-embedding-3-small", "input": ["a", "bbb", "cc"]}
    np.testing.assert_allclose(
        vectors, [unit([1, 0, 1]), unit([3, 0, 1]), unit([2, 0, 1])], atol=1e-6
    )


def test_jina_asks_for_passage_vectors_for_documents_and_query_vectors_for_queries() -> None:
    server = FakeServer(openai_reply)
    embedder = make(JinaEmbedder, server, api_key=KEY)
    embedder.embed(["doc"])
    query = embedder.embed_query("what?")
    assert str(server.requests[0].url) == "https://api.jina.ai/v1/embeddings"
    assert server.body(0) == {
        "model": "jina-embeddings-v3",
        "input": ["doc"],
        "task": "retrieval.passage",
    }
    assert server.body(1)["task"] == "retrieval.query"
    assert query.shape == (3,)


def test_inputs_are_sent_in_batches_of_batch_size_and_keep_their_order() -> None:
    server = FakeServer(ollama_reply)
    texts = ["a" * n for n in range(1, 6)]
    vectors = make(OllamaEmbedder, server, batch_size=2).embed(texts)
    assert [server.body(i)["input"] for i in range(3)] == [texts[:2], texts[2:4], texts[4:]]
    np.testing.assert_allclose(vectors[:, 0] / vectors[:, 1], [1, 2, 3, 4, 5], rtol=1e-5)


def test_a_503_then_a_200_is_retried_after_a_short_backoff() -> None:
    server = FakeServer(httpx.Response(503, text="busy"), ollama_reply)
    embedder = make(OllamaEmbedder, server)
    assert embedder.embed(["x"]).shape == (1, 3)
    assert len(server.requests) == 2
    assert embedder.sleeps == [0.2]


@pytest.mark.parametrize(
    "failure",
    [httpx.Response(429), httpx.ConnectError("refused"), httpx.ReadTimeout("slow")],
    ids=["429", "connect-error", "timeout"],
)
def test_rate_limits_connect_errors_and_timeouts_are_retried(failure: Reply) -> None:
    server = FakeServer(failure, failure, ollama_reply)
    embedder = make(OllamaEmbedder, server)
    assert embedder.embed(["x"]).shape == (1, 3)
    assert len(server.requests) == 3


def test_retries_stop_after_the_configured_count_with_capped_exponential_backoff() -> None:
    server = FakeServer(httpx.Response(500, json={"error": "boom"}))
    embedder = make(OllamaEmbedder, server, retries=5)
    with pytest.raises(EmbeddingError, match="HTTP 500: boom") as info:
        embedder.embed(["x"])
    assert len(server.requests) == 6
    assert embedder.sleeps == [0.2, 0.4, 0.8, 1.6, 2.0]
    assert info.value.fields["status"] == 500


def test_a_401_raises_at_once_without_retrying() -> None:
    server = FakeServer(httpx.Response(401, json={"error": {"message": "bad key"}}))
    embedder = make(OpenAIEmbedder, server, api_key=KEY)
    with pytest.raises(EmbeddingError) as info:
        embedder.embed(["x"])
    assert len(server.requests) == 1
    assert embedder.sleeps == []
    assert info.value.fields["status"] == 401
    assert info.value.fields["provider"] == "openai"


def test_a_redirect_is_reported_rather_than_followed() -> None:
    reply = httpx.Response(301, headers={"location": "https://elsewhere.example/api/embed"})
    server = FakeServer(reply)
    with pytest.raises(EmbeddingError, match=r"elsewhere\.example"):
        make(OllamaEmbedder, server).embed(["x"])
    assert len(server.requests) == 1


def test_a_400_is_not_retried_and_shows_the_servers_reason() -> None:
    reply = httpx.Response(404, json={"error": 'model "nope" not found, try pulling it first'})
    server = FakeServer(reply)
    with pytest.raises(EmbeddingError, match="try pulling it first"):
        make(OllamaEmbedder, server, model="nope").embed(["x"])
    assert len(server.requests) == 1


@pytest.mark.parametrize(
    "reply",
    [
        httpx.Response(200, text="<html>not json</html>"),
        httpx.Response(200, json={"embedding": [1, 2]}),
        httpx.Response(200, json={"embeddings": [[1, 2]]}),  # one row for two texts
        httpx.Response(200, json={"embeddings": [[1, 2], [1, 2, 3]]}),
        httpx.Response(200, json={"embeddings": [["a", "b"], ["c", "d"]]}),
        httpx.Response(200, json={"embeddings": [[1, None], [1, 2]]}),
        httpx.Response(200, json={"embeddings": [[0, 0], [1, 2]]}),
        httpx.Response(200, json=[[1, 2], [3, 4]]),
    ],
    ids=["not-json", "wrong-key", "too-few", "ragged", "strings", "null", "zero-row", "bare-list"],
)
def test_malformed_answers_raise_embedding_error(reply: httpx.Response) -> None:
    with pytest.raises(EmbeddingError):
        make(OllamaEmbedder, FakeServer(reply)).embed(["a", "b"])


@pytest.mark.parametrize(
    "data",
    [
        [{"index": 0, "embedding": [1, 2]}, {"index": 0, "embedding": [3, 4]}],
        [{"index": 0, "embedding": [1, 2]}, {"index": 1}],
        [{"index": "0", "embedding": [1, 2]}, {"index": 1, "embedding": [3, 4]}],
    ],
    ids=["duplicate-index", "missing-embedding", "string-index"],
)
def test_openai_answers_with_broken_items_raise_embedding_error(data: list[Any]) -> None:
    server = FakeServer(httpx.Response(200, json={"data": data}))
    with pytest.raises(EmbeddingError):
        make(OpenAIEmbedder, server).embed(["a", "b"])


def test_dimensions_that_change_between_batches_raise_embedding_error() -> None:
    server = FakeServer(
        httpx.Response(200, json={"embeddings": [[1, 2, 3]]}),
        httpx.Response(200, json={"embeddings": [[1, 2]]}),
    )
    with pytest.raises(EmbeddingError, match=r"inconsistent|expected 3"):
        make(OllamaEmbedder, server, batch_size=1).embed(["a", "b"])


def test_a_configured_dim_that_the_server_does_not_return_raises_embedding_error() -> None:
    with pytest.raises(EmbeddingError, match="expected 768"):
        make(OllamaEmbedder, FakeServer(ollama_reply), dim=768).embed(["a"])


def test_the_dimension_is_learnt_by_one_probe_when_not_configured() -> None:
    server = FakeServer(ollama_reply)
    embedder = make(OllamaEmbedder, server)
    assert embedder.space.dim == 3
    assert embedder.space.label == "ollama:nomic-embed-text/3"
    assert len(server.requests) == 1
    assert embedder.embed([]).shape == (0, 3)
    assert len(server.requests) == 1


def test_a_configured_dimension_needs_no_probe() -> None:
    server = FakeServer(ollama_reply)
    assert make(OllamaEmbedder, server, dim=3).space.dim == 3
    assert server.requests == []


@pytest.mark.parametrize("provider", ["ollama", "openai", "jina"])
def test_local_only_mode_forbids_remote_providers(provider: str) -> None:
    server = FakeServer(ollama_reply)
    config = EmbeddingConfig(provider=provider, mode="local-only")  # type: ignore[arg-type]
    with pytest.raises(EmbeddingError, match="GRAPHMEM_EMBEDDING_MODE=local-only"):
        make_embedder(config, transport=server.transport)
    assert server.requests == []


def test_the_factory_builds_remote_embedders_from_config() -> None:
    server = FakeServer(openai_reply)
    config = EmbeddingConfig(
        provider="openai", url="http://127.0.0.1:9/v1", api_key=KEY, model="m", dim=3, batch_size=1
    )
    embedder = make_embedder(config, transport=server.transport)
    assert isinstance(embedder, OpenAIEmbedder)
    assert embedder.space.name == "openai_m_3"
    embedder.embed(["a", "b"])
    assert len(server.requests) == 2
    assert server.requests[0].headers["authorization"] == f"Bearer {KEY}"


def _raise_with_key(request: httpx.Request) -> httpx.Response:
    raise httpx.ConnectError(f"proxy said no to {KEY}", request=request)


@pytest.mark.parametrize(
    "reply",
    [
        httpx.Response(401, json={"error": {"message": f"Incorrect API key provided: {KEY}"}}),
        httpx.Response(403, text=f"forbidden for {KEY}"),
        httpx.Response(400, json={"error": f"bad request with key {KEY}"}),
        httpx.Response(500, text=f"crash while handling {KEY}"),
        _raise_with_key,
    ],
    ids=["401", "403", "400", "500", "connect-error"],
)
def test_the_api_key_never_appears_in_an_error(reply: Reply) -> None:
    embedder = make(OpenAIEmbedder, FakeServer(reply), api_key=KEY, retries=1)
    with pytest.raises(EmbeddingError) as info:
        embedder.embed(["x"])
    error = info.value
    shown = " ".join([str(error), repr(error), json.dumps(error.to_dict()), repr(embedder)])
    assert KEY not in shown
    assert "SECRET" not in shown
    assert KEY not in str(error.__cause__ or "") + str(error.__context__ or "")


def test_the_api_key_is_hidden_in_the_config_repr() -> None:
    config = EmbeddingConfig(provider="openai", api_key=KEY)
    assert KEY not in repr(config) and KEY not in str(config)
    assert config.secret() == KEY


def test_a_closed_embedder_raises_embedding_error_and_context_managers_close() -> None:
    server = FakeServer(ollama_reply)
    with make(OllamaEmbedder, server) as embedder:
        embedder.embed(["x"])
    with pytest.raises(EmbeddingError, match="closed"):
        embedder.embed(["x"])
