"""Export with vectors, and imports that bring their own vectors instead of being embedded."""

from __future__ import annotations

import base64
import io
import json
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
import pytest
from numpy.typing import NDArray

from graphmem.embeddings.hashing import HashEmbedder
from graphmem.errors import InvalidInput
from graphmem.service import GraphMemory, open_store
from graphmem.transfer import export_jsonl, import_file, import_jsonl


class CountingEmbedder(HashEmbedder):
    def __init__(self) -> None:
        super().__init__()
        self.texts = 0

    def embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        self.texts += len(texts)
        return super().embed(texts)


@pytest.fixture
def target(tmp_path: Path) -> Iterator[GraphMemory]:
    memory = open_store(tmp_path / "target", embedder=CountingEmbedder())
    try:
        yield memory
    finally:
        memory.close()


def _vector(gm: GraphMemory, memory_id: str) -> NDArray[np.float32]:
    row_ids, matrix = gm.store.vectors.matrix(gm.embedder.space)
    return np.asarray(matrix[row_ids.row(memory_id)])


def _line(content: str, **extra: object) -> str:
    return json.dumps({"content": content, **extra})


def test_an_export_with_vectors_imports_without_embedding_and_recalls_the_same(
    gm: GraphMemory, target: GraphMemory
) -> None:
    originals = gm.remember_many([{"content": f"release {i} of the ledger"} for i in range(5)])
    buffer = io.StringIO()
    export_jsonl(gm, buffer, with_vectors=True)
    lines = buffer.getvalue().splitlines()
    assert all(json.loads(line)["embedding_space"] == gm.embedder.space.label for line in lines)

    report = import_jsonl(target, lines)

    assert (report.imported, report.vectors_supplied, report.errors) == (5, 5, [])
    assert isinstance(target.embedder, CountingEmbedder) and target.embedder.texts == 0
    for memory in originals:
        assert np.allclose(_vector(target, memory.id), _vector(gm, memory.id), atol=1e-6)
    query = "ledger release 3"
    assert [h.memory.id for h in target.recall(query)] == [h.memory.id for h in gm.recall(query)]


def test_a_vector_of_another_embedding_space_is_not_mixed_in(target: GraphMemory) -> None:
    foreign = [0.1] * 384
    report = target.import_jsonl(
        [_line("kafka lag", vector=foreign, embedding_space="openai:text-embedding-3-small/384")]
    )
    assert (report.imported, report.vectors_supplied) == (1, 0)
    (memory,) = target.list().memories
    own = target.embedder.embed([memory.content])[0]
    assert np.allclose(_vector(target, memory.id), own)


def test_a_list_vector_is_used_normalised(target: GraphMemory) -> None:
    raw = np.arange(1, 385, dtype=np.float32)
    label = target.embedder.space.label
    report = target.import_jsonl([_line("numbers", vector=raw.tolist(), embedding_space=label)])
    assert report.vectors_supplied == 1
    (memory,) = target.list().memories
    assert np.allclose(_vector(target, memory.id), raw / np.linalg.norm(raw))


def test_bad_vectors_are_reported_by_line_and_the_good_lines_still_import(
    target: GraphMemory,
) -> None:
    label = target.embedder.space.label
    good = base64.b64encode(np.ones(384, "<f4").tobytes()).decode()
    lines = [
        _line("no space named", vector=good),
        _line("too short", vector=[1.0, 2.0], embedding_space=label),
        _line("all zeros", vector=[0.0] * 384, embedding_space=label),
        _line("not base64", vector="%%%", embedding_space=label),
        _line("not finite", vector=[float("nan")] + [1.0] * 383, embedding_space=label),
        _line("fine", vector=good, embedding_space=label),
    ]
    report = target.import_jsonl(lines)
    assert (report.imported, report.vectors_supplied) == (1, 1)
    messages = {e["line"]: e["message"] for e in report.errors}
    assert sorted(messages) == [1, 2, 3, 4, 5]
    assert "embedding_space" in messages[1]
    assert "384" in messages[2]
    assert "zeros" in messages[3]
    assert "base64" in messages[4]
    assert "finite" in messages[5]
    assert [m.content for m in target.list().memories] == ["fine"]


def test_lines_with_their_vectors_commit_sixteen_times_less_often(target: GraphMemory) -> None:
    """Each commit of an import costs a checkpoint, so lines that need no embedding go in
    bigger transactions."""
    label = target.embedder.space.label
    vector = base64.b64encode(np.ones(384, "<f4").tobytes()).decode()
    supplied = [_line(f"given {i}", vector=vector, embedding_space=label) for i in range(128)]
    embedded = [_line(f"embedded {i}") for i in range(32)]

    def commits(lines: list[str]) -> int:
        before = target.store.write_generation
        target.import_jsonl(lines, batch_size=4)
        return target.store.write_generation - before

    assert commits(supplied) == 2
    assert commits(embedded) == 8


