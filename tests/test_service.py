"""GraphMemory, the facade every transport calls: memories in and out, lists, stats, export/import,
and the promise that bad input is one clear error with the store left as it was."""

from __future__ import annotations

import io
import json
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from graphmem.embeddings.base import EmbeddingSpace
from graphmem.embeddings.hashing import HashEmbedder
from graphmem.errors import Conflict, InvalidInput, NotFound
from graphmem.models import MAX_CONTENT_CHARS, Memory
from graphmem.service import GraphMemory, open_store
from graphmem.settings import load_settings
from graphmem.storage.protocols import PASSAGES
from graphmem.transfer import export_jsonl


def ids_of(result: Any) -> list[str]:
    return [hit.memory.id for hit in result]


def export_lines(gm: GraphMemory) -> list[str]:
    buffer = io.StringIO()
    export_jsonl(gm, buffer)
    return buffer.getvalue().splitlines()


@pytest.fixture
def other(tmp_path: Path) -> Iterator[GraphMemory]:
    """A second, empty store to import into."""
    memory = open_store(tmp_path / "other", embedder=HashEmbedder())
    try:
        yield memory
    finally:
        memory.close()


# -- memories in and out ---------------------------------------------------------------------


def test_remember_returns_an_id_and_get_returns_the_same_memory(gm: GraphMemory) -> None:
    stored = gm.remember(
        "Deploys go through ArgoCD; never kubectl apply by hand.",
        title="How we deploy",
        type="procedural",
        kind="runbook",
        tags=["deploy", "argocd"],
        context="platform",
        service="api",
        importance=0.8,
        metadata={"source": "wiki", "links": [1, 2], "nested": {"ok": True}, "ü": "ñ"},
    )
    assert stored.id

    got = gm.get(stored.id)

    assert got == stored
    assert got.content == "Deploys go through ArgoCD; never kubectl apply by hand."
    assert got.metadata == {"source": "wiki", "links": [1, 2], "nested": {"ok": True}, "ü": "ñ"}
    assert got.tags == ["deploy", "argocd"]
    assert (got.type, got.kind, got.importance) == ("procedural", "runbook", 0.8)


def test_remember_many_keeps_created_at_given_as_iso_string(gm: GraphMemory) -> None:
    stored = gm.remember_many(
        [
            {"content": "first", "created_at": "2022-05-25T15:30:00"},
            {"content": "second", "created_at": "2023-10-13T08:00:00Z"},
            {"content": "third"},
        ]
    )
    assert [gm.get(m.id).created_at for m in stored[:2]] == [
        datetime(2022, 5, 25, 15, 30, tzinfo=UTC),  # no offset: read as UTC
        datetime(2023, 10, 13, 8, 0, tzinfo=UTC),
    ]
    assert gm.get(stored[0].id).valid_from == datetime(2022, 5, 25, 15, 30, tzinfo=UTC)
    assert gm.get(stored[2].id).created_at.year >= 2024


def test_remember_many_reports_progress_per_batch(gm: GraphMemory) -> None:
    seen: list[tuple[int, int]] = []
    gm.remember_many(
        [{"content": f"note {i}"} for i in range(5)],
        batch_size=2,
        on_progress=lambda done, total: seen.append((done, total)),
    )
    assert seen == [(2, 5), (4, 5), (5, 5)]
    assert gm.stats().total == 5


def test_update_of_content_re_embeds_so_recall_finds_new_words_not_old(gm: GraphMemory) -> None:
    memory = gm.remember("the frobnicator crashed during the deploy")
    gm.remember("an unrelated note about lunch")

    updated = gm.update(memory.id, content="the zanzibar service leaked file handles")

    assert updated.content == gm.get(memory.id).content
    assert updated.updated_at >= memory.updated_at
    assert memory.id not in ids_of(gm.recall("frobnicator", recipe="bm25"))
    assert ids_of(gm.recall("zanzibar", recipe="bm25")) == [memory.id]
    assert ids_of(gm.recall("zanzibar leaked file handles", recipe="vector"))[0] == memory.id


