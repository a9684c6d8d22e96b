"""The steward's MCP tools: a run files what it finds, the inbox lists it, resolving applies it,
undo puts it back; a sweep archives old chatter and undo brings it back; references are recounted;
the conflicts report says what waits in the inbox; a sediment cycle moves memories a layer and
undo puts them back, and so do moves by hand; the same through the grouped `steward` tool;
text blocks are short lines, not the JSON again; the policy's schema holds updates to its
fields."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
from mcp import Client
from tool_calls import call, fail

from graphmem.embeddings.hashing import HashEmbedder
from graphmem.mcp.server import build_server
from graphmem.models import utcnow
from graphmem.service import GraphMemory, open_store

pytestmark = pytest.mark.anyio

COPY = "Deploys go through ArgoCD; never kubectl apply to production by hand."


@pytest.fixture
def gm(tmp_path: Path) -> Iterator[GraphMemory]:
    with open_store(tmp_path / ".graphmem", embedder=HashEmbedder()) as store:
        yield store


def lifecycle(gm: GraphMemory, memory_id: str) -> str:
    """Read without `get`, which would count as a use (and a used memory is never swept)."""
    rows = gm.cypher("MATCH (m:Memory {id: $id}) RETURN m.lifecycle", {"id": memory_id}).rows
    return str(rows[0][0])


def old_chatter(gm: GraphMemory) -> str:
    return gm.remember("ok, sounds good", type="episodic", importance=0.2,
                       created_at=utcnow() - timedelta(days=400)).id  # fmt: skip


def layer(gm: GraphMemory, memory_id: str) -> str | None:
    """Read without `get`, which would count as a use."""
    rows = gm.cypher("MATCH (m:Memory {id: $id}) RETURN m.layer", {"id": memory_id}).rows
    return rows[0][0]  # type: ignore[no-any-return]


def settling(gm: GraphMemory) -> str:
    """A memory two days old: the next cycle settles it from the surface to episodic."""
    return gm.remember("The gateway returns 502 when the pool is exhausted",
                       created_at=utcnow() - timedelta(days=2)).id  # fmt: skip


def conflict(gm: GraphMemory) -> tuple[str, str]:
    """A decision taking the approach a dead end of the same context says failed."""
    text = "Cache user sessions in Redis cluster mode across slots"
    decision = gm.remember(text, kind="decision", context="auth").id
    return decision, gm.remember(text + ".", kind="dead_end", context="auth").id


def copies(gm: GraphMemory) -> tuple[str, str]:
    """Two memories that say the same, but for case and punctuation."""
    first = gm.remember(COPY, importance=0.8).id
    second = gm.remember(COPY.lower().rstrip("."), importance=0.4).id
    return first, second


async def test_run_inbox_resolve_undo_round_trip(gm: GraphMemory) -> None:
    kept, copy = copies(gm)
    async with Client(build_server(gm)) as client:
        await call(client, "steward_policy", updates={"auto_apply": []})
        dry = await call(client, "steward_run", scope="duplicates")
        assert dry["dry_run"] and [f["status"] for f in dry["findings"]] == ["proposed"]
        assert (await call(client, "steward_inbox"))["pending"] == 0  # a dry run files nothing

        run = await call(client, "steward_run", scope="duplicates", dry_run=False)
        (finding,) = run["findings"]
        assert (finding["kind"], finding["action"], finding["targets"]) == (
            "exact_duplicate", "merge", [kept, copy],
        )  # fmt: skip
        inbox = await call(client, "steward_inbox")
        assert [f["id"] for f in inbox["items"]] == [finding["id"]]
        assert inbox["by_kind"] == {"exact_duplicate": 1}

        resolved = await call(
            client, "steward_inbox_resolve", id=finding["id"], resolution="apply", note="same"
        )
        assert (resolved["status"], resolved["note"], resolved["resolved_by"]) == (
            "applied", "same", "mcp",
        )  # fmt: skip
        assert gm.get(copy).lifecycle == "archived" and gm.get(kept).lifecycle == "active"
        assert (await call(client, "steward_inbox"))["pending"] == 0

        undone = await call(client, "steward_undo", id=run["id"])
        assert undone["findings"] == [finding["id"]] and set(undone["memories"]) == {kept, copy}
        assert gm.get(copy).lifecycle == "active"
        back = await call(client, "steward_inbox")
        assert [(f["id"], f["status"]) for f in back["items"]] == [(finding["id"], "pending")]

        again = await call(client, "steward_run", scope="duplicates", dry_run=False)
        assert again["known"] == 1 and again["filed"] == 0  # pending already: not filed twice
        report = await call(client, "steward_report")
        assert report["id"] == again["id"]
        status = await call(client, "steward_status")
        assert status["last_run"]["id"] == again["id"] and status["pending"] == 1


async def test_the_policy_applies_exact_duplicates_on_its_own(gm: GraphMemory) -> None:
    _, copy = copies(gm)
    async with Client(build_server(gm)) as client:
        run = await call(client, "steward_run", dry_run=False)
        (finding,) = [f for f in run["findings"] if f["kind"] == "exact_duplicate"]
        assert finding["status"] == "applied" and finding["auto"] is True
        assert run["applied"] >= 1 and gm.get(copy).lifecycle == "archived"
        text = await fail(client, "steward_inbox_resolve", id=finding["id"], resolution="apply")
        assert "not pending" in text


async def test_the_grouped_steward_tool_answers_as_the_full_tools_do(gm: GraphMemory) -> None:
    copies(gm)
    async with Client(build_server(gm, "grouped")) as client:
        await call(client, "steward", action="policy", updates={"auto_apply": []})
        run = await call(client, "steward", action="run", dry_run=False)
        (finding,) = run["findings"]
        inbox = await call(client, "steward", action="inbox", kind="exact_duplicate")
        assert [f["id"] for f in inbox["items"]] == [finding["id"]]
        dismissed = await call(
            client, "steward", action="resolve", id=finding["id"], resolution="dismiss"
        )
        assert dismissed["status"] == "dismissed"
        assert (await call(client, "steward", action="status"))["pending"] == 0
        assert (await call(client, "steward", action="report"))["id"] == run["id"]
        again = await call(client, "steward", action="run", dry_run=False)
        assert again["known"] == 1 and again["findings"] == []  # dismissed: not filed again
        text = await fail(client, "steward", action="resolve", id=finding["id"], resolution="x")
        assert "resolution" in text


async def test_policy_updates_are_held_to_the_policy_fields(gm: GraphMemory) -> None:
    async with Client(build_server(gm)) as client:
        default = await call(client, "steward_policy")
        assert default["auto_apply"] == ["exact_duplicate", "expired_working"]
        changed = await call(client, "steward_policy", updates={"stale_days": 30})
        assert changed == {**default, "stale_days": 30}
        assert await call(client, "steward_policy", updates={}) == changed  # nothing to change
        assert "stale_days" in await fail(client, "steward_policy", updates={"stale_days": 0})
        unknown = await fail(client, "steward_policy", updates={"stale": 30})
        assert "stale" in unknown and "extra" in unknown.lower()
        kinds = await fail(client, "steward_policy", updates={"auto_apply": ["everything"]})
        assert "auto_apply" in kinds
        ordered = await fail(client, "steward_policy", updates={"near_duplicate_cosine": 0.6})
        assert "invalid_input" in ordered
        assert (await call(client, "steward_policy")) == changed  # failed calls changed nothing


async def test_text_blocks_are_short_lines_not_the_json_again(gm: GraphMemory) -> None:
    copies(gm)
    async with Client(build_server(gm)) as client:
        await call(client, "steward_policy", updates={"auto_apply": []})
        calls = [
            ("steward_run", {"dry_run": False}),
            ("steward_inbox", {}),
            ("steward_policy", {}),
            ("steward_status", {}),
            ("steward_report", {}),
            ("sweep_archive", {}),
            ("recount_references", {}),
            ("conflicts_report", {}),
            ("sediment_cycle", {}),
        ]
        for tool, arguments in calls:
            result = await client.call_tool(tool, arguments)
            text = "".join(getattr(block, "text", "") for block in result.content)
            assert not result.is_error, text
            assert not text.lstrip().startswith("{"), f"{tool}: the text is JSON again"
            assert len(text) < len(json.dumps(result.structured_content)), tool
        inbox = await client.call_tool("steward_inbox", {})
        (finding,) = (inbox.structured_content or {})["items"]
        first = inbox.content[0].text.splitlines()[0]  # type: ignore[union-attr]
        assert first.startswith(f"- pending exact_duplicate 1.00 merge {finding['id']}: ")


async def test_expired_working_memory_is_archived_with_its_evidence_in_utc(
    gm: GraphMemory,
) -> None:
    scratch = gm.remember("scratch: rerun the flaky billing test", type="working").id
    gm.steward_policy({"working_ttl_hours": 1e-6})
    time.sleep(0.01)
    async with Client(build_server(gm)) as client:
        run = await call(client, "steward_run", scope="stale", dry_run=False)
    (finding,) = [f for f in run["findings"] if f["kind"] == "expired_working"]
    assert finding["status"] == "applied" and gm.get(scratch).lifecycle == "archived"
    created = finding["evidence"]["created"]
    assert created.endswith(("Z", "+00:00")), created


async def test_a_sweep_lists_then_archives_old_chatter_and_undo_brings_it_back(
    gm: GraphMemory,
) -> None:
    chatter = old_chatter(gm)
    recent = gm.remember("ok, thanks", type="episodic", importance=0.2).id
    async with Client(build_server(gm)) as client:
        dry = await call(client, "sweep_archive")
        assert (dry["dry_run"], dry["archived"], dry["run"]) == (True, [chatter], None)
        assert lifecycle(gm, chatter) == "active"
        swept = await call(client, "sweep_archive", dry_run=False)
        assert swept["archived"] == [chatter] and swept["run"]
        assert lifecycle(gm, chatter) == "archived" and lifecycle(gm, recent) == "active"
        assert (await call(client, "sweep_archive"))["archived"] == []
        undone = await call(client, "steward_undo", id=swept["run"])
        assert undone["memories"] == [chatter] and lifecycle(gm, chatter) == "active"
        assert "dry_run" in await fail(client, "sweep_archive", dry_run="perhaps")


async def test_references_are_recounted_and_kept_on_the_memory(gm: GraphMemory) -> None:
    dead_end = gm.store_dead_end(attempted_approach="Redis MULTI across slots",
                                 why_failed="cluster mode refuses it").id  # fmt: skip
    gm.store_decision(decision="Use Lua scripts per slot", rationale="atomic", avoids=[dead_end])
    async with Client(build_server(gm)) as client:
        report = await call(client, "recount_references")
        assert report == {"memories": 2, "referenced": 1,
                          "top": [{"id": dead_end, "references": 1}]}  # fmt: skip
        assert "extra" in (await fail(client, "recount_references", limit=5)).lower()
    rows = gm.cypher("MATCH (m:Memory {id: $id}) RETURN m.reference_count", {"id": dead_end})
    assert rows.rows == [[1]]


async def test_the_conflicts_report_says_which_conflicts_wait_in_the_inbox(
    gm: GraphMemory,
) -> None:
    decision, dead_end = conflict(gm)
    async with Client(build_server(gm)) as client:
        report = await call(client, "conflicts_report")
        (proposed,) = report["conflicts"]
        assert (report["in_inbox"], proposed["status"], proposed["kind"]) == (
            0, "proposed", "decision_dead_end",
        )  # fmt: skip
        assert proposed["targets"] == [decision, dead_end]
        assert (await call(client, "steward_inbox"))["pending"] == 0  # the report files nothing

        await call(client, "steward_run", scope="conflicts", dry_run=False)
        report = await call(client, "conflicts_report", context="auth")
        (pending,) = report["conflicts"]
        (finding,) = (await call(client, "steward_inbox"))["items"]
        assert (report["in_inbox"], pending["status"], pending["id"]) == (
            1,
            "pending",
            finding["id"],
        )
        assert (await call(client, "conflicts_report", context="billing"))["conflicts"] == []
        assert (await call(client, "conflicts_report", service="web"))["conflicts"] == []
        text = await client.call_tool("conflicts_report", {})
        lines = text.content[0].text.splitlines()  # type: ignore[union-attr]
        assert lines[0] == "1 conflicts, 1 pending in the inbox"
        assert lines[1].startswith(
            f"- pending decision_dead_end 1.00 mark_outdated {finding['id']}: "
        )
        assert lines[1].endswith(f"(about {decision}, {dead_end})")
        assert "context" in await fail(client, "conflicts_report", context=7)


async def test_the_grouped_steward_tool_sweeps_recounts_and_reports_conflicts(
    gm: GraphMemory,
) -> None:
    chatter = old_chatter(gm)
    conflict(gm)
    async with Client(build_server(gm, "grouped")) as client:
        swept = await call(client, "steward", action="sweep", dry_run=False)
        assert swept["archived"] == [chatter] and lifecycle(gm, chatter) == "archived"
        assert (await call(client, "steward", action="recount"))["memories"] == 2
        report = await call(client, "steward", action="conflicts", context="auth")
        assert [c["kind"] for c in report["conflicts"]] == ["decision_dead_end"]
        undone = await call(client, "steward", action="undo", id=swept["run"])
        assert undone["memories"] == [chatter]
        assert "dry_run" in await fail(client, "steward", action="recount", dry_run=False)


async def test_a_sediment_cycle_lists_then_moves_and_undo_puts_the_layers_back(
    gm: GraphMemory,
) -> None:
    old = settling(gm)
    new = gm.remember("Postgres 16 is the target of the upgrade").id
    async with Client(build_server(gm)) as client:
        dry = await call(client, "sediment_cycle")
        assert (dry["dry_run"], dry["run"], dry["looked_at"]) == (True, None, 2)
        assert [
            (m["memory"], m["from_layer"], m["to_layer"], m["reason"]) for m in dry["moves"]
        ] == [(old, "surface", "episodic", "settled")]
        assert dry["layers"] == {"surface": 1, "episodic": 1, "semantic": 0, "character": 0}
        assert (layer(gm, old), layer(gm, new)) == (None, None)

        result = await client.call_tool("sediment_cycle", {"dry_run": False})
        moved = result.structured_content or {}
        lines = result.content[0].text.splitlines()  # type: ignore[union-attr]
        assert lines[0] == (
            f"moved 1 of 2 live memories in run {moved['run']} (surface->episodic 1; "
            "steward_undo puts them back)"
        )
        assert lines[1] == "layers: surface 1, episodic 1, semantic 0, character 0"
        assert lines[2].startswith(f"- {old} surface -> episodic (settled): The gateway")
        assert (layer(gm, old), layer(gm, new)) == ("episodic", None)
        assert (await call(client, "sediment_cycle", dry_run=False))["moves"] == []

        undone = await call(client, "steward_undo", id=moved["run"])
        assert undone["memories"] == [old] and layer(gm, old) is None
        assert "dry_run" in await fail(client, "sediment_cycle", dry_run="perhaps")
        assert "extra" in (await fail(client, "sediment_cycle", apply=True)).lower()


async def test_a_memory_is_promoted_and_demoted_by_hand_and_each_move_undone(
    gm: GraphMemory,
) -> None:
    memory = gm.remember("Incidents get a postmortem within a week").id
    async with Client(build_server(gm)) as client:
        up = await call(client, "promote_sediment", id=memory, layer="character", note="team rule")
        assert (up["from_layer"], up["to_layer"], up["reason"], up["note"]) == (
            "surface", "character", "by_hand", "team rule",
        )  # fmt: skip
        assert (await call(client, "get_memory", id=memory))["layer"] == "character"
        result = await client.call_tool("demote_sediment", {"id": memory})
        down = result.structured_content or {}
        assert (down["from_layer"], down["to_layer"], down["note"]) == (
            "character",
            "semantic",
            None,
        )
        assert result.content[0].text == (  # type: ignore[union-attr]
            f"{memory}: character -> semantic in run {down['run']} (steward_undo puts it back): "
            "Incidents get a postmortem within a week"
        )
        assert layer(gm, memory) == "semantic"

        assert "layer" in await fail(client, "promote_sediment", id=memory, layer="bedrock")
        assert "not above it" in await fail(client, "promote_sediment", id=memory, layer="surface")
        assert "not_found" in await fail(
            client, "demote_sediment", id="01NOSUCHMEMORY0000000000000"
        )
        assert "id" in await fail(client, "promote_sediment")
        assert layer(gm, memory) == "semantic"  # refused calls moved nothing

        await call(client, "steward_undo", id=down["run"])
        await call(client, "steward_undo", id=up["run"])
        assert layer(gm, memory) is None


async def test_the_grouped_steward_tool_runs_cycles_and_moves_by_hand(gm: GraphMemory) -> None:
    old = settling(gm)
    async with Client(build_server(gm, "grouped")) as client:
        cycle = await call(client, "steward", action="sediment", dry_run=False)
        assert [m["memory"] for m in cycle["moves"]] == [old] and layer(gm, old) == "episodic"
        up = await call(client, "steward", action="promote_layer", id=old, note="relied on")
        assert (up["to_layer"], layer(gm, old)) == ("semantic", "semantic")
        down = await call(client, "steward", action="demote_layer", id=old, layer="surface")
        assert (down["from_layer"], down["to_layer"]) == ("semantic", "surface")
        assert "dry_run" in await fail(client, "steward", action="promote_layer", id=old,
                                       dry_run=False)  # fmt: skip
        assert "layer" in await fail(client, "steward", action="demote_layer", id=old,
                                     layer="bedrock")  # fmt: skip
