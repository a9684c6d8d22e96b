"""The store as the next CLI command finds it: a writing command starts an owner, which holds the
store until it idles out, so a test reads what the CLI wrote the way the CLI would."""

from __future__ import annotations

from pathlib import Path

from graphmem.api import MemoryAPI
from graphmem.daemon.client import open_api
from graphmem.settings import load_settings


def open_as_cli(home: Path) -> MemoryAPI:
    """Through the store's owner when one runs, else opened here, with the hash embedder."""
    return open_api(load_settings(home, environ={"GRAPHMEM_EMBEDDING_PROVIDER": "hash"}))
