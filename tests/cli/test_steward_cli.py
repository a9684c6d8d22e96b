"""`graphmem steward`: run (dry, then filing), the inbox, resolve, the policy, status, report,
undo, sweep, recount and conflicts; each with --json, and errors as one line with their exit
code."""

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
from graphmem.cli.steward import parse_assignments
from graphmem.embeddings.hashing import HashEmbedder
from graphmem.errors import InvalidInput
from graphmem.models import utcnow
from graphmem.service import open_store

COPY = "Deploys go through ArgoCD; never [bold]kubectl apply[/bold] to production by hand."


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
def copies(home: Path) -> tuple[str, str]:
    """Two memories that say the same but for case and punctuation (markup-like text in them)."""
    with open_store(home, embedder=HashEmbedder()) as gm:
        kept = gm.remember(COPY, importance=0.8).id
        copy = gm.remember(COPY.lower().rstrip("."), importance=0.4).id
    return kept, copy


def as_json(result: Result) -> Any:
    assert result.exit_code == 0, result.stdout + result.stderr
    return json.loads(result.stdout)


def lifecycle(home: Path, memory_id: str) -> str:
    """Read without `get`, which would count as a use (and a used memory is never swept)."""
    with open_as_cli(home) as gm:
        rows = gm.cypher("MATCH (m:Memory {id: $id}) RETURN m.lifecycle", {"id": memory_id}).rows
    return str(rows[0][0])


def test_run_files_findings_and_the_inbox_resolves_them(
    invoke: Callable[..., Result], copies: tuple[str, str], home: Path
) -> None:
    kept, copy = copies
    assert invoke("steward", "policy", "set", "auto_apply=[]").exit_code == 0
    dry = invoke("steward", "run", "--scope", "duplicates")
    assert dry.exit_code == 0, dry.stderr
    assert "dry run" in dry.stdout and "found: exact_duplicate 1" in dry.stdout
    assert "[bold]kubectl apply[/bold]" in dry.stdout  # user text shown as it is, not as markup
    assert as_json(invoke("steward", "inbox", "--json"))["pending"] == 0

    run = as_json(invoke("steward", "run", "--scope", "duplicates", "--apply", "--json"))
    (finding,) = run["findings"]
    assert (run["dry_run"], run["filed"], finding["targets"]) == (False, 1, [kept, copy])
    shown = invoke("steward", "inbox")
    assert shown.exit_code == 0
    assert "pending   exact_duplicate     1.00 merge" in shown.stdout
    assert finding["id"] in shown.stdout and "1 pending in all: exact_duplicate 1" in shown.stdout
    page = as_json(invoke("steward", "inbox", "--status", "all", "--kind", "exact_duplicate",
                          "--limit", "5", "--sort", "newest", "--json"))  # fmt: skip
    assert [f["id"] for f in page["items"]] == [finding["id"]]

    applied = invoke("steward", "resolve", finding["id"], "apply", "--note", "the same fact")
    assert applied.exit_code == 0 and applied.stdout.startswith(f"applied {finding['id']}")
    assert lifecycle(home, copy) == "archived"
    listed = as_json(invoke("steward", "inbox", "--status", "applied", "--json"))["items"]
    assert [(f["id"], f["note"], f["resolved_by"]) for f in listed] == [
        (finding["id"], "the same fact", "cli")
    ]

    undone = as_json(invoke("steward", "undo", run["id"], "--json"))
    assert undone["findings"] == [finding["id"]] and lifecycle(home, copy) == "active"
    again = invoke("steward", "undo", run["id"])
    assert again.exit_code == 0 and "undone 0 actions" in again.stdout
    assert "already undone" in again.stdout

    dismissed = as_json(invoke("steward", "resolve", finding["id"], "dismiss", "--json"))
    assert dismissed["status"] == "dismissed"


