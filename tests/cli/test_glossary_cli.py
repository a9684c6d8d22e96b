"""`graphmem glossary check` and `apply`: what the project's glossary would change, then the
change itself with the command that undoes it; --file for another file; --json for scripts."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import Result

from tests.cli.cli_store import as_json, cli_at


@pytest.fixture
def invoke(tmp_path: Path) -> Callable[..., Result]:
    return cli_at(tmp_path / ".graphmem")  # the project root is tmp_path


@pytest.fixture
def extracted(invoke: Callable[..., Result]) -> None:
    for text in ("The api uses Postgres.", "The api uses PostgreSQL."):
        as_json(invoke("store", "-c", text, "--json"))
    invoke("index-triples")


def test_check_shows_the_changes_and_apply_makes_them(
    invoke: Callable[..., Result], extracted: None, tmp_path: Path
) -> None:
    (tmp_path / "graphmem.aliases.yaml").write_text("PostgreSQL: [Postgres, PG]\n")
    checked = as_json(invoke("glossary", "check", "--json"))
    assert checked["dry_run"] and checked["path"] == str(tmp_path / "graphmem.aliases.yaml")
    assert [(n["name"], n["merged"]) for n in checked["merged"]] == [("Postgres", "postgres")]
    shown = invoke("glossary", "check").stdout
    assert "would merge 'Postgres' -> postgresql (merging postgres)" in shown
    assert "2 changes to make" in shown
    assert {e["id"] for e in as_json(invoke("entities", "--json"))["entities"]} >= {"postgres"}

    applied = invoke("glossary", "apply")
    assert applied.exit_code == 0, applied.stdout
    assert "alias 'PG' -> postgresql" in applied.stdout
    undo = applied.stdout.strip().splitlines()[-1]
    assert undo.startswith("undo with: graphmem steward undo ")
    listed = as_json(invoke("entities", "--json"))["entities"]
    assert "postgres" not in {e["id"] for e in listed}
    again = as_json(invoke("glossary", "apply", "--json"))
    assert again["merged"] == [] and again["aliased"] == [] and len(again["unchanged"]) == 2

    invoke("steward", "undo", undo.rsplit(" ", 1)[1])
    assert "postgres" in {e["id"] for e in as_json(invoke("entities", "--json"))["entities"]}


def test_another_file_a_missing_one_and_a_bad_one(
    invoke: Callable[..., Result], tmp_path: Path
) -> None:
    missing = as_json(invoke("glossary", "check", "--json"))
    assert missing["found"] is False and missing["entries"] == 0
    assert "no glossary at" in invoke("glossary", "apply").stdout
    other = tmp_path / "names.yaml"
    other.write_text("Redis: [Valkey]\n")
    applied = as_json(invoke("glossary", "apply", "--file", str(other), "--json"))
    assert applied["path"] == str(other)
    assert [(n["entity_id"], n["audit_id"] is not None) for n in applied["created"]] == [
        ("redis", True)
    ]
    assert applied["run"] and len(applied["audit_ids"]) == 2
    other.write_text("Redis: [Valkey]\nDragonfly: [valkey]\n")
    refused = invoke("glossary", "check", "--file", str(other))
    assert refused.exit_code == 2
    assert f"{other}:2:" in refused.stdout + refused.stderr