def test_update_of_metadata_only_keeps_content_and_vector(gm: GraphMemory) -> None:
    memory = gm.remember("rollback procedure for orders")
    gm.update(memory.id, metadata='{"reviewed": true}', tags="orders, runbook")
    got = gm.get(memory.id)
    assert got.content == "rollback procedure for orders"
    assert got.metadata == {"reviewed": True}
    assert got.tags == ["orders", "runbook"]
    assert gm.stats().missing_vectors == 0
    assert ids_of(gm.recall("rollback procedure", recipe="vector")) == [memory.id]


def test_update_with_none_leaves_that_field_unchanged(gm: GraphMemory) -> None:
    memory = gm.remember("importance survives", importance=0.9)
    updated = gm.update(memory.id, importance=None, title="now with a title")
    assert updated.importance == 0.9
    assert gm.get(memory.id).importance == 0.9


def test_delete_then_get_raises_not_found(gm: GraphMemory) -> None:
    memory = gm.remember("short lived")
    gm.delete(memory.id)
    with pytest.raises(NotFound) as caught:
        gm.get(memory.id)
    assert caught.value.fields["id"] == memory.id
    assert gm.stats().total == 0
    assert gm.stats().vectors == 0
    assert gm.recall("short lived").hits == []


def test_remember_after_recall_on_an_empty_store_succeeds(gm: GraphMemory) -> None:
    assert gm.recall("anything at all").hits == []
    memory = gm.remember("the first memory of a fresh store")
    assert gm.get(memory.id).content == "the first memory of a fresh store"


# -- list -------------------------------------------------------------------------------------


def test_list_returns_newest_first(gm: GraphMemory) -> None:
    gm.remember_many(
        [
            {"content": "middle", "created_at": "2023-01-01T00:00:00"},
            {"content": "oldest", "created_at": "2021-01-01T00:00:00"},
            {"content": "newest", "created_at": "2025-01-01T00:00:00"},
        ]
    )
    assert [m.content for m in gm.list().memories] == ["newest", "middle", "oldest"]


@pytest.mark.parametrize(
    ("filters", "expected"),
    [
        ({"type": "procedural"}, {"runbook-orders"}),
        ({"kind": "incident"}, {"incident-orders", "incident-auth"}),
        ({"context": "payments"}, {"incident-auth", "decision-auth"}),
        ({"service": "orders"}, {"runbook-orders", "incident-orders"}),
        ({"tags": ["postgres"]}, {"runbook-orders", "incident-orders"}),
        ({"tags": "postgres,oncall"}, {"incident-orders"}),
        ({"kind": "incident", "service": "auth"}, {"incident-auth"}),
    ],
)
def test_list_filters_by_type_kind_context_service_and_tags(
    gm: GraphMemory, filters: dict[str, Any], expected: set[str]
) -> None:
    gm.remember_many(
        [
            {"content": "runbook-orders", "type": "procedural", "kind": "runbook",
             "service": "orders", "tags": ["postgres"], "context": "shop"},
            {"content": "incident-orders", "kind": "incident", "service": "orders",
             "tags": ["postgres", "oncall"], "context": "shop"},
            {"content": "incident-auth", "kind": "incident", "service": "auth",
             "tags": ["jwt"], "context": "payments"},
            {"content": "decision-auth", "type": "semantic", "kind": "decision",
             "service": "auth", "context": "payments"},
        ]
    )  # fmt: skip
    assert {m.content for m in gm.list(filters).memories} == expected


def test_list_pages_with_cursor_without_duplicates_or_gaps(gm: GraphMemory) -> None:
    stored = gm.remember_many([{"content": f"memory number {i}"} for i in range(25)])
    pages: list[list[Memory]] = []
    cursor = None
    while True:
        page = gm.list(limit=10, cursor=cursor)
        pages.append(page.memories)
        cursor = page.next_cursor
        if cursor is None:
            break
    assert [len(p) for p in pages] == [10, 10, 5]
    listed = [m.id for p in pages for m in p]
    assert listed == [m.id for m in reversed(stored)]