def test_policy_status_and_report(invoke: Callable[..., Result], copies: tuple[str, str]) -> None:
    shown = invoke("steward", "policy")
    assert shown.exit_code == 0
    assert 'auto_apply               ["exact_duplicate", "expired_working"]' in shown.stdout
    changed = as_json(invoke("steward", "policy", "set", "stale_days=90",
                             'auto_apply=["exact_duplicate"]', "--json"))  # fmt: skip
    assert (changed["stale_days"], changed["auto_apply"]) == (90, ["exact_duplicate"])
    assert as_json(invoke("steward", "policy", "--json")) == changed

    status = invoke("steward", "status")
    assert status.exit_code == 0 and "the steward has not run yet" in status.stdout
    run = as_json(invoke("steward", "run", "--apply", "--json"))  # exact duplicates apply
    assert run["applied"] >= 1 and run["findings"][0]["auto"] is True
    status = as_json(invoke("steward", "status", "--json"))
    assert status["last_run"]["id"] == run["id"] and status["last_run"]["findings"] == []
    assert "applies on its own: exact_duplicate" in invoke("steward", "status").stdout

    newest = as_json(invoke("steward", "report", "--json"))
    assert newest == as_json(invoke("steward", "report", run["id"], "--json"))
    text = invoke("steward", "report").stdout
    assert f"run {run['id']} (scope all)" in text and "applied   exact_duplicate" in text


@pytest.mark.parametrize(
    ("args", "code", "words"),
    [
        (("run", "--scope", "everything"), 2, "scope must be one of"),
        (("inbox", "--status", "open"), 2, "status must be one of"),
        (("inbox", "--kind", "copies"), 2, "kind must be one of"),
        (("inbox", "--limit", "0"), 2, "limit"),
        (("resolve", "no-such-finding", "apply"), 3, "no finding"),
        (("resolve", "no-such-finding", "merge"), 2, "apply or dismiss"),
        (("policy", "set", "stale_days"), 2, "KEY=VALUE"),
        (("policy", "set", "stale=30"), 2, "unknown policy fields"),
        (("report", "no-such-run"), 3, "no steward run"),
        (("undo", "no-such-run"), 3, "no steward run or action"),
    ],
)
def test_errors_are_one_line_with_their_exit_code(
    invoke: Callable[..., Result], args: tuple[str, ...], code: int, words: str
) -> None:
    failed = invoke("steward", *args)
    assert failed.exit_code == code, failed.stdout + failed.stderr
    assert len(failed.stderr.strip().splitlines()) == 1 and words in failed.stderr
    in_json = invoke("steward", *args, "--json")
    assert in_json.exit_code == code and json.loads(in_json.stderr)["message"]


def test_report_before_any_run_says_so(invoke: Callable[..., Result]) -> None:
    failed = invoke("steward", "report")
    assert failed.exit_code == 3 and "has not run yet" in failed.stderr


def test_assignments_are_json_when_they_parse_and_strings_otherwise() -> None:
    assert parse_assignments(["stale_days=90", "auto_apply=[]", "x=a=b", "y=", "z=exact"]) == {
        "stale_days": 90, "auto_apply": [], "x": "a=b", "y": "", "z": "exact",
    }  # fmt: skip
    with pytest.raises(InvalidInput):
        parse_assignments(["=3"])


@pytest.mark.parametrize(
    "command",
    [["run"], ["inbox"], ["resolve"], ["policy"], ["policy", "set"], ["status"], ["report"],
     ["undo"], ["sweep"], ["recount"], ["conflicts"]],
)  # fmt: skip
def test_every_steward_command_accepts_json_and_home(
    invoke: Callable[..., Result], command: list[str]
) -> None:
    result = invoke("steward", *command, "--help")
    assert result.exit_code == 0, result.output
    assert "--json" in result.stdout and "--home" in result.stdout


def test_a_sweep_lists_old_chatter_then_archives_it_and_undo_restores_it(
    invoke: Callable[..., Result], home: Path
) -> None:
    long_ago = utcnow() - timedelta(days=400)
    with open_store(home, embedder=HashEmbedder()) as gm:
        chatter = gm.remember("ok, sounds good", type="episodic", importance=0.2,
                              created_at=long_ago).id  # fmt: skip
        decision = gm.remember("we chose Postgres", kind="decision", type="episodic",
                               importance=0.2, created_at=long_ago).id  # fmt: skip
        recent = gm.remember("ok, thanks", type="episodic", importance=0.2).id

    dry = invoke("steward", "sweep")
    assert dry.exit_code == 0, dry.stderr
    assert "dry run: would archive 1 memories" in dry.stdout and chatter in dry.stdout
    assert "older than 365 days, importance at most 0.3" in dry.stdout
    assert decision not in dry.stdout and recent not in dry.stdout
    assert lifecycle(home, chatter) == "active"  # listed, not archived

    swept = as_json(invoke("steward", "sweep", "--apply", "--json"))
    assert (swept["dry_run"], swept["archived"]) == (False, [chatter]) and swept["run"]
    assert lifecycle(home, chatter) == "archived" and lifecycle(home, decision) == "active"
    assert "nothing to sweep" in invoke("steward", "sweep").stdout

    undone = invoke("steward", "undo", swept["run"])
    assert undone.exit_code == 0 and "undone 1 actions" in undone.stdout
    assert lifecycle(home, chatter) == "active"


