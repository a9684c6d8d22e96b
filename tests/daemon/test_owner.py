"""The owner process: one holder of the store, many clients, nothing lost."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from graphmem.daemon.client import RemoteMemory, connect, start_owner, stop_owner
from graphmem.daemon.owner import Owner
from graphmem.daemon.paths import live_owner, owner_file
from graphmem.documents.models import DocumentPage
from graphmem.embeddings.hashing import HashEmbedder
from graphmem.errors import Conflict, InvalidInput, NotFound, StoreLocked
from graphmem.models import utcnow
from graphmem.process import pid_alive
from graphmem.service import GraphMemory
from graphmem.settings import load_settings
from graphmem.steward.models import (
    ConflictsReport,
    Finding,
    ReferenceReport,
    SedimentMove,
    SedimentReport,
    StewardPolicy,
    StewardRun,
    StewardStatus,
    SweepReport,
    UndoReport,
)
from graphmem.storage.kuzu import connection
from graphmem.storage.protocols import PASSAGES


def wait_for(predicate, timeout: float = 15.0) -> bool:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return False


@pytest.fixture
def owner(tmp_path: Path) -> Iterator[Owner]:
    """An owner serving a temp store from a thread of this process."""
    settings = load_settings(tmp_path / "store", environ={}, overrides={"lock_timeout": 0.2})
    served = Owner(GraphMemory(settings, embedder=HashEmbedder()))
    thread = threading.Thread(target=served.serve, daemon=True)
    thread.start()
    assert wait_for(lambda: live_owner(served.home) is not None)
    yield served
    served.stop()
    thread.join(timeout=15)
    assert not thread.is_alive()


def client(owner: Owner) -> RemoteMemory:
    remote = connect(owner.gm.settings)
    assert remote is not None
    return remote


def test_a_client_stores_and_recalls_through_the_owner(owner: Owner) -> None:
    with client(owner) as remote:
        memory = remote.remember("Deploys go through ArgoCD", tags=["deploy"], metadata={"n": 1})
        hits = remote.recall("ArgoCD deploys", limit=3)
        assert hits[0].memory.id == memory.id
        assert hits[0].memory.metadata == {"n": 1}
        assert remote.get(memory.id).tags == ["deploy"]


def test_keyword_arguments_named_like_the_protocol_reach_the_owner(owner: Owner) -> None:
    """verify_entry's `method` once collided with the request's own method name."""
    with client(owner) as remote:
        memory = remote.remember("Backups run at 02:00 UTC")
        checked = remote.verify_entry(memory.id, method="read the cron table", status="verified")
        assert checked.verify_status == "verified"
        assert checked.verified_at is not None and checked.verified_at.tzinfo is not None


def test_a_retry_through_the_owner_finds_the_first_store(owner: Owner) -> None:
    with client(owner) as remote:
        first = remote.remember("Deploys go through ArgoCD", idempotency_key="deploy-note")
    with client(owner) as another:  # another process retrying, say
        retry = another.remember("Deploys go through ArgoCD", idempotency_key="deploy-note")
    assert retry.deduplicated and retry.id == first.id


def test_errors_keep_their_type_across_the_socket(owner: Owner) -> None:
    with client(owner) as remote:
        with pytest.raises(NotFound):
            remote.get("no-such-id")
        with pytest.raises(InvalidInput, match="importance"):
            remote.remember("x", importance=7)
        assert remote.stats().total == 0


def test_a_bad_item_of_a_batch_through_the_owner_is_named_by_its_index_in_the_batch(
    owner: Owner,
) -> None:
    items = [{"content": f"note {i}"} for i in range(5)]
    items[3] = {"content": "bad", "importance": 2}
    with client(owner) as remote:
        with pytest.raises(InvalidInput, match=r"^item 3: importance") as caught:
            remote.remember_many(items, batch_size=2)  # item 3 goes in the second request
        assert (caught.value.fields["index"], caught.value.fields["field"]) == (3, "importance")
        assert remote.stats().total == 0  # nothing of the batch was stored


def test_a_conflict_in_a_later_request_of_a_batch_names_the_item_in_the_whole_batch(
    owner: Owner,
) -> None:
    items = [
        {"content": "first", "idempotency_key": "k-1"},
        {"content": "second"},
        {"content": "other", "idempotency_key": "k-1"},
    ]
    with client(owner) as remote:
        with pytest.raises(Conflict, match=r"^item 2: this idempotency key") as caught:
            remote.remember_many(items, batch_size=2)
        assert caught.value.fields["index"] == 2


def test_the_steward_round_trips_through_the_owner(owner: Owner) -> None:
    """Its models cross the socket as themselves, and `updates` (a dict) arrives whole."""
    with client(owner) as remote:
        kept = remote.remember("Deploys go through ArgoCD.").id
        copy = remote.remember("deploys go through argocd").id
        policy = remote.steward_policy({"auto_apply": [], "stale_days": 90})
        assert isinstance(policy, StewardPolicy) and policy.stale_days == 90
        run = remote.steward_run("duplicates", dry_run=False, actor="test")
        assert isinstance(run, StewardRun) and run.started_at.tzinfo is not None
        (finding,) = remote.steward_inbox(kind="exact_duplicate").items
        assert isinstance(finding, Finding) and finding.targets == [kept, copy]
        applied = remote.steward_inbox_resolve(finding.id, "apply", "same", actor="test")
        assert applied.status == "applied" and remote.get(copy).lifecycle == "archived"
        assert isinstance(remote.steward_status(), StewardStatus)
        assert remote.steward_report(run.id).id == run.id
        undone = remote.steward_undo(run.id, actor="test")
        assert isinstance(undone, UndoReport) and undone.findings == [finding.id]
        assert remote.get(copy).lifecycle == "active"
        with pytest.raises(NotFound):
            remote.steward_report("no-such-run")
        with pytest.raises(InvalidInput, match="unknown policy fields"):
            remote.steward_policy({"stale": 1})


def test_sweeping_recounting_and_the_conflicts_report_go_through_the_owner(owner: Owner) -> None:
    with client(owner) as remote:
        chatter = remote.remember("ok, sounds good", type="episodic", importance=0.2,
                                  created_at=utcnow() - timedelta(days=400)).id  # fmt: skip
        text = "Cache user sessions in Redis cluster mode across slots"
        decision = remote.remember(text, kind="decision", context="auth").id
        dead_end = remote.remember(text + ".", kind="dead_end", context="auth").id
        dry = remote.sweep_archive()
        assert isinstance(dry, SweepReport) and dry.archived == [chatter] and dry.run is None
        swept = remote.sweep_archive(dry_run=False, actor="test")
        assert swept.archived == [chatter] and swept.run is not None
        assert remote.steward_undo(swept.run, actor="test").memories == [chatter]
        counted = remote.recount_references()
        assert isinstance(counted, ReferenceReport) and counted.memories == 3
        report = remote.conflicts_report(context="auth")
        assert isinstance(report, ConflictsReport)
        assert [c.targets for c in report.conflicts] == [[decision, dead_end]]
        assert remote.conflicts_report(service="web").conflicts == []


def test_sedimentation_goes_through_the_owner(owner: Owner) -> None:
    with client(owner) as remote:
        settled = remote.remember("The gateway returns 502 when the pool is exhausted",
                                  created_at=utcnow() - timedelta(days=2)).id  # fmt: skip
        dry = remote.sediment_cycle()
        assert isinstance(dry, SedimentReport) and dry.run is None
        assert [(m.memory, m.to_layer) for m in dry.moves] == [(settled, "episodic")]
        cycle = remote.sediment_cycle(dry_run=False, actor="test")
        assert cycle.run is not None and remote.get(settled).layer == "episodic"
        up = remote.promote_sediment(settled, layer="character", note="team rule", actor="test")
        assert isinstance(up, SedimentMove) and (up.from_layer, up.to_layer) == (
            "episodic", "character",
        )  # fmt: skip
        down = remote.demote_sediment(settled, actor="test")
        assert down.to_layer == "semantic" and down.run is not None
        assert remote.steward_undo(down.run, actor="test").memories == [settled]
        assert remote.get(settled).layer == "character"
        with pytest.raises(InvalidInput, match="layer must be one of"):
            remote.promote_sediment(settled, layer="bedrock")  # type: ignore[arg-type]
        with pytest.raises(NotFound):
            remote.demote_sediment("no-such-id")


def test_the_documents_overview_and_a_document_page_come_through_the_owner(
    owner: Owner,
) -> None:
    (owner.home.parent / "deploy.md").write_text("# Deploy\n\nArgoCD.\n\n## Rollback\n\nRevert.\n")
    with client(owner) as remote:
        remote.index_documents(["deploy.md"])
        memory = remote.remember("Deploys go through ArgoCD")
        remote.cite_source(memory.id, "deploy.md", section="rollback")
        overview = remote.documents_overview()
        page = remote.document_page("deploy.md")
    assert [(d.path, d.sections) for d in overview.documents] == [("deploy.md", 2)]
    assert isinstance(page, DocumentPage) and page.indexed_at is not None
    assert [c.memory_id for c in page.cited_by] == [memory.id]


def test_the_owner_extracts_entities_in_the_background_and_serves_the_graph(
    owner: Owner,
) -> None:
    with client(owner) as remote:
        first = remote.remember("The checkout-service depends on Redis for carts.")
        remote.remember("Redis was upgraded to version 7 last week.")
        assert remote.wait_for_extraction(60)
        entities = {e.id: e for e in remote.list_entities().entities}
        assert entities["redis"].mentions == 2
        result = remote.recall_multihop("checkout-service carts", seed_k=1)
        assert result.hits[0].memory.id == first.id and result.hits[0].seed
        assert any("-mentions-> Redis <-mentions-" in h.path_text for h in result.hits[1:])
        assert remote.index_triples().memories == 0  # nothing left to catch up


def test_the_store_cannot_be_opened_beside_its_owner(owner: Owner) -> None:
    with pytest.raises(StoreLocked, match=str(os.getpid())):
        GraphMemory(owner.gm.settings, embedder=HashEmbedder())


def test_the_socket_is_private_to_its_user(owner: Owner) -> None:
    mode = stat.S_IMODE(os.stat(owner.socket_path).st_mode)
    assert mode == 0o600


@pytest.mark.parametrize("checkpoint_every_write", [False, True])
def test_concurrent_clients_lose_no_acknowledged_write(
    owner: Owner,
    checkpoint_every_write: bool,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """With checkpoints after every write, recalls are in flight at each one: Kùzu 0.11.3 then
    deadlocks and drops the commit unless the checkpoint waits for them."""
    if checkpoint_every_write:
        monkeypatch.setattr(connection, "CHECKPOINT_WAL_BYTES", 0)
    acknowledged: dict[str, str] = {}
    failures: list[BaseException] = []

    def work(worker: int) -> None:
        try:
            with client(owner) as remote:
                for i in range(25):
                    text = f"worker {worker} note {i} about queue q{i}"
                    acknowledged[remote.remember(text).id] = text
                    remote.recall(f"queue q{i}", limit=3)
                    if i % 5 == 0:
                        memory = remote.remember(f"temp {worker}-{i}")
                        remote.update(memory.id, content=f"updated {worker}-{i}")
                        acknowledged[memory.id] = f"updated {worker}-{i}"
        except BaseException as exc:
            failures.append(exc)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not failures
    assert "checkpoint" not in caplog.text
    with client(owner) as remote:
        for memory_id, text in acknowledged.items():
            assert remote.get(memory_id).content == text


def test_export_and_import_page_through_the_owner(owner: Owner, tmp_path: Path) -> None:
    from graphmem.transfer import export_jsonl, import_jsonl

    with client(owner) as remote:
        remote.remember_many([{"content": f"note {i}"} for i in range(30)])
        out = tmp_path / "dump.jsonl"
        with out.open("w") as handle:
            assert export_jsonl(remote, handle) == 30
        report = import_jsonl(remote, [*out.read_text().splitlines(), "{bad"])
        assert (report.imported, report.skipped) == (0, 30)
        assert report.errors[0]["line"] == 31


def test_an_import_larger_than_a_request_may_be_goes_in_several(
    owner: Owner, monkeypatch: pytest.MonkeyPatch
) -> None:
    import graphmem.daemon.client as client_module
    import graphmem.daemon.owner as owner_module

    for module in (client_module, owner_module):
        monkeypatch.setattr(module, "MAX_LINE", 4096)
    lines = [json.dumps({"content": f'note {i} about the "ledger" rollout'}) for i in range(200)]
    lines[150] = "{bad"
    progress: list[tuple[int, int]] = []
    with client(owner) as remote:
        report = remote.import_jsonl(lines, on_progress=lambda *p: progress.append(p))
        assert len(progress) > 1 and progress[-1] == (200, 200)
        assert (report.imported, report.skipped) == (199, 0)
        assert [e["line"] for e in report.errors] == [151]
        assert remote.stats().total == 199


def test_a_request_over_the_limit_is_refused_and_its_connection_closed(
    owner: Owner, monkeypatch: pytest.MonkeyPatch
) -> None:
    import socket

    import graphmem.daemon.owner as owner_module

    monkeypatch.setattr(owner_module, "MAX_LINE", 1024)
    request = {"id": 1, "method": "remember", "args": ["x" * 4000], "kwargs": {}}
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(10)
        sock.connect(owner.socket_path)
        sock.sendall(json.dumps(request).encode() + b"\n")
        with sock.makefile("rb") as replies:
            reply = json.loads(replies.readline())
            assert "limit" in reply["error"]["message"]
            assert replies.readline() == b""  # no answers to the pieces of the request
    with client(owner) as remote:
        assert remote.stats().total == 0


def test_a_client_refuses_a_request_over_the_limit_and_stays_usable(
    owner: Owner, monkeypatch: pytest.MonkeyPatch
) -> None:
    import graphmem.daemon.client as client_module

    monkeypatch.setattr(client_module, "MAX_LINE", 1024)
    with client(owner) as remote:
        with pytest.raises(InvalidInput, match="limit"):
            remote.remember("x" * 4000)
        assert remote.remember("small enough").content == "small enough"


def test_the_owner_exits_after_its_idle_timeout_once_clients_leave(tmp_path: Path) -> None:
    settings = load_settings(tmp_path / "store", environ={}, overrides={"daemon_idle_timeout": 0.5})
    served = Owner(GraphMemory(settings, embedder=HashEmbedder()))
    thread = threading.Thread(target=served.serve, daemon=True)
    thread.start()
    assert wait_for(lambda: live_owner(served.home) is not None)
    remote = connect(settings)
    assert remote is not None
    remote.remember("keeps the owner busy")
    time.sleep(1.0)
    assert thread.is_alive(), "an owner with a connected client must stay"
    remote.close()
    thread.join(timeout=15)
    assert not thread.is_alive()
    assert not owner_file(served.home).exists()
    assert not Path(served.socket_path).exists()


def test_the_owner_stays_up_until_an_imports_passages_are_embedded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = load_settings(tmp_path / "store", environ={}, overrides={"daemon_idle_timeout": 0.5})
    gm = GraphMemory(settings, embedder=HashEmbedder())
    release = threading.Event()
    fill = gm.passages.fill_passages

    def held_back(memory_ids: Any, **options: Any) -> int:
        release.wait(15)
        return fill(memory_ids, **options)

    monkeypatch.setattr(gm.passages, "fill_passages", held_back)
    served = Owner(gm)
    thread = threading.Thread(target=served.serve, daemon=True)
    thread.start()
    assert wait_for(lambda: live_owner(served.home) is not None)
    remote = connect(settings)
    assert remote is not None
    note = {"content": "The API timed out. Its pool was too small. We raised it to 50."}
    report = remote.import_jsonl([json.dumps(note)])
    assert (report.imported, report.passages_pending) == (1, 1)
    remote.close()

    time.sleep(1.0)
    assert thread.is_alive(), "an owner with background work must stay"
    release.set()
    thread.join(timeout=15)
    assert not thread.is_alive()
    with GraphMemory(settings, embedder=HashEmbedder(), extract_in_background=False) as again:
        assert len(again.store.vectors.passage_owners(again.embedder.space)) == 1
        assert again.store.pending.items(PASSAGES) == []


# -- the owner as a real background process ---------------------------------------------------


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return {
        **os.environ,
        "GRAPHMEM_HOME": str(tmp_path / "store"),
        "GRAPHMEM_EMBEDDING_PROVIDER": "hash",
        "GRAPHMEM_DAEMON_IDLE_TIMEOUT": "10",
    }


def cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "graphmem", *args],
        capture_output=True, text=True, env=env, timeout=120,
    )  # fmt: skip


@pytest.fixture
def background_owner(env: dict[str, str]) -> Iterator[int]:
    started = cli(env, "daemon", "start", "--json")
    assert started.returncode == 0, started.stderr
    pid = json.loads(started.stdout)["pid"]
    yield pid
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)


def test_cli_commands_go_through_a_running_owner(
    env: dict[str, str], background_owner: int
) -> None:
    stored = cli(env, "store", "--content", "Migration #47 broke the index", "--json")
    assert stored.returncode == 0, stored.stderr
    recalled = json.loads(cli(env, "recall", "#47", "--json").stdout)
    assert recalled["hits"][0]["memory"]["content"] == "Migration #47 broke the index"
    status = json.loads(cli(env, "daemon", "status", "--json").stdout)
    assert status["running"] and status["pid"] == background_owner
    assert status["requests"] >= 2
    again = json.loads(cli(env, "daemon", "start", "--json").stdout)
    assert again["pid"] == background_owner, "a second start must reuse the running owner"
    missing = cli(env, "get", "nope")
    assert missing.returncode == 3 and "Traceback" not in missing.stderr


def test_sighup_reloads_live_settings(env: dict[str, str], background_owner: int) -> None:
    home = Path(env["GRAPHMEM_HOME"])
    (home / "config.toml").write_text('recall_recipe = "bm25"\n')
    os.kill(background_owner, signal.SIGHUP)
    settings = load_settings(home, environ={})

    def recipe_is_bm25() -> bool:
        remote = connect(settings)
        assert remote is not None
        with remote:
            remote.remember("Deploys go through ArgoCD")
            hits = remote.recall("ArgoCD deploys", explain=True).hits
            return hits[0].explain is not None and hits[0].explain["recipe"] == "bm25"

    assert wait_for(recipe_is_bm25)


def test_sigterm_drains_and_a_killed_owner_is_cleaned_up(env: dict[str, str]) -> None:
    home = Path(env["GRAPHMEM_HOME"])
    settings = load_settings(home, environ={})
    info = start_owner_with_env(env)
    remote = connect(settings)
    assert remote is not None
    ids = [remote.remember(f"note {i}").id for i in range(20)]
    remote.close()
    stopped = stop_owner(home)
    assert stopped is not None and stopped.pid == info
    assert live_owner(home) is None
    # a killed owner leaves its record behind; the next client notices and starts afresh
    info = start_owner_with_env(env)
    os.kill(info, signal.SIGKILL)
    assert wait_for(lambda: not pid_alive(info))
    assert wait_for(lambda: live_owner(home) is None)
    assert not owner_file(home).exists()
    with GraphMemory(settings, embedder=HashEmbedder()) as gm:
        assert all(gm.get(i).content.startswith("note") for i in ids)


def start_owner_with_env(env: dict[str, str]) -> int:
    started = cli(env, "daemon", "start", "--json")
    assert started.returncode == 0, started.stderr
    return int(json.loads(started.stdout)["pid"])


def test_start_owner_reports_why_an_owner_could_not_start(tmp_path: Path) -> None:
    home = tmp_path / "store"
    home.mkdir()
    (home / "config.toml").write_text("lock_timeout = 'not a number'\n")
    with pytest.raises(Exception, match="exited at start"):
        start_owner(home, timeout=30)
