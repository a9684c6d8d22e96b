"""The documents repository's contract (graphmem.storage.protocols.Documents), the same on every
engine: a file's document, sections and chunks written whole, rewritten, moved and removed with
their vectors and waiting extraction; the chunks' entities; supersession between documents; the
console's reads; and a store opened afresh finding the same chunks."""

from __future__ import annotations

import hashlib
import itertools
import time
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from graphmem.embeddings.base import EmbeddingSpace
from graphmem.indexes.doc_index import ChunkInfo, DocInfo, SectionInfo
from graphmem.models import Memory, utcnow
from graphmem.storage.protocols import CHUNK_EXTRACT, DocumentWrite, IndexedDocument
from graphmem.storage.protocols.entities import EntityRow, Mention
from graphmem.text import index_text, query_text

pytestmark = [
    pytest.mark.falkordb,
    pytest.mark.filterwarnings("ignore:Call to '__init__' function:DeprecationWarning"),
]

SPACE = EmbeddingSpace("hash", "contract", 8)


def _doc(name: str, *, root: str = "", title: str | None = None, kind: str = "docs") -> DocInfo:
    rel = f"docs/{name}.md"
    path = f"{root}/{rel}" if root else rel
    return DocInfo(
        f"01UID{name.upper()}", path, root, rel, name.title() if title is None else title, kind
    )


def _chunk_id(doc: DocInfo, text: str) -> str:
    return f"{doc.uid}:{hashlib.sha256(text.encode()).hexdigest()[:16]}"


def _vector(text: str) -> np.ndarray:
    seed = int(hashlib.sha256(text.encode()).hexdigest()[:8], 16)
    row = np.random.default_rng(seed).standard_normal(SPACE.dim).astype(np.float32)
    return row / np.linalg.norm(row)


def _write(
    doc: DocInfo, texts: list[str], *, sha: str = "sha-1", embed: list[str] | None = None
) -> DocumentWrite:
    """A file of two sections (an overview and its usage under it), the texts' chunks
    alternating between them; the chunks of `embed` (all by default) get their vectors."""
    top, usage = f"{doc.uid}#overview", f"{doc.uid}#overview/usage"
    sections = [
        SectionInfo(top, doc.uid, "overview", "Overview", 1, ("Overview",), 0, 1, 10),
        SectionInfo(usage, doc.uid, "overview/usage", "Usage", 2, ("Overview", "Usage"), 1, 11, 20),
    ]
    chunks = [
        ChunkInfo(_chunk_id(doc, t), doc.uid, (top, usage)[i % 2], i, t, i * 3 + 1, i * 3 + 3)
        for i, t in enumerate(texts)
    ]
    return DocumentWrite(
        doc=doc,
        sha256=sha,
        size=sum(len(t) for t in texts),
        mtime=utcnow() - timedelta(hours=1),
        metadata={"status": "accepted"},
        sections=sections,
        parents={usage: top},
        chunks=chunks,
        search_texts=[index_text(t, title=doc.title) for t in texts],
        new_vectors={_chunk_id(doc, t): _vector(t) for t in (texts if embed is None else embed)},
    )


def _ids(write: DocumentWrite) -> list[str]:
    return [c.id for c in write.chunks]


def _stored_chunk_vectors(store: Any) -> set[str]:
    """What the store holds, not what its search state took in."""
    rows = store.cypher(f"MATCH (v:Chk_{SPACE.name}) RETURN v.id", {}, write=False).rows
    return {r[0] for r in rows}


def _memory(i: int) -> Memory:
    at = utcnow().replace(microsecond=0) - timedelta(minutes=10 - i)
    return Memory(
        id=f"01DOCMEMORY{i:015d}", content=f"the runbook says {i}", title=f"cites {i}",
        created_at=at, updated_at=at,
    )  # fmt: skip


def _cite(store: Any, memory: Memory, path: str, section: str) -> None:
    """A citation, as knowledge writes it (the edge only: the same text on every engine)."""
    store.memories.insert([memory], _vector(memory.content).reshape(1, -1), SPACE)
    store.cypher(
        "MATCH (m:Memory {id: $m}), (d:Document {path: $p}) CREATE (m)-[:CITES {section: $s}]->(d)",
        {"m": memory.id, "p": path, "s": section},
        write=True,
    )