def test_a_sweep_with_apply_says_how_to_undo_it(invoke: Callable[..., Result], home: Path) -> None:
    with open_store(home, embedder=HashEmbedder()) as gm:
        chatter = gm.remember("ok", type="working", importance=0.1,
                              created_at=utcnow() - timedelta(days=400)).id  # fmt: skip
    swept = invoke("steward", "sweep", "--apply")
    assert swept.exit_code == 0, swept.stderr
    assert "archived 1 memories in run " in swept.stdout and chatter in swept.stdout
    assert "graphmem steward undo " in swept.stdout


def test_recount_reports_what_points_at_each_memory(
    invoke: Callable[..., Result], home: Path
) -> None:
    with open_store(home, embedder=HashEmbedder()) as gm:
        dead_end = gm.store_dead_end(attempted_approach="Redis MULTI across slots",
                                     why_failed="cluster mode refuses it").id  # fmt: skip
        gm.store_decision(decision="Use Lua scripts per slot", rationale="atomic",
                          avoids=[dead_end])  # fmt: skip

    shown = invoke("steward", "recount")
    assert shown.exit_code == 0, shown.stderr
    assert "recounted 2 live memories: 1 referenced" in shown.stdout
    assert f"  {dead_end}  1" in shown.stdout
    report = as_json(invoke("steward", "recount", "--json"))
    assert (report["memories"], report["top"]) == (2, [{"id": dead_end, "references": 1}])
    with open_as_cli(home) as gm:
        rows = gm.cypher("MATCH (m:Memory {id: $id}) RETURN m.reference_count", {"id": dead_end})
    assert rows.rows == [[1]]


def test_conflicts_lists_a_planted_conflict_and_whether_it_waits_in_the_inbox(
    invoke: Callable[..., Result], home: Path
) -> None:
    text = "Cache user sessions in Redis cluster mode across slots"
    with open_store(home, embedder=HashEmbedder()) as gm:
        decision = gm.remember(text, kind="decision", context="auth").id
        dead_end = gm.remember(text + ".", kind="dead_end", context="auth").id

    assert invoke("steward", "conflicts", "--context", "billing").stdout == "no conflicts\n"
    shown = invoke("steward", "conflicts")
    assert shown.exit_code == 0, shown.stderr
    assert "1 conflicts, 0 pending in the inbox" in shown.stdout
    assert "proposed  decision_dead_end" in shown.stdout
    assert f"about: {decision}, {dead_end}" in shown.stdout
    assert "--scope conflicts --apply" in shown.stdout
    assert as_json(invoke("steward", "inbox", "--json"))["pending"] == 0  # it filed nothing

    assert invoke("steward", "run", "--scope", "conflicts", "--apply").exit_code == 0
    report = as_json(invoke("steward", "conflicts", "--context", "auth", "--json"))
    (conflict,) = report["conflicts"]
    assert report["in_inbox"] == 1 and conflict["targets"] == [decision, dead_end]
    (finding,) = as_json(invoke("steward", "inbox", "--json"))["items"]
    assert (conflict["status"], conflict["id"]) == ("pending", finding["id"])
    assert finding["id"] in invoke("steward", "conflicts").stdout
    elsewhere = as_json(invoke("steward", "conflicts", "--context", "billing", "--json"))
    assert elsewhere == {"conflicts": [], "in_inbox": 0}
    assert as_json(invoke("steward", "conflicts", "--service", "web", "--json"))["conflicts"] == []
