"""Extraction by a chat model behind an OpenAI-compatible or Ollama endpoint, for those who run one.

Failure policy, so one bad text never costs the batch: a reply that cannot be read, a
reply that timed out, or a 5xx/429 that outlasted the retries gives an empty Extraction for
that text and adds one to `errors`. Only an endpoint that is unusable for every text raises
`ExtractionError`: nothing listening after the retries, or a 4xx that retrying cannot change
(wrong path, model or key).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, Literal

from .base import Extraction, ExtractionError
from .llm_reply import SYSTEM_PROMPT, parse_reply, user_prompt

if TYPE_CHECKING:
    import httpx

Flavour = Literal["openai", "ollama"]

DEFAULT_URL = "http://127.0.0.1:11434"
DEFAULT_MODEL = "llama3.2"
OLLAMA_PORT = 11434
BACKOFF_BASE = 0.1
BACKOFF_CAP = 1.0


def detect_flavour(url: str) -> Flavour:
    """Ollama when the URL names its /api path or its default port, else OpenAI-compatible."""
    import httpx

    parsed = httpx.URL(url)
    if (
        parsed.port == OLLAMA_PORT
        or parsed.path.rstrip("/").endswith("/api")
        or "/api/" in parsed.path
    ):
        return "ollama"
    return "openai"


class _Unreadable(Exception):
    """This text's answer is lost (timeout, 5xx, garbage); the next text may still work."""


class LLMExtractor:
    """Entities and triples from a chat model, one request per text; see the module doc."""

    def __init__(
        self,
        *,
        model: str | None = None,
        url: str | None = None,
        api_key: str | None = None,
        timeout: float = 30.0,
        retries: int = 2,
        flavour: Flavour | None = None,
        concurrency: int = 1,
        json_mode: bool = True,
        transport: httpx.BaseTransport | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        import httpx

        base = (url or DEFAULT_URL).rstrip("/")
        parsed = httpx.URL(base)
        if parsed.scheme not in ("http", "https") or not parsed.host:
            raise ValueError(f"LLM extractor URL must be http(s)://host..., got {base!r}")
        self._flavour: Flavour = flavour or detect_flavour(base)
        if self._flavour == "ollama":
            root = base.removesuffix("/api")
            self._endpoint = f"{root}/api/chat"
        else:
            self._endpoint = f"{base}/chat/completions"
        self._model = model or DEFAULT_MODEL
        self.name = f"llm:{self._model}"
        self._retries = max(0, retries)
        self._concurrency = max(1, concurrency)
        self._json_mode = json_mode
        self._sleep = sleep
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = httpx.Client(
            timeout=httpx.Timeout(timeout), headers=headers, transport=transport
        )
        self._lock = threading.Lock()
        self.errors = 0

    @property
    def flavour(self) -> Flavour:
        return self._flavour

    @property
    def endpoint(self) -> str:
        return self._endpoint

    def close(self) -> None:
        self._client.close()

    def extract(self, texts: Sequence[str]) -> list[Extraction]:
        if self._concurrency == 1 or len(texts) < 2:
            return [self._extract_one(t) for t in texts]
        with ThreadPoolExecutor(max_workers=self._concurrency) as pool:
            return list(pool.map(self._extract_one, texts))

    def _extract_one(self, text: str) -> Extraction:
        empty = Extraction(entities=[], facts=[], extractor=self.name)
        if not text.strip():
            return empty
        try:
            reply = self._ask(text)
            return parse_reply(reply, text, self.name)
        except (_Unreadable, ValueError):
            with self._lock:
                self.errors += 1
            return empty

    def _body(self, text: str) -> dict[str, Any]:
        messages = [
            {"role": "system", "content": SYSTEM_PROMPT},
            {"role": "user", "content": user_prompt(text)},
        ]
        if self._flavour == "ollama":
            body: dict[str, Any] = {
                "model": self._model,
                "messages": messages,
                "stream": False,
                "options": {"temperature": 0},
            }
            if self._json_mode:
                body["format"] = "json"
            return body
        body = {"model": self._model, "messages": messages, "temperature": 0}
        if self._json_mode:
            body["response_format"] = {"type": "json_object"}
        return body

    def _ask(self, text: str) -> str:
        import httpx

        body = self._body(text)
        attempts = self._retries + 1
        for attempt in range(attempts):
            last_try = attempt + 1 == attempts
            try:
                response = self._client.post(self._endpoint, json=body)
            except (httpx.ConnectError, httpx.ConnectTimeout) as exc:
                if last_try:
                    raise ExtractionError(
                        f"LLM endpoint {self._endpoint} is unreachable after {attempts} "
                        f"attempt(s): {type(exc).__name__}"
                    ) from None
            except httpx.TimeoutException:
                if last_try:
                    raise _Unreadable("timed out") from None
            except httpx.TransportError as exc:
                if last_try:
                    raise _Unreadable(type(exc).__name__) from None
            else:
                status = response.status_code
                if status < 300:
                    return self._content(response)
                if status != 429 and status < 500:
                    raise ExtractionError(
                        f"LLM endpoint {self._endpoint} answered HTTP {status}; "
                        "check the URL, model name and API key"
                    )
                if last_try:
                    raise _Unreadable(f"HTTP {status}")
            self._sleep(min(BACKOFF_BASE * 2**attempt, BACKOFF_CAP))
        raise AssertionError("unreachable")  # pragma: no cover

    def _content(self, response: httpx.Response) -> str:
        try:
            payload = response.json()
            if self._flavour == "ollama":
                content = payload["message"]["content"]
            else:
                content = payload["choices"][0]["message"]["content"]
        except (ValueError, KeyError, IndexError, TypeError):
            raise _Unreadable("unexpected response shape") from None
        if not isinstance(content, str):
            raise _Unreadable("no text in the response")
        return content