PAYMENTS = [
    "the payments service retries a declined card three times",
    "refunds go through the ledger queue overnight",
    "the gateway timeout is thirty seconds",
]


def test_written_files_are_indexed_with_their_chunks_vectors_and_waiting_work(
    contract_store: Any,
) -> None:
    docs = contract_store.documents
    project, outside = _doc("payments"), _doc("vendor", root="/srv/vendor")
    first, second = _write(project, PAYMENTS), _write(outside, ["the vendor api has no retries"])
    docs.write([first, second], SPACE)
    assert docs.indexed_documents("") == {
        project.path: IndexedDocument(project.path, project.uid, "sha-1", project.rel)
    }
    assert set(docs.indexed_documents("/srv/vendor")) == {outside.path}
    assert docs.indexed_locations() == ([project.rel], ["/srv/vendor"])
    assert docs.chunk_ids_of(project.uid) == set(_ids(first))
    assert docs.chunk_ids_of("01NOSUCH") == set()
    asked = [*_ids(first), "01NOSUCH:chunk"]
    assert docs.chunk_vector_ids(SPACE, asked) == set(_ids(first))
    assert docs.spaces() == {SPACE.name}
    assert docs.chunk_vector_ids(EmbeddingSpace("hash", "other", 8), asked) == set()
    index = docs.index()
    assert index.docs[project.uid] == project and index.docs[outside.uid] == outside
    assert [c.id for c in index.section_chunks(f"{project.uid}#overview")] == [
        _ids(first)[0], _ids(first)[2],
    ]  # fmt: skip
    assert index.sections[f"{project.uid}#overview/usage"].breadcrumb == ("Overview", "Usage")
    found = index.keywords.search(query_text("ledger queue overnight"), top=1)
    assert [i for i, _ in found] == [_ids(first)[1]]
    nearest = docs.nearest_chunks(SPACE, _vector(PAYMENTS[2]), 2)
    assert nearest[0][0] == _ids(first)[2] and nearest[0][1] == pytest.approx(1.0, abs=1e-5)
    scores = docs.chunk_scores(SPACE, _vector(PAYMENTS[0]), [_ids(first)[0], "01NOSUCH:chunk"])
    assert list(scores) == [_ids(first)[0]] and scores[_ids(first)[0]] == pytest.approx(1.0)
    assert docs.count_pending_chunks() == 4
    waiting = sorted([*_ids(first), *_ids(second)])
    texts = {c.id: c.text for w in (first, second) for c in w.chunks}
    assert docs.pending_chunks(2) == [(i, texts[i]) for i in waiting[:2]]
    assert contract_store.pending.items(CHUNK_EXTRACT) == waiting


def test_a_rewritten_file_keeps_its_unchanged_chunks_vectors_and_drops_the_vanished(
    contract_store: Any,
) -> None:
    docs, doc = contract_store.documents, _doc("payments")
    before = _write(doc, PAYMENTS)
    docs.write([before], SPACE)
    kept, vanished = _ids(before)[1], _ids(before)[0]
    docs.write_chunk_mentions(
        [kept], extractor="rules", entities=[EntityRow("01ENTLEDGER", "ledger", "ledger",
        "ledger", "service")], aliases={}, mentions=[Mention(kept, "01ENTLEDGER", "ledger")],
        at=utcnow(),
    )  # fmt: skip
    assert docs.chunks_mentioning(["01ENTLEDGER"], limit=5) == [("01ENTLEDGER", kept)]
    texts = [PAYMENTS[1], PAYMENTS[2], "chargebacks are answered within a week"]
    after = _write(doc, texts, sha="sha-2", embed=[texts[2]])  # the others have theirs
    docs.write([after], SPACE)
    assert docs.indexed_documents("")[doc.path].sha256 == "sha-2"
    assert docs.chunk_ids_of(doc.uid) == set(_ids(after))
    assert docs.chunk_vector_ids(SPACE, [*_ids(before), *_ids(after)]) == set(_ids(after))
    assert _stored_chunk_vectors(contract_store) == set(_ids(after))
    assert vanished not in {i for i, _ in docs.nearest_chunks(SPACE, _vector(PAYMENTS[0]), 5)}
    assert docs.nearest_chunks(SPACE, _vector(texts[2]), 1)[0][0] == _ids(after)[2]
    # every chunk written waits again: its mentions went with the node it replaced
    assert contract_store.pending.items(CHUNK_EXTRACT) == sorted(_ids(after))
    assert docs.chunks_mentioning(["01ENTLEDGER"], limit=5) == []
    index = docs.index()
    assert set(index.chunks) == set(_ids(after))
    assert index.keywords.search(query_text("declined card"), top=3) == []
    assert [s["section_key"] for s in docs.page(doc.path)["sections"]] == [
        "overview", "overview/usage",
    ]  # fmt: skip


