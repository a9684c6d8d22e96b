"""graphmem migrate: a store copied to the other engine whole, resumable, and refused when unsafe.

This process runs one engine (`engines`), so the copy is looked at through the CLI, in
processes of its own engine."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from graphmem.embeddings.hashing import HashEmbedder
from graphmem.errors import Conflict, InvalidInput, StorageError
from graphmem.migration import LOADED, MANIFEST, WORK, migrate
from graphmem.service import GraphMemory, open_store
from graphmem.settings import load_settings
from graphmem.storage import engines
from tests.servers.falkordb_servers import Server

OTHER = engines.LADYBUG if engines.DEFAULT is engines.KUZU else engines.KUZU


def fill(gm: GraphMemory, project: Path) -> None:
    """Something in most tables: memories (bulk and one by one) with vectors, an idempotency
    key, an audited change, a superseded decision, entities and facts, a document, a
    session's review item, a steward run."""
    notes = [
        {"content": f"note {i}: the ledger retries {i} times", "metadata": {"n": i}}
        for i in range(300)
    ]
    gm.remember_many(notes)  # a batch this big is COPYed
    incident = gm.remember("Migration #47 broke the orders.created_at index", idempotency_key="k")
    gm.promote_sediment(incident.id)  # audited
    old = gm.store_decision(decision="Sessions live in Redis", rationale="fast").id
    new = gm.store_decision(decision="Sessions live in Postgres", rationale="evictions").id
    gm.mark_outdated(old, reason="Redis evicted sessions", superseded_by=new)
    gm.index_triples()
    (project / "docs").mkdir()
    (project / "docs" / "deploys.md").write_text("# Deploys\n\n## Rolling back\n\nRedeploy.\n")
    gm.index_documents([str(project / "docs")])
    gm.close_session("We decided to cache tokens for five minutes.", dry_run=False)
    gm.steward_run(scope="duplicates", dry_run=False)


def cli(home: Path, *args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "graphmem", *args, "--home", str(home), "--json"],
        capture_output=True, text=True, env=env, timeout=300,
    )  # fmt: skip


@pytest.fixture
def source(tmp_path: Path) -> Path:
    project = tmp_path / "project"
    project.mkdir()
    home = project / ".graphmem"
    with open_store(home, embedder=HashEmbedder()) as gm:
        fill(gm, project)
    return home


def test_a_store_copied_to_the_other_engine_has_every_row_and_answers_alike(
    source: Path, tmp_path: Path, cli_env: dict[str, str]
) -> None:
    target = tmp_path / "copy"
    steps: list[str] = []
    report = migrate(
        load_settings(source, environ={}), target, OTHER.name,
        progress=lambda what, done, of: steps.append(what),
    )  # fmt: skip
    assert (report.engine_from, report.engine_to) == (engines.DEFAULT.name, OTHER.name)
    rows = {t.table: t.rows for t in report.tables}
    assert rows["Memory"] >= 303 and rows["MENTIONS"] > 0 and rows["Fact"] > 0
    assert rows["Document"] == 1 and rows["ReviewItem"] >= 1 and rows["SUPERSEDES"] == 1
    assert all(rows[t] > 0 for t in ("Audit", "StoreKey", "StewardRun", "Section"))
    assert any(step.startswith("export ") for step in steps)
    assert any(step.startswith("load ") for step in steps)
    assert not (target / WORK).exists()  # the Parquet files are gone once checked

    env = {k: v for k, v in cli_env.items() if k != "GRAPHMEM_ENGINE"}  # each its own engine
    stats = json.loads(cli(target, "stats", env=env).stdout)
    assert (stats["engine"], stats["total"]) == (OTHER.name, rows["Memory"])
    assert stats["missing_vectors"] == 0
    for home in (source, target):
        out = str(home.parent / "x.jsonl")
        assert cli(home, "export", out, "--with-vectors", env=env).returncode == 0
    exported = [(h.parent / "x.jsonl").read_text() for h in (source, target)]
    assert exported[0] == exported[1]  # every memory, vectors byte for byte
    answers = [json.loads(cli(h, "recall", "orders index migration", env=env).stdout)
               for h in (source, target)]  # fmt: skip
    assert [(h["memory"]["id"], h["score"]) for h in answers[0]["hits"]] == [
        (h["memory"]["id"], h["score"]) for h in answers[1]["hits"]
    ]


def test_an_interrupted_copy_goes_on_where_it_stopped(source: Path, tmp_path: Path) -> None:
    target = tmp_path / "copy"
    settings = load_settings(source, environ={})
    hidden = tmp_path / "hidden"
    # the load stops at a table whose file is missing, as if the run had been killed there
    with pytest.raises(StorageError, match="run the same command again to resume"):
        migrate(settings, target, OTHER.name, progress=_hide_once(target, "SUBJECT", hidden))
    loaded = json.loads((target / WORK / LOADED).read_text())
    assert "Memory" in loaded and "SUBJECT" not in loaded
    for path in hidden.iterdir():
        shutil.move(path, target / WORK / path.name)

    report = migrate(settings, target, OTHER.name)
    assert report.resumed
    assert {t.table for t in report.tables} >= {"Memory", "SUBJECT"}


