"""The MCP benchmark counts tokens offline, and what the model reads of each tool mode costs tokens
in about the proportions it costs bytes."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
import tiktoken.registry

from eval.bench_mcp import measure_modes, token_counter
from graphmem.embeddings.hashing import HashEmbedder
from graphmem.service import GraphMemory, open_store


@pytest.fixture
def gm(tmp_path: Path) -> Iterator[GraphMemory]:
    with open_store(tmp_path / ".graphmem", embedder=HashEmbedder()) as store:
        yield store


def test_tokens_are_counted_without_a_network(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse(*_: Any) -> None:
        raise AssertionError("the token counter reached for the network")

    monkeypatch.setattr(tiktoken.registry, "ENCODINGS", {})  # loaded again, from its file
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path / "no-cache"))
    monkeypatch.setattr(socket.socket, "connect", refuse)
    count = token_counter()
    assert count("hello world") == 2  # cl100k_base: "hello", " world"
    assert count('{"name":"memory"}') == 5


def test_each_mode_is_measured_in_bytes_and_tokens(gm: GraphMemory) -> None:
    sizes = anyio.run(measure_modes, gm, token_counter())
    for mode, measured in sizes.items():
        assert measured["tokens"] < measured["bytes"] / 2, mode
        assert measured["model_visible_tokens"] < measured["model_visible_bytes"] / 2, mode
    full, grouped = sizes["full"], sizes["grouped"]
    # schema JSON takes more tokens a byte than prose, so grouped's token share sits a little
    # above its byte share (at most 35%, tests/mcp/test_tool_modes.py)
    assert grouped["model_visible_tokens"] <= 0.4 * full["model_visible_tokens"]
    assert sizes["core"]["model_visible_tokens"] <= 0.15 * full["model_visible_tokens"]