def test_a_moved_file_keeps_its_sections_chunks_and_citations(contract_store: Any) -> None:
    docs, doc = contract_store.documents, _doc("payments")
    docs.write([_write(doc, PAYMENTS)], SPACE)
    _cite(contract_store, _memory(1), doc.path, "overview")
    moved = DocInfo(doc.uid, "docs/billing.md", "", "docs/billing.md", doc.title, doc.source_type)
    docs.move(doc.path, moved)
    assert docs.indexed_documents("") == {
        moved.path: IndexedDocument(moved.path, doc.uid, "sha-1", moved.rel)
    }
    assert docs.page(doc.path) is None
    page = docs.page(moved.path)
    assert page is not None and page["title"] == "Payments" and len(page["sections"]) == 2
    assert [(c["memory_id"], c["section"]) for c in page["cited_by"]] == [
        (_memory(1).id, "overview")
    ]
    assert docs.chunk_ids_of(doc.uid) == {_chunk_id(doc, t) for t in PAYMENTS}
    assert docs.index().docs[doc.uid].path == moved.path
    assert [o["path"] for o in docs.overview(limit=10)] == [moved.path]


def test_removed_files_lose_everything_but_a_cited_documents_node(contract_store: Any) -> None:
    docs = contract_store.documents
    cited, plain, kept = _doc("cited"), _doc("plain"), _doc("kept")
    writes = [_write(cited, PAYMENTS[:2]), _write(plain, PAYMENTS[2:]), _write(kept, ["kept"])]
    docs.write(writes, SPACE)
    _cite(contract_store, _memory(1), cited.path, "overview")
    docs.remove([cited.path, plain.path, "docs/never-indexed.md"], [SPACE])
    assert set(docs.indexed_documents("")) == {kept.path}
    assert docs.indexed_locations() == ([kept.rel], [])
    assert docs.chunk_ids_of(cited.uid) == set() and docs.chunk_ids_of(plain.uid) == set()
    gone = _ids(writes[0]) + _ids(writes[1])
    assert docs.chunk_vector_ids(SPACE, gone) == set()
    assert _stored_chunk_vectors(contract_store) == set(_ids(writes[2]))
    assert [i for i, _ in docs.nearest_chunks(SPACE, _vector(PAYMENTS[0]), 5)] == _ids(writes[2])
    assert contract_store.pending.items(CHUNK_EXTRACT) == _ids(writes[2])
    assert set(docs.index().docs) == {kept.uid}
    assert set(docs.index().chunks) == set(_ids(writes[2]))
    overview = docs.overview(limit=10)
    assert [(o["path"], o["sections"]) for o in overview] == [(cited.path, 0), (kept.path, 2)]
    page = docs.page(cited.path)
    assert page is not None and page["sections"] == []
    assert [c["memory_id"] for c in page["cited_by"]] == [_memory(1).id]
    assert docs.page(plain.path) is None
    docs.remove([cited.path], [SPACE])  # no longer indexed: nothing to do
    assert docs.page(cited.path) is not None


