"""MemorySelection, the typed question the domain asks instead of writing a WHERE: every given
condition holds, an empty choice selects nothing, and nothing given selects every memory."""

from __future__ import annotations

from graphmem.service import GraphMemory
from graphmem.storage.selection import NOT_ARCHIVED, MemorySelection, Mentions


def selected(gm: GraphMemory, selection: MemorySelection, limit: int = 50) -> list[str]:
    return [m.content for m in gm.store.memories.select(selection, limit=limit)]


def test_every_condition_given_holds_and_the_newest_come_first(gm: GraphMemory) -> None:
    gm.remember("decided in auth", kind="decision", context="auth", created_at="2024-01-01")
    gm.remember("noted in auth", context="auth", session_id="s-1", created_at="2024-01-02")
    copy = gm.remember("decided twice", kind="decision", context="auth", created_at="2024-01-03")
    kept = gm.remember("decided once", kind="decision", context="auth", created_at="2024-01-04")
    gm.merge_duplicates(kept.id, [copy.id])

    assert selected(gm, MemorySelection()) == [
        "decided once", "decided twice", "noted in auth", "decided in auth",
    ]  # fmt: skip
    assert selected(gm, MemorySelection(kinds=("decision",), lifecycles=NOT_ARCHIVED)) == [
        "decided once", "decided in auth",
    ]  # fmt: skip
    assert selected(gm, MemorySelection(context="auth", session_id="s-1")) == ["noted in auth"]
    assert selected(gm, MemorySelection(kinds=("decision",)), limit=1) == ["decided once"]


def test_mentions_match_a_tag_exactly_or_a_word_in_any_case(gm: GraphMemory) -> None:
    gm.remember("plain", tags=["Gotcha"])
    gm.remember("tagged", tags=["gotcha"])
    gm.remember("Titled", title="A GOTCHA in the cache")

    found = selected(gm, MemorySelection(mentions=Mentions(tags=("gotcha",))))
    assert found == ["tagged"]
    found = selected(gm, MemorySelection(mentions=Mentions(words=("Gotcha",))))
    assert found == ["Titled"]


def test_an_empty_choice_selects_nothing(gm: GraphMemory) -> None:
    gm.remember("anything", kind="decision")
    assert selected(gm, MemorySelection(kinds=())) == []
    assert selected(gm, MemorySelection(lifecycles=())) == []
    assert selected(gm, MemorySelection(mentions=Mentions())) == []