def test_list_pages_memories_created_at_the_same_instant(gm: GraphMemory) -> None:
    stored = gm.remember_many(
        [{"content": f"turn {i}", "created_at": "2024-01-10T10:00:00"} for i in range(25)]
    )
    first = gm.list(limit=10)
    second = gm.list(limit=10, cursor=first.next_cursor)
    third = gm.list(limit=10, cursor=second.next_cursor)
    listed = [m.id for page in (first, second, third) for m in page.memories]
    assert third.next_cursor is None
    assert len(listed) == len(set(listed)) == 25
    assert set(listed) == {m.id for m in stored}


def test_last_full_page_has_no_next_cursor(gm: GraphMemory) -> None:
    gm.remember_many([{"content": f"n{i}"} for i in range(10)])
    assert gm.list(limit=10).next_cursor is None


# -- stats ------------------------------------------------------------------------------------


def test_stats_counts_by_type_kind_and_total(gm: GraphMemory) -> None:
    gm.remember_many(
        [
            {"content": "a", "type": "semantic", "kind": "decision", "context": "db"},
            {"content": "b", "type": "semantic", "kind": "note"},
            {"content": "c", "type": "procedural", "kind": "runbook", "context": "db"},
        ]
    )
    stats = gm.stats()
    assert stats.total == 3
    assert stats.by_type == {"semantic": 2, "procedural": 1}
    assert stats.by_kind == {"decision": 1, "note": 1, "runbook": 1}
    assert stats.by_context["db"] == 2
    assert stats.by_lifecycle == {"active": 3}
    assert stats.vectors == 3
    assert stats.missing_vectors == 0
    assert stats.embedding_space == "hash:hash-v1/384"
    assert stats.schema_version == gm.db_status().latest_version  # the engine's own steps
    assert gm.db_status().pending == []


# -- export / import --------------------------------------------------------------------------


def test_export_then_import_into_a_new_store_is_lossless(
    gm: GraphMemory, other: GraphMemory
) -> None:
    originals = gm.remember_many(
        [
            {"content": "Migration #47 broke the index", "title": "orders index",
             "type": "episodic", "kind": "incident", "tags": ["postgres", "migration"],
             "service": "orders", "context": "shop", "importance": 0.9,
             "metadata": {"pr": 47, "links": ["https://example.invalid"], "ü": {"x": None}},
             "created_at": "2022-05-25T15:30:12.345678"},
            {"content": "We chose Kùzu", "type": "semantic", "kind": "decision"},
            {"content": "plain note", "created_at": "2023-10-13T08:00:00"},
        ]
    )  # fmt: skip
    gm.cypher(
        "MATCH (m:Memory {id:$id}) SET m.lifecycle='canonical'", {"id": originals[1].id}, write=True
    )
    lines = export_lines(gm)
    assert len(lines) == 3

    report = other.import_jsonl(lines)

    assert (report.imported, report.skipped, report.errors) == (3, 0, [])
    for original in originals:
        assert other.get(original.id) == gm.get(original.id)
    assert other.get(originals[1].id).lifecycle == "canonical"
    assert export_lines(other) == lines
    assert other.stats().missing_vectors == 0
    assert ids_of(other.recall("#47", recipe="bm25")) == [originals[0].id]


TWO_SENTENCES = "The billing worker leaks file handles. Restarting it every night hides the leak."


def _passage_owners(gm: GraphMemory) -> set[str]:
    return gm.store.vectors.passage_owners(gm.embedder.space)


