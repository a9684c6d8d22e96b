"""The `graphmem` command line: the real CLI in a subprocess where exit codes, stderr and tracebacks
matter, typer's CliRunner in-process where that is enough. The hash embedder keeps both fast."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from cli_store import open_as_cli
from typer.testing import CliRunner, Result

from graphmem.api import MemoryAPI
from graphmem.cli.app import app
from graphmem.cli.serve import DEMO_CONTEXT, DEMO_MEMORIES, DEMO_QUERIES
from graphmem.embeddings.base import EmbeddingSpace
from graphmem.embeddings.hashing import HashEmbedder
from graphmem.models import Memory
from graphmem.service import open_store

COMMANDS = [
    ["store"],
    ["recall"],
    ["get"],
    ["list"],
    ["update"],
    ["delete"],
    ["stats"],
    ["export"],
    ["import"],
    ["reembed"],
    ["cypher"],
    ["db", "status"],
    ["db", "migrate"],
    ["doctor"],
    ["demo"],
    ["serve"],
]


def run(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    """The real CLI, as a user runs it."""
    return subprocess.run(
        [sys.executable, "-m", "graphmem", *args],
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
    )


def assert_clean_failure(proc: subprocess.CompletedProcess[str], code: int, *words: str) -> None:
    assert proc.returncode == code, proc.stderr
    assert "Traceback" not in proc.stderr + proc.stdout
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    for word in words:
        assert word in lines[0]


@pytest.fixture
def home(cli_env: dict[str, str]) -> Path:
    return Path(cli_env["GRAPHMEM_HOME"])


@pytest.fixture
def seed(home: Path) -> Callable[[list[dict[str, Any]]], list[Memory]]:
    """Store memories in the CLI's data dir through the library (closed before the CLI runs)."""

    def _seed(items: list[dict[str, Any]]) -> list[Memory]:
        gm = open_store(home, embedder=HashEmbedder())
        try:
            return gm.remember_many(items)
        finally:
            gm.close()

    return _seed


@pytest.fixture
def invoke(cli_env: dict[str, str]) -> Callable[..., Result]:
    """typer's CliRunner against the app, with the CLI environment's GRAPHMEM_* values."""
    runner = CliRunner()
    env: dict[str, str | None] = {k: None for k in os.environ if k.startswith("GRAPHMEM_")}
    env.update({k: v for k, v in cli_env.items() if k.startswith("GRAPHMEM_")})

    def _invoke(*args: str) -> Result:
        return runner.invoke(app, list(args), env=env)

    return _invoke


def library(home: Path) -> MemoryAPI:
    return open_as_cli(home)


# -- subprocess: what a user at a shell sees ----------------------------------------------------


