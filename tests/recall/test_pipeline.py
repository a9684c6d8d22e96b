"""Recall end to end on a temp store: exact tokens, filters, explain, recipes, lifecycle, dates,
and stores whose memories lack vectors in the active embedding space."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from graphmem.embeddings.hashing import HashEmbedder
from graphmem.errors import InvalidInput
from graphmem.models import Memory
from graphmem.recall.config import RECIPES, RecallConfig, get_recipe
from graphmem.service import GraphMemory, open_store

ENGINEERING = [
    {"content": "Migration #47 broke the orders.created_at index; rebuilt it concurrently.",
     "kind": "incident", "service": "orders", "tags": ["postgres", "migration"]},
    {"content": "Migration #48 added a nullable column to orders; nothing broke.",
     "kind": "note", "service": "orders", "tags": ["postgres", "migration"]},
    {"content": "Redis v2 cluster mode does not support MULTI across slots.",
     "kind": "dead_end", "tags": ["redis"]},
    {"content": "Redis v3 client upgrade changed the default timeout.",
     "kind": "note", "tags": ["redis"]},
    {"content": "The gateway returns 502 when the upstream pod is OOM-killed.",
     "type": "semantic", "service": "edge", "tags": ["gateway", "oncall"]},
    {"content": "The gateway returns 503 while the upstream pods are still starting.",
     "type": "semantic", "service": "edge", "tags": ["gateway"]},
    {"content": "PAY-123: refunds were charged twice when the webhook retried.",
     "kind": "incident", "service": "payments", "tags": ["payments", "oncall"]},
    {"content": "PAY-124: refund emails went out in the wrong language.",
     "kind": "incident", "service": "payments", "tags": ["payments"]},
    {"content": "JWT refresh raced in the auth middleware when two tabs refreshed at once.",
     "kind": "incident", "service": "auth", "tags": ["auth", "jwt", "oncall"]},
    {"content": "Deploys go through ArgoCD; never kubectl apply to production by hand.",
     "type": "procedural", "kind": "runbook", "tags": ["deploy"]},
]  # fmt: skip


def ids_of(result: Any) -> list[str]:
    return [hit.memory.id for hit in result]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[GraphMemory, list[Memory]]]:
    """One shared store for the read-only recall tests in this module (never written to)."""
    memory = open_store(tmp_path_factory.mktemp("recall") / "store", embedder=HashEmbedder())
    try:
        yield memory, memory.remember_many(ENGINEERING)
    finally:
        memory.close()


@pytest.fixture
def shared(corpus: tuple[GraphMemory, list[Memory]]) -> GraphMemory:
    return corpus[0]


@pytest.fixture
def by_content(corpus: tuple[GraphMemory, list[Memory]]) -> Callable[[str], str]:
    """The id of the corpus memory whose content starts with the given words."""

    def find(start: str) -> str:
        (match,) = [m.id for m in corpus[1] if m.content.startswith(start)]
        return match

    return find


# -- exact tokens -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("#47", "Migration #47"),
        ("v2", "Redis v2"),
        ("502", "The gateway returns 502"),
        ("PAY-123", "PAY-123"),
        ("pay-123 refunds", "PAY-123"),
    ],
)
@pytest.mark.parametrize("recipe", ["bm25", "hybrid"])
def test_recall_finds_exact_token_by_keyword_search(
    shared: GraphMemory, by_content: Callable[[str], str], query: str, expected: str, recipe: str
) -> None:
    result = shared.recall(query, recipe=recipe, explain=True)
    assert ids_of(result)[0] == by_content(expected)
    assert "keyword" in result[0].explain["found_by"]  # type: ignore[index]
    assert len(result) == 1 or result[0].score > result[1].score


def test_keyword_recall_of_a_ticket_number_returns_only_that_ticket(
    shared: GraphMemory, by_content: Callable[[str], str]
) -> None:
    assert ids_of(shared.recall("#47", recipe="bm25")) == [by_content("Migration #47")]


def test_keyword_recall_of_a_number_does_not_match_a_shorter_number(gm: GraphMemory) -> None:
    # 80 and 8043 can be neither a day nor a year, so the indexed date words cannot match them
    short = gm.remember("the proxy listens on port 80 for plain traffic")
    long = gm.remember("the proxy listens on port 8043 for plain traffic")
    assert ids_of(gm.recall("8043", recipe="bm25")) == [long.id]
    assert ids_of(gm.recall("80", recipe="bm25")) == [short.id]


# -- filters, explain, recipes ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("filters", "allowed"),
    [
        ({"service": "orders"}, {"Migration #47", "Migration #48"}),
        ({"kind": "incident", "tags": ["oncall"]}, {"PAY-123", "JWT refresh"}),
        ({"type": "procedural"}, {"Deploys go"}),
    ],
)
def test_filters_restrict_recall_results(
    shared: GraphMemory,
    by_content: Callable[[str], str],
    filters: dict[str, Any],
    allowed: set[str],
) -> None:
    result = shared.recall("what broke in production", filters=filters, limit=50)
    assert set(ids_of(result)) == {by_content(a) for a in allowed}


def test_a_filter_matching_nothing_gives_no_hits(shared: GraphMemory) -> None:
    assert shared.recall("gateway 502", filters={"context": "nowhere"}).hits == []


def test_explain_gives_features_and_how_each_hit_was_found(
    shared: GraphMemory, by_content: Callable[[str], str]
) -> None:
    result = shared.recall("gateway 502", explain=True)
    top = result[0]
    assert top.memory.id == by_content("The gateway returns 502")
    assert top.explain is not None
    assert top.explain["recipe"] == "hybrid"
    assert top.explain["found_by"] == ["vector", "keyword"]
    features = top.explain["features"]
    for name in ("cosine", "bm25", "terms", "recency", "importance", "lifecycle"):
        assert name in features
    assert features["terms"] == 1.0
    assert features["bm25"] == 1.0
    assert 0.0 <= features["cosine"] <= 1.0


def test_without_explain_hits_carry_no_explanation(shared: GraphMemory) -> None:
    assert all(hit.explain is None for hit in shared.recall("gateway"))


def test_hits_are_ordered_by_score_and_limited(shared: GraphMemory) -> None:
    result = shared.recall("orders migration gateway redis", limit=3)
    assert len(result) == 3
    scores = [hit.score for hit in result]
    assert scores == sorted(scores, reverse=True)


def test_bm25_recipe_finds_by_keyword_only(shared: GraphMemory) -> None:
    result = shared.recall("argocd deploys", recipe="bm25", explain=True)
    assert result.hits
    assert all(hit.explain and hit.explain["found_by"] == ["keyword"] for hit in result)
    assert "ArgoCD" in result[0].memory.content


def test_vector_recipe_finds_by_vector_only(shared: GraphMemory) -> None:
    result = shared.recall("argocd deploys production", recipe="vector", explain=True)
    assert result.hits
    assert all(hit.explain and hit.explain["found_by"] == ["vector"] for hit in result)
    assert "ArgoCD" in result[0].memory.content


def test_rrf_recipe_and_a_custom_config_both_rank(shared: GraphMemory) -> None:
    rrf = shared.recall("JWT refresh", recipe="rrf")
    custom = shared.recall("JWT refresh", recipe=RecallConfig(name="mine", w_cosine=0.0))
    assert "JWT refresh" in rrf[0].memory.content
    assert "JWT refresh" in custom[0].memory.content


BURIED = (
    "We moved the nightly export to a new cron host. The dashboards were renamed for the "
    "quarterly review. The billing worker leaks file handles after the v3 upgrade. Lunch "
    "orders now go through the shared form. Badges are printed at the front desk."
)


def test_a_sentence_buried_in_a_long_memory_is_found_by_its_passage(gm: GraphMemory) -> None:
    buried = gm.remember(BURIED)
    gm.remember("Billing handles worker files for the export.")
    query = "billing worker leaks file handles"
    whole = RecallConfig(name="whole", w_bm25=0, w_terms=0, w_passage=0, w_passage_turn=0)
    assert gm.recall(query, recipe=whole)[0].memory.id != buried.id
    found = gm.recall(query, recipe=whole.model_copy(update={"w_passage": 1.0}), explain=True)
    assert found[0].memory.id == buried.id
    sentence = gm.embedder.embed(["The billing worker leaks file handles after the v3 upgrade."])
    cosine = float(sentence[0] @ gm.embedder.embed_query(query))
    explain = found[0].explain
    assert explain and explain["passage_raw"] == pytest.approx(cosine, abs=1e-5)
    assert explain["passages"] == 5
    assert explain["cosine_raw"] == pytest.approx(
        float(gm.embedder.embed([BURIED])[0] @ gm.embedder.embed_query(query)), abs=1e-5
    )


def test_a_conversation_turn_is_lifted_toward_its_best_passage_by_its_own_share(
    gm: GraphMemory,
) -> None:
    turn = gm.remember("Caroline: " + BURIED)
    note = gm.remember(BURIED)
    query = "billing worker leaks file handles"
    only_cosine = RecallConfig(
        name="cosine", w_bm25=0, w_terms=0, w_names=0, w_speaker=0, w_recency=0, w_importance=0
    )

    def scores(share: float) -> dict[str, float]:
        recipe = only_cosine.model_copy(update={"w_passage_turn": share})
        return {h.memory.id: h.score for h in gm.recall(query, recipe=recipe)}

    whole_way, half_way = scores(1.0), scores(0.5)
    assert whole_way[turn.id] == pytest.approx(whole_way[note.id])  # the same best passage
    assert half_way[turn.id] < half_way[note.id] == pytest.approx(whole_way[note.id])


def test_the_best_of_many_passages_lifts_less(gm: GraphMemory) -> None:
    filler = " ".join(f"Room {n} has a {n}-seat table." for n in range(14))
    long = gm.remember(f"{filler} The billing worker leaks file handles after the v3 upgrade.")
    short = gm.remember("Billing worker restarted.")
    query = "billing worker leaks file handles"
    only_cosine = RecallConfig(name="c", w_bm25=0, w_terms=0, w_recency=0, w_importance=0)

    def first(full: int) -> str:
        recipe = only_cosine.model_copy(update={"passage_full_count": full})
        return gm.recall(query, recipe=recipe)[0].memory.id

    # its best passage beats the short memory, but as the best of 15 it counts 4/15 of its lift
    assert first(16) == long.id
    assert first(4) == short.id


def test_filters_apply_to_memories_found_by_their_passages(gm: GraphMemory) -> None:
    buried = gm.remember(BURIED, context="office")
    gm.remember("Billing handles worker files for the export.", context="billing")
    hits = gm.recall(
        "billing worker leaks file handles", filters={"context": "billing"}, recipe="vector"
    )
    assert buried.id not in ids_of(hits)
    office = gm.recall("billing worker leaks", filters={"context": "office"}, recipe="vector")
    assert ids_of(office) == [buried.id]


def test_every_named_recipe_is_accepted(shared: GraphMemory) -> None:
    for name in RECIPES:
        assert shared.recall("redis", recipe=name).hits, name


def test_unknown_recipe_is_invalid_input_listing_the_known_ones(shared: GraphMemory) -> None:
    with pytest.raises(InvalidInput, match="bm25") as caught:
        shared.recall("redis", recipe="magic")
    assert caught.value.fields["recipe"] == "magic"


@pytest.mark.parametrize("query", ["", "   ", "\n"])
def test_empty_query_is_invalid_input(shared: GraphMemory, query: str) -> None:
    with pytest.raises(InvalidInput, match="empty"):
        shared.recall(query)


def test_a_query_without_searchable_words_is_answered_by_vectors_alone(shared: GraphMemory) -> None:
    assert shared.recall("???", recipe="bm25").hits == []
    result = shared.recall("???", explain=True)
    assert result.hits
    assert all(hit.explain and hit.explain["found_by"] == ["vector"] for hit in result)


# -- lifecycle and dates ----------------------------------------------------------------------


def test_archived_memories_are_hidden_unless_asked_for(gm: GraphMemory) -> None:
    old = gm.remember("the legacy billing cron runs at 02:00")
    live = gm.remember("the billing cron moved to the scheduler service")
    gm.cypher("MATCH (m:Memory {id:$id}) SET m.lifecycle='archived'", {"id": old.id}, write=True)

    assert [m.id for m in gm.list().memories] == [live.id]
    assert ids_of(gm.recall("billing cron", limit=50)) == [live.id]
    assert ids_of(gm.recall("legacy billing cron", recipe="bm25")) == [live.id]

    assert [m.id for m in gm.list({"lifecycle": "archived"}).memories] == [old.id]
    archived = gm.recall("billing cron", filters={"lifecycle": "archived"})
    assert ids_of(archived) == [old.id]
    assert archived[0].memory.lifecycle == "archived"


def test_query_naming_a_date_ranks_that_days_memory_first(gm: GraphMemory) -> None:
    text = "Nate gave Joanna a painting of the harbour"
    later = gm.remember(text, created_at="2023-05-25T15:00:00")
    that_day = gm.remember(text, created_at="2022-05-25T15:00:00")

    result = gm.recall("What did Nate give Joanna on 25 May, 2022?", explain=True)

    assert ids_of(result) == [that_day.id, later.id]
    assert result[0].score > result[1].score
    assert result[0].explain and result[0].explain["features"]["date"] == 1.0
    assert result[1].explain and result[1].explain["features"]["date"] == 0.0


# -- memories without vectors in the active space ---------------------------------------------


@pytest.fixture
def other_space(gm: GraphMemory, reopen: Callable[..., GraphMemory]) -> GraphMemory:
    """Five memories embedded at 384 dims, reopened with a 128-dim embedder (a new space)."""
    gm.remember_many(
        [{"content": f"the quasar {i} incident in the telescope array"} for i in range(5)]
    )
    gm.remember("an unrelated memory about lunch")
    gm.close()
    return reopen(HashEmbedder(dim=128))


def test_memories_without_vectors_in_the_active_space_are_found_by_keyword(
    other_space: GraphMemory,
) -> None:
    stats = other_space.stats()
    assert stats.embedding_space == "hash:hash-v1/128"
    assert (stats.total, stats.vectors, stats.missing_vectors) == (6, 0, 6)

    result = other_space.recall("quasar telescope", explain=True, limit=50)

    assert len(result) == 5
    assert all("quasar" in hit.memory.content for hit in result)
    assert all(hit.explain and hit.explain["found_by"] == ["keyword"] for hit in result)
    assert not result.degraded


def test_reembed_fills_missing_vectors_and_is_a_no_op_when_run_again(
    other_space: GraphMemory,
) -> None:
    first = other_space.reembed(batch_size=4)
    assert (first.embedded, first.total, first.space) == (6, 6, "hash:hash-v1/128")
    assert other_space.stats().missing_vectors == 0
    assert other_space.stats().vectors == 6

    second = other_space.reembed()
    assert (second.embedded, second.total) == (0, 6)

    result = other_space.recall("quasar telescope", recipe="vector", explain=True)
    assert "quasar" in result[0].memory.content


def test_reembed_after_recall_in_the_new_space_fills_vectors(other_space: GraphMemory) -> None:
    assert other_space.recall("quasar").hits
    assert other_space.reembed().embedded == 6
    assert other_space.stats().missing_vectors == 0
    result = other_space.recall("quasar telescope", recipe="vector", explain=True)
    assert result[0].explain is not None and "vector" in result[0].explain["found_by"]


def test_vectors_of_the_old_space_are_kept_after_reembedding(
    other_space: GraphMemory, reopen: Callable[..., GraphMemory]
) -> None:
    other_space.reembed()
    other_space.close()
    back = reopen(HashEmbedder(dim=384))
    assert back.stats().missing_vectors == 0
    assert back.stats().embedding_space == "hash:hash-v1/384"


# -- the real local model (few, and marked) -----------------------------------------------------

JWT_MEMORY = (
    "JWT refresh raced in the auth middleware when two browser tabs refreshed the session at "
    "once; fixed by a per-user lock."
)
DISTRACTORS = [
    "Deploys go through ArgoCD; never kubectl apply to production by hand.",
    "We chose Kùzu over SQLite because recall walks relations between memories.",
    "Migration #47 broke the orders.created_at index; rebuilding it took 40 minutes.",
    "Redis cluster mode does not support MULTI across hash slots.",
    "The gateway returns 502 when the upstream pod is OOM-killed.",
    "Nightly backups of the orders database are written to the cold storage bucket.",
    "The frontend bundle grew past 2 MB after adding the charting library.",
    "Use feature flags for risky changes to the checkout flow.",
    "Grafana dashboards for the payments service live in the observability repo.",
    "The CI pipeline caches pip wheels between jobs to save four minutes.",
    "Terraform state is locked in DynamoDB; never edit it by hand.",
    "Customer emails are sent through the notifications service with retries.",
    "The search index is rebuilt every Sunday at 03:00 UTC.",
    "Load tests showed the orders API handles 2k requests per second.",
    "Python 3.12 upgrade is blocked on a C extension in the PDF renderer.",
    "On-call handover happens every Monday at 10:00 in the ops channel.",
    "The mobile app reads feature flags at startup and caches them for an hour.",
    "Log retention is 30 days in hot storage and a year in the archive.",
    "Kafka consumer lag alerts fire when lag exceeds ten thousand messages.",
    "Image thumbnails are generated lazily by a worker queue.",
]


@pytest.fixture(scope="module")
def semantic(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GraphMemory]:
    from graphmem.embeddings.local import LocalEmbedder

    memory = open_store(tmp_path_factory.mktemp("semantic") / "store", embedder=LocalEmbedder())
    try:
        memory.remember_many(
            [{"content": text} for text in [*DISTRACTORS[:10], JWT_MEMORY, *DISTRACTORS[10:]]]
        )
        yield memory
    finally:
        memory.close()


@pytest.mark.model
def test_recall_by_meaning_finds_the_jwt_refresh_incident_among_distractors(
    semantic: GraphMemory,
) -> None:
    result = semantic.recall("why did token refresh break?", explain=True)
    assert result[0].memory.content == JWT_MEMORY
    assert result.embedding_space == "local:all-MiniLM-L6-v2/384"
    assert result[0].explain and "vector" in result[0].explain["found_by"]


@pytest.mark.model
def test_vector_recipe_alone_answers_a_question_with_the_runbook(semantic: GraphMemory) -> None:
    result = semantic.recall("how do we release to production?", recipe="vector", explain=True)
    assert "ArgoCD" in result[0].memory.content
    assert result[0].explain and result[0].explain["found_by"] == ["vector"]


def test_the_turns_of_the_person_a_query_names_come_first(gm: GraphMemory) -> None:
    hers = gm.remember("Caroline: I researched adoption agencies all week.")
    gm.remember("Melanie: Caroline told me she researched adoption agencies.")
    gm.remember("Melanie: I researched pottery classes near me.")

    result = gm.recall("What did Caroline research?", limit=3, explain=True)

    assert result.hits[0].memory.id == hers.id
    assert result.hits[0].explain is not None
    assert result.hits[0].explain["features"]["speaker"] == 1.0
    assert all(h.explain and h.explain["features"]["speaker"] == 0.0 for h in result.hits[1:])


def test_a_turn_in_the_session_of_the_best_match_outranks_its_twin_elsewhere(
    gm: GraphMemory,
) -> None:
    def turns(session: str, *texts: str) -> list[Memory]:
        return gm.remember_many([{"content": t, "session_id": session} for t in texts])

    _, _, near = turns(
        "camping", "we went camping at the lake with the kids", "ok", "they loved it"
    )
    _, far, _ = turns("work", "the quarterly report is due", "they loved it", "fine")
    without = RECIPES["hybrid"].model_copy(update={"w_session": 0.0})

    def order(recipe: RecallConfig | None = None) -> list[str]:
        hits = gm.recall("camping with the kids, they loved it", limit=6, recipe=recipe).hits
        return [h.memory.id for h in hits if h.memory.id in (near.id, far.id)]

    assert order() == [near.id, far.id]
    plain = gm.recall("camping with the kids, they loved it", limit=6, recipe=without, explain=True)
    twins = {h.memory.id: h.score for h in plain.hits if h.memory.id in (near.id, far.id)}
    assert abs(twins[near.id] - twins[far.id]) < 0.05  # only the session set them apart


@pytest.mark.model
def test_a_session_summary_among_notes_does_not_top_a_query_it_does_not_match(
    tmp_path: Path,
) -> None:
    """The summary is its session's only memory: it used to borrow its own score back through
    the session feature and top every query, a nonsense one included."""
    from graphmem.embeddings.local import LocalEmbedder

    semantic = open_store(tmp_path / "store", embedder=LocalEmbedder())
    semantic.remember_many([{"content": text} for text in DISTRACTORS])
    summary = semantic.close_session(
        "Worked on the deploy pipeline. Decided to keep ArgoCD for staging. "
        "Tried to cache sessions in Memcached; evictions logged users out.",
        dry_run=False,
    ).summary_id
    for query in ("zzqqxx", "qwpeoriu asdlkfj"):
        without = RECIPES["hybrid"].model_copy(update={"w_session": 0.0})
        plain = [h.memory.id for h in semantic.recall(query, limit=5, recipe=without).hits]
        result = semantic.recall(query, limit=5, explain=True)
        assert [h.memory.id for h in result.hits] == plain, query  # the session lends nothing
        assert all(h.explain and h.explain["features"]["session"] == 0.0 for h in result.hits)
        assert result.hits[0].memory.id != summary
    semantic.close()


def test_a_conversation_turn_that_ends_by_asking_ranks_below_the_same_words_said(
    gm: GraphMemory,
) -> None:
    said = gm.remember("Tim: camping at the lake with the kids.")
    asked = gm.remember("Tim: camping at the lake with the kids?")
    request = gm.remember("camping at the lake with the kids, any tips?")  # no speaker: a request

    hits = gm.recall("camping at the lake with the kids", limit=3, explain=True).hits

    by_id = {h.memory.id: h for h in hits}
    assert [h.memory.id for h in hits].index(said.id) < [h.memory.id for h in hits].index(asked.id)
    assert by_id[asked.id].score == pytest.approx(by_id[said.id].score * 0.95, rel=1e-3)
    assert by_id[asked.id].explain and by_id[asked.id].explain["features"]["asks"] == 1.0
    assert by_id[request.id].explain and by_id[request.id].explain["features"]["asks"] == 0.0


def test_a_question_after_several_things_borrows_less_from_neighbouring_turns(
    gm: GraphMemory,
) -> None:
    gm.remember_many(
        [
            {"content": "Tim: which lakes did Jo camp at this year", "session_id": "s1"},
            {"content": "Jo: Loon and Crater, both twice", "session_id": "s1"},
        ]
    )
    hybrid = RECIPES["hybrid"]
    alone = hybrid.model_copy(update={"w_neighbor": 0.0, "w_neighbor_many": 0.0})

    def lent(question: str) -> float:
        """What the answer turn gains from the question turn before it."""

        def score(recipe: RecallConfig) -> float:
            hits = gm.recall(question, limit=5, recipe=recipe).hits
            return next(h.score for h in hits if h.memory.content.startswith("Jo:"))

        return score(hybrid) - score(alone)

    one, many = lent("Which lake did Jo camp at?"), lent("Which lakes has Jo camped at?")
    assert one > 0 and many > 0
    assert many < one


def test_only_conversation_turns_lend_to_their_neighbours(gm: GraphMemory) -> None:
    gm.remember_many(
        [
            {"content": "Tim: which lakes did Jo camp at this year", "session_id": "chat"},
            {"content": "Jo: Loon and Crater, both twice", "session_id": "chat"},
            {"content": "which lakes did Jo camp at this year", "session_id": "requests"},
            {"content": "Loon and Crater, both twice", "session_id": "requests"},
        ]
    )
    hits = gm.recall("Which lake did Jo camp at?", limit=4, explain=True).hits
    lent = {h.memory.content: h.explain["features"]["neighbor"] for h in hits if h.explain}
    assert lent["Jo: Loon and Crater, both twice"] > 0
    assert lent["Loon and Crater, both twice"] == 0


def test_a_question_after_several_things_weighs_the_speaker_over_its_own_words(
    gm: GraphMemory,
) -> None:
    gm.remember("Nate: Pets bring so much joy, they never let you down.")
    gm.remember("Nate: I took my turtles to the park this morning.")

    def weights(query: str) -> dict[str, float]:
        hit = gm.recall(query, limit=1, explain=True).hits[0]
        assert hit.explain is not None
        return {k: hit.explain["weights"][k] for k in ("speaker", "bm25", "terms")}

    hybrid = get_recipe("hybrid")
    assert weights("What pets does Nate have?") == {
        "speaker": hybrid.w_speaker_many,
        "bm25": hybrid.w_bm25_many,
        "terms": hybrid.w_terms_many,
    }
    plain = {"speaker": hybrid.w_speaker, "bm25": hybrid.w_bm25, "terms": hybrid.w_terms}
    assert weights("What is the name of Nate's dog?") == plain
    # a recipe that sets no weights of its own for such questions keeps its plain ones
    custom = RecallConfig(name="mine", w_bm25=0.7)
    assert custom.for_many() == custom