def test_supersessions_replace_what_a_document_stated_before(contract_store: Any) -> None:
    docs = contract_store.documents
    one, two, three = _doc("adr-1"), _doc("adr-2"), _doc("adr-3", title="")
    docs.write([_write(d, [f"decision {d.rel}"]) for d in (one, two, three)], SPACE)
    docs.state_supersessions(two.path, [(two.path, one.path)])
    docs.state_supersessions(three.path, [(three.path, two.path), (three.path, "docs/none.md")])
    expected = [
        (one.path, one.rel, "Adr-1", two.rel),
        (two.path, two.rel, "Adr-2", three.rel),
        (three.path, three.rel, three.rel, None),  # no title: its rel
    ]
    assert sorted(docs.chain(one.path)) == expected
    assert sorted(docs.chain(three.path)) == expected
    docs.state_supersessions(three.path, [])  # it says nothing any more
    assert sorted(docs.chain(three.path)) == [expected[2]]
    assert sorted(docs.chain(one.path)) == [expected[0], (two.path, two.rel, "Adr-2", None)]
    docs.state_supersessions(two.path, [(two.path, one.path)])  # stated again: one link
    assert sorted(docs.chain(one.path)) == [expected[0], (two.path, two.rel, "Adr-2", None)]
    assert contract_store.cypher(
        "MATCH (:Document)-[s:SUPERSEDES]->(:Document) RETURN count(s)", {}, write=False
    ).rows == [[1]]
    assert docs.chain("docs/none.md") == []


def test_chunk_mentions_finish_the_chunks_extraction_and_skip_chunks_gone(
    contract_store: Any,
) -> None:
    docs, doc = contract_store.documents, _doc("payments")
    write = _write(doc, PAYMENTS)
    docs.write([write], SPACE)
    first, second, third = _ids(write)
    entities = [
        EntityRow("01ENTPAY", "payments service", "payments service", "paymentsservice", "service"),
        EntityRow("01ENTGATE", "gateway", "gateway", "gateway", "component"),
    ]
    docs.write_chunk_mentions(
        [first, second, f"{doc.uid}:gone"],
        extractor="rules",
        entities=entities,
        aliases={"payments": "01ENTPAY"},
        mentions=[
            Mention(first, "01ENTPAY", "payments service"),
            Mention(second, "01ENTPAY", "payments"),
            Mention(second, "01ENTGATE", "gateway"),
            Mention(f"{doc.uid}:gone", "01ENTGATE", "gateway"),
        ],
        at=utcnow(),
    )
    found = docs.chunks_mentioning(["01ENTPAY", "01ENTGATE", "01NOSUCH"], limit=5)
    assert sorted(found) == sorted(
        [("01ENTPAY", first), ("01ENTPAY", second), ("01ENTGATE", second)]
    )
    assert len(docs.chunks_mentioning(["01ENTPAY"], limit=1)) == 1
    assert docs.chunks_mentioning([], limit=5) == []
    assert docs.count_pending_chunks() == 1
    assert docs.pending_chunks(10) == [(third, PAYMENTS[2])]
    rows = contract_store.cypher(
        "MATCH (c:Chunk) WHERE c.extracted_by = 'rules' RETURN c.id ORDER BY c.id", {}, write=False
    ).rows
    assert [r[0] for r in rows] == sorted([first, second])
    assert contract_store.memories.backlog()["chunks"] == 1


def test_a_chunk_deleted_behind_the_stores_back_has_nothing_left_to_extract(
    contract_store: Any,
) -> None:
    docs, doc = contract_store.documents, _doc("payments")
    write = _write(doc, PAYMENTS)
    docs.write([write], SPACE)
    first, second, third = sorted(_ids(write))
    contract_store.cypher(
        "MATCH (c:Chunk) WHERE c.id IN $ids DETACH DELETE c", {"ids": [first, second]}, write=True
    )
    texts = {c.id: c.text for c in write.chunks}
    assert docs.pending_chunks(2) == [(third, texts[third])]
    assert docs.count_pending_chunks() == 1
    contract_store.cypher("MATCH (c:Chunk) DETACH DELETE c", {}, write=True)
    assert docs.pending_chunks(2) == []
    assert docs.count_pending_chunks() == 0