def test_store_json_prints_the_stored_memory_with_its_id(
    cli_env: dict[str, str], home: Path
) -> None:
    proc = run(
        cli_env, "store", "-c", "Migration #47 broke the index", "--tags", "postgres,migration",
        "--metadata", '{"pr": 47}', "--kind", "incident", "--json",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    shown = json.loads(proc.stdout)
    assert shown["id"]
    assert shown["content"] == "Migration #47 broke the index"
    assert shown["metadata"] == {"pr": 47}
    assert shown["tags"] == ["postgres", "migration"]
    gm = library(home)
    try:
        assert gm.get(shown["id"]).kind == "incident"
    finally:
        gm.close()


def test_recall_json_has_hits_with_memory_and_score(cli_env: dict[str, str], seed: Any) -> None:
    target, _ = seed(
        [
            {"content": "The gateway returns 502 when the pod is OOM-killed", "metadata": {"a": 1}},
            {"content": "Deploys go through ArgoCD"},
        ]
    )
    proc = run(cli_env, "recall", "502", "--json", "--explain", "--limit", "5")
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    top = result["hits"][0]
    assert top["memory"]["id"] == target.id
    assert top["memory"]["content"] == target.content
    assert top["memory"]["metadata"] == {"a": 1}
    assert isinstance(top["score"], float)
    assert "keyword" in top["explain"]["found_by"]
    assert result["embedding_space"] == "hash:hash-v1/384"


def test_cypher_write_without_write_flag_exits_2_with_one_line_and_no_traceback(
    cli_env: dict[str, str], home: Path, seed: Any
) -> None:
    seed([{"content": "already here"}])
    proc = run(cli_env, "cypher", "CREATE (:Memory {id: 'sneaky', content: 'x'})")
    assert_clean_failure(proc, 2, "--write")
    gm = library(home)
    try:
        assert gm.stats().total == 1
    finally:
        gm.close()


def test_get_unknown_id_exits_3_without_traceback(cli_env: dict[str, str]) -> None:
    proc = run(cli_env, "get", "01NOSUCHMEMORY0000000000000")
    assert_clean_failure(proc, 3, "01NOSUCHMEMORY0000000000000")


def test_export_then_import_via_cli_round_trips(
    cli_env: dict[str, str], seed: Any, tmp_path: Path
) -> None:
    originals = seed(
        [
            {"content": "first", "created_at": "2022-05-25T15:30:00", "metadata": {"k": [1]}},
            {"content": "second, with ünïcode", "tags": ["x", "y"], "importance": 0.9},
        ]
    )
    dump = tmp_path / "dump.jsonl"
    exported = run(cli_env, "export", str(dump), "--json")
    assert exported.returncode == 0, exported.stderr
    assert json.loads(exported.stdout)["exported"] == 2
    first_line = json.loads(dump.read_text(encoding="utf-8").splitlines()[0])
    assert first_line["created_at"] == "2022-05-25T15:30:00Z"  # given without an offset: UTC

    other = dict(cli_env, GRAPHMEM_HOME=str(tmp_path / "imported"))
    imported = run(other, "import", str(dump), "--json")
    assert imported.returncode == 0, imported.stderr
    report = json.loads(imported.stdout)
    assert (report["imported"], report["skipped"], report["errors"]) == (2, 0, [])

    gm = library(tmp_path / "imported")
    try:
        assert [gm.get(m.id) for m in originals] == originals
    finally:
        gm.close()


def test_demo_runs_and_shows_recall_for_each_of_its_queries(cli_env: dict[str, str]) -> None:
    proc = run(cli_env, "demo")
    assert proc.returncode == 0, proc.stderr
    assert cli_env["GRAPHMEM_HOME"] in proc.stdout
    for query in DEMO_QUERIES:
        assert f"recall {query!r}" in proc.stdout
    assert "ArgoCD" in proc.stdout
    assert "Migration #47" in proc.stdout


# -- CliRunner: in-process is enough --------------------------------------------------------


def test_stats_json_has_an_integer_total(invoke: Any, seed: Any) -> None:
    seed([{"content": "one"}, {"content": "two", "type": "semantic"}])
    result = invoke("stats", "--json")
    assert result.exit_code == 0, result.stderr
    stats = json.loads(result.stdout)
    assert stats["total"] == 2
    assert isinstance(stats["total"], int)
    assert stats["by_type"] == {"episodic": 1, "semantic": 1}
    assert stats["missing_vectors"] == 0


def test_store_again_with_the_same_idempotency_key_stores_nothing(invoke: Any) -> None:
    args = ("store", "-c", "Deploys go through ArgoCD", "--idempotency-key", "deploy-1")
    first = invoke(*args, "--json")
    again = invoke(*args)

    assert first.exit_code == 0, first.output
    memory = json.loads(first.stdout)
    assert memory["deduplicated"] is False
    assert memory["created_at"].endswith("Z")
    assert again.exit_code == 0 and again.stdout.strip() == f"already stored {memory['id']}"
    assert json.loads(invoke("stats", "--json").stdout)["total"] == 1
    other = invoke("store", "-c", "something else", "--idempotency-key", "deploy-1")
    assert other.exit_code == 2 and "idempotency key" in other.stderr


def test_store_with_importance_out_of_range_exits_2(invoke: Any, home: Path) -> None:
    result = invoke("store", "-c", "too important", "--importance", "7")
    assert result.exit_code == 2
    assert "importance" in result.stderr
    assert result.stdout == ""


def test_store_with_metadata_that_is_not_json_exits_2(invoke: Any) -> None:
    result = invoke("store", "-c", "x", "--metadata", "{bad")
    assert result.exit_code == 2
    assert "--metadata" in result.stderr
    assert "not valid JSON" in result.stderr


def test_store_without_content_exits_2_and_says_how(invoke: Any) -> None:
    result = invoke("store")
    assert result.exit_code == 2
    assert "--content" in result.stderr


def test_errors_in_json_mode_are_one_json_object_on_stderr(invoke: Any) -> None:
    result = invoke("get", "01NOSUCHMEMORY0000000000000", "--json")
    assert result.exit_code == 3
    error = json.loads(result.stderr)
    assert error["error"] == "not_found"
    assert error["id"] == "01NOSUCHMEMORY0000000000000"


def test_db_status_json_shows_applied_and_pending(invoke: Any) -> None:
    result = invoke("db", "status", "--json")
    assert result.exit_code == 0, result.stderr
    status = json.loads(result.stdout)
    assert status["applied"][0]["version"] == 1
    assert status["pending"] == []
    assert status["schema_version"] == status["latest_version"]


def test_db_migrate_json_reports_up_to_date(invoke: Any) -> None:
    result = invoke("db", "migrate", "--json")
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["pending"] == 0


def test_doctor_json_is_ok_on_a_healthy_store(invoke: Any, seed: Any) -> None:
    seed([{"content": "something"}])
    result = invoke("doctor", "--json")
    assert result.exit_code == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["ok"] is True
    checks = {c["check"]: c for c in report["checks"]}
    assert checks["store opens"]["ok"]
    assert "1 memories" in checks["store opens"]["detail"]


def test_doctor_tells_a_float32_store_how_to_move_to_int8(home: Path) -> None:
    with open_store(home, **{"embedding.model": "all-MiniLM-L6-v2"}) as gm:
        gm.store.vectors.ensure_space(EmbeddingSpace("local", "all-MiniLM-L6-v2", 384))
    env: dict[str, str | None] = {k: None for k in os.environ if k.startswith("GRAPHMEM_")}
    env["GRAPHMEM_HOME"] = str(home)  # the local provider, no model set
    result = CliRunner().invoke(app, ["doctor", "--json"], env=env)
    assert result.exit_code == 0, result.stderr
    space = {c["check"]: c for c in json.loads(result.stdout)["checks"]}["embedding space"]
    assert space["detail"].startswith("local:all-MiniLM-L6-v2/384: 0 vectors, 0 missing")
    assert "GRAPHMEM_EMBEDDING_MODEL=all-MiniLM-L6-v2-int8 graphmem reembed" in space["detail"]


def test_list_json_pages_with_the_cursor_it_prints(invoke: Any, seed: Any) -> None:
    stored = seed([{"content": f"memory {i}"} for i in range(5)])
    first = json.loads(invoke("list", "--limit", "3", "--json").stdout)
    second = json.loads(
        invoke("list", "--limit", "3", "--cursor", first["next_cursor"], "--json").stdout
    )
    listed = [m["id"] for m in first["memories"] + second["memories"]]
    assert listed == [m.id for m in reversed(stored)]
    assert second["next_cursor"] is None


def test_update_and_delete_via_cli(invoke: Any, seed: Any, home: Path) -> None:
    (memory,) = seed([{"content": "the old words"}])
    updated = invoke("update", memory.id, "-c", "the new words", "--importance", "0.9", "--json")
    assert updated.exit_code == 0, updated.stderr
    assert json.loads(updated.stdout)["content"] == "the new words"
    deleted = invoke("delete", memory.id, "--json")
    assert json.loads(deleted.stdout) == {"deleted": memory.id}
    assert invoke("get", memory.id).exit_code == 3


def test_cypher_json_reads_rows(invoke: Any, seed: Any) -> None:
    seed([{"content": "a"}, {"content": "b"}])
    result = invoke("cypher", "MATCH (m:Memory) RETURN count(*) AS n", "--json")
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout) == {"columns": ["n"], "rows": [[2]]}


