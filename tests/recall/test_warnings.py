"""Dead-end warnings: shown when the dead end, or the decision among the hits that avoids it, is
about what was asked (the relevance bar the prompt hook's injections clear), each saying why;
never for sharing a context or a tag with a hit, never for a query that matches nothing."""

from __future__ import annotations

import pytest

from graphmem.models import RecallWarning
from graphmem.recall.relevance import RelevanceBar
from graphmem.service import GraphMemory


@pytest.fixture
def infra(gm: GraphMemory) -> dict[str, str]:
    """A store where every memory shares the context "infra" and most share a tag."""
    ids = {
        "logs": gm.store_dead_end(
            attempted_approach="Compress logs with xz before upload",
            why_failed="CPU spikes on the log shippers", context="infra", tags=["ops"],
        ).id,
        "migrations": gm.store_dead_end(
            attempted_approach="Run database migrations inside the app at start-up",
            why_failed="two replicas raced and locked the schema",
            alternative="a one-off deploy job", context="infra", tags=["ops"],
        ).id,
        "memcached": gm.store_dead_end(
            attempted_approach="Cache sessions in Memcached",
            why_failed="evictions logged users out", context="infra", tags=["ops"],
        ).id,
    }  # fmt: skip
    ids["retention"] = gm.store_decision(
        decision="Keep customer data for seven years to satisfy the retention policy",
        rationale="legal asked for it", context="infra", tags=["ops"],
    ).id  # fmt: skip
    ids["job"] = gm.store_decision(
        decision="Migrations run in a one-off deploy job", rationale="only one process migrates",
        avoids=[ids["migrations"]], context="infra", tags=["ops"],
    ).id  # fmt: skip
    ids["flags"] = gm.remember(
        "Feature flags live in LaunchDarkly", context="infra", tags=["ops"]
    ).id
    return ids


def dead_ends(warnings: list[RecallWarning]) -> list[RecallWarning]:
    return [w for w in warnings if w.kind == "dead_end"]


def test_a_query_that_matches_nothing_warns_of_no_dead_end(
    gm: GraphMemory, infra: dict[str, str]
) -> None:
    result = gm.recall("zzqqxx", limit=5)
    assert result.hits  # recall still ranks something
    assert dead_ends(result.warnings) == []


def test_sharing_a_context_or_a_tag_with_a_hit_is_no_reason_to_warn(
    gm: GraphMemory, infra: dict[str, str]
) -> None:
    result = gm.recall("retention", limit=5, filters={"kind": "decision"})
    assert result.hits[0].memory.id == infra["retention"]
    assert dead_ends(result.warnings) == []


def test_a_dead_end_close_to_the_query_says_why_it_is_shown(
    gm: GraphMemory, infra: dict[str, str]
) -> None:
    (warning,) = dead_ends(gm.recall("compress the logs with xz", limit=3).warnings)
    assert warning.memory is not None and warning.memory.id == infra["logs"]
    assert warning.reason and "close to the query" in warning.reason
    assert "cosine" in warning.reason and warning.reason in warning.message
    assert warning.via is None


def test_a_relevant_decision_among_the_hits_brings_the_dead_end_it_avoids(
    gm: GraphMemory, infra: dict[str, str]
) -> None:
    gm.relevance = RelevanceBar(cosine=0.9, cosine_with_terms=0.3, terms=0.5)  # the dead end
    result = gm.recall("only one process migrates", limit=3)  # fails it, the decision not
    assert infra["job"] in [h.memory.id for h in result.hits]
    (warning,) = dead_ends(result.warnings)
    assert warning.memory is not None and warning.memory.id == infra["migrations"]
    assert warning.via == infra["job"]
    assert warning.reason and f"decision {infra['job']}" in warning.reason
    assert "(instead: a one-off deploy job)" in warning.message


def test_a_warning_cuts_a_long_dead_end_with_an_ellipsis(gm: GraphMemory) -> None:
    words = " ".join(f"step{n}" for n in range(40))
    gm.store_dead_end(attempted_approach=f"Rebuild the search index {words}", why_failed="slow")
    (warning,) = dead_ends(gm.recall(f"rebuild the search index {words}", limit=1).warnings)
    label = warning.message.split(": ", 1)[1].split("; shown because")[0]
    assert label.endswith("…") and len(label) <= 80


def test_the_bar_a_warning_clears_is_the_one_the_prompt_hook_reads(
    gm: GraphMemory, infra: dict[str, str]
) -> None:
    assert dead_ends(gm.recall("compress the logs with xz", limit=3).warnings)
    gm.relevance = RelevanceBar(cosine=1.01, cosine_with_terms=1.01)
    assert gm.hooks.relevance is gm.relevance
    assert dead_ends(gm.recall("compress the logs with xz", limit=3).warnings) == []
