"""The in-process entity index after a write: an extraction of new memories is taken in from
what the commit said it changed; anything else (a delete, a re-extraction, a caller's Cypher, a
commit that ran while the index was read) reads the graph again. Either way the walk sees what a
fresh read of the store sees."""

from __future__ import annotations

from typing import Any

import pytest

from graphmem.indexes.entity_index import EntityIndex
from graphmem.service import GraphMemory

CHAT = [
    "Tim: Finally finished Dune on the train to Paris.",
    "John: The gym in Boston was packed today.",
    "Tim: Ann lent me The Name of the Wind.",
    "Ann: I read The Name of the Wind twice in Paris.",
    "John: Ann and Tim are coming to the game in Boston.",
    "Tim: Dune is better than the film.",
]


def _seen(index: EntityIndex) -> dict[str, object]:
    """What the walk and the answer hop read, in an order that does not depend on history."""
    return {
        "mentions": sorted((m, e) for m in index.memory_ids for e in index.entities_named_by(m)),
        "facts": sorted(f for e in index.entity_ids for f in index.facts_of(e)),
        "names": index.names,
        "labels": index.labels,
        "aliases": index.aliases,
        "sources": {f: sorted(ms) for f, ms in index.sources_of.items()},
    }


class _Reads:
    """Counts the times the store reads the whole entity graph; once `armed`, a commit lands
    between the first two scans of the next read."""

    def __init__(self, oneshot: GraphMemory, monkeypatch: pytest.MonkeyPatch) -> None:
        self.count = 0
        self.armed = False
        store = oneshot.store
        read, scan = store.search.read_entity_index, store.conn.read_arrow

        def counted() -> EntityIndex:
            self.count += 1
            return read()

        def scanned(*args: Any, **kwargs: Any) -> Any:
            table = scan(*args, **kwargs)
            if self.armed:
                self.armed = False
                oneshot.index_triples(limit=1)
            return table

        monkeypatch.setattr(store.search, "read_entity_index", counted)
        monkeypatch.setattr(store.conn, "read_arrow", scanned)


def test_new_memories_extracted_are_taken_in_without_reading_the_graph(
    oneshot: GraphMemory, monkeypatch: pytest.MonkeyPatch
) -> None:
    reads = _Reads(oneshot, monkeypatch)
    stored = oneshot.remember_many([{"content": c} for c in CHAT])
    oneshot.index_triples(limit=2)
    store = oneshot.store
    first = store.entities.index()
    assert reads.count == 1

    oneshot.index_triples(limit=2)
    oneshot.index_triples()
    taken = store.entities.index()

    assert reads.count == 1 and taken is not first
    assert _seen(taken) == _seen(store.search.read_entity_index())
    assert set(taken.memory_ids) >= {m.id for m in stored[2:]}
    assert store.entities.fresh_index() is taken
    hits = {h.memory.id for h in oneshot.recall_multihop("What did Ann read in Paris?").hits}
    assert stored[3].id in hits


def test_a_delete_a_reextraction_or_a_cypher_write_reads_the_graph_again(
    oneshot: GraphMemory, monkeypatch: pytest.MonkeyPatch
) -> None:
    reads = _Reads(oneshot, monkeypatch)
    stored = oneshot.remember_many([{"content": c} for c in CHAT])
    oneshot.index_triples()
    store = oneshot.store
    store.entities.index()

    oneshot.delete(stored[1].id)
    index = store.entities.index()
    assert reads.count == 2 and stored[1].id not in index.memory_ids

    oneshot.update(stored[0].id, content="Tim: Finally finished Dune on the train to Rome.")
    oneshot.index_triples()  # its old mentions and facts go: not a change the index can take in
    index = store.entities.index()
    assert reads.count == 3
    assert "paris" not in index.entities_named_by(stored[0].id)

    oneshot.cypher("MATCH (e:Entity {id: 'tim'}) SET e.label = 'place'", write=True)
    index = store.entities.index()
    assert reads.count == 4 and index.labels["tim"] == "place"
    assert _seen(index) == _seen(store.search.read_entity_index())


def test_a_commit_during_the_read_is_not_taken_in_twice(
    oneshot: GraphMemory, monkeypatch: pytest.MonkeyPatch
) -> None:
    reads = _Reads(oneshot, monkeypatch)
    oneshot.remember_many([{"content": c} for c in CHAT])
    oneshot.index_triples(limit=2)
    store = oneshot.store
    reads.armed = True
    store.entities.index()  # holds some of what was extracted meanwhile: the mentions not

    oneshot.index_triples()
    index = store.entities.index()

    assert reads.count == 2  # so it is read again rather than taking the changes in
    assert _seen(index) == _seen(store.search.read_entity_index())
