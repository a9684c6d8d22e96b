"""Entities and facts from real extraction (spaCy, or its rules when the model is missing):
on write in the background, by backfill, resolved to one entity per thing, walked by
multi-hop recall with the path that reached each hit."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from graphmem.embeddings.hashing import HashEmbedder
from graphmem.errors import InvalidInput, NotFound
from graphmem.graph import answer_hop
from graphmem.graph.multihop import Subgraph
from graphmem.indexes import search_state
from graphmem.recall.query import asked_labels
from graphmem.service import GraphMemory
from graphmem.settings import load_settings

HISTORY = [
    {"content": "The billing migration caused an index lock on the orders table.",
     "session_id": "s1", "kind": "incident"},
    {"content": "The index lock was mitigated by the rollback runbook.", "session_id": "s2"},
    {"content": "The rollback runbook reverts the last Alembic migration with kubectl.",
     "session_id": "s3", "kind": "runbook"},
    {"content": "The checkout-service depends on Redis for carts.", "session_id": "s4"},
    {"content": "Lunch is at noon on Fridays.", "session_id": "s5"},
]  # fmt: skip


def _open(path: Path, *, background: bool) -> GraphMemory:
    settings = load_settings(path, environ={}, overrides={"extract_on_write": background})
    return GraphMemory(settings, embedder=HashEmbedder(), extract_in_background=background)


@pytest.fixture
def live(tmp_path: Path) -> Iterator[GraphMemory]:
    """A long-lived store: extraction runs in the background after each write."""
    gm = _open(tmp_path / "store", background=True)
    yield gm
    gm.close()


def _entity_ids(gm: GraphMemory) -> set[str]:
    return {e.id for e in gm.list_entities(limit=200).entities}


def test_writes_are_extracted_in_the_background(live: GraphMemory) -> None:
    live.remember_many(HISTORY)
    assert live.wait_for_extraction(timeout=60)
    assert {"index lock", "rollback runbook", "redis", "checkout-service"} <= _entity_ids(live)
    assert live.store.entities.pending_extraction_ids() == []


def test_memories_written_inside_a_transaction_are_extracted_once_it_commits(
    live: GraphMemory,
) -> None:
    live.close_session(
        "Checkout work.\n- We decided to run checkout-service on Redis 7", dry_run=False
    )
    assert live.wait_for_extraction(timeout=60)
    assert live.store.entities.pending_extraction_ids() == []  # the session's summary too
    assert live.stats().backlog == {"extraction": 0, "chunks": 0}


def test_a_one_shot_store_leaves_memories_pending_and_the_backfill_catches_up(
    oneshot: GraphMemory,
) -> None:
    oneshot.remember_many(HISTORY)
    assert len(oneshot.store.entities.pending_extraction_ids()) == len(HISTORY)
    report = oneshot.index_triples(batch_size=2)
    assert report.memories == len(HISTORY) and report.remaining == 0
    assert report.entities >= 8 and report.facts >= 2
    again = oneshot.index_triples()
    assert again.memories == 0 and again.remaining == 0


def test_dry_run_limit_and_context_restrict_what_is_written(oneshot: GraphMemory) -> None:
    oneshot.remember_many(HISTORY)
    oneshot.remember("The payments-api uses Stripe.", context="billing")
    dry = oneshot.index_triples(dry_run=True)
    assert dry.dry_run and dry.memories == len(HISTORY) + 1 and dry.entities > 0
    assert oneshot.list_entities().entities == []
    only = oneshot.index_triples(context="billing")
    assert only.memories == 1 and only.remaining == len(HISTORY)
    assert "stripe" in _entity_ids(oneshot)
    assert oneshot.index_triples(limit=2).memories == 2


def test_force_extracts_again_and_resume_continues_an_interrupted_forced_run(
    oneshot: GraphMemory,
) -> None:
    oneshot.remember_many(HISTORY)
    oneshot.index_triples()
    first = oneshot.index_triples(force=True, limit=2, batch_size=1)  # "interrupted" after two
    assert first.memories == 2
    rest = oneshot.index_triples(force=True, resume=True, batch_size=1)
    assert rest.memories == len(HISTORY) - 2
    assert oneshot.index_triples(force=True, resume=True).memories == len(HISTORY)  # finished


def test_spellings_of_one_thing_become_one_entity(oneshot: GraphMemory) -> None:
    oneshot.remember_many(
        [
            {"content": "The JWT expires after an hour."},
            {"content": "We rotate JWTs every day."},
            {"content": "The billing-service calls Stripe."},
            {"content": "The billing service retries failed charges."},
        ]
    )
    oneshot.index_triples()
    ids = _entity_ids(oneshot)
    assert "jwt" in ids and "jwts" not in ids
    billing = [e for e in oneshot.list_entities("billing").entities if "service" in e.id]
    assert len(billing) == 1 and billing[0].mentions == 2


def test_editing_a_memory_replaces_what_was_extracted_from_it(oneshot: GraphMemory) -> None:
    memory = oneshot.remember("The checkout-service depends on Redis.")
    oneshot.index_triples()
    oneshot.update(memory.id, content="The checkout-service depends on Memcached.")
    oneshot.index_triples()
    mentioned = {e for _, e, _ in oneshot.store.entities.mentions_of([memory.id])}
    assert "memcached" in mentioned and "redis" not in mentioned


def test_merged_entities_keep_their_links_and_new_mentions_resolve_to_the_primary(
    oneshot: GraphMemory,
) -> None:
    oneshot.remember_many(
        [{"content": "The api uses Postgres."}, {"content": "The api uses PostgreSQL."}]
    )
    oneshot.index_triples()
    report = oneshot.merge_entities("postgresql", ["postgres"])
    assert report.merged == ["postgres"] and report.edges_moved >= 1
    oneshot.remember("Postgres needs a vacuum on Sundays.")
    oneshot.index_triples()
    entity = next(e for e in oneshot.list_entities("postgres").entities)
    assert entity.id == "postgresql" and entity.aliases == ["postgres"] and entity.mentions == 3
    with pytest.raises(NotFound):
        oneshot.merge_entities("postgresql", ["no-such-entity"])


def test_multihop_reaches_the_fix_through_the_shared_entity_and_shows_the_path(
    oneshot: GraphMemory,
) -> None:
    stored = oneshot.remember_many(HISTORY)
    oneshot.index_triples()
    result = oneshot.recall_multihop("billing migration", seed_k=1, max_hops=2, limit=5)
    by_id = {h.memory.id: h for h in result.hits}
    seed, fix, runbook = (by_id.get(m.id) for m in stored[:3])
    assert seed is not None and seed.seed and seed.hops == 0
    assert fix is not None and not fix.seed and fix.hops == 1
    assert "index lock" in fix.path_text and fix.path_text.startswith("The billing migration")
    # the fact "index lock -mitigated_by-> rollback runbook" leads straight to the runbook
    assert runbook is not None and runbook.hops == 1 and "-mitigated_by->" in runbook.path_text
    # each node of the path by id, so a picture of it can link every node
    nodes = [(n.kind, n.id, n.label) for n in fix.nodes]
    assert len(nodes) == len(fix.path) + 1
    assert nodes[0][:2] == ("memory", stored[0].id) and nodes[-1][:2] == ("memory", fix.memory.id)
    assert ("entity", "index lock") in [n[:2] for n in nodes]
    assert [n[2] for n in nodes] == [fix.path[0].source, *(s.target for s in fix.path)]
    lunch = by_id.get(stored[4].id)  # shares nothing with the question: no path, ranked below
    assert lunch is None or (lunch.hops is None and lunch.score < runbook.score)
    assert result.subgraph["entities"] >= 2


def test_multihop_filters_apply_to_the_hits_not_the_walk(oneshot: GraphMemory) -> None:
    stored = oneshot.remember_many(HISTORY)
    oneshot.index_triples()
    result = oneshot.recall_multihop("billing migration", seed_k=1, filters={"kind": "runbook"})
    assert [h.memory.id for h in result.hits] == [stored[2].id]


@pytest.mark.parametrize("bad", [{"max_hops": 9}, {"seed_k": 0}, {"limit": 0}, {"damping": 1.5}])
def test_multihop_refuses_out_of_range_arguments(
    oneshot: GraphMemory, bad: dict[str, float]
) -> None:
    with pytest.raises(InvalidInput):
        oneshot.recall_multihop("anything", **bad)  # type: ignore[arg-type]


CHAT = [
    ("Tim", "Books are my escape after a long week."),
    ("Tim", "I read on the train every morning, it is a habit now."),
    ("Tim", 'Finally finished "The Name of the Wind" and I am still thinking about it.'),
    ("John", "The gym was packed today, everyone training for the season."),
    ("Tim", "The bookshop on the corner has a reading club on Fridays."),
    ("Tim", 'Staying up late with "Dune" again, the sandworms are wild.'),
    ("John", "I read the team report before practice."),
]


def test_multihop_walks_from_the_person_asked_about_to_the_kind_of_thing_asked_for(
    oneshot: GraphMemory,
) -> None:
    stored = oneshot.remember_many(
        [{"content": f"{who}: {text}", "session_id": f"s{i}"} for i, (who, text) in enumerate(CHAT)]
    )
    oneshot.index_triples()
    titles = {stored[2].id, stored[5].id}  # name a book without saying "book" or "read"

    clues = answer_hop.answer_hop(oneshot.store, "What books has Tim read?", Subgraph())
    # "Tim read ... on the train": a fact with the question's verb, a weaker clue
    assert clues == {**dict.fromkeys(titles, 1.0), stored[1].id: answer_hop.VERB_FACT_SHARE}
    assert answer_hop.answer_hop(oneshot.store, "What does Tim do?", Subgraph()) == {}
    # after one book, the same clues count a third: recall most often has its answer already
    one = answer_hop.answer_hop(oneshot.store, "Which book has Tim read?", Subgraph())
    assert one == pytest.approx({m: v * answer_hop.SINGLE_ANSWER_SHARE for m, v in clues.items()})

    def ranks(answer_weight: float) -> list[str]:
        result = oneshot.recall_multihop("What books has Tim read?", answer_weight=answer_weight)
        return [h.memory.id for h in result.hits]

    hop, plain = ranks(0.3), ranks(0.0)
    assert all(hop.index(m) < plain.index(m) for m in titles)
    # plain recall fuses the same clues (without the walk); the text-only recipe does not
    fused = oneshot.recall("What books has Tim read?", explain=True).hits
    text_only = oneshot.recall("What books has Tim read?", recipe="hybrid-nograph").hits
    order = [h.memory.id for h in fused]
    assert all(order.index(m) < [h.memory.id for h in text_only].index(m) for m in titles)
    clued = {h.memory.id: h.explain for h in fused if h.explain and "clue" in h.explain["features"]}
    assert titles <= set(clued)
    assert all("answer_hop" in e["found_by"] for e in clued.values())
    assert not any(
        h.explain and "clue" in h.explain["features"]
        for h in oneshot.recall("What books has Ann read?", explain=True).hits
    )  # Ann speaks in no conversation here: no clue, and no entity query
    # a clue recall did not gather still obeys the filters
    assert oneshot.recall("What books has Tim read?", filters={"tags": ["nowhere"]}).hits == []
    reached = oneshot.recall_multihop("What books has Tim read?", seed_k=1).hits
    path = next(h.path_text for h in reached if h.memory.id == stored[2].id)
    assert "-mentions-> Tim <-mentions- Tim: Finally finished" in path
    # the walk's bonus counts a share as much for a question about someone who speaks here
    assert answer_hop.speaker_share(oneshot.store, "What books has Tim read?") == (
        answer_hop.SPEAKER_SHARE
    )
    assert answer_hop.speaker_share(oneshot.store, "What books has Ann read?") == 1.0


@pytest.mark.parametrize("indexed", [False, True])
def test_the_answer_hop_reads_live_memories_only_up_to_its_limit(
    oneshot: GraphMemory, indexed: bool
) -> None:
    """From the store, or from the in-process entity index once a walk has read it: the same."""
    stored = oneshot.remember_many([{"content": f"{who}: {text}"} for who, text in CHAT])
    oneshot.index_triples()
    store = oneshot.store
    labels = asked_labels("What books has Tim read?")

    def things(limit: int = 100) -> set[str]:
        if indexed:
            store.entities.index()
        assert (store.entities.fresh_index() is not None) == indexed
        return {
            row[0] for row in store.entities.things_mentioned_with(["tim"], labels, limit=limit)
        }

    def facts() -> set[str]:
        return {row[0] for row in store.entities.facts_of_people(["tim"], ["read"], limit=100)}

    assert things() == {stored[2].id, stored[5].id}
    assert facts() == {stored[1].id}
    assert store.entities.resolve_known(["tim", "nobody"]) == {"tim": "tim"}
    store.knowledge.set_fields(stored[2].id, {"lifecycle": "archived"})
    store.knowledge.set_fields(stored[1].id, {"lifecycle": "archived"})
    assert things() == {stored[5].id}
    assert facts() == set()
    assert len(things(limit=1)) == 1
    # only a person's memories: Tim is one, "Dune" is not
    assert store.entities.things_mentioned_with(["dune"], labels, limit=100) == []


def test_a_walk_takes_an_index_read_moments_ago_while_extraction_is_behind(
    oneshot: GraphMemory, monkeypatch: pytest.MonkeyPatch
) -> None:
    oneshot.remember_many([{"content": f"{who}: {text}"} for who, text in CHAT])
    store = oneshot.store
    oneshot.index_triples(limit=3)
    first = store.entities.index()

    oneshot.index_triples(limit=2)  # the graph changed, and memories still wait
    assert store.entities.index(while_extracting=True) is first
    assert store.entities.fresh_index() is None  # the answer hop asks the store meanwhile
    monkeypatch.setattr(search_state, "REUSE_SECONDS", 0.0)
    second = store.entities.index(while_extracting=True)  # too old: read again
    assert second is not first

    monkeypatch.setattr(search_state, "REUSE_SECONDS", 60.0)
    oneshot.index_triples()  # nothing waits: a walk sees everything extracted
    assert store.entities.index(while_extracting=True) is not second
    assert store.entities.fresh_index() is not None


def test_a_kind_too_common_to_reach_by_still_marks_what_recall_gathered(
    oneshot: GraphMemory,
) -> None:
    many = answer_hop.MAX_KIND_MEMORIES + 5
    stored = oneshot.remember_many(
        [{"content": f'Tim: finished "The Book Number {i}" last night.'} for i in range(many)]
    )
    oneshot.index_triples()
    question = "What books has Tim read?"

    # more memories name Tim beside a title than the kind may reach: none is brought in
    assert answer_hop.answer_hop(oneshot.store, question, Subgraph()) == {}
    # but among what recall gathered, the kind still tells
    gathered = [m.id for m in stored[:3]]
    clues = answer_hop.answer_hop(oneshot.store, question, Subgraph(), gathered)
    assert {m for m, v in clues.items() if v >= 1.0} == set(gathered)


def test_the_people_who_speak_are_not_the_person_a_question_asks_for(
    oneshot: GraphMemory,
) -> None:
    stored = oneshot.remember_many(
        [
            {"content": "Melanie: Thanks, Caroline! The show last night was so much fun."},
            {"content": "Melanie: We saw Matt Patterson live and he was amazing."},
            {"content": "Caroline: Glad you had fun, Melanie!"},
        ]
    )
    oneshot.index_triples()

    clues = answer_hop.answer_hop(oneshot.store, "Which artists has Melanie seen?", Subgraph())

    # Caroline is named beside Melanie too, but she is the one Melanie talks to
    assert set(clues) == {stored[1].id}


def test_memory_graph_shows_a_memorys_citations_entities_facts_and_neighbours(
    oneshot: GraphMemory, tmp_path: Path
) -> None:
    gm = oneshot
    old = gm.remember("The checkout-service keeps carts in Redis")
    new = gm.remember("The checkout-service keeps carts in Valkey since the migration")
    other = gm.remember("The checkout-service pages the payments team on errors")
    gone = gm.remember("The checkout-service once ran on a single VM")
    gm.index_triples()
    gm.mark_outdated(old.id, reason="moved to Valkey", superseded_by=new.id)
    gm.store.knowledge.set_fields(gone.id, {"lifecycle": "archived"})
    (gm.settings.home.parent / "cart.md").write_text("# Carts\n", encoding="utf-8")
    gm.cite_source(new.id, "cart.md")

    graph = gm.memory_graph(new.id)
    assert [(c.path, c.status) for c in graph.citations] == [("cart.md", "current")]
    assert "checkout-service" in {e.id for e in graph.entities}
    relations = {n.id: (n.relation, n.via) for n in graph.neighbours}
    assert relations[old.id] == ("supersedes", None)
    assert relations[other.id] == ("mentions", "checkout-service")
    assert gone.id not in relations  # archived: not a neighbour

    (gm.settings.home.parent / "cart.md").write_text("# Carts, changed\n", encoding="utf-8")
    assert gm.memory_graph(new.id).citations[0].status == "source_changed"
    with pytest.raises(NotFound):
        gm.memory_graph("01NOSUCHMEMORY")


def test_an_entity_page_lists_the_memories_that_name_it_and_its_facts_and_their_sources(
    oneshot: GraphMemory,
) -> None:
    gm = oneshot
    first = gm.remember("The checkout-service depends on Redis for carts")
    second = gm.remember("The checkout-service pages the payments team on errors")
    gm.remember("Lunch is at noon on Fridays")
    gm.index_triples()

    page = gm.entity_page("checkout-service")
    assert (page.id, page.name) == ("checkout-service", "checkout-service")
    assert page.mentions == 2
    assert [m.id for m in page.memories] == [second.id, first.id]  # newest first
    assert all(m.relation == "mentions" and m.via == "checkout-service" for m in page.memories)
    fact = next(f for f in page.facts if f.object_id == "redis")
    assert (fact.subject_id, fact.subject, fact.object) == ("checkout-service", page.name, "Redis")
    assert fact.sources == [first.id]  # the memory that stated it
    assert [m.id for m in gm.entity_page("checkout-service", limit=1).memories] == [second.id]
    with pytest.raises(NotFound):
        gm.entity_page("no-such-entity")