def test_an_import_stopped_in_a_later_chunk_counts_what_the_earlier_ones_imported(
    target: GraphMemory, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("graphmem.transfer.CHUNK_LINES", 3)
    lines = [_line(f"note {i}") for i in range(7)] + ["{bad", _line("never read")]
    progress: list[tuple[int, int]] = []

    with pytest.raises(InvalidInput, match="line 8") as caught:
        import_jsonl(target, lines, on_error="stop", on_progress=lambda *p: progress.append(p))

    assert caught.value.fields["imported"] == 7
    assert progress == [(3, 9), (6, 9)]
    assert target.stats().total == 7


def test_a_file_is_imported_a_chunk_at_a_time_with_its_own_line_numbers(
    target: GraphMemory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("graphmem.transfer.CHUNK_LINES", 2)
    dump = tmp_path / "dump.jsonl"
    raw = json.dumps({"content": "a\u2028separator inside"}, ensure_ascii=False)  # not a line end
    lines = [_line("one"), _line("two"), "{bad", raw, _line("five")]
    dump.write_bytes(("\r\n".join(lines)).encode())  # Windows line ends, no final newline
    progress: list[tuple[int, int]] = []

    report = import_file(target, dump, on_progress=lambda *p: progress.append(p))

    assert (report.imported, [e["line"] for e in report.errors]) == (4, [3])
    assert progress == [(2, 5), (4, 5), (5, 5)]
    contents = {m.content for m in target.list().memories}
    assert contents == {"one", "two", "a\u2028separator inside", "five"}


def test_a_file_that_is_not_utf8_is_refused_before_anything_is_imported(
    target: GraphMemory, tmp_path: Path
) -> None:
    dump = tmp_path / "latin1.jsonl"
    dump.write_bytes(_line("fine").encode() + b"\n" + '{"content": "caf\u00e9"}'.encode("latin-1"))
    with pytest.raises(InvalidInput, match="not UTF-8") as caught:
        import_file(target, dump)
    assert caught.value.fields["line"] == 2
    assert target.stats().total == 0
    with pytest.raises(InvalidInput, match="cannot read"):
        import_file(target, tmp_path / "missing.jsonl")


def test_an_export_keeps_each_memory_s_layer_and_a_line_without_one_is_at_the_surface(
    gm: GraphMemory, target: GraphMemory
) -> None:
    deep = gm.remember("Deploys go through ArgoCD only").id
    gm.promote_sediment(deep, layer="semantic")
    new = gm.remember("The staging VPN needs the ops certificate").id
    buffer = io.StringIO()
    export_jsonl(gm, buffer)
    lines = buffer.getvalue().splitlines()
    assert [json.loads(line)["layer"] for line in lines] == ["semantic", "surface"]
    older = json.loads(lines[0])
    del older["layer"], older["id"]  # a line from before sedimentation

    report = import_jsonl(target, [*lines, json.dumps(older), _line("null", layer=None)])

    assert (report.imported, report.errors) == (4, [])
    assert (target.get(deep).layer, target.get(new).layer) == ("semantic", "surface")
    rows = target.cypher("MATCH (m:Memory) RETURN m.layer").rows
    assert sorted(rows, key=str) == [["semantic"], [None], [None], [None]]  # the surface: null
    assert sorted(m.layer for m in target.list().memories) == [
        "semantic", "surface", "surface", "surface",
    ]  # fmt: skip
    bad = target.import_jsonl([_line("too deep", layer="bedrock")])
    assert bad.imported == 0 and "layer" in bad.errors[0]["message"]


def test_after_an_import_into_an_empty_store_recall_reads_nothing_back(
    gm: GraphMemory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The import keeps recall's structures as it writes: the first recall after it does not
    read every vector, field and text back from the store (19 s at 100k on a server)."""
    lines = [json.dumps({"content": f"the ledger retries payment {i}"}) for i in range(300)]
    lines.append(json.dumps({"content": "Orders time out when the queue backs up"}))
    assert gm.import_jsonl(lines).imported == 301
    source = gm.store.vectors.state.source  # type: ignore[attr-defined]
    for scan in ("vector_rows", "memory_columns", "search_texts"):
        monkeypatch.setattr(source, scan, _refuse(scan))
    top = gm.recall("why do orders time out?", limit=1).hits[0]
    assert top.memory.content == "Orders time out when the queue backs up"


def _refuse(scan: str) -> object:
    def refused(*args: object) -> None:
        raise AssertionError(f"recall read {scan} back from the store")

    return refused