@pytest.mark.timeout(120)
def test_a_loading_process_that_writes_much_to_stderr_still_finishes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """More than a pipe holds on stderr (warnings, a library's logging) while this process
    reads the child's progress: it used to stop both for good."""
    noisy = tmp_path / "noisy"
    noisy.mkdir()
    (noisy / "sitecustomize.py").write_text("import sys\nsys.stderr.write('w' * 1_000_000)\n")
    monkeypatch.setenv("PYTHONPATH", str(noisy))
    with open_store(tmp_path / "source", embedder=HashEmbedder()) as gm:
        gm.remember("The ledger retries three times")
    report = migrate(load_settings(tmp_path / "source", environ={}), tmp_path / "copy", OTHER.name)
    assert {t.table: t.rows for t in report.tables}["Memory"] == 1


def _hide_once(target: Path, table: str, into: Path) -> Callable[[str, int, int], None]:
    """A progress callback that moves `table`'s files away once they are exported."""
    done = False

    def progress(what: str, step: int, of: int) -> None:
        nonlocal done
        manifest = target / WORK / MANIFEST
        if done or not what.startswith("load ") or not manifest.exists():
            return
        into.mkdir(exist_ok=True)
        for path in (target / WORK).glob(f"{table}.*parquet"):
            path.rename(into / path.name)
        done = True

    return progress


def test_a_copy_is_refused_where_it_could_do_harm(source: Path, tmp_path: Path) -> None:
    settings = load_settings(source, environ={})
    full = tmp_path / "full"
    full.mkdir()
    (full / "something").write_text("x")
    with pytest.raises(Conflict, match="neither empty nor an unfinished copy"):
        migrate(settings, full, OTHER.name)
    with pytest.raises(InvalidInput, match="unknown engine"):
        migrate(settings, tmp_path / "new", "sqlite")
    with pytest.raises(InvalidInput, match="inside the store"):
        migrate(settings, source / "copy", OTHER.name)
    with pytest.raises(InvalidInput, match="no store"):
        migrate(load_settings(tmp_path / "empty", environ={}), tmp_path / "new", OTHER.name)


def test_the_cli_copies_and_reports_in_json(
    source: Path, tmp_path: Path, cli_env: dict[str, str]
) -> None:
    target = tmp_path / "copy"
    done = subprocess.run(
        [sys.executable, "-m", "graphmem", "migrate", "--to", OTHER.name, str(target),
         "--home", str(source), "--json"],
        capture_output=True, text=True, env=cli_env, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["engine_to"] == OTHER.name and report["resumed"] is False
    again = subprocess.run(
        [sys.executable, "-m", "graphmem", "migrate", "--to", OTHER.name, str(target),
         "--home", str(source), "--json"],
        capture_output=True, text=True, env=cli_env, timeout=300,
    )  # fmt: skip
    assert again.returncode == 2  # the target is a finished store now
    assert "Traceback" not in again.stderr
    assert json.loads(again.stderr)["error"] == "conflict"


def test_a_store_copied_onto_a_falkordb_graph_and_back_answers_alike(
    source: Path, tmp_path: Path, cli_env: dict[str, str], falkordb_server: Server
) -> None:
    """A project's store onto a team's server and back: the node's data dir names the graph,
    every table and vector comes back, and the store answers as it did."""
    url = falkordb_server.store_url("team")
    node, back = tmp_path / "node", tmp_path / "back"
    there = migrate(load_settings(source, environ={}), node, url)
    assert (there.engine_from, there.engine_to) == (engines.DEFAULT.name, "falkordb")
    assert f'store_url = "{url}"' in (node / "config.toml").read_text()
    with pytest.raises(Conflict, match="already holds memories"):  # never over a team's store
        migrate(load_settings(source, environ={}), tmp_path / "again", url)
    home = migrate(load_settings(node, environ={}), back, engines.DEFAULT.name)
    assert load_settings(back, environ={}).store_url is None  # its own database again
    assert [(t.table, t.rows, t.sha256) for t in home.tables] == [
        (t.table, t.rows, t.sha256) for t in there.tables
    ]
    answers = [
        json.loads(cli(h, "recall", "orders index migration", env=cli_env).stdout)
        for h in (source, node, back)
    ]
    ids = [[h["memory"]["id"] for h in a["hits"]] for a in answers]
    assert ids[0] and ids[0] == ids[1] == ids[2]
    # the same scores but for the last float bits: the engines hand the rows over in another
    # order, and sums of floats depend on it (0.166686 against 0.166685 was seen)
    scores = [[h["score"] for h in a["hits"]] for a in answers]
    assert scores[1] == pytest.approx(scores[0], abs=1e-5)
    assert scores[2] == pytest.approx(scores[0], abs=1e-5)
