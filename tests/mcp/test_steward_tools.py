"""The steward's MCP tools: a run files what it finds, the inbox lists it, resolving applies it,
undo puts it back; the same through the grouped `steward` tool; text blocks are short lines, not
the JSON again; the policy's schema holds updates to its fields."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from mcp import Client
from tool_calls import call, fail

from graphmem.embeddings.hashing import HashEmbedder
from graphmem.mcp.server import build_server
from graphmem.service import GraphMemory, open_store

pytestmark = pytest.mark.anyio

COPY = "Deploys go through ArgoCD; never kubectl apply to production by hand."


@pytest.fixture
def gm(tmp_path: Path) -> Iterator[GraphMemory]:
    with open_store(tmp_path / ".graphmem", embedder=HashEmbedder()) as store:
        yield store


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