def test_an_export_with_vectors_brings_the_passages_and_the_import_embeds_nothing(
    gm: GraphMemory, other: GraphMemory, monkeypatch: pytest.MonkeyPatch
) -> None:
    long = gm.remember(TWO_SENTENCES)
    gm.remember("one sentence only")
    buffer = io.StringIO()
    export_jsonl(gm, buffer, with_vectors=True)
    lines = buffer.getvalue().splitlines()
    assert len(json.loads(lines[0])["passages"]) == 2 and "passages" not in json.loads(lines[1])

    def no_embedding(texts: Any) -> Any:
        raise AssertionError(f"embedded {texts!r}")

    monkeypatch.setattr(other.embedder, "embed", no_embedding)
    report = other.import_jsonl(lines)

    assert (report.imported, report.vectors_supplied) == (2, 2)
    space = gm.embedder.space
    before, after = (g.store.vectors.passage_vectors(space, [long.id]) for g in (gm, other))
    assert after.keys() == {long.id}
    assert np.allclose(after[long.id], before[long.id], atol=1e-6)


def _exported_line(gm: GraphMemory) -> dict[str, Any]:
    """The store's one memory as `export --with-vectors` writes it."""
    buffer = io.StringIO()
    export_jsonl(gm, buffer, with_vectors=True)
    line: dict[str, Any] = json.loads(buffer.getvalue())
    return line


def test_an_import_that_brings_only_its_vector_still_gets_passage_vectors(
    gm: GraphMemory, other: GraphMemory
) -> None:
    long = gm.remember(TWO_SENTENCES)
    line = _exported_line(gm)
    del line["passages"]

    report = other.import_jsonl([json.dumps(line)])

    assert (report.imported, report.vectors_supplied, report.passages_pending) == (1, 1, 1)
    assert other.wait_for_passages(timeout=30)
    assert _passage_owners(other) == {long.id}


def test_passages_of_another_space_or_too_many_are_refused_or_embedded_again(
    gm: GraphMemory, other: GraphMemory
) -> None:
    long = gm.remember(TWO_SENTENCES)
    line = _exported_line(gm)

    too_many = {**line, "passages": line["passages"] * 9}
    report = other.import_jsonl([json.dumps(too_many)])
    assert report.imported == 0 and "at most 16" in report.errors[0]["message"]

    elsewhere = {**line, "embedding_space": "hash:hash-v1/128"}
    assert other.import_jsonl([json.dumps(elsewhere)]).vectors_supplied == 0
    assert other.wait_for_passages(timeout=30)
    assert _passage_owners(other) == {long.id}


NOTES = [
    {"content": f"Service {i} timed out. The pool was too small. We raised it to {i}."}
    for i in range(5)
]


def test_an_import_leaves_passages_to_the_worker_and_recall_finds_the_notes_meanwhile(
    other: GraphMemory,
) -> None:
    report = other.import_jsonl([json.dumps(n) for n in [*NOTES, {"content": "one sentence"}]])

    assert (report.imported, report.passages_pending) == (6, 5)
    assert (
        other.recall("Service 3 timed out", limit=1).hits[0].memory.content.startswith("Service 3")
    )
    assert other.wait_for_passages(timeout=30)
    assert len(_passage_owners(other)) == 5
    assert other.store.pending.items(PASSAGES) == []


def test_a_one_shot_import_embeds_the_passages_itself(tmp_path: Path) -> None:
    settings = load_settings(tmp_path / "one-shot")
    with GraphMemory(settings, embedder=HashEmbedder(), extract_in_background=False) as gm:
        report = gm.import_jsonl([json.dumps(n) for n in NOTES])
        assert (report.imported, report.passages_pending) == (5, 0)
        assert len(_passage_owners(gm)) == 5


