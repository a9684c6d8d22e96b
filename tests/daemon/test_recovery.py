"""A client whose owner process dies goes on: it starts a new owner the way the first was started,
sends again what is safe to send again (reads, and stores under their idempotency key), reports
any other write in flight as of unknown outcome, and nothing is ever stored twice."""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from graphmem.daemon.client import RemoteMemory, connect, start_owner, stop_owner
from graphmem.daemon.paths import live_owner
from graphmem.daemon.protocol import KEYED_STORES, METHODS, READS
from graphmem.errors import OutcomeUnknown, StoreError
from graphmem.process import pid_alive
from graphmem.service import GraphMemory
from graphmem.settings import Settings, load_settings

REPO_ROOT = Path(__file__).resolve().parents[2]
HASH = {"GRAPHMEM_EMBEDDING_PROVIDER": "hash"}


def wait_for(predicate, timeout: float = 30.0) -> bool:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.01)
    return False


def owner_of(home: Path) -> int:
    """The pid of the owner serving `home`, after checking that it is one: an owner of this
    test's temporary store, so only a process this test caused to start is ever killed."""
    assert wait_for(lambda: live_owner(home) is not None), "no owner came up"
    info = live_owner(home)
    assert info is not None
    command = Path(f"/proc/{info.pid}/cmdline").read_bytes().split(b"\0")
    assert b"daemon" in command and b"run" in command and str(home).encode() in command
    return info.pid


def kill_owner(home: Path) -> int:
    pid = owner_of(home)
    os.kill(pid, signal.SIGKILL)
    assert wait_for(lambda: not pid_alive(pid), 10)
    return pid


@pytest.fixture
def settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Settings]:
    """A store whose owners (the first and those the client starts again) are real processes
    running this checkout with the hash embedder; whatever owner is left is stopped."""
    for key, value in {**HASH, "GRAPHMEM_EXTRACT_ON_WRITE": "false",
                       "GRAPHMEM_DAEMON_IDLE_TIMEOUT": "5"}.items():  # fmt: skip
        monkeypatch.setenv(key, value)
    path = os.environ.get("PYTHONPATH")
    monkeypatch.setenv("PYTHONPATH", f"{REPO_ROOT}{os.pathsep}{path}" if path else str(REPO_ROOT))
    home = tmp_path / "store"
    start_owner(home)
    yield load_settings(home, environ=HASH)
    stop_owner(home)


def client(settings: Settings) -> RemoteMemory:
    remote = connect(settings)
    assert remote is not None
    return remote


def test_what_a_client_sends_again_is_served_by_the_owner_and_every_store_carries_a_key() -> None:
    assert READS <= METHODS and KEYED_STORES <= METHODS
    stores = {m for m in METHODS if m.startswith("store_")} | {"remember", "remember_many"}
    assert stores == KEYED_STORES, "a store the client does not key would be stored twice"
    assert not READS & stores


def test_an_owner_killed_between_two_calls_is_replaced_and_the_next_call_goes_through(
    settings: Settings,
) -> None:
    with client(settings) as remote:
        memory = remote.remember("Deploys go through ArgoCD")
        killed = kill_owner(settings.home)

        remote.delete(memory.id)  # a write that is never sent twice: it was not sent at all

        assert remote.restarts == 1 and remote.owner.pid != killed
        assert owner_of(settings.home) == remote.owner.pid
        assert remote.stats().total == 0


def test_a_store_in_flight_when_its_owner_dies_is_sent_again_and_stored_once(
    settings: Settings,
) -> None:
    """The owner commits 256 memories a transaction: the kill lands after some committed, so a
    second sending without the keys the client gave each item would store those twice."""
    items = [{"content": f"note {i} about queue q{i % 13}"} for i in range(4000)]
    result: list[object] = []
    with client(settings) as remote, client(settings) as watcher:
        worker = threading.Thread(
            target=lambda: result.append(remote.remember_many(items, batch_size=len(items)))
        )
        worker.start()
        assert wait_for(lambda: watcher.stats().total > 0), "nothing was committed"
        killed = kill_owner(settings.home)
        worker.join(timeout=120)

        assert not worker.is_alive() and remote.owner.pid != killed
        (stored,) = result
        assert isinstance(stored, list) and len(stored) == len(items)
        assert any(m.deduplicated for m in stored), "the kill came after the first commit"
        assert remote.stats().total == len(items)
        contents = Counter(m.content for m in remote.export_page(limit=5000).memories)
        assert set(contents.values()) == {1} and len(contents) == len(items)


def test_another_write_in_flight_when_its_owner_dies_is_reported_unknown(
    settings: Settings,
) -> None:
    lines = [json.dumps({"content": f"imported note {i}"}) for i in range(20_000)]
    failure: list[BaseException] = []

    def load() -> None:
        try:
            remote.import_jsonl(lines)
        except BaseException as exc:
            failure.append(exc)

    with client(settings) as remote, client(settings) as watcher:
        worker = threading.Thread(target=load)
        worker.start()
        assert wait_for(lambda: watcher.stats().total > 0), "nothing was committed"
        killed = kill_owner(settings.home)
        worker.join(timeout=120)

        (error,) = failure
        assert isinstance(error, OutcomeUnknown)
        assert error.code == "outcome_unknown" and error.fields["method"] == "import_jsonl"
        assert "may or may not have been applied" in error.message
        # the next call starts a new owner, which shows what the import left: a prefix of it
        assert 0 < remote.stats().total < len(lines) and remote.owner.pid != killed


