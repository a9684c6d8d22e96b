"""The LLM extractor against a real HTTP server on 127.0.0.1 that plays scripted answers."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from extraction_checks import assert_well_formed, labels, triples
from graphmem.extractors import ExtractionError, get_extractor
from graphmem.extractors.llm import LLMExtractor, detect_flavour

GOOD = {
    "entities": [
        {"name": "The Billing-Service", "label": "service"},
        {"name": "Redis", "label": "package"},
        {"name": "nightly job", "label": "Background Task"},
    ],
    "triples": [
        {"subject": "the billing-service", "predicate": "Depends On", "object": "Redis"},
        {"subject": "billing-service", "predicate": "usesCache", "object": "redis"},
        {"subject": "nightly jobs", "predicate": "caused", "object": "index locks"},
        {"subject": "we", "predicate": "", "object": "Redis"},
    ],
}
GOOD_TRIPLES = {
    ("billing-service", "depends_on", "redis"),
    ("billing-service", "uses_cache", "redis"),
    ("nightly job", "caused", "index lock"),
}


@dataclass
class Reply:
    content: str = json.dumps(GOOD)
    status: int = 200
    delay: float = 0.0


@dataclass
class Script:
    """Replies in turn (the last one repeats) and the requests that asked for them."""

    replies: list[Reply] = field(default_factory=lambda: [Reply()])
    requests: list[tuple[str, dict[str, str], Any]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def next(self) -> Reply:
        with self.lock:
            return self.replies.pop(0) if len(self.replies) > 1 else self.replies[0]


def _handler(script: Script) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            script.requests.append((self.path, dict(self.headers), body))
            reply = script.next()
            time.sleep(reply.delay)
            if self.path.endswith("/api/chat"):
                payload = {"model": body["model"], "message": {"content": reply.content}}
            else:
                payload = {"choices": [{"message": {"content": reply.content}}]}
            data = json.dumps(payload if reply.status == 200 else {"error": "boom"}).encode()
            try:
                self.send_response(reply.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
            except OSError:
                pass  # the client gave up waiting; that is what the slow replies test

        def log_message(self, format: str, *args: Any) -> None:
            pass

    return Handler


@pytest.fixture
def server() -> Iterator[tuple[str, Script]]:
    script = Script()
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(script))
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}", script
    finally:
        httpd.shutdown()
        httpd.server_close()


def _extractor(url: str, **kwargs: Any) -> LLMExtractor:
    kwargs.setdefault("timeout", 0.5)
    kwargs.setdefault("retries", 1)
    return LLMExtractor(model="tiny", url=url, sleep=lambda _: None, **kwargs)


def test_openai_answer_becomes_normalised_entities_and_facts(
    server: tuple[str, Script],
) -> None:
    url, script = server
    extractor = _extractor(f"{url}/v1", api_key="sk-test-123")
    [extraction] = extractor.extract(["The billing-service depends on Redis."])
    assert triples(extraction) == GOOD_TRIPLES
    assert labels(extraction) == {
        "billing-service": "service",
        "redis": "package",
        "nightly job": "concept",  # an invented label falls back to concept
        "index lock": "concept",  # named only in a triple: added as a concept
    }
    assert_well_formed(extraction)
    assert extraction.extractor == extractor.name == "llm:tiny"
    assert extractor.errors == 0
    [(path, headers, body)] = script.requests
    assert path == "/v1/chat/completions"
    assert headers["Authorization"] == "Bearer sk-test-123"
    assert body["model"] == "tiny"
    assert body["response_format"] == {"type": "json_object"}
    assert "The billing-service depends on Redis." in body["messages"][-1]["content"]


def test_ollama_flavour_posts_to_api_chat_without_streaming(server: tuple[str, Script]) -> None:
    url, script = server
    extractor = _extractor(f"{url}/api")
    assert extractor.flavour == "ollama"
    [extraction] = extractor.extract(["The billing-service depends on Redis."])
    assert triples(extraction) == GOOD_TRIPLES
    [(path, headers, body)] = script.requests
    assert path == "/api/chat"
    assert body["format"] == "json" and body["stream"] is False
    assert "Authorization" not in headers


def test_json_inside_code_fences_and_chatter_is_read(server: tuple[str, Script]) -> None:
    url, script = server
    script.replies = [Reply(f"Sure! Here it is:\n```json\n{json.dumps(GOOD)}\n```\nAnything else?")]
    [extraction] = _extractor(f"{url}/v1").extract(["text"])
    assert triples(extraction) == GOOD_TRIPLES


def test_a_malformed_answer_is_an_empty_extraction_and_a_counted_error(
    server: tuple[str, Script],
) -> None:
    url, script = server
    script.replies = [Reply("I cannot help with that."), Reply('{"triples": "none"}'), Reply()]
    extractor = _extractor(f"{url}/v1")
    first, second, third = extractor.extract(["a", "b", "c"])
    assert first.entities == first.facts == second.facts == []
    assert triples(third) == GOOD_TRIPLES
    assert extractor.errors == 2


def test_a_server_error_is_retried(server: tuple[str, Script]) -> None:
    url, script = server
    script.replies = [Reply(status=500), Reply(status=429), Reply()]
    extractor = _extractor(f"{url}/v1", retries=2)
    [extraction] = extractor.extract(["text"])
    assert triples(extraction) == GOOD_TRIPLES
    assert len(script.requests) == 3
    assert extractor.errors == 0


def test_a_server_error_that_outlasts_the_retries_is_counted(server: tuple[str, Script]) -> None:
    url, script = server
    script.replies = [Reply(status=503)]
    extractor = _extractor(f"{url}/v1", retries=1)
    [extraction] = extractor.extract(["text"])
    assert extraction.facts == []
    assert len(script.requests) == 2
    assert extractor.errors == 1


def test_a_slow_answer_is_retried_then_counted_not_raised(server: tuple[str, Script]) -> None:
    url, script = server
    script.replies = [Reply(delay=0.6)]
    extractor = _extractor(f"{url}/v1", timeout=0.2, retries=1)
    started = time.perf_counter()
    [extraction] = extractor.extract(["text"])
    assert time.perf_counter() - started < 2.0
    assert extraction.facts == []
    assert len(script.requests) == 2
    assert extractor.errors == 1


def test_a_client_error_stops_at_once_with_a_clear_message(server: tuple[str, Script]) -> None:
    url, script = server
    script.replies = [Reply(status=401)]
    with pytest.raises(ExtractionError, match=r"HTTP 401.*API key"):
        _extractor(f"{url}/v1", retries=3).extract(["text"])
    assert len(script.requests) == 1


def test_an_unreachable_endpoint_raises_after_the_retries() -> None:
    with socket.socket() as probe:  # a port nothing listens on once the probe is closed
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    extractor = _extractor(f"http://127.0.0.1:{port}/v1", retries=2)
    with pytest.raises(ExtractionError, match="unreachable after 3 attempt"):
        extractor.extract(["text"])


def test_concurrent_requests_keep_the_order_of_the_texts(server: tuple[str, Script]) -> None:
    url, script = server
    script.replies = [Reply(delay=0.05)]
    extractor = _extractor(f"{url}/v1", concurrency=4)
    batch = extractor.extract([f"text {i}" for i in range(8)])
    assert len(batch) == 8 and all(triples(e) == GOOD_TRIPLES for e in batch)
    assert len(script.requests) == 8


@pytest.mark.parametrize(
    ("url", "flavour"),
    [
        ("http://127.0.0.1:11434", "ollama"),
        ("http://gpu-box:8080/api", "ollama"),
        ("http://127.0.0.1:8000/v1", "openai"),
        ("https://llm.example/openai/v1", "openai"),
    ],
)
def test_the_flavour_is_read_from_the_url(url: str, flavour: str) -> None:
    assert detect_flavour(url) == flavour


def test_get_extractor_builds_the_llm_extractor(server: tuple[str, Script]) -> None:
    url, _ = server
    extractor = get_extractor("llm", model="tiny", url=f"{url}/v1", timeout=1.0, retries=0)
    assert isinstance(extractor, LLMExtractor)
    assert extractor.name == "llm:tiny"
    assert extractor.endpoint == f"{url}/v1/chat/completions"
    [extraction] = extractor.extract(["The billing-service depends on Redis."])
    assert triples(extraction) == GOOD_TRIPLES
