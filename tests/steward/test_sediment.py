"""Sedimentation on a real store: each rule moves what it should and nothing else, one layer a
cycle; a dry run changes nothing; undo puts layers back; moves by hand are checked, audited,
undoable, and hold against the cycle."""

from __future__ import annotations

import threading
import time
from datetime import datetime, timedelta

import pytest

from graphmem.errors import InvalidInput, NotFound
from graphmem.models import utcnow
from graphmem.service import GraphMemory
from graphmem.steward import schedule as schedule_module


def layer(gm: GraphMemory, memory_id: str) -> str | None:
    rows = gm.cypher("MATCH (m:Memory {id: $id}) RETURN m.layer", {"id": memory_id}).rows
    return rows[0][0]  # type: ignore[no-any-return]


def old(gm: GraphMemory, content: str, days: float, **fields: object) -> str:
    return gm.remember(content, created_at=utcnow() - timedelta(days=days), **fields).id


def place(gm: GraphMemory, memory_id: str, name: str, *, days_ago: float | None = None,
          by: str | None = "up") -> None:  # fmt: skip
    """Put a memory in a layer, as a cycle `days_ago` would have (None: never moved)."""
    at = None if days_ago is None else utcnow() - timedelta(days=days_ago)
    gm.store.steward.set_layers([(memory_id, name, at, by if at else None)])


def use(gm: GraphMemory, memory_id: str, *, targeted: int = 0, days_ago: float = 0) -> None:
    gm.store.memories.add_accesses(  # on a memory never used: its counts become these
        [{"id": memory_id, "n": targeted, "t": targeted}], at=utcnow() - timedelta(days=days_ago)
    )


def refer(gm: GraphMemory, memory_id: str, times: int) -> None:
    """Other knowledge points at the memory: decisions that avoid it."""
    for i in range(times):
        decision = gm.remember(f"We chose plan {i} instead", kind="decision").id
        gm.cypher(  # any memory, not only a dead end: what the reference count reads
            "MATCH (d:Memory {id: $d}), (x:Memory {id: $x}) CREATE (d)-[:AVOIDS]->(x)",
            {"d": decision, "x": memory_id},
            write=True,
        )


def moves(report: object) -> dict[str, tuple[str, str, str]]:
    return {m.memory: (m.from_layer, m.to_layer, m.reason) for m in report.moves}  # type: ignore[attr-defined]


# -- the rules -----------------------------------------------------------------------------------


def test_whatever_outlives_its_first_day_settles_and_a_dry_run_changes_nothing(
    gm: GraphMemory,
) -> None:
    settled = old(gm, "The gateway returns 502 when the pool is exhausted", 2)
    fresh = old(gm, "Postgres 16 is the target of the upgrade", 0.5)

    report = gm.sediment_cycle()

    assert report.dry_run and report.run is None and report.looked_at == 2
    assert moves(report) == {settled: ("surface", "episodic", "settled")}
    assert report.moves[0].title.startswith("The gateway returns 502")
    assert report.counts == {"surface->episodic": 1}
    assert report.layers == {"surface": 1, "episodic": 1, "semantic": 0, "character": 0}
    assert layer(gm, settled) is None and layer(gm, fresh) is None
    assert gm.cypher("MATCH (a:Audit) RETURN count(*)").rows == [[0]]

    applied = gm.sediment_cycle(dry_run=False)

    assert applied.run is not None and moves(applied) == moves(report)
    assert (layer(gm, settled), layer(gm, fresh)) == ("episodic", None)
    audit = gm.cypher(
        "MATCH (a:Audit) WHERE a.run = $r RETURN a.action, a.target", {"r": applied.run}
    ).rows
    assert audit == [["steward:sediment", settled]]


def test_targeted_use_or_a_reference_makes_a_week_old_episodic_memory_semantic(
    gm: GraphMemory,
) -> None:
    used = old(gm, "Feature flags are read through FlagProvider", 10)
    little = old(gm, "The billing cron runs at 02:00", 10)
    young = old(gm, "Staging resets every Monday", 3)
    referred = old(gm, "Sharding the orders table by tenant failed", 10, kind="dead_end")
    for memory_id in (used, little, young, referred):
        place(gm, memory_id, "episodic", days_ago=9)
    for _ in range(3):
        gm.get(used)  # a use by id: targeted
    use(gm, little, targeted=2)
    use(gm, young, targeted=5)
    refer(gm, referred, 1)

    report = gm.sediment_cycle(dry_run=False)

    assert {k: v for k, v in moves(report).items() if v[0] == "episodic"} == {
        used: ("episodic", "semantic", "used"),
        referred: ("episodic", "semantic", "used"),
    }
    assert (layer(gm, little), layer(gm, young)) == ("episodic", "episodic")