def test_a_client_told_not_to_recover_fails_and_starts_no_owner(settings: Settings) -> None:
    remote = connect(settings, recover=False)
    assert remote is not None
    with remote:
        remote.stats()
        kill_owner(settings.home)
        with pytest.raises(StoreError):
            remote.stats()
    assert live_owner(settings.home) is None


# -- an agent through `graphmem serve` -------------------------------------------------------


def agent_run(tmp_path: Path, *, calls: int, kills: int) -> dict[str, object]:
    """`calls` store/recall calls of one agent through a real stdio MCP server, with the store's
    owner killed (-9) `kills` times at even intervals, each kill a few ms into a call."""
    import anyio
    from mcp import Client, StdioServerParameters

    home = tmp_path / "store"
    env = {**HASH, "GRAPHMEM_HOME": str(home), "GRAPHMEM_EXTRACT_ON_WRITE": "false",
           "GRAPHMEM_DAEMON_IDLE_TIMEOUT": "5", "PYTHONPATH": str(REPO_ROOT)}  # fmt: skip
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "graphmem", "serve"], env=env, cwd=str(tmp_path)
    )
    acknowledged: dict[str, str] = {}  # content -> id
    failed: dict[int, str] = {}
    in_flight_at_kill: list[int] = []
    killed_at: list[float] = []
    answered_at: dict[int, float] = {}
    owners: list[int] = []
    done = 0

    async def kill_at_intervals() -> None:
        for k in range(1, kills + 1):
            while done < k * calls // (kills + 1):
                await anyio.sleep(0.002)
            pid = await anyio.to_thread.run_sync(owner_of, home)
            await anyio.sleep(0.004 * k)  # into the next call, at a different point each time
            os.kill(pid, signal.SIGKILL)  # in the loop: no call starts or ends meanwhile
            in_flight_at_kill.append(done)
            killed_at.append(time.monotonic())
            owners.append(pid)
            while pid_alive(pid):
                await anyio.sleep(0.01)

    async def work() -> None:
        nonlocal done
        with anyio.fail_after(240):
            async with Client(params) as agent, anyio.create_task_group() as group:
                group.start_soon(kill_at_intervals)
                for i in range(calls):
                    if i % 5 in (1, 3):
                        tool, args = "recall_memory", {"query": f"queue q{i % 17} stalled"}
                    else:
                        content = f"agent note {i}: queue q{i % 17} stalled on v{i % 5}"
                        tool, args = "store_memory", {"content": content}
                    result = await agent.call_tool(tool, args)
                    if result.is_error:
                        failed[i] = " ".join(getattr(b, "text", "") for b in result.content)
                    elif tool == "store_memory":
                        data = result.structured_content or {}
                        acknowledged[data["content"]] = data["id"]
                    answered_at[i] = time.monotonic()
                    done = i + 1

    started = time.monotonic()
    try:
        anyio.run(work)
    finally:
        owners.append(owner_of(home))
        stop_owner(home)
    seconds = time.monotonic() - started
    with GraphMemory(load_settings(home, environ=HASH)) as gm:
        stored = gm.export_page(limit=calls).memories
    recovery = [
        round(answered_at[i] - at, 2) for i, at in zip(in_flight_at_kill, killed_at, strict=True)
    ]
    return {
        "acknowledged": acknowledged, "failed": failed, "in_flight_at_kill": in_flight_at_kill,
        "owners": owners, "stored": stored, "seconds": seconds, "recovery": recovery,
    }  # fmt: skip


def check_agent_run(run: dict[str, object], *, calls: int, kills: int) -> None:
    acknowledged, failed = run["acknowledged"], run["failed"]
    in_flight, owners, stored = run["in_flight_at_kill"], run["owners"], run["stored"]
    assert isinstance(acknowledged, dict) and isinstance(failed, dict)
    assert isinstance(in_flight, list) and isinstance(owners, list) and isinstance(stored, list)
    print(
        f"\n{calls} calls, {kills} kills in {run['seconds']:.1f}s: {len(failed)} failed "
        f"{sorted(failed)}, calls in flight at the kills {in_flight}, "
        f"{len(acknowledged)} stores acknowledged, {len(stored)} memories stored; seconds from "
        f"each kill to the answer of the call in flight: {run['recovery']}"
    )
    assert len(set(owners)) == kills + 1, "each kill was followed by a new owner"
    assert set(failed) <= set(in_flight), f"only a call in flight at a kill may fail: {failed}"
    assert all("outcome_unknown" in text or "store_error" in text for text in failed.values())
    by_content = Counter(m.content for m in stored)
    assert [c for c, n in by_content.items() if n > 1] == [], "a memory was stored twice"
    ids = {m.content: m.id for m in stored}
    assert {c: ids.get(c) for c in acknowledged} == acknowledged, "an acknowledged store is lost"


def test_an_agent_goes_on_through_two_owner_kills(tmp_path: Path) -> None:
    run = agent_run(tmp_path, calls=100, kills=2)
    check_agent_run(run, calls=100, kills=2)


@pytest.mark.slow
def test_an_agent_goes_on_through_five_owner_kills_in_500_calls(tmp_path: Path) -> None:
    run = agent_run(tmp_path, calls=500, kills=5)
    check_agent_run(run, calls=500, kills=5)
