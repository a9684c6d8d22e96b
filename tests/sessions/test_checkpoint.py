"""GraphMemory.checkpoint: a session's recent conversation kept as a checkpoint memory, once."""

from __future__ import annotations

from graphmem.service import GraphMemory
from graphmem.sessions.checkpoint import (
    MAX_CHECKPOINT_CHARS,
    DedupPolicy,
    clean_capture,
    strip_private,
)

TALK = (
    "User: the nightly invoice job ran twice again\n\n"
    "Assistant: both workers took the Redis lock after a GC pause; I moved the scheduler to a "
    "Postgres advisory lock and added a test that starts two workers at once."
)


def test_a_checkpoint_is_an_episodic_checkpoint_memory_of_its_session(gm: GraphMemory) -> None:
    result = gm.checkpoint(TALK, session_id="s-1", client="claude-code")
    assert result.stored and result.reason == "stored"
    memory = gm.get(result.memory_id or "")
    assert (memory.kind, memory.type, memory.session_id) == ("checkpoint", "episodic", "s-1")
    assert memory.tags == ["checkpoint", "claude-code"]
    assert memory.content == TALK
    assert gm.last_checkpoint("s-1") == memory


def test_the_same_text_again_is_not_stored_and_names_the_earlier_checkpoint(
    gm: GraphMemory,
) -> None:
    first = gm.checkpoint(TALK, session_id="s-1")
    again = gm.checkpoint("  " + TALK.upper().replace("\n\n", "\n") + "  ", session_id="s-1")
    assert not again.stored and again.reason == "same_text"
    assert again.memory_id == first.memory_id
    assert gm.stats().by_kind == {"checkpoint": 1}


def test_a_near_duplicate_is_not_stored_but_new_talk_is(gm: GraphMemory) -> None:
    first = gm.checkpoint(TALK, session_id="s-1")
    near = gm.checkpoint(TALK + " Done.", session_id="s-1")
    assert not near.stored and near.reason == "similar"
    assert near.memory_id == first.memory_id and (near.similarity or 0) >= 0.95
    other = gm.checkpoint("User: now rename the billing module to invoicing", session_id="s-1")
    assert other.stored and other.memory_id != first.memory_id
    assert gm.last_checkpoint("s-1") == gm.get(other.memory_id or "")


def test_another_session_may_store_the_same_text(gm: GraphMemory) -> None:
    assert gm.checkpoint(TALK, session_id="s-1").stored
    assert gm.checkpoint(TALK, session_id="s-2").stored


def test_the_duplicate_thresholds_can_be_changed(gm: GraphMemory) -> None:
    gm.checkpoint(TALK, session_id="s-1")
    gm.checkpoint_dedup = DedupPolicy(min_cosine=1.01, same_text=False)
    assert gm.checkpoint(TALK + " Done.", session_id="s-1").stored
    assert gm.checkpoint(TALK + " Done.", session_id="s-1").stored  # nothing counts as a repeat


def test_private_parts_and_secrets_are_never_stored(gm: GraphMemory) -> None:
    text = (
        "User: deploy with key AKIAIOSFODNN7EXAMPLE <private>my card is 4111 1111</private> "
        "and password=hunter2hunter2\n\nAssistant: done <PRIVATE>and an unclosed secret"
    )
    result = gm.checkpoint(text, session_id="s-1")
    stored = gm.get(result.memory_id or "").content
    assert result.redacted == 2
    for leaked in ("AKIAIOSFODNN7EXAMPLE", "4111", "hunter2", "unclosed", "private"):
        assert leaked not in stored.lower()
    assert "[REDACTED]" in stored and stored.endswith("Assistant: done")


def test_nothing_is_stored_when_only_private_text_is_left(gm: GraphMemory) -> None:
    result = gm.checkpoint("<private>all of it</private>\n\n", session_id="s-1")
    assert not result.stored and result.reason == "empty" and result.memory_id is None
    assert gm.stats().total == 0


def test_a_long_capture_keeps_its_newest_part() -> None:
    lines = [f"User: step {i} of the migration went fine" for i in range(2000)]
    kept, _ = clean_capture("\n".join(lines))
    assert len(kept) <= MAX_CHECKPOINT_CHARS + 1
    assert kept.startswith("…User: step") and kept.endswith("step 1999 of the migration went fine")


def test_strip_private_leaves_the_rest_of_the_text() -> None:
    assert strip_private("a <private>b</private> c </private>d") == "a  c d"


def test_the_last_checkpoint_is_the_newest_of_that_session_and_of_that_kind(
    gm: GraphMemory,
) -> None:
    gm.remember("first", kind="checkpoint", session_id="s-1", created_at="2024-05-01")
    newer = gm.remember("second", kind="checkpoint", session_id="s-1", created_at="2024-05-02")
    gm.remember("a note", session_id="s-1", created_at="2024-05-03")
    gm.remember("elsewhere", kind="checkpoint", session_id="s-2", created_at="2024-05-04")
    assert gm.last_checkpoint("s-1") == gm.get(newer.id)
    assert gm.last_checkpoint("s-3") is None