def test_cypher_with_params_that_are_not_json_exits_2(invoke: Any) -> None:
    result = invoke("cypher", "RETURN $x", "--params", "{bad")
    assert result.exit_code == 2
    assert "--params" in result.stderr


def test_import_of_a_missing_file_exits_2(invoke: Any, tmp_path: Path) -> None:
    result = invoke("import", str(tmp_path / "nope.jsonl"))
    assert result.exit_code == 2
    assert "nope.jsonl" in result.stderr


def test_import_reports_bad_lines_and_stop_on_error_exits_2(invoke: Any, tmp_path: Path) -> None:
    dump = tmp_path / "mixed.jsonl"
    dump.write_text('{"content": "good"}\n{oops\n{"content": "also good"}\n', encoding="utf-8")
    going_on = invoke("import", str(dump), "--json")
    assert going_on.exit_code == 0, going_on.stderr
    report = json.loads(going_on.stdout)
    assert report["imported"] == 2
    assert [e["line"] for e in report["errors"]] == [2]

    stopping = invoke("import", str(dump), "--stop-on-error")
    assert stopping.exit_code == 2
    assert "line 2" in stopping.stderr


def test_reembed_json_reports_the_space(invoke: Any, seed: Any) -> None:
    seed([{"content": "x"}, {"content": "y"}])
    result = invoke("reembed", "--json")
    assert result.exit_code == 0, result.stderr
    report = json.loads(result.stdout)
    assert (report["space"], report["embedded"], report["total"]) == ("hash:hash-v1/384", 0, 2)


def test_demo_json_has_results_for_each_of_its_queries(invoke: Any, home: Path) -> None:
    result = invoke("demo", "--json")
    assert result.exit_code == 0, result.stderr
    demo = json.loads(result.stdout)
    assert demo["store"] == str(home)
    assert [r["query"] for r in demo["results"]] == DEMO_QUERIES
    for answer in demo["results"]:
        assert answer["hits"], answer["query"]
        assert all(hit["explain"]["found_by"] for hit in answer["hits"])
    tops = {r["query"]: r["hits"][0]["memory"]["content"] for r in demo["results"]}
    assert "#47" in tops["#47"]
    assert "502" in tops["502 errors"]


def test_demo_stores_its_memories_only_once(invoke: Any, home: Path) -> None:
    assert invoke("demo").exit_code == 0
    assert invoke("demo").exit_code == 0
    gm = library(home)
    try:
        assert gm.stats().total == len(DEMO_MEMORIES)
        assert gm.stats().by_context == {DEMO_CONTEXT: len(DEMO_MEMORIES)}
    finally:
        gm.close()


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: " ".join(c))
def test_every_command_accepts_json(invoke: Any, command: list[str]) -> None:
    result = invoke(*command, "--help")
    assert result.exit_code == 0, result.output
    assert "--json" in result.stdout
