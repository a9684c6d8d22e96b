"""A whole agent session end to end, as Claude Code runs it: an MCP session over stdio and the hook
commands over a transcript in Claude Code's JSONL format: start, prompts, compact, stop, end.
Afterwards the store holds what the session taught, its checkpoints and its review items, and
nothing twice, however often a hook ran."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import suppress
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters

from graphmem.daemon.paths import live_owner

pytestmark = [pytest.mark.anyio, pytest.mark.model]

SESSION = "e2e-session-1"
SUMMARY = (
    "Here is what we did:\n"
    "- We decided to run the nightly export from a Kubernetes CronJob, not from cron on the VM\n"
    "- Tried exporting with pg_dump --jobs 8 but it didn't work because the table is partitioned\n"
    "- Note that the export bucket only accepts uploads from the prod-export service account\n"
    "- TODO: alert when the export takes longer than an hour"
)


@pytest.fixture
def project(tmp_path: Path) -> Iterator[Path]:
    root = tmp_path / "shop"
    (root / ".git").mkdir(parents=True)
    (root / ".graphmem").mkdir()
    yield root
    owner = live_owner(root / ".graphmem")
    if owner is not None:
        with suppress(ProcessLookupError):
            os.kill(owner.pid, signal.SIGTERM)


def environment(project: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GRAPHMEM_")}
    env["GRAPHMEM_DAEMON_IDLE_TIMEOUT"] = "30"  # the real local model: the relevance bar is its
    return env


def hook(project: Path, event: str, **payload: Any) -> str:
    """`graphmem hook EVENT` as Claude Code runs it: a new process, the hook JSON on stdin."""
    body = {"session_id": SESSION, "cwd": str(project), "hook_event_name": event, **payload}
    done = subprocess.run(
        [str(Path(sys.executable).parent / "graphmem"), "hook", event, "--client", "claude-code"],
        input=json.dumps(body), capture_output=True, text=True, env=environment(project),
        cwd=project, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stdout


def say(transcript: Path, role: str, text: str) -> None:
    record = {"type": role, "sessionId": SESSION, "message": {"role": role, "content": text}}
    if role == "assistant":
        record["message"]["content"] = [{"type": "text", "text": text}]
    with transcript.open("a") as handle:
        handle.write(json.dumps(record) + "\n")
        handle.write(json.dumps({"type": "system", "subtype": "note", "content": "noise"}) + "\n")


async def wait_until(check: Callable[[], Any], timeout: float = 60.0) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        found = await check()
        if found or time.monotonic() > deadline:
            return found
        await anyio.sleep(0.2)


async def test_a_session_from_start_to_end_leaves_what_it_taught_and_nothing_twice(
    project: Path,
) -> None:
    transcript = project.parent / "transcript.jsonl"
    transcript.touch()
    params = StdioServerParameters(
        command=str(Path(sys.executable).parent / "graphmem"), args=["serve"],
        env=environment(project), cwd=str(project),
    )  # fmt: skip
    with anyio.fail_after(240):
        async with Client(params) as client:

            async def call(tool: str, **arguments: Any) -> dict[str, Any]:
                result = await client.call_tool(tool, arguments)
                assert not result.is_error, result.content
                return dict(result.structured_content or {})

            await call(
                "store_decision", decision="Exports are written to the prod-export bucket",
                rationale="one bucket with one lifecycle rule",
            )  # fmt: skip
            started = json.loads(hook(project, "session-start", source="startup") or "{}")
            context = started["hookSpecificOutput"]["additionalContext"]
            assert "prod-export bucket" in context

            say(transcript, "user", "How should we schedule the nightly export of the orders db?")
            prompt = hook(project, "prompt-submit", transcript_path=str(transcript),
                          prompt="which bucket are the nightly exports written to?")  # fmt: skip
            assert "prod-export" in prompt
            say(transcript, "assistant", "A CronJob in the cluster would keep it with the app.")
            hook(project, "pre-compact", transcript_path=str(transcript), trigger="auto")
            say(transcript, "user", "Try pg_dump with parallel jobs.")
            say(transcript, "assistant", "Parallel pg_dump failed on the partitioned table.")
            hook(project, "stop", transcript_path=str(transcript))
            hook(project, "stop", transcript_path=str(transcript))  # nothing new was said
            say(transcript, "assistant", SUMMARY)
            hook(project, "session-end", transcript_path=str(transcript), reason="exit")
            hook(project, "session-end", transcript_path=str(transcript), reason="exit")

            async def closed() -> bool:
                rows = await call(
                    "cypher_query",
                    query="MATCH (s:Session {id: $s}) RETURN s.summary_id IS NOT NULL",
                    params={"s": SESSION},
                )
                return rows["rows"] == [[True]]

            assert await wait_until(closed)
            await anyio.sleep(1.0)  # the second session end, queued behind the first

            async def of_kind(kind: str) -> list[dict[str, Any]]:
                return (await call("list_memories", kind=kind, detail="full"))["memories"]

            decisions = [m["content"] for m in await of_kind("decision")]
            assert sum("CronJob" in d for d in decisions) == 1
            dead_ends = await of_kind("dead_end")
            assert [m["session_id"] for m in dead_ends] == [SESSION]
            checkpoints = await of_kind("checkpoint")
            assert len(checkpoints) == 3  # pre-compact, the first stop, the session end
            assert all("noise" not in c["content"] for c in checkpoints)
            summaries = await of_kind("summary")
            assert len(summaries) == 1 and "TODO" in summaries[0]["content"]
            queue = await call("review_session_changes", session=SESSION, status=None)
            kinds = {item["statement_kind"] for item in queue["items"]}
            assert kinds <= {"caveat", "todo", "decision", "dead_end"}
