"""Sedimentation's layer in recall: a small feature, never a filter. A new memory at the surface
that matches best ranks first in a store whose older memories sank to semantic and character;
among equals the deeper layer comes first; recall sees a layer as soon as it is set, and an edit
of the memory keeps it."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

import pytest

from graphmem.models import utcnow
from graphmem.recall.config import RECIPES, RecallConfig
from graphmem.service import GraphMemory

AGED = [
    "The payment webhook retry limit used to be three attempts",
    "Payment webhook retries back off exponentially",
    "The orders webhook retry limit is ten attempts",
    "The payment queue has no retry limit",
    "Webhook retry attempts are logged to Loki",
    "Payment webhooks are signed with the shared secret",
]
NEW = "The payment webhook retry limit is now five attempts"


def test_a_new_memory_that_matches_best_ranks_first_in_an_aged_store(gm: GraphMemory) -> None:
    long_ago = utcnow() - timedelta(days=200)
    aged = gm.remember_many([{"content": c, "created_at": long_ago} for c in AGED * 5])
    gm.store.steward.set_layers(
        [(m.id, ("semantic", "character")[i % 2], long_ago, "up") for i, m in enumerate(aged)]
    )
    new = gm.remember(NEW)

    hits = gm.recall("payment webhook retry limit now", explain=True).hits

    assert hits[0].memory.id == new.id
    assert hits[0].explain and hits[0].explain["features"]["layer"] == 0.0
    layers = {h.explain["features"]["layer"] for h in hits[1:] if h.explain}
    assert layers == {0.5, 1.0}  # the deeper ones came up too, behind it


def test_the_layer_is_never_a_filter(gm: GraphMemory) -> None:
    ids = [gm.remember(f"The build cache lives in bucket number {n}").id for n in range(4)]
    for memory_id, name in zip(ids, ("surface", "episodic", "semantic", "character"), strict=True):
        gm.store.steward.set_layers([(memory_id, name, utcnow(), "up")])
    found = {h.memory.id for h in gm.recall("build cache bucket", limit=10).hits}
    assert found == set(ids)


def test_a_layer_asked_for_filters_recall_and_list(gm: GraphMemory) -> None:
    ids = [gm.remember(f"The build cache lives in bucket number {n}").id for n in range(3)]
    gm.store.steward.set_layers([(ids[1], "semantic", utcnow(), "up")])
    for layer, expected in (("semantic", {ids[1]}), ("surface", {ids[0], ids[2]})):
        found = gm.recall("build cache bucket", limit=10, filters={"layer": layer}).hits
        assert {h.memory.id for h in found} == expected, layer
        assert {m.id for m in gm.list({"layer": layer}).memories} == expected, layer


def test_among_equals_the_deeper_layer_comes_first_by_its_weight(gm: GraphMemory) -> None:
    surface = gm.remember("The API gateway times out after 30 seconds").id
    deep = gm.remember("The API gateway times out after 30 seconds.").id
    gm.promote_sediment(deep, layer="character")

    hits = gm.recall("api gateway timeout", explain=True).hits
    assert [h.memory.id for h in hits[:2]] == [deep, surface]
    explain = hits[0].explain or {}
    assert explain["features"]["layer"] == 1.0
    weight = explain["weights"]["layer"]
    assert weight == RecallConfig().w_layer > 0
    assert hits[0].score - hits[1].score == pytest.approx(weight, abs=1e-5)

    flat = RECIPES["hybrid"].model_copy(update={"w_layer": 0.0})
    scores = {h.memory.id: h.score for h in gm.recall("api gateway timeout", recipe=flat).hits}
    assert scores[deep] == scores[surface]


def test_recall_sees_a_layer_at_once_and_an_edit_keeps_it(
    gm: GraphMemory, reopen: Callable[..., GraphMemory]
) -> None:
    memory = gm.remember("Feature flags are read through FlagProvider").id

    def layer_feature(store: GraphMemory) -> float:
        (hit,) = store.recall("feature flags FlagProvider", explain=True).hits
        return float((hit.explain or {})["features"]["layer"])

    assert layer_feature(gm) == 0.0  # the columns are loaded now
    gm.promote_sediment(memory, layer="semantic")
    assert layer_feature(gm) == 0.5
    gm.update(memory, content="Feature flags are read through FlagProvider, never env vars")
    assert layer_feature(gm) == 0.5
    run = gm.sediment_cycle(dry_run=False)  # nothing to move: it is new
    assert run.moves == []
    gm.promote_sediment(memory)
    assert layer_feature(gm) == 1.0
    gm.close()
    assert layer_feature(reopen()) == 1.0