def test_passages_a_failed_or_killed_worker_left_are_embedded_at_the_next_start(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "store"

    def cut_short(memory_ids: Any) -> int:
        raise RuntimeError("killed")

    with open_store(path, embedder=HashEmbedder()) as gm:
        monkeypatch.setattr(gm.passages, "fill_passages", cut_short)
        assert gm.import_jsonl([json.dumps(n) for n in NOTES]).passages_pending == 5
        assert gm.wait_for_passages(timeout=30)
        assert _passage_owners(gm) == set()
        assert len(gm.store.pending.items(PASSAGES)) == 5

    with open_store(path, embedder=HashEmbedder()) as again:
        assert again.schedule_pending_passages()  # as the owner does at start
        assert again.wait_for_passages(timeout=30)
        assert len(_passage_owners(again)) == 5
        assert again.store.pending.items(PASSAGES) == []


def test_reembed_gives_passages_to_memories_stored_before_them(gm: GraphMemory) -> None:
    long = gm.remember(TWO_SENTENCES)
    gm.remember("one sentence only")
    table = f"Psg_{gm.embedder.space.name}"
    gm.cypher(f"MATCH (p:{table}) DELETE p", write=True)  # as a store from before passages
    assert _passage_owners(gm) == set()

    first = gm.reembed()
    assert (first.embedded, first.passages) == (0, 1)
    assert _passage_owners(gm) == {long.id}
    assert gm.reembed().passages == 0


def test_export_writes_oldest_first(gm: GraphMemory) -> None:
    gm.remember_many(
        [
            {"content": "new", "created_at": "2024-01-01T00:00:00"},
            {"content": "old", "created_at": "2020-01-01T00:00:00"},
        ]
    )
    assert [json.loads(line)["content"] for line in export_lines(gm)] == ["old", "new"]


def test_import_reports_a_malformed_line_by_number_and_continues(gm: GraphMemory) -> None:
    lines = [
        json.dumps({"content": "good one"}),
        "{not json",
        json.dumps({"content": "   "}),
        json.dumps(["a", "list"]),
        json.dumps({"content": "good two", "importance": 0.7}),
    ]
    report = gm.import_jsonl(lines, on_error="continue")
    assert report.imported == 2
    assert [e["line"] for e in report.errors] == [2, 3, 4]
    assert "JSON" in report.errors[0]["message"]
    assert "content" in report.errors[1]["message"]
    assert sorted(m.content for m in gm.list().memories) == ["good one", "good two"]


def test_import_stopping_on_error_names_the_line_and_keeps_earlier_lines(gm: GraphMemory) -> None:
    lines = [
        json.dumps({"content": "kept one"}),
        json.dumps({"content": "kept two"}),
        '{"content": "broken',
        json.dumps({"content": "never read"}),
    ]
    with pytest.raises(InvalidInput, match="line 3") as caught:
        gm.import_jsonl(lines, on_error="stop")
    assert caught.value.fields["line"] == 3
    assert sorted(m.content for m in gm.list().memories) == ["kept one", "kept two"]


def test_import_with_unknown_on_error_mode_is_invalid_input(gm: GraphMemory) -> None:
    with pytest.raises(InvalidInput, match="on_error"):
        gm.import_jsonl([json.dumps({"content": "x"})], on_error="ignore")
    assert gm.stats().total == 0


def test_importing_the_same_file_twice_skips_existing_ids(
    gm: GraphMemory, other: GraphMemory
) -> None:
    gm.remember_many([{"content": f"exported {i}"} for i in range(4)])
    lines = export_lines(gm)
    first = other.import_jsonl(lines)
    second = other.import_jsonl(lines)
    assert (first.imported, first.skipped) == (4, 0)
    assert (second.imported, second.skipped) == (0, 4)
    assert other.stats().total == 4
    assert other.stats().vectors == 4


def test_an_id_named_twice_in_one_import_is_imported_once(gm: GraphMemory) -> None:
    line = {"id": "01HKS659000000000000000003", "content": "first"}
    report = gm.import_jsonl([json.dumps(line), json.dumps({**line, "content": "second"})])
    assert (report.imported, report.skipped) == (1, 1)
    assert gm.get("01HKS659000000000000000003").content == "first"


def test_blank_lines_in_an_import_are_not_counted_as_skipped(gm: GraphMemory) -> None:
    report = gm.import_jsonl(["", json.dumps({"content": "only one"}), "   ", ""])
    assert (report.imported, report.skipped) == (1, 0)


def test_an_export_line_of_an_older_version_without_offsets_imports_as_utc(
    gm: GraphMemory,
) -> None:
    line = {
        "id": "01HKS659000000000000000001",
        "content": "written before times had offsets",
        "created_at": "2024-01-10T10:00:00",
        "updated_at": "2024-01-11T09:30:00.250000",
        "valid_to": "2024-02-01T00:00:00",
    }
    assert gm.import_jsonl([json.dumps(line)]).imported == 1

    memory = gm.get(line["id"])
    assert memory.created_at == datetime(2024, 1, 10, 10, 0, tzinfo=UTC)
    assert memory.updated_at == datetime(2024, 1, 11, 9, 30, 0, 250000, tzinfo=UTC)
    assert memory.valid_to == datetime(2024, 2, 1, tzinfo=UTC)
    assert json.loads(memory.model_dump_json())["updated_at"] == "2024-01-11T09:30:00.250000Z"


def test_as_of_with_an_offset_means_the_same_instant_in_utc(gm: GraphMemory) -> None:
    gm.remember("the deploy froze", created_at="2024-01-10T10:00:00+02:00")  # 08:00 UTC

    assert len(gm.recall_as_of("deploy froze", as_of="2024-01-10T09:00:00+01:00")) == 1
    assert len(gm.recall_as_of("deploy froze", as_of="2024-01-10T08:59:00+01:00")) == 0
    assert len(gm.recall_as_of("deploy froze", as_of="2024-01-10T08:00:00")) == 1


def test_import_with_id_converts_created_at_with_offset_to_utc(gm: GraphMemory) -> None:
    line = {"content": "zoned", "created_at": "2024-01-10T10:00:00+02:00"}
    gm.import_jsonl([json.dumps({"id": "01HKS659000000000000000001", **line}), json.dumps(line)])
    with_id, without_id = sorted(
        gm.list().memories, key=lambda m: m.id != "01HKS659000000000000000001"
    )
    assert without_id.created_at == datetime(2024, 1, 10, 8, 0, tzinfo=UTC)
    assert with_id.created_at == datetime(2024, 1, 10, 8, 0, tzinfo=UTC)


def test_import_with_id_cleans_tags_like_remember(gm: GraphMemory) -> None:
    line = {"id": "01HKS659000000000000000002", "content": "tagged", "tags": ["a", "a", " b "]}
    gm.import_jsonl([json.dumps(line)])
    assert gm.get("01HKS659000000000000000002").tags == ["a", "b"]


# -- bad input: one clear error, store unchanged -----------------------------------------------


@pytest.fixture(scope="module")
def steady(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[GraphMemory, Memory]]:
    """One store for the bad-input tests below: none of them may change it."""
    memory = open_store(tmp_path_factory.mktemp("steady") / "store", embedder=HashEmbedder())
    try:
        yield memory, memory.remember("the one memory", importance=0.4, tags=["keep"])
    finally:
        memory.close()


@pytest.fixture
def unchanged(steady: tuple[GraphMemory, Memory]) -> Iterator[Memory]:
    """The shared store's one memory; after the test the count and that memory must be as they were."""
    gm, memory = steady
    before = gm.stats()
    yield memory
    after = gm.stats()
    assert (after.total, after.vectors) == (before.total, before.vectors) == (1, 1)
    assert gm.get(memory.id) == memory
    assert [m.id for m in gm.list().memories] == [memory.id]


@pytest.fixture
def sgm(steady: tuple[GraphMemory, Memory]) -> GraphMemory:
    return steady[0]


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"content": ""}, "content"),
        ({"content": " \n\t "}, "content"),
        ({"content": "x", "importance": 1.5}, "importance"),
        ({"content": "x", "importance": -0.1}, "importance"),
        ({"content": "x", "type": "memorable"}, "type"),
        ({"content": "x", "kind": "rumour"}, "kind"),
        ({"content": "x", "metadata": "{bad"}, "metadata"),
        ({"content": "x", "metadata": "[1, 2]"}, "metadata"),
        ({"content": "x", "metadata": ["not", "an", "object"]}, "metadata"),
        ({"content": "x", "created_at": "yesterday"}, "created_at"),
        ({"content": "x", "colour": "red"}, "colour"),
    ],
)
def test_bad_memory_input_is_invalid_input_naming_the_field(
    sgm: GraphMemory, unchanged: Memory, fields: dict[str, Any], field: str
) -> None:
    fields = dict(fields)
    content = fields.pop("content")
    with pytest.raises(InvalidInput, match=field) as caught:
        sgm.remember(content, **fields)
    assert caught.value.fields["field"] == field
    assert not caught.value.message.startswith("item")  # one memory: no index to give


