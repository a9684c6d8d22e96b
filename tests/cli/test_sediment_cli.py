"""`graphmem sediment`: a cycle (a dry run changes nothing, --apply moves, undo restores), promote
and demote by hand, `graphmem get` showing the layer; --json parses to the models, and errors
exit with their code."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from cli_store import open_as_cli
from typer.testing import CliRunner, Result

from graphmem.cli.app import app
from graphmem.embeddings.hashing import HashEmbedder
from graphmem.models import utcnow
from graphmem.service import open_store
from graphmem.steward.models import SedimentMove, SedimentReport


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "store"


@pytest.fixture
def invoke(home: Path) -> Callable[..., Result]:
    runner = CliRunner()
    env: dict[str, str | None] = {k: None for k in os.environ if k.startswith("GRAPHMEM_")}
    env.update(
        GRAPHMEM_HOME=str(home),
        GRAPHMEM_EMBEDDING_PROVIDER="hash",
        GRAPHMEM_EXTRACT_ON_WRITE="false",
        GRAPHMEM_DAEMON_IDLE_TIMEOUT="5",  # an owner a writing command started goes away
    )
    return lambda *args: runner.invoke(app, list(args), env=env)


@pytest.fixture
def memories(home: Path) -> tuple[str, str]:
    """One memory two days old (it settles), one just stored (it stays at the surface)."""
    with open_store(home, embedder=HashEmbedder()) as gm:
        old = gm.remember("The gateway returns 502 when the pool is exhausted",
                          created_at=utcnow() - timedelta(days=2)).id  # fmt: skip
        new = gm.remember("Postgres 16 is the target of the upgrade").id
    return old, new


def as_json(result: Result) -> Any:
    assert result.exit_code == 0, result.stdout + result.stderr
    return json.loads(result.stdout)


def layer(home: Path, memory_id: str) -> str | None:
    """Read without `get`, which would count as a use."""
    with open_as_cli(home) as gm:
        rows = gm.cypher("MATCH (m:Memory {id: $id}) RETURN m.layer", {"id": memory_id}).rows
    return rows[0][0]  # type: ignore[no-any-return]


def test_a_dry_run_lists_the_moves_and_changes_nothing(
    invoke: Callable[..., Result], memories: tuple[str, str], home: Path
) -> None:
    old, new = memories
    dry = invoke("sediment", "cycle")
    assert dry.exit_code == 0, dry.stderr
    lines = dry.stdout.splitlines()
    assert lines[0] == (
        "dry run: would move 1 of 2 live memories (surface->episodic 1); --apply moves them"
    )
    assert lines[1] == "layers as they would be: surface 1, episodic 1, semantic 0, character 0"
    assert lines[2].split()[:5] == ["surface", "->", "episodic", "settled", old]
    assert "The gateway returns 502" in lines[2] and new not in dry.stdout
    assert len(lines) == 3 and "undo" not in dry.stdout
    assert (layer(home, old), layer(home, new)) == (None, None)


def test_apply_moves_says_how_to_undo_and_undo_restores(
    invoke: Callable[..., Result], memories: tuple[str, str], home: Path
) -> None:
    old, new = memories
    applied = invoke("sediment", "cycle", "--apply")
    assert applied.exit_code == 0, applied.stderr
    run = applied.stdout.split(" in run ")[1].split()[0]
    assert applied.stdout.startswith(f"moved 1 of 2 live memories in run {run} ")
    assert "layers: surface 1, episodic 1, semantic 0, character 0" in applied.stdout
    assert applied.stdout.rstrip().endswith(f"`graphmem steward undo {run}` puts them back")
    assert (layer(home, old), layer(home, new)) == ("episodic", None)
    again = invoke("sediment", "cycle", "--apply")
    assert again.stdout.startswith("nothing to move (2 live memories looked at)")
    assert "undo" not in again.stdout

    undone = invoke("steward", "undo", run)
    assert undone.exit_code == 0 and "undone 1 actions" in undone.stdout
    assert layer(home, old) is None


def test_json_output_parses_to_the_models(
    invoke: Callable[..., Result], memories: tuple[str, str]
) -> None:
    old, _ = memories
    report = SedimentReport.model_validate(as_json(invoke("sediment", "cycle", "--json")))
    assert report.dry_run and report.run is None and report.looked_at == 2
    assert [(m.memory, m.reason) for m in report.moves] == [(old, "settled")]
    applied = SedimentReport.model_validate(
        as_json(invoke("sediment", "cycle", "--apply", "--json"))
    )
    assert not applied.dry_run and applied.run and applied.counts == {"surface->episodic": 1}
    move = SedimentMove.model_validate(
        as_json(invoke("sediment", "promote", old, "--note", "team rule", "--json"))
    )
    assert (move.from_layer, move.to_layer, move.reason, move.note) == (
        "episodic", "semantic", "by_hand", "team rule",
    )  # fmt: skip
    down = SedimentMove.model_validate(as_json(invoke("sediment", "demote", old, "--json")))
    assert (down.from_layer, down.to_layer) == ("semantic", "episodic") and down.run != move.run


def test_promote_and_demote_by_hand_show_in_get_and_undo_puts_them_back(
    invoke: Callable[..., Result], memories: tuple[str, str], home: Path
) -> None:
    _, new = memories
    assert "layer surface" in invoke("get", new).stdout.splitlines()[0]
    promoted = invoke("sediment", "promote", new, "--layer", "character", "--note", "team rule")
    assert promoted.exit_code == 0, promoted.stderr
    first, second = promoted.stdout.splitlines()
    assert first.startswith(f"{new}: surface -> character (team rule)  Postgres 16")
    run = second.split()[3].rstrip("`")
    assert second == f"`graphmem steward undo {run}` puts it back"
    shown = invoke("get", new)
    assert shown.exit_code == 0 and "active  layer character  importance" in shown.stdout
    assert as_json(invoke("get", new, "--json"))["layer"] == "character"
    assert [m["layer"] for m in as_json(invoke("list", "--json"))["memories"]] == [
        "character", "surface",
    ]  # fmt: skip

    demoted = invoke("sediment", "demote", new)
    assert demoted.exit_code == 0 and demoted.stdout.startswith(f"{new}: character -> semantic")
    assert layer(home, new) == "semantic"
    assert invoke("steward", "undo", run).exit_code == 0  # the promotion: moved since, skipped
    assert layer(home, new) == "semantic"
    demotion = demoted.stdout.splitlines()[1].split()[3].rstrip("`")
    assert invoke("steward", "undo", demotion).exit_code == 0
    assert invoke("steward", "undo", run).exit_code == 0
    assert layer(home, new) is None


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (["promote", "{id}", "--layer", "bedrock"], 2, "layer must be one of surface, episodic"),
        (["demote", "{id}"], 2, "no layer below it"),
        (["promote", "{id}", "--layer", "surface"], 2, "surface is not above it"),
        (["promote", "01NOSUCHMEMORY0000000000000"], 3, "no memory with id"),
        (["demote", "01NOSUCHMEMORY0000000000000", "--layer", "surface"], 3, "no memory"),
    ],
)
def test_a_bad_layer_or_an_unknown_id_is_one_line_and_its_exit_code(
    invoke: Callable[..., Result],
    memories: tuple[str, str],
    home: Path,
    args: list[str],
    code: int,
    message: str,
) -> None:
    _, new = memories
    result = invoke("sediment", *(a.format(id=new) for a in args))
    assert result.exit_code == code, result.stdout + result.stderr
    assert result.stderr.startswith("error: ") and message in result.stderr
    assert len(result.stderr.splitlines()) == 1 and result.stdout == ""
    failed = invoke("sediment", *(a.format(id=new) for a in args), "--json")
    error = json.loads(failed.stderr)["error"]
    assert (failed.exit_code, error) == (code, {2: "invalid_input", 3: "not_found"}[code])
    assert layer(home, new) is None


@pytest.mark.parametrize("command", [["cycle"], ["promote"], ["demote"]])
def test_every_sediment_command_accepts_json_and_home(
    invoke: Callable[..., Result], command: list[str]
) -> None:
    result = invoke("sediment", *command, "--help")
    assert result.exit_code == 0, result.output
    assert "--json" in result.stdout and "--home" in result.stdout
