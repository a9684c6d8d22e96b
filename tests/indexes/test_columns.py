"""The in-process columns recall reads: they follow every kind of write once they are loaded."""

from __future__ import annotations

from graphmem.models import MemoryFilter
from graphmem.service import GraphMemory


def _hit(gm: GraphMemory, query: str, **filters: object) -> dict[str, str]:
    """id -> lifecycle of the hits, as recall returns them."""
    return {h.memory.id: h.memory.lifecycle for h in gm.recall(query, limit=10, filters=filters)}


def test_lifecycle_changes_after_the_columns_were_loaded_show_in_recall(gm: GraphMemory) -> None:
    old = gm.remember("deploy the billing service with helm v2")
    new = gm.remember("deploy the billing service with helm v3")
    dup = gm.remember("billing service is deployed with helm, version 3")
    assert set(_hit(gm, "deploy billing helm")) == {old.id, new.id, dup.id}  # columns loaded

    gm.mark_outdated(old.id, reason="helm 3 now", superseded_by=new.id)
    gm.promote_to_canonical(new.id, owner="platform")
    gm.merge_duplicates(new.id, [dup.id])

    hits = _hit(gm, "deploy billing helm")
    assert hits[old.id] == "superseded"
    assert hits[new.id] == "canonical"
    assert dup.id not in hits  # archived: hidden unless asked for
    assert _hit(gm, "deploy billing helm", lifecycle="archived") == {dup.id: "archived"}
    assert next(iter(hits)) == new.id  # canonical first


def test_updates_deletes_and_cypher_writes_show_in_recall(gm: GraphMemory) -> None:
    kept = gm.remember("postgres vacuum runbook", tags=["db"])
    gone = gm.remember("postgres failover runbook", tags=["db"])
    raw = gm.remember("postgres replica lag notes", tags=["db"])
    assert len(_hit(gm, "postgres runbook")) == 3

    gm.update(kept.id, tags=["db", "oncall"], importance=0.9)
    gm.delete(gone.id)
    gm.cypher(f"MATCH (m:Memory {{id: '{raw.id}'}}) SET m.service = 'replicas'", write=True)

    assert set(_hit(gm, "postgres runbook")) == {kept.id, raw.id}
    assert set(_hit(gm, "postgres", tags=["oncall"])) == {kept.id}
    assert set(_hit(gm, "postgres", service="replicas")) == {raw.id}
    (hit,) = gm.recall("vacuum", limit=1)
    assert hit.memory.importance == 0.9


def test_filters_and_sessions_read_from_the_columns_agree_with_the_store(gm: GraphMemory) -> None:
    first = gm.remember("turn one about kafka", session_id="s1", kind="note")
    second = gm.remember("turn two about kafka", session_id="s1", kind="decision")
    other = gm.remember("kafka elsewhere", session_id="s2", kind="note")
    gm.recall("kafka")

    assert gm.store.memories.session_order(["s1", "s2"]) == {
        "s1": [first.id, second.id],
        "s2": [other.id],
    }
    assert gm.store.memories.matching_ids(MemoryFilter(kind="note")) == {first.id, other.id}
    assert not gm.store.memories.has_archived()


def test_rows_rewritten_after_loading_leave_their_old_values_behind(gm: GraphMemory) -> None:
    moved = gm.remember("kafka lag on the consumer", session_id="s1", kind="note")
    stays = gm.remember("kafka broker disk full", session_id="s1", kind="note")
    folded = gm.remember("kafka broker disk is full", session_id="s1", kind="note")
    gm.merge_duplicates(stays.id, [folded.id])  # archived before the columns load
    gm.recall("kafka")
    assert gm.store.memories.has_archived()

    gm.update(moved.id, kind="incident")
    gm.cypher(f"MATCH (m:Memory {{id: '{moved.id}'}}) SET m.session_id = 's2'", write=True)
    gm.cypher(f"MATCH (m:Memory {{id: '{folded.id}'}}) SET m.lifecycle = 'active'", write=True)

    assert gm.store.memories.session_order(["s1", "s2"]) == {
        "s1": [stays.id, folded.id],
        "s2": [moved.id],
    }
    assert gm.store.memories.matching_ids(MemoryFilter(kind="note")) == {stays.id, folded.id}
    assert gm.store.memories.matching_ids(MemoryFilter(kind="incident")) == {moved.id}
    assert not gm.store.memories.has_archived()


def test_speakers_are_the_names_that_open_conversation_turns(gm: GraphMemory) -> None:
    gm.remember("Caroline: I went to a support group yesterday.")
    gm.remember("note: lowercase labels are not people")
    gm.remember("Deploy failed: two words are not a speaker")
    gm.recall("support group")  # the columns are loaded: later writes go to their overlay
    gm.remember("Melanie: pottery is my therapy.")
    gm.remember("A note that mentions Jon: not at its start")

    assert gm.store.memories.speakers() == {"caroline", "melanie"}
