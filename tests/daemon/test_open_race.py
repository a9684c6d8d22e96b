"""No process opens the store while another is opening or closing it: agents and CLI writers that
start together on a new store all succeed, round after round."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from graphmem.daemon.client import connect, stop_owner
from graphmem.daemon.paths import live_owner
from graphmem.settings import load_settings

REPO_ROOT = Path(__file__).resolve().parents[2]

OPEN_WRITE_CLOSE = """
import sys
from pathlib import Path
from graphmem.errors import StoreLocked
from graphmem.storage.kuzu.connection import KuzuConnection

home, who, times = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])
done = 0
while done < times:
    try:  # again at once, as many clients starting together do
        store = KuzuConnection.open(home, lock_timeout=0)
    except StoreLocked:
        continue
    try:
        store.execute("CREATE NODE TABLE IF NOT EXISTS T(id STRING PRIMARY KEY)")
        store.execute("UNWIND range(1, 100) AS i CREATE (:T {id: $p + string(i)})",
                      {"p": f"{who}-{done}-"})
    finally:
        store.close()  # Kùzu checkpoints here, through graph.kuzu.shadow
    done += 1
"""


def child_env(home: Path) -> dict[str, str]:
    path = os.environ.get("PYTHONPATH")
    return {
        **os.environ,
        "PYTHONPATH": f"{REPO_ROOT}{os.pathsep}{path}" if path else str(REPO_ROOT),
        "GRAPHMEM_HOME": str(home),
        "GRAPHMEM_EMBEDDING_PROVIDER": "hash",
        "GRAPHMEM_EXTRACT_ON_WRITE": "false",
        "GRAPHMEM_DAEMON_IDLE_TIMEOUT": "5",
    }


def test_processes_opening_and_closing_one_store_in_a_loop_never_fail(tmp_path: Path) -> None:
    """Without the open lock (storage.locking), opens failed here on a graph.kuzu.shadow or
    .wal that a closing process had just removed, in every one of three runs."""
    home = tmp_path / "store"
    home.mkdir()
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", OPEN_WRITE_CLOSE, str(home), f"p{n}", "12"],
            env=child_env(home),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for n in range(3)
    ]
    try:
        results = [proc.communicate(timeout=120) for proc in procs]
    finally:
        for proc in procs:
            proc.kill()
    assert [proc.returncode for proc in procs] == [0, 0, 0], [err for _, err in results]
    from graphmem.storage.kuzu.connection import KuzuConnection

    store = KuzuConnection.open(home)
    try:
        assert store.execute("MATCH (t:T) RETURN count(*)") == [[3 * 12 * 100]]
    finally:
        store.close()


def race_round(home: Path, *, agents: int, writers: int) -> list[str]:
    """Start `agents` stdio MCP servers (each stores and recalls) and `writers` CLI `store`
    processes at the same instant on a new store; returns every error any of them saw."""
    import anyio
    from mcp import Client, StdioServerParameters

    env = child_env(home)
    errors: list[str] = []

    async def agent(n: int) -> None:
        params = StdioServerParameters(
            command=sys.executable, args=["-m", "graphmem", "serve"], env=env, cwd=str(home.parent)
        )
        try:
            async with Client(params) as client:
                for tool, args in (("store_memory", {"content": f"agent {n} was here"}),
                                   ("recall_memory", {"query": "who was here"})):  # fmt: skip
                    result = await client.call_tool(tool, args)
                    if result.is_error:
                        errors.append(f"agent {n} {tool}: {result.content}")
        except Exception as exc:
            errors.append(f"agent {n}: {type(exc).__name__}: {exc}")

    async def writer(n: int) -> None:
        argv = [sys.executable, "-m", "graphmem", "store", "--content", f"writer {n} was here"]
        done = await anyio.run_process(argv, env=env, check=False)
        if done.returncode != 0:
            errors.append(f"writer {n} exit {done.returncode}: {done.stderr.decode().strip()}")

    async def everyone() -> None:
        with anyio.fail_after(120):
            async with anyio.create_task_group() as group:
                for n in range(writers):
                    group.start_soon(writer, n)
                for n in range(agents):
                    group.start_soon(agent, n)

    try:
        anyio.run(everyone)
        remote = connect(load_settings(home, environ={"GRAPHMEM_EMBEDDING_PROVIDER": "hash"}))
        assert remote is not None, "the writers went through an owner"
        with remote:
            stored = sorted(m.content for m in remote.list(limit=100).memories)
    finally:
        if live_owner(home) is not None:
            stop_owner(home)
    expected = sorted([f"agent {n} was here" for n in range(agents)] +
                      [f"writer {n} was here" for n in range(writers)])  # fmt: skip
    if not errors and stored != expected:
        errors.append(f"stored {stored}, expected {expected}")
    return errors


def race_rounds(tmp_path: Path, *, rounds: int, agents: int, writers: int) -> None:
    started = time.monotonic()
    failed = {n: e for n in range(rounds) if (e := race_round(tmp_path / f"r{n}", agents=agents,
                                                               writers=writers))}  # fmt: skip
    print(f"\n{rounds} rounds of {agents} agents + {writers} CLI writers in "
          f"{time.monotonic() - started:.0f}s: {rounds - len(failed)} without an error")  # fmt: skip
    assert failed == {}


def test_agents_and_cli_writers_starting_together_on_a_new_store_all_succeed(
    tmp_path: Path,
) -> None:
    race_rounds(tmp_path, rounds=8, agents=2, writers=2)  # the slow run below: 20 rounds of 8


@pytest.mark.slow
def test_six_agents_and_two_cli_writers_starting_together_all_succeed(tmp_path: Path) -> None:
    race_rounds(tmp_path, rounds=20, agents=6, writers=2)