def test_the_console_lists_documents_newest_first_and_shows_a_page(contract_store: Any) -> None:
    docs = contract_store.documents
    alpha, beta, gamma = _doc("alpha"), _doc("beta"), _doc("gamma")
    docs.write([_write(alpha, ["alpha text"]), _write(beta, ["beta text"])], SPACE)
    assert docs.overview(limit=2) == [
        {"path": alpha.path, "title": "Alpha", "source_type": "docs", "sections": 2},
        {"path": beta.path, "title": "Beta", "source_type": "docs", "sections": 2},
    ]
    _cite(contract_store, _memory(2), alpha.path, "overview/usage")
    _cite(contract_store, _memory(1), alpha.path, "overview")
    page = docs.page(alpha.path)
    indexed_at = docs.newest_indexed(since=None, until=None, before=None, limit=1)[0]["indexed_at"]
    assert page == {
        "path": alpha.path, "title": "Alpha", "source_type": "docs", "indexed_at": indexed_at,
        "sections": [
            {"section_key": "overview", "title": "Overview", "level": 1, "start_line": 1,
             "end_line": 10},
            {"section_key": "overview/usage", "title": "Usage", "level": 2, "start_line": 11,
             "end_line": 20},
        ],
        "cited_by": [
            {"memory_id": _memory(i).id, "title": f"cites {i}", "content": f"the runbook says {i}",
             "lifecycle": "active", "section": section}
            for i, section in ((1, "overview"), (2, "overview/usage"))
        ],
    }  # fmt: skip
    assert docs.page("docs/none.md") is None
    time.sleep(0.002)
    docs.write([_write(gamma, ["gamma text"])], SPACE)
    rows = docs.newest_indexed(since=None, until=None, before=None, limit=10)
    assert [r["path"] for r in rows] == [gamma.path, beta.path, alpha.path]  # a tie by path
    at = {r["path"]: r["indexed_at"] for r in rows}
    assert all(isinstance(t, datetime) and t.tzinfo is None for t in at.values())
    assert at[alpha.path] == at[beta.path] == indexed_at < at[gamma.path]
    assert rows[0] == {
        "path": gamma.path, "title": "Gamma", "source_type": "docs", "indexed_at": at[gamma.path]
    }  # fmt: skip
    args: dict[str, Any] = {"since": None, "until": None, "before": None}
    before_beta = {**args, "before": (at[beta.path], f"doc:{beta.path}")}
    assert [r["path"] for r in docs.newest_indexed(**before_beta, limit=10)] == [alpha.path]
    assert [r["path"] for r in docs.newest_indexed(**args, limit=1)] == [gamma.path]
    since = {**args, "since": at[gamma.path]}
    assert [r["path"] for r in docs.newest_indexed(**since, limit=10)] == [gamma.path]
    until = {**args, "until": at[gamma.path]}
    assert [r["path"] for r in docs.newest_indexed(**until, limit=10)] == [beta.path, alpha.path]


def test_each_document_keeps_its_own_sections_as_more_files_are_written(
    contract_store: Any,
) -> None:
    docs = contract_store.documents
    alpha, beta, gamma = _doc("alpha"), _doc("beta"), _doc("gamma")
    docs.write([_write(alpha, ["alpha text"]), _write(beta, ["beta text"])], SPACE)
    docs.write([_write(gamma, ["gamma text"])], SPACE)
    assert [(o["path"], o["sections"]) for o in docs.overview(limit=10)] == [
        (alpha.path, 2), (beta.path, 2), (gamma.path, 2),
    ]  # fmt: skip
    for doc in (alpha, beta, gamma):
        page = docs.page(doc.path)
        assert page is not None
        assert [s["section_key"] for s in page["sections"]] == ["overview", "overview/usage"]


def test_a_rolled_back_write_leaves_no_document_chunk_or_vector(contract_store: Any) -> None:
    docs, doc = contract_store.documents, _doc("payments")
    with pytest.raises(RuntimeError), contract_store.transaction():
        docs.write([_write(doc, PAYMENTS)], SPACE)
        raise RuntimeError("the caller fails before the commit")
    assert docs.indexed_documents("") == {}
    assert docs.overview(limit=10) == []
    assert docs.count_pending_chunks() == 0
    assert docs.index().chunks == {}
    assert docs.nearest_chunks(SPACE, _vector(PAYMENTS[0]), 3) == []