def test_tags_that_are_not_a_list_are_invalid_input(sgm: GraphMemory, unchanged: Memory) -> None:
    with pytest.raises(InvalidInput, match="tags must be a list") as caught:
        sgm.remember("x", tags=5)
    assert caught.value.fields["field"] == "tags"


def test_a_10_mb_content_string_is_refused_without_echoing_it(
    sgm: GraphMemory, unchanged: Memory
) -> None:
    with pytest.raises(InvalidInput, match="content") as caught:
        sgm.remember("x" * 10_000_000)
    assert str(MAX_CONTENT_CHARS) in caught.value.message
    assert len(caught.value.message) < 500


def test_one_bad_item_in_remember_many_stores_none_and_is_named_by_index_and_field(
    sgm: GraphMemory, unchanged: Memory
) -> None:
    items = [{"content": "fine"}] * 3 + [{"content": "bad", "importance": 2}]

    with pytest.raises(InvalidInput) as caught:
        sgm.remember_many(items)

    assert caught.value.message == "item 3: importance: Input should be less than or equal to 1"
    assert (caught.value.fields["index"], caught.value.fields["field"]) == (3, "importance")


def test_every_bad_item_of_a_batch_is_listed_and_the_first_one_named(
    sgm: GraphMemory, unchanged: Memory
) -> None:
    items = [{"content": "fine"}, "not an object", {"content": ""}, {"content": "x", "colour": 1}]

    with pytest.raises(InvalidInput, match=r"^item 1: expected an object, got str") as caught:
        sgm.remember_many(items)

    assert caught.value.message.endswith("(and 2 more bad items)")
    listed = [(e["index"], e["field"]) for e in caught.value.fields["errors"]]
    assert listed == [(1, None), (2, "content"), (3, "colour")]