def test_canonical_or_relied_on_semantic_memory_becomes_character(gm: GraphMemory) -> None:
    canonical = old(gm, "Deploys go through ArgoCD only", 30)
    relied = old(gm, "Secrets live in Vault under kv/app", 30)
    one_reference = old(gm, "Logs ship to Loki", 30)
    few_uses = old(gm, "Metrics go to Prometheus", 30)
    for memory_id in (canonical, relied, one_reference, few_uses):
        place(gm, memory_id, "semantic", days_ago=1)
    gm.promote_to_canonical(canonical, owner="platform")
    use(gm, relied, targeted=10)
    refer(gm, relied, 2)
    use(gm, one_reference, targeted=12)
    refer(gm, one_reference, 1)
    use(gm, few_uses, targeted=9)
    refer(gm, few_uses, 2)

    report = gm.sediment_cycle(dry_run=False)

    assert {k: v for k, v in moves(report).items() if v[0] == "semantic"} == {
        canonical: ("semantic", "character", "canonical"),
        relied: ("semantic", "character", "relied_on"),
    }
    assert (layer(gm, one_reference), layer(gm, few_uses)) == ("semantic", "semantic")


def test_disuse_sinks_semantic_and_character_memories_one_layer_but_not_canonical_ones(
    gm: GraphMemory,
) -> None:
    forgotten = old(gm, "The old VPN needs a hardware token", 400)
    faded = old(gm, "Releases are cut on Thursdays", 400)
    kept = old(gm, "Never run migrations by hand", 400)
    recent = old(gm, "The CDN caches for 5 minutes", 400)
    just_moved = old(gm, "The search index rebuilds nightly", 400)
    episodic = old(gm, "Someone restarted the queue once", 400)
    place(gm, forgotten, "semantic", days_ago=300)
    place(gm, faded, "character", days_ago=300)
    gm.promote_to_canonical(kept, owner="platform")
    gm._context.usage.flush()  # promoting reads it: a use, set back below
    place(gm, kept, "character", days_ago=300)
    place(gm, recent, "semantic", days_ago=300)
    place(gm, just_moved, "semantic", days_ago=10)
    place(gm, episodic, "episodic", days_ago=300)
    use(gm, faded, days_ago=200)
    use(gm, recent, days_ago=10)
    use(gm, kept, days_ago=300)

    report = gm.sediment_cycle(dry_run=False)

    assert moves(report) == {
        forgotten: ("semantic", "episodic", "disused"),
        faded: ("character", "semantic", "disused"),
    }
    assert [layer(gm, m) for m in (kept, recent, just_moved, episodic)] == [
        "character", "semantic", "semantic", "episodic",
    ]  # fmt: skip


def test_a_memory_moves_one_layer_a_cycle(gm: GraphMemory) -> None:
    memory = old(gm, "The payments service owns the ledger", 60)
    use(gm, memory, targeted=20)
    refer(gm, memory, 2)
    seen = []
    for _ in range(4):
        gm.sediment_cycle(dry_run=False)
        seen.append(layer(gm, memory))
    assert seen == ["episodic", "semantic", "character", "character"]


def test_only_live_memories_move(gm: GraphMemory) -> None:
    archived = old(gm, "Scratch: try the new runner", 5)
    gm.store.knowledge.set_fields(archived, {"lifecycle": "archived"})
    outdated = old(gm, "The API is on v1", 5)
    gm.mark_outdated(outdated, reason="v2 now")
    checkpoint = old(gm, "Checkpoint: halfway through the upgrade", 5, kind="checkpoint")

    assert gm.sediment_cycle(dry_run=False).moves == []
    assert [layer(gm, m) for m in (archived, outdated, checkpoint)] == [None, None, None]


def test_a_memory_that_sank_rises_again_only_once_used(gm: GraphMemory) -> None:
    memory = old(gm, "Queue consumers scale on lag", 400)
    place(gm, memory, "semantic", days_ago=300)
    use(gm, memory, targeted=10, days_ago=250)
    refer(gm, memory, 2)

    assert moves(gm.sediment_cycle(dry_run=False))[memory][2] == "disused"
    assert gm.sediment_cycle(dry_run=False).moves == []  # its old uses do not lift it back
    gm.get(memory)
    assert moves(gm.sediment_cycle(dry_run=False)) == {memory: ("episodic", "semantic", "used")}


