"""The store as the next CLI command finds it: a writing command starts an owner, which holds the
store until it idles out, so a test reads what the CLI wrote the way the CLI would."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from typer.testing import CliRunner, Result

from graphmem.api import MemoryAPI
from graphmem.cli.app import app
from graphmem.daemon.client import open_api
from graphmem.settings import load_settings


def open_as_cli(home: Path) -> MemoryAPI:
    """Through the store's owner when one runs, else opened here, with the hash embedder."""
    return open_api(load_settings(home, environ={"GRAPHMEM_EMBEDDING_PROVIDER": "hash"}))


def cli_at(home: Path) -> Callable[..., Result]:
    """`graphmem ARGS...` on the store at `home`, as a user's shell runs it: none of this
    environment's GRAPHMEM_ settings, the hash embedder, extraction when asked for."""
    runner = CliRunner()
    env: dict[str, str | None] = {k: None for k in os.environ if k.startswith("GRAPHMEM_")}
    env.update(
        GRAPHMEM_HOME=str(home),
        GRAPHMEM_EMBEDDING_PROVIDER="hash",
        GRAPHMEM_EXTRACT_ON_WRITE="false",
        GRAPHMEM_DAEMON_IDLE_TIMEOUT="5",  # an owner a writing command started goes away
    )
    return lambda *args: runner.invoke(app, list(args), env=env)


def as_json(result: Result) -> Any:
    assert result.exit_code == 0, result.stdout + result.stderr
    return json.loads(result.stdout)