def test_an_idempotency_key_reused_for_other_content_in_a_batch_names_the_item(
    sgm: GraphMemory, unchanged: Memory
) -> None:
    items = [
        {"content": "first", "idempotency_key": "k-1"},
        {"content": "second", "idempotency_key": "k-1"},
    ]
    with pytest.raises(Conflict, match=r"^item 1: this idempotency key") as caught:
        sgm.remember_many(items)
    assert caught.value.fields == {"idempotency_key": "k-1", "index": 1}


@pytest.mark.parametrize(
    "call",
    [
        lambda gm: gm.get("01NOSUCHMEMORY0000000000000"),
        lambda gm: gm.update("01NOSUCHMEMORY0000000000000", content="new words"),
        lambda gm: gm.delete("01NOSUCHMEMORY0000000000000"),
    ],
    ids=["get", "update", "delete"],
)
def test_unknown_memory_id_is_not_found(
    sgm: GraphMemory, unchanged: Memory, call: Callable[[GraphMemory], object]
) -> None:
    with pytest.raises(NotFound, match="01NOSUCHMEMORY"):
        call(sgm)


@pytest.mark.parametrize(
    "changes",
    [
        {"importance": 1.5},
        {"content": "  "},
        {"type": "bogus"},
        {"metadata": "{bad"},
        {"owner": "me"},
    ],
)
def test_bad_update_is_invalid_input(
    sgm: GraphMemory, unchanged: Memory, changes: dict[str, Any]
) -> None:
    with pytest.raises(InvalidInput):
        sgm.update(unchanged.id, **changes)