# -- undo ----------------------------------------------------------------------------------------


def test_undo_puts_a_cycle_back_but_a_memory_moved_since(gm: GraphMemory) -> None:
    first = old(gm, "The cache warms on deploy", 3)
    second = old(gm, "The docs site builds with mkdocs", 3)
    third = old(gm, "Feature work merges to main", 30)
    place(gm, third, "episodic", days_ago=20)
    use(gm, third, targeted=4)
    before = gm.store.steward.layer_states([first, second, third])
    run = gm.sediment_cycle(dry_run=False)
    assert run.counts == {"surface->episodic": 2, "episodic->semantic": 1}
    gm.promote_sediment(second)

    report = gm.steward_undo(run.run or "")

    assert sorted(report.memories) == sorted([first, third])
    assert report.skipped == [
        {"audit": report.undone[0], "why": f"{second} moved since: undo it by hand"}
    ]
    after = gm.store.steward.layer_states([first, third])
    assert after == {first: before[first], third: before[third]}
    assert layer(gm, second) == "semantic"
    again = gm.steward_undo(run.run or "")
    assert again.undone == [] and again.skipped[0]["why"] == "already undone"


# -- by hand -------------------------------------------------------------------------------------


def test_promote_and_demote_by_hand_one_layer_or_to_a_named_one(gm: GraphMemory) -> None:
    memory = gm.remember("Incidents get a postmortem within a week").id

    up = gm.promote_sediment(memory, note="team rule")
    assert (up.from_layer, up.to_layer, up.reason, up.note) == (
        "surface", "episodic", "by_hand", "team rule",
    )  # fmt: skip
    top = gm.promote_sediment(memory, layer="character")
    assert (top.from_layer, top.to_layer) == ("episodic", "character")
    down = gm.demote_sediment(memory, layer="episodic")
    assert (down.from_layer, down.to_layer) == ("character", "episodic")
    assert layer(gm, memory) == "episodic"
    audit = gm.cypher(
        "MATCH (a:Audit) WHERE a.action = 'steward:sediment' RETURN a.run, a.actor ORDER BY a.at"
    ).rows
    assert audit == [[up.run, "user"], [top.run, "user"], [down.run, "user"]]

    gm.steward_undo(down.run or "")
    assert layer(gm, memory) == "character"
    gm.steward_undo(top.run or "")
    gm.steward_undo(up.run or "")
    assert layer(gm, memory) is None


@pytest.mark.parametrize(
    ("up", "start", "target", "message"),
    [
        (True, "semantic", "episodic", "episodic is not above it"),
        (True, "semantic", "semantic", "semantic is not above it"),
        (True, "character", None, "no layer above it"),
        (False, None, None, "no layer below it"),
        (False, "episodic", "semantic", "semantic is not below it"),
        (True, None, "bedrock", "layer must be one of"),
    ],
)
def test_a_move_by_hand_must_go_the_way_it_says(
    gm: GraphMemory, up: bool, start: str | None, target: str | None, message: str
) -> None:
    memory = gm.remember("Builds cache node_modules").id
    if start is not None:
        place(gm, memory, start)
    move = gm.promote_sediment if up else gm.demote_sediment
    with pytest.raises(InvalidInput, match=message):
        move(memory, layer=target)
    assert layer(gm, memory) == start
    assert gm.cypher("MATCH (a:Audit) RETURN count(*)").rows == [[0]]


def test_moving_an_unknown_memory_is_not_found(gm: GraphMemory) -> None:
    with pytest.raises(NotFound):
        gm.promote_sediment("01NOSUCHMEMORY0000000000000")
    with pytest.raises(NotFound):
        gm.demote_sediment("01NOSUCHMEMORY0000000000000")


def test_a_promotion_by_hand_holds_against_disuse_for_the_disuse_period(
    gm: GraphMemory,
) -> None:
    memory = old(gm, "The on-call rota lives in PagerDuty", 400)
    gm.promote_sediment(memory, layer="character")

    assert gm.sediment_cycle(dry_run=False).moves == []
    # the promotion was long ago
    gm.store.steward.set_layers([(memory, "character", utcnow() - timedelta(days=181), "promote")])
    assert moves(gm.sediment_cycle(dry_run=False)) == {memory: ("character", "semantic", "disused")}


