"""The graph commands of the `graphmem` CLI: backfill extraction with a summary, list entities and
correct their resolution (merge, alias, rename, split, each undone by `steward undo`),
multi-hop recall with paths; each with --json and one-line errors."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import Result

from tests.cli.cli_store import as_json, cli_at


@pytest.fixture
def invoke(tmp_path: Path) -> Callable[..., Result]:
    return cli_at(tmp_path / "store")


@pytest.fixture
def stored(invoke: Callable[..., Result]) -> list[str]:
    texts = [
        "The billing migration caused an index lock on the orders table.",
        "The index lock was mitigated by the rollback runbook.",
        "The api uses Postgres.",
        "The api uses PostgreSQL.",
    ]
    return [as_json(invoke("store", "-c", text, "--json"))["id"] for text in texts]


def test_index_triples_reports_what_it_did_and_then_that_nothing_is_left(
    invoke: Callable[..., Result], stored: list[str]
) -> None:
    dry = as_json(invoke("index-triples", "--dry-run", "--json"))
    assert dry["dry_run"] and dry["memories"] == 4 and dry["remaining"] == 4
    shown = invoke("index-triples", "--batch-size", "2")
    assert shown.exit_code == 0
    assert "4 memories processed" in shown.stdout and "0 memories still pending" in shown.stdout
    assert as_json(invoke("index-triples", "--json"))["memories"] == 0


def test_entities_merge_and_multihop(invoke: Callable[..., Result], stored: list[str]) -> None:
    invoke("index-triples")
    listed = as_json(invoke("entities", "postgres", "--json"))["entities"]
    assert {e["id"] for e in listed} == {"postgres", "postgresql"}
    merged = as_json(invoke("merge-entities", "postgresql", "postgres", "--json"))
    assert merged["merged"] == ["postgres"]
    text = invoke("entities", "postgres").stdout
    assert "aka postgres" in text
    result = as_json(invoke("multihop", "billing migration", "--seeds", "1", "--json"))
    assert result["hits"][0]["memory"]["id"] == stored[0]
    assert any("index lock" in h["path_text"] for h in result["hits"])
    shown = invoke("multihop", "billing migration", "--seeds", "1").stdout
    assert "-mentions-> index lock" in shown


def test_corrections_of_entities_print_how_to_undo_them(
    invoke: Callable[..., Result], stored: list[str]
) -> None:
    invoke("index-triples")
    aliased = as_json(invoke("alias-entity", "postgresql", "pg", "--json"))
    assert aliased["changed"] and aliased["aliases"] == ["pg"]
    assert "already resolves" in invoke("alias-entity", "postgresql", "pg").stdout
    shown = invoke("unalias-entity", "postgresql", "pg").stdout
    assert "no longer resolves" in shown and "graphmem steward undo" in shown
    renamed = as_json(invoke("rename-entity", "postgresql", "Postgres 16", "--json"))
    assert renamed["previous"] == "PostgreSQL" and renamed["audit_id"]
    undone = invoke("steward", "undo", renamed["audit_id"]).stdout
    assert "entities put back: postgresql" in undone
    merged = as_json(invoke("merge-entities", "postgresql", "postgres", "--json"))
    split = invoke("split-entity", "postgresql", stored[2], "--name", "Postgres").stdout
    assert "postgres (" in split and "took 1 mentions and 1 facts" in split  # its old id
    assert as_json(invoke("steward", "undo", merged["audit_id"], "--json"))["skipped"]
    conflict = invoke("rename-entity", "postgresql", "postgres")
    assert conflict.exit_code == 2 and "merge" in conflict.stderr


def test_errors_are_one_line_with_their_exit_code(invoke: Callable[..., Result]) -> None:
    missing = invoke("merge-entities", "a", "b")
    assert missing.exit_code == 3 and "no entity" in missing.stderr
    bad = invoke("multihop", "x", "--max-hops", "9")
    assert bad.exit_code == 2 and "max_hops" in bad.stderr
    assert invoke("index-triples", "--limit", "0").exit_code == 2


def test_commands_answering_from_the_graph_say_what_is_still_waiting_for_extraction(
    invoke: Callable[..., Result], stored: list[str]
) -> None:
    assert as_json(invoke("stats", "--json"))["backlog"] == {"extraction": 4, "chunks": 0}
    assert as_json(invoke("entities", "--json"))["pending"] == 4
    assert "4 memories are not extracted yet" in invoke("entities").stdout
    warnings = as_json(invoke("multihop", "what caused the index lock", "--json"))["warnings"]
    assert [w["kind"] for w in warnings] == ["backlog"]
    assert "index-triples" in warnings[0]["message"]
    doctor = {c["check"]: c for c in as_json(invoke("doctor", "--json"))["checks"]}
    assert doctor["backlog"]["ok"] and "no owner process" in doctor["backlog"]["detail"]

    as_json(invoke("index-triples", "--json"))
    assert as_json(invoke("stats", "--json"))["backlog"] == {"extraction": 0, "chunks": 0}
    assert as_json(invoke("entities", "--json"))["pending"] == 0
    assert as_json(invoke("multihop", "what caused the index lock", "--json"))["warnings"] == []


def test_doctor_fails_a_backlog_the_owner_does_not_work_through() -> None:
    from graphmem.cli.admin import _backlog_check

    waiting = {"extraction": 40, "chunks": 2}
    assert _backlog_check(waiting, {"extraction": 30, "chunks": 2}, owner=True)[0]
    stuck, detail = _backlog_check(waiting, dict(waiting), owner=True)
    assert not stuck and "none was done" in detail
    assert _backlog_check({"extraction": 0, "chunks": 0}, None, owner=True)[0]