@pytest.mark.parametrize(
    "query",
    [
        "CREATE (:Memory {id: 'sneaky', content: 'x'})",
        "MATCH (m:Memory) SET m.content = 'overwritten'",
        "MATCH (m:Memory) DETACH DELETE m",
    ],
)
def test_cypher_write_without_write_flag_is_refused(
    sgm: GraphMemory, unchanged: Memory, query: str
) -> None:
    with pytest.raises(InvalidInput, match="write"):
        sgm.cypher(query)


def test_cypher_transaction_control_is_refused(sgm: GraphMemory, unchanged: Memory) -> None:
    with pytest.raises(InvalidInput, match="transaction"):
        sgm.cypher("BEGIN TRANSACTION", write=True)


def test_cypher_syntax_error_is_invalid_input(sgm: GraphMemory, unchanged: Memory) -> None:
    with pytest.raises(InvalidInput, match="Cypher"):
        sgm.cypher("MATCH (m:Memory RETURN m")


def test_cypher_reads_with_parameters(sgm: GraphMemory, unchanged: Memory) -> None:
    result = sgm.cypher("MATCH (m:Memory {id: $id}) RETURN m.content, m.tags", {"id": unchanged.id})
    assert result.rows == [["the one memory", ["keep"]]]


@pytest.mark.parametrize("cursor", ["garbage", "!!!", "WzEsMl0", "bm90IGpzb24"])
def test_invalid_cursor_is_invalid_input(sgm: GraphMemory, unchanged: Memory, cursor: str) -> None:
    with pytest.raises(InvalidInput, match="cursor"):
        sgm.list(cursor=cursor)


@pytest.mark.parametrize("limit", [0, -1, 1001])
def test_limit_out_of_range_is_invalid_input(
    sgm: GraphMemory, unchanged: Memory, limit: int
) -> None:
    with pytest.raises(InvalidInput, match="limit"):
        sgm.list(limit=limit)
    with pytest.raises(InvalidInput, match="limit"):
        sgm.recall("memory", limit=limit)


def test_unknown_filter_is_invalid_input(sgm: GraphMemory, unchanged: Memory) -> None:
    with pytest.raises(InvalidInput, match="colour"):
        sgm.list({"colour": "red"})
    with pytest.raises(InvalidInput, match="lifecycle"):
        sgm.recall("memory", filters={"lifecycle": "gone"})


# -- which local model a store gets --------------------------------------------------------------


def _local_space(model: str) -> EmbeddingSpace:
    return EmbeddingSpace("local", model, 384)


@pytest.mark.parametrize("warm", [False, True])
def test_a_store_with_only_float32_vectors_keeps_the_float32_model(
    tmp_path: Path, warm: bool
) -> None:
    with open_store(tmp_path, **{"embedding.model": "all-MiniLM-L6-v2"}) as made_before:
        made_before.store.vectors.ensure_space(_local_space("all-MiniLM-L6-v2"))
    gm = GraphMemory(load_settings(tmp_path), warm_embedder=warm)
    try:
        assert gm.embedder.space == _local_space("all-MiniLM-L6-v2")
    finally:
        gm.close()


def test_a_new_store_and_a_re_embedded_one_get_the_int8_model(tmp_path: Path) -> None:
    with open_store(tmp_path) as new:
        assert new.embedder.space == _local_space("all-MiniLM-L6-v2-int8")
        new.store.vectors.ensure_space(_local_space("all-MiniLM-L6-v2"))
        new.store.vectors.ensure_space(
            _local_space("all-MiniLM-L6-v2-int8")
        )  # as `reembed` leaves it
    with open_store(tmp_path) as both:
        assert both.embedder.space == _local_space("all-MiniLM-L6-v2-int8")


def test_a_model_set_explicitly_is_used_whatever_the_store_holds(tmp_path: Path) -> None:
    with open_store(tmp_path) as gm:
        gm.store.vectors.ensure_space(_local_space("all-MiniLM-L6-v2"))
    with open_store(tmp_path, **{"embedding.model": "all-MiniLM-L6-v2-int8"}) as gm:
        assert gm.embedder.space == _local_space("all-MiniLM-L6-v2-int8")
