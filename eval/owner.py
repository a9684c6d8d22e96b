"""A built store served by its owner process, as agents and the CLI meet it, for the
benchmarks that time requests through the owner."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from eval.embedding import environ
from graphmem.daemon.client import RemoteMemory, connect, start_owner, stop_owner
from graphmem.settings import load_settings


@contextmanager
def served(
    home: Path, embedding: str, *, timeout: float = 300, extract: bool = False
) -> Iterator[RemoteMemory]:
    """Start the owner of `home` with the embedder `embedding` and (unless `extract`) no
    extraction on write (the store is built), yield a client of it; stop the owner and restore
    the environment after."""
    child = {**environ(embedding), "GRAPHMEM_EXTRACT_ON_WRITE": str(extract).lower()}
    saved = {name: os.environ.get(name) for name in child}
    os.environ.update(child)  # the owner is a child process: it reads them
    try:
        start_owner(home, timeout=timeout)
        client = connect(load_settings(home, environ=dict(os.environ)))
        assert client is not None
        yield client
    finally:
        stop_owner(home, timeout=120)
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
