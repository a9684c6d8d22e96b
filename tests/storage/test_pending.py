"""The Pending table: work left by a write is recorded in the write's transaction, removed in the
transaction that does it, and a start reads exactly what is left from it alone."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from graphmem.embeddings.hashing import HashEmbedder
from graphmem.errors import StorageError
from graphmem.indexes.changes import MemoriesWritten
from graphmem.models import utcnow
from graphmem.passage_work import PASSAGES_PENDING
from graphmem.service import GraphMemory
from graphmem.settings import load_settings
from graphmem.storage.kuzu import entities as kuzu_entities
from graphmem.storage.kuzu.vectors import COPY_MIN_ROWS
from graphmem.storage.protocols import CHUNK_EXTRACT, EXTRACT, PASSAGES, EntityRow, Mention

NOTES = [
    {"content": f"Service {i} timed out. The pool was too small. We raised it to {i}."}
    for i in range(5)
]


def _open(path: Path, *, background: bool = False, extract: bool = False) -> GraphMemory:
    """`background`: as the owner opens it (passages left to a worker); `extract`: with
    extraction on write too."""
    settings = load_settings(path, environ={}, overrides={"extract_on_write": extract})
    return GraphMemory(settings, embedder=HashEmbedder(), extract_in_background=background)


@pytest.fixture
def oneshot(tmp_path: Path) -> Iterator[GraphMemory]:
    """A one-shot command's store: nothing runs in the background."""
    gm = _open(tmp_path / "store")
    yield gm
    gm.close()


def _extracted(gm: GraphMemory, memory_id: str) -> None:
    gm.store.entities.write_extraction(
        [memory_id], extractor="test", entities=[EntityRow("redis", "Redis", "redis", "redis",
        "product")], aliases={}, mentions=[Mention(memory_id, "redis", "Redis")], facts=[],
        provenance=[], at=utcnow(),
    )  # fmt: skip


def test_a_stored_memory_waits_for_extraction_until_its_entities_are_written(
    oneshot: GraphMemory,
) -> None:
    first, second = oneshot.remember_many([{"content": "uses redis"}, {"content": "uses kafka"}])

    assert oneshot.store.pending.items(EXTRACT) == [first.id, second.id]
    _extracted(oneshot, first.id)
    assert oneshot.store.pending.items(EXTRACT) == [second.id]


def _fail_when_memories_are_written(
    gm: GraphMemory, monkeypatch: pytest.MonkeyPatch, why: str
) -> None:
    """The last step of a write of memories (its change event) fails: the write rolls back."""
    emit = gm.store.conn.emit

    def failing(change: Any) -> None:
        if isinstance(change, MemoriesWritten):
            raise StorageError(why)
        emit(change)

    monkeypatch.setattr(gm.store.conn, "emit", failing)


def test_an_extraction_that_fails_to_commit_leaves_the_memory_waiting(
    oneshot: GraphMemory, monkeypatch: pytest.MonkeyPatch
) -> None:
    memory = oneshot.remember("uses redis")

    def broken(*args: Any, **kwargs: Any) -> None:
        raise StorageError("disk full")

    monkeypatch.setattr(kuzu_entities, "put_entities", broken)
    with pytest.raises(StorageError):
        _extracted(oneshot, memory.id)
    assert oneshot.store.pending.items(EXTRACT) == [memory.id]


def test_a_write_that_rolls_back_leaves_no_work_behind(
    oneshot: GraphMemory, monkeypatch: pytest.MonkeyPatch
) -> None:
    _fail_when_memories_are_written(oneshot, monkeypatch, "disk full")
    with pytest.raises(StorageError):
        oneshot.remember_many([{"content": f"never stored {i}"} for i in range(3)])
    assert oneshot.store.pending.counts() == {EXTRACT: 0, PASSAGES: 0, CHUNK_EXTRACT: 0}