def test_a_demotion_by_hand_is_not_lifted_again_by_the_cycle(gm: GraphMemory) -> None:
    memory = old(gm, "Use the blue-green script for the API", 30)
    place(gm, memory, "semantic", days_ago=5)
    use(gm, memory, targeted=8)
    gm.demote_sediment(memory, layer="surface", note="too specific")

    assert gm.sediment_cycle(dry_run=False).moves == []
    gm.store.steward.set_layers([(memory, "surface", utcnow() - timedelta(days=181), "demote")])
    assert moves(gm.sediment_cycle(dry_run=False)) == {memory: ("surface", "episodic", "settled")}


# -- the policy ----------------------------------------------------------------------------------


def test_the_thresholds_are_policy_fields(gm: GraphMemory) -> None:
    memory = old(gm, "The worker pool has 8 threads", 2)
    assert gm.steward_policy().sediment_settle_hours == 24
    gm.steward_policy({"sediment_settle_hours": 72})
    assert gm.sediment_cycle().moves == []
    with pytest.raises(InvalidInput):
        gm.steward_policy({"sediment_character_uses": 2})  # below sediment_semantic_uses (3)
    with pytest.raises(InvalidInput):
        gm.steward_policy({"sediment_disuse_days": 0})
    assert layer(gm, memory) is None


def test_a_cycle_over_many_memories_is_written_in_batches(gm: GraphMemory) -> None:
    created = utcnow() - timedelta(days=2)
    ids = [m.id for m in gm.remember_many(
        {"content": f"note {i} about service {i % 97}", "created_at": created} for i in range(2500)
    )]  # fmt: skip

    report = gm.sediment_cycle(dry_run=False)

    assert report.counts == {"surface->episodic": 2500}
    assert len(report.moves) == 1000 and report.unlisted == 1500
    rows = gm.cypher("MATCH (m:Memory) RETURN m.layer, count(*)").rows
    assert rows == [["episodic", 2500]]
    audits = gm.cypher("MATCH (a:Audit) WHERE a.run = $r RETURN count(*)", {"r": report.run}).rows
    assert audits == [[3]]
    undone = gm.steward_undo(report.run or "")
    assert sorted(undone.memories) == sorted(ids)
    assert gm.cypher("MATCH (m:Memory) WHERE m.layer IS NULL RETURN count(*)").rows == [[2500]]


def test_layer_states_keep_times_exactly(gm: GraphMemory) -> None:
    memory = old(gm, "Times round-trip through the audit", 2)
    gm.sediment_cycle(dry_run=False)
    (state,) = gm.store.steward.layer_states([memory]).values()
    assert state[0] == "episodic" and isinstance(state[1], datetime) and state[2] == "up"


def test_the_owners_scheduled_steward_run_is_followed_by_a_cycle(
    gm: GraphMemory, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(schedule_module, "CHECK_SECONDS", 0.1)
    memory = old(gm, "The release train leaves on Tuesdays", 2)
    stopping = threading.Event()
    gm.start_steward_schedule(stopping)
    try:
        deadline = time.monotonic() + 20
        while layer(gm, memory) is None and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        stopping.set()
    assert layer(gm, memory) == "episodic"
    actors = gm.cypher("MATCH (a:Audit) WHERE a.action = 'steward:sediment' RETURN a.actor").rows
    assert actors == [["steward"]]


# -- a memory shows its layer --------------------------------------------------------------------


def test_get_list_and_recall_show_the_layer_and_an_update_keeps_it(gm: GraphMemory) -> None:
    memory = gm.remember("Incidents get a postmortem within a week").id
    assert gm.get(memory).layer == "surface"
    assert gm.recall("postmortem within a week").hits[0].memory.layer == "surface"  # columns load

    gm.promote_sediment(memory, layer="semantic")

    assert gm.get(memory).layer == "semantic"
    assert [m.layer for m in gm.list().memories] == ["semantic"]
    assert gm.recall("postmortem within a week").hits[0].memory.layer == "semantic"
    updated = gm.update(memory, tags=["process"])
    assert updated.layer == "semantic" and gm.get(memory).layer == "semantic"
    assert gm.recall("postmortem within a week").hits[0].memory.layer == "semantic"
    gm.demote_sediment(memory)
    assert gm.recall("postmortem within a week").hits[0].memory.layer == "episodic"
