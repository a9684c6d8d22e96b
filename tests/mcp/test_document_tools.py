"""The document and file tools through `graphmem serve` over stdio, with the Python SDK's client:
index the project's docs, find a section, read it whole, and stay inside the project."""

from __future__ import annotations

import os
import signal
import sys
from contextlib import suppress
from pathlib import Path

import anyio
import pytest
from mcp import Client, StdioServerParameters
from tool_calls import call, fail

from graphmem.daemon.paths import live_owner

pytestmark = pytest.mark.anyio

ADR = """\
# ADR 3: Queue jobs in Postgres

## Context

Redis lost jobs when it was restarted during deploys.

## Decision

Jobs are queued in Postgres with SKIP LOCKED, so a restart loses nothing.
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "docs" / "adr").mkdir(parents=True)
    (tmp_path / "docs" / "adr" / "0003-queue.md").write_text(ADR)
    (tmp_path / "README.md").write_text("# Service\n\nRuns the job queue.\n")
    (tmp_path.parent / "outside-secret.txt").write_text("TOP-SECRET-OUTSIDE")
    return tmp_path


async def test_an_agent_indexes_searches_and_reads_documents_over_stdio(project: Path) -> None:
    home = project / ".graphmem"
    env = {k: v for k, v in os.environ.items() if not k.startswith("GRAPHMEM_")}
    env.update(
        GRAPHMEM_HOME=str(home),
        GRAPHMEM_EMBEDDING_PROVIDER="hash",
        GRAPHMEM_DAEMON_IDLE_TIMEOUT="5",
    )
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "graphmem", "serve"], env=env, cwd=str(project)
    )
    try:
        with anyio.fail_after(90):
            async with Client(params) as client:
                report = await call(client, "index_documents")
                assert sorted(report["added"]) == ["README.md", "docs/adr/0003-queue.md"]

                found = await call(client, "semantic_search", query="why are jobs in postgres")
                hit = found["hits"][0]
                assert (hit["path"], hit["section"], hit["source_type"]) == (
                    "docs/adr/0003-queue.md",
                    "ADR 3: Queue jobs in Postgres > Decision",
                    "adr",
                )
                section = await call(
                    client, "expand_section", path=hit["path"], section_key=hit["section_key"]
                )
                assert "SKIP LOCKED" in section["text"]

                read = await call(client, "repo_read", path=hit["path"], start_line=5, end_line=5)
                assert read["text"] == "Redis lost jobs when it was restarted during deploys.\n"
                matches = await call(client, "repo_search", query="skip locked")
                assert [(m["path"], m["line"]) for m in matches["matches"]] == [
                    ("docs/adr/0003-queue.md", 9)
                ]
                refused = await fail(client, "repo_read", path="../outside-secret.txt")
                assert "TOP-SECRET-OUTSIDE" not in refused and "outside" in refused
    finally:
        owner = live_owner(home)
        if owner is not None:
            with suppress(ProcessLookupError):
                os.kill(owner.pid, signal.SIGTERM)