def test_editing_the_text_makes_a_memory_wait_again_and_deleting_it_drops_its_work(
    oneshot: GraphMemory,
) -> None:
    memory = oneshot.remember("uses redis")
    _extracted(oneshot, memory.id)

    oneshot.update(memory.id, content="uses redis and kafka")
    assert oneshot.store.pending.items(EXTRACT) == [memory.id]
    oneshot.delete(memory.id)
    assert oneshot.store.pending.items(EXTRACT) == []


def test_an_imports_deferred_passages_wait_with_its_memories_and_the_worker_clears_them(
    tmp_path: Path,
) -> None:
    with _open(tmp_path / "store", background=True) as gm:
        report = gm.import_jsonl([json.dumps(n) for n in [*NOTES, {"content": "one sentence"}]])
        assert report.passages_pending == 5
        assert gm.wait_for_passages(timeout=30)
        assert gm.store.pending.items(PASSAGES) == []
        assert len(gm.store.vectors.passage_owners(gm.embedder.space)) == 5
        assert len(gm.store.pending.items(EXTRACT)) == 6  # imports leave extraction to a start


def test_a_start_reads_what_is_left_from_the_pending_table_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "store"
    with _open(path, background=True) as gm:
        monkeypatch.setattr(gm.passages.jobs, "submit", lambda job: None)  # the worker died
        gm.import_jsonl([json.dumps(n) for n in NOTES])
        waiting = gm.store.pending.items(PASSAGES)
        assert len(waiting) == 5
    monkeypatch.undo()

    with _open(path, background=True, extract=True) as again:
        queries: list[str] = []
        for name in ("read", "read_tuples", "execute"):
            method = getattr(again.store.conn, name)

            def spy(query: str, *args: Any, _method: Callable[..., Any] = method) -> Any:
                queries.append(query)
                return _method(query, *args)

            monkeypatch.setattr(again.store.conn, name, spy)
        scheduled: list[list[str]] = []
        monkeypatch.setattr(again._context.extraction, "schedule", scheduled.append)
        monkeypatch.setattr(again._context.extraction, "schedule_chunks", lambda: None)

        assert again.schedule_pending_extraction() == 5
        assert again.schedule_pending_passages()
        tables = {t for q in queries for t in re.findall(r"\(\w+:(\w+)", q)}
        assert tables <= {"Pending", "_Meta"}, queries
        monkeypatch.undo()
        assert again.wait_for_passages(timeout=30)
        assert again.store.pending.items(PASSAGES) == []
        assert set(again.store.vectors.passage_owners(again.embedder.space)) == set(waiting)