@pytest.mark.parametrize("home", ["home", "home2"], ids=["its-search-cache", "no-cache"])
def test_a_store_opened_afresh_finds_the_same_documents_and_chunks(
    contract_store: Any, engine: str, tmp_path: Path, request: pytest.FixtureRequest, home: str
) -> None:
    """Reopened in the data dir it saved its search cache to, or in a new one (a new node)."""
    project, outside = _doc("payments"), _doc("vendor", root="/srv/vendor")
    writes = [_write(project, PAYMENTS), _write(outside, ["the vendor api has no retries"])]
    contract_store.documents.write(writes, SPACE)
    index = contract_store.documents.index()
    contract_store.documents.nearest_chunks(SPACE, _vector(PAYMENTS[0]), 1)  # a matrix to save
    contract_store.close()
    again = _reopen(engine, tmp_path, request, home)
    try:
        docs = again.documents
        fresh = docs.index()
        assert fresh.docs == index.docs and fresh.sections == index.sections
        assert fresh.chunks == index.chunks
        hits = fresh.keywords.search(query_text("gateway timeout"), top=1)
        assert [i for i, _ in hits] == [_ids(writes[0])[2]]
        assert docs.nearest_chunks(SPACE, _vector(PAYMENTS[1]), 1)[0][0] == _ids(writes[0])[1]
        assert docs.chunk_vector_ids(SPACE, _ids(writes[1])) == set(_ids(writes[1]))
        assert docs.spaces() == {SPACE.name}
    finally:
        again.close()


def test_another_node_finds_a_written_file_through_the_change_stream(
    contract_store: Any, engine: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    if engine == "embedded":
        pytest.skip("one process holds an embedded store: there is no other node")
    other = _reopen(engine, tmp_path, request)
    try:
        assert other.documents.index().docs == {}  # its document index is loaded, then followed
        doc = _doc("payments")
        write = _write(doc, PAYMENTS)
        contract_store.documents.write([write], SPACE)
        _until(lambda: set(other.documents.index().chunks) == set(_ids(write)))
        assert (
            other.documents.nearest_chunks(SPACE, _vector(PAYMENTS[2]), 1)[0][0] == (_ids(write)[2])
        )
        moved = DocInfo(doc.uid, "docs/billing.md", "", "docs/billing.md", "Payments", "docs")
        contract_store.documents.move(doc.path, moved)
        _until(lambda: other.documents.index().docs[doc.uid].path == moved.path)
        contract_store.documents.remove([moved.path], [SPACE])
        _until(lambda: other.documents.index().chunks == {})
        assert other.documents.chunk_vector_ids(SPACE, _ids(write)) == set()
    finally:
        other.close()


def _until(check: Any, within: float = 2.0) -> None:
    began = time.monotonic()
    while not check():
        assert time.monotonic() - began < within, "not seen in time"
        time.sleep(0.005)


def _reopen(
    engine: str, tmp_path: Path, request: pytest.FixtureRequest, home: str = "home2"
) -> Any:
    if engine == "embedded":
        from graphmem.storage import open_store_at

        return open_store_at(tmp_path / "store")
    from graphmem.storage.falkordb.store import FalkorStore
    from graphmem.store_url import parse_store_url

    server = request.getfixturevalue("falkordb_server")
    return FalkorStore.open(parse_store_url(server.store_url("project")), tmp_path / home)


def test_a_long_supersession_chain_and_a_cycle_are_followed_whole(contract_store: Any) -> None:
    docs = contract_store.documents
    adrs = [_doc(f"adr-{i}") for i in range(8)]
    docs.write([_write(d, [f"decision {d.rel}"]) for d in adrs], SPACE)
    for older, newer in itertools.pairwise(adrs):
        docs.state_supersessions(newer.path, [(newer.path, older.path)])
    assert sorted(p for p, *_ in docs.chain(adrs[3].path)) == sorted(d.path for d in adrs)
    # the first says it supersedes the last: a cycle, followed once round
    docs.state_supersessions(adrs[0].path, [(adrs[0].path, adrs[-1].path)])
    chain = docs.chain(adrs[5].path)
    assert sorted(p for p, *_ in chain) == sorted(d.path for d in adrs)
