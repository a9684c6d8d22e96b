"""The feed: memories stored and documents indexed, newest first, filtered and paged."""

from __future__ import annotations

from datetime import timedelta

import pytest

from graphmem.errors import InvalidInput
from graphmem.models import utcnow
from graphmem.service import GraphMemory


def test_memories_and_documents_come_newest_first_in_pages(gm: GraphMemory) -> None:
    first = gm.remember("Deploys go through ArgoCD", context="infra")
    (gm.project_root / "docs").mkdir(exist_ok=True)
    (gm.project_root / "docs" / "a.md").write_text("# A\n\nSome text.\n", encoding="utf-8")
    gm.index_documents()
    later = [gm.remember(f"Note {n}", kind="decision", session_id="s1") for n in range(3)]
    everything = gm.feed(limit=10).items
    assert [i.kind for i in everything] == ["memory"] * 3 + ["document", "memory"]
    assert everything[3].document and everything[3].document.path == "docs/a.md"
    assert [i.memory.id for i in everything if i.memory] == [*(m.id for m in later[::-1]), first.id]

    seen, cursor = [], None
    while True:  # two at a time, every item once, in the same order
        page = gm.feed(limit=2, cursor=cursor)
        seen += [i.memory.id if i.memory else i.document.path for i in page.items]  # type: ignore[union-attr]
        cursor = page.next_cursor
        if cursor is None:
            break
    assert seen == [i.memory.id if i.memory else "docs/a.md" for i in everything]


def test_filters_keep_memories_and_bound_the_time(gm: GraphMemory) -> None:
    infra = gm.remember("Deploys go through ArgoCD", context="infra")
    mine = gm.remember("We chose Postgres", kind="decision", session_id="s1")
    assert [i.memory.id for i in gm.feed(context="infra").items if i.memory] == [infra.id]
    assert [i.memory.id for i in gm.feed(session="s1").items if i.memory] == [mine.id]
    assert [i.memory.id for i in gm.feed(kind="decision").items if i.memory] == [mine.id]
    now = utcnow()
    assert gm.feed(since=now + timedelta(seconds=1)).items == []
    assert len(gm.feed(until=now + timedelta(seconds=1)).items) == 2
    for bad in ({"kind": "poem"}, {"cursor": "nope!"}, {"limit": 0},
                {"since": now, "until": now - timedelta(days=1)}):  # fmt: skip
        with pytest.raises(InvalidInput):
            gm.feed(**bad)  # type: ignore[arg-type]


def test_an_agent_keeps_what_its_sessions_stored(gm: GraphMemory) -> None:
    gm.remember("A note from outside any session")
    for session, client in (("s-claude", "claude-code"), ("s-cursor", "cursor")):
        gm.close_session(
            f"We chose Postgres for billing in {session}.", dry_run=False, session_id=session,
            client=client,
        )  # fmt: skip
    page = gm.feed(agent="claude-code")
    assert [i.memory.session_id for i in page.items if i.memory] == ["s-claude"]
    assert all(i.memory for i in page.items)  # documents have no agent
    assert page.agents == ["claude-code", "cursor"]
    assert gm.feed(agent="claude-code", session="s-cursor").items == []
    assert gm.feed(agent="someone-else").items == []