def test_passages_given_by_an_update_are_not_embedded_again_by_the_worker(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with _open(tmp_path / "store", background=True) as gm:
        jobs: list[Callable[[], None]] = []
        monkeypatch.setattr(gm.passages.jobs, "submit", jobs.append)
        gm.import_jsonl([json.dumps(NOTES[0])])
        (memory_id,) = gm.store.pending.items(PASSAGES)
        gm.update(memory_id, content="The pool was too small. We raised it to 80.")
        assert gm.store.pending.items(PASSAGES) == []

        jobs[0]()  # the import's job runs late: nothing is left for it to do

        assert (
            gm.store.vectors.passage_vectors(gm.embedder.space, [memory_id])[memory_id].shape[0]
            == 2
        )


def _as_version_11(gm: GraphMemory) -> None:
    """The store as migration 11 left it: no Pending table."""
    gm.cypher("DROP TABLE Pending", write=True)
    gm.cypher("MATCH (m:_Migration {version: 12}) DELETE m", write=True)


def test_upgrading_a_store_records_the_work_the_old_scans_found_once(tmp_path: Path) -> None:
    path = tmp_path / "store"
    with _open(path) as gm:
        done, waiting, archived = (gm.remember(f"note {i}") for i in range(3))
        _extracted(gm, done.id)
        gm.cypher(
            "MATCH (m:Memory {id: $id}) SET m.lifecycle = 'archived'",
            {"id": archived.id},
            write=True,
        )
        _as_version_11(gm)

    with _open(path) as again:
        assert again.db_status().pending == []
        assert again.store.pending.items(EXTRACT) == [waiting.id]


def test_an_imports_flagged_passages_from_before_the_table_are_found_at_the_first_start(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "store"
    with _open(path, background=True) as gm:
        monkeypatch.setattr(gm.passages.jobs, "submit", lambda job: None)  # the worker died
        gm.import_jsonl([json.dumps(n) for n in [*NOTES, {"content": "one sentence"}]])
        _as_version_11(gm)
        gm.store.meta_set(PASSAGES_PENDING, "1")  # how such a store marked them
    monkeypatch.undo()

    with _open(path, background=True) as again:
        assert again.store.pending.items(PASSAGES) == []
        assert again.schedule_pending_passages()
        assert again.wait_for_passages(timeout=30)
        assert len(again.store.vectors.passage_owners(again.embedder.space)) == 5
        assert not again.store.meta_get(PASSAGES_PENDING)
        assert not again.schedule_pending_passages()


def test_document_chunks_wait_for_extraction_until_extracted_or_their_file_goes(
    tmp_path: Path,
) -> None:
    project = tmp_path / "project"
    (project / "docs").mkdir(parents=True)
    runbook = project / "docs" / "billing.md"
    runbook.write_text("# billing-api outage\n\nRestart billing-api.\n\n## Check\n\nPostgres.\n")
    (project / "docs" / "other.md").write_text("# Redis\n\nThe cache is Redis.\n")
    with _open(project / ".graphmem") as gm:
        gm.index_documents()
        chunks = {r[0] for r in gm.cypher("MATCH (c:Chunk) RETURN c.id", {}).rows}
        assert set(gm.store.pending.items(CHUNK_EXTRACT)) == chunks

        runbook.unlink()
        gm.index_documents()
        left = {r[0] for r in gm.cypher("MATCH (c:Chunk) RETURN c.id", {}).rows}
        assert left < chunks and set(gm.store.pending.items(CHUNK_EXTRACT)) == left

        assert gm.index_triples().chunks == len(left)
        assert gm.store.pending.items(CHUNK_EXTRACT) == []


def test_a_batch_to_copy_records_its_work_first_and_rows_of_a_lost_copy_are_dropped_on_read(
    oneshot: GraphMemory, monkeypatch: pytest.MonkeyPatch
) -> None:
    _fail_when_memories_are_written(oneshot, monkeypatch, "killed during the COPY's commit")
    with pytest.raises(StorageError):
        oneshot.remember_many([{"content": f"note {i}"} for i in range(COPY_MIN_ROWS)])
    monkeypatch.undo()
    recorded = oneshot.store.pending.items(EXTRACT)
    assert len(recorded) == COPY_MIN_ROWS and oneshot.stats().total == 0

    assert oneshot.store.entities.texts_for_extraction(recorded[:64]) == []
    assert len(oneshot.store.pending.items(EXTRACT)) == COPY_MIN_ROWS - 64


def test_a_memory_deleted_by_a_callers_cypher_leaves_a_row_the_next_read_drops(
    oneshot: GraphMemory,
) -> None:
    memory = oneshot.remember("uses redis")
    oneshot.cypher("MATCH (m:Memory {id: $id}) DETACH DELETE m", {"id": memory.id}, write=True)

    assert oneshot.store.entities.texts_for_extraction([memory.id]) == []
    assert oneshot.store.pending.items(EXTRACT) == []


def test_only_the_work_on_memories_not_there_is_dropped(oneshot: GraphMemory) -> None:
    memory = oneshot.remember("still there")
    other = "01HKS659000000000000000001"
    oneshot.store.pending.put(EXTRACT, [other])

    assert oneshot.store.memories.finish_absent(EXTRACT, [memory.id, other]) == [other]
    assert oneshot.store.pending.items(EXTRACT) == [memory.id]
