"""A retried store stores nothing twice: the caller's idempotency key, and an exact duplicate from
the same client session within the duplicate window."""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from graphmem.embeddings.hashing import HashEmbedder
from graphmem.errors import Conflict
from graphmem.models import StoredMemory
from graphmem.service import GraphMemory, open_store
from tests.servers.falkordb_servers import Server

NOTE = "billing-api retries Stripe webhooks 5 times (PAY-12)"


def test_a_retry_with_the_same_key_returns_the_first_memory_and_stores_nothing(
    gm: GraphMemory,
) -> None:
    first = gm.remember(NOTE, tags=["billing"], idempotency_key="call-1")
    retry = gm.remember(NOTE, tags=["billing"], idempotency_key="call-1")

    assert not first.deduplicated
    assert retry.deduplicated and retry.id == first.id
    assert retry == gm.get(first.id)  # the same memory, as get shows it
    assert gm.stats().total == 1


def test_a_key_that_comes_back_with_other_content_is_a_conflict_and_stores_nothing(
    gm: GraphMemory,
) -> None:
    gm.remember(NOTE, idempotency_key="call-1")

    with pytest.raises(Conflict) as raised:
        gm.remember("something else entirely", idempotency_key="call-1")

    assert raised.value.fields == {"idempotency_key": "call-1"}
    assert gm.stats().total == 1


def test_keys_are_kept_in_the_store_so_a_retry_after_a_restart_finds_them(
    gm: GraphMemory, reopen: Callable[..., GraphMemory]
) -> None:
    first = gm.remember(NOTE, idempotency_key="call-1")
    gm.close()

    again = reopen()
    retry = again.remember(NOTE, idempotency_key="call-1")

    assert retry.deduplicated and retry.id == first.id
    assert again.stats().total == 1


def test_a_key_whose_memory_was_deleted_stores_it_again(gm: GraphMemory) -> None:
    first = gm.remember(NOTE, idempotency_key="call-1")
    gm.delete(first.id)

    again = gm.remember(NOTE, idempotency_key="call-1")

    assert not again.deduplicated and again.id != first.id
    assert gm.remember(NOTE, idempotency_key="call-1").id == again.id


def test_one_call_with_a_key_twice_stores_one_memory(gm: GraphMemory) -> None:
    stored = gm.remember_many(
        [
            {"content": NOTE, "idempotency_key": "k"},
            {"content": "another note"},
            {"content": NOTE, "idempotency_key": "k"},
        ]
    )

    assert [m.deduplicated for m in stored] == [False, False, True]
    assert stored[2].id == stored[0].id
    assert gm.stats().total == 2


def test_an_exact_duplicate_from_the_same_session_is_not_stored_again(gm: GraphMemory) -> None:
    first = gm.remember(NOTE, kind="decision", client_session="agent-a")

    same = gm.remember(NOTE, kind="decision", client_session="agent-a")
    other_session = gm.remember(NOTE, kind="decision", client_session="agent-b")
    other_fields = gm.remember(NOTE, kind="incident", client_session="agent-a")
    no_session = gm.remember(NOTE, kind="decision")

    assert same.deduplicated and same.id == first.id
    assert not other_session.deduplicated and not other_fields.deduplicated
    assert not no_session.deduplicated
    assert gm.stats().total == 4


def test_a_duplicate_after_the_window_is_stored(tmp_path: Path) -> None:
    with open_store(
        tmp_path / "store", embedder=HashEmbedder(), duplicate_window_seconds=0.2
    ) as gm:
        first = gm.remember(NOTE, client_session="agent-a")
        time.sleep(0.3)
        later = gm.remember(NOTE, client_session="agent-a")

        assert not later.deduplicated and later.id != first.id


def test_a_window_of_zero_never_skips_a_duplicate(tmp_path: Path) -> None:
    with open_store(tmp_path / "store", embedder=HashEmbedder(), duplicate_window_seconds=0) as gm:
        gm.remember(NOTE, client_session="agent-a")
        assert not gm.remember(NOTE, client_session="agent-a").deduplicated


def test_a_retried_decision_does_not_link_its_dead_ends_twice(gm: GraphMemory) -> None:
    dead_end = gm.store_dead_end(attempted_approach="Redis for invoices", why_failed="evictions")
    fields = {
        "decision": "Invoices in Postgres",
        "rationale": "no evictions",
        "avoids": [dead_end.id],
        "idempotency_key": "decide-1",
    }

    first = gm.store_decision(**fields)
    retry = gm.store_decision(**fields)

    assert retry.deduplicated and retry.id == first.id
    links = gm.cypher("MATCH (:Memory)-[a:AVOIDS]->(:Memory) RETURN count(a)", {}).rows
    assert links == [[1]]


def test_a_retry_racing_its_first_try_on_another_node_stores_nothing_twice(
    tmp_path: Path, falkordb_server: Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two nodes of one FalkorDB store: each reads the key before the other has stored under
    it, both store, and the server's unique key fails the second commit whole; that node then
    answers with what the first stored, as a retry would."""
    url = falkordb_server.store_url("team")
    a = open_store(tmp_path / "a", embedder=HashEmbedder(), store_url=url)
    b = open_store(tmp_path / "b", embedder=HashEmbedder(), store_url=url)
    try:
        first: list[StoredMemory] = []
        reads = b.store.memories.stored_by_keys

        def read_just_before_a_stores(keys: list[str], *, now: datetime) -> Any:
            found = reads(keys, now=now)
            if not first:  # the first try lands on a between b's read and b's write
                first.append(a.remember(NOTE, idempotency_key="call-1"))
            return found

        monkeypatch.setattr(b.store.memories, "stored_by_keys", read_just_before_a_stores)
        retry, other = b.remember_many(
            [{"content": NOTE, "idempotency_key": "call-1"}, {"content": "an unrelated note"}]
        )
        assert retry.deduplicated and retry.id == first[0].id
        assert not other.deduplicated and b.get(other.id).content == "an unrelated note"
        assert a.stats().total == b.stats().total == 2
    finally:
        a.close()
        b.close()
