"""The knowledge commands of the `graphmem` CLI: records, lifecycle, canonical knowledge, context,
bank views, timelines, as-of recall, citations, verification and drift. The store lives in
`<project>/.graphmem`, so cited paths are relative to `<project>`. A few runs go through a real
subprocess (exit codes, one-line errors); the rest use typer's CliRunner."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from cli_store import open_as_cli
from typer.testing import CliRunner, Result

from graphmem.api import MemoryAPI
from graphmem.cli.app import app

NEW_COMMANDS = [
    ["outdated"], ["merge"], ["decision"], ["dead-end"], ["incident"], ["runbook"],
    ["postmortem"], ["runbooks"], ["incidents"], ["canonical", "promote"], ["canonical", "list"],
    ["canonical", "recall"], ["context"], ["bank"], ["timeline"], ["cite"], ["verify"],
    ["verify-candidates"], ["drift"],
]  # fmt: skip


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    return root


@pytest.fixture
def home(project: Path) -> Path:
    return project / ".graphmem"


@pytest.fixture
def env(home: Path) -> dict[str, str]:
    """A clean environment for the CLI: its own store, the hash embedder."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith("GRAPHMEM_")}
    clean["GRAPHMEM_HOME"] = str(home)
    clean["GRAPHMEM_EMBEDDING_PROVIDER"] = "hash"
    clean["GRAPHMEM_DAEMON_IDLE_TIMEOUT"] = "5"
    return clean


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


@pytest.fixture
def invoke(env: dict[str, str]) -> Callable[..., Result]:
    runner = CliRunner()
    overrides: dict[str, str | None] = {k: None for k in os.environ if k.startswith("GRAPHMEM_")}
    overrides.update({k: v for k, v in env.items() if k.startswith("GRAPHMEM_")})

    def _invoke(*args: str) -> Result:
        return runner.invoke(app, list(args), env=overrides)

    return _invoke


def as_memory(shown: dict[str, Any]) -> dict[str, Any]:
    """A store command's memory as `get` shows it: without `deduplicated`."""
    assert shown.get("deduplicated") is False
    return {k: v for k, v in shown.items() if k != "deduplicated"}


def stored(result: Result | subprocess.CompletedProcess[str]) -> dict[str, Any]:
    """The JSON a successful `--json` command printed."""
    code = result.exit_code if isinstance(result, Result) else result.returncode
    assert code == 0, result.stderr
    shown: dict[str, Any] = json.loads(result.stdout)
    return shown


def one_line_error(result: Result, code: int, *words: str) -> str:
    assert result.exit_code == code, (result.stdout, result.stderr)
    assert "Traceback" not in result.stdout + result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    for word in words:
        assert word in lines[0]
    return lines[0]


def library(home: Path) -> MemoryAPI:
    return open_as_cli(home)


def total(home: Path) -> int:
    gm = library(home)
    try:
        return gm.stats().total
    finally:
        gm.close()


def now_iso() -> str:
    return datetime.now(UTC).replace(tzinfo=None).isoformat()


# -- subprocess: what a user at a shell sees ----------------------------------------------------


def test_a_superseded_decision_reads_oldest_first_in_the_timeline_with_date_and_reason(
    env: dict[str, str],
) -> None:
    old = stored(run(env, "decision", "--decision", "Sessions live in Redis",
                     "--rationale", "fast lookups", "--json"))  # fmt: skip
    new = stored(run(env, "decision", "--decision", "Sessions live in Postgres",
                     "--rationale", "Redis evicted sessions", "--json"))  # fmt: skip

    retired = run(env, "outdated", old["id"], "--superseded-by", new["id"],
                  "--reason", "Redis evicted sessions under load")  # fmt: skip
    assert retired.returncode == 0, retired.stderr
    assert f"{old['id']} is now superseded (superseded by {new['id']})" in retired.stdout

    shown = run(env, "timeline", "--id", new["id"])
    assert shown.returncode == 0, shown.stderr
    first, second = shown.stdout.strip().splitlines()
    today = datetime.now(UTC).strftime("%Y-%m-%d")
    assert first.startswith(today)
    assert old["id"] in first
    assert f"-> superseded {today} by {new['id']}: Redis evicted sessions under load" in first
    assert new["id"] in second
    assert "current" in second


def test_drift_exits_0_and_names_a_changed_then_a_deleted_source(
    env: dict[str, str], project: Path
) -> None:
    doc = project / "docs" / "deploy.md"
    doc.parent.mkdir()
    doc.write_text("Deploy with ArgoCD.\n", encoding="utf-8")
    runbook = stored(run(env, "runbook", "--trigger", "deploy to production", "--step",
                         "sync the app in ArgoCD", "--cites", "./docs/deploy.md", "--json"))  # fmt: skip

    clean = run(env, "drift")
    assert clean.returncode == 0, clean.stderr
    assert "no drift: 1 citations checked" in clean.stdout

    doc.write_text("Deploy with kubectl.\n", encoding="utf-8")
    changed = run(env, "drift")
    assert changed.returncode == 0, changed.stderr
    assert f"changed  docs/deploy.md  cited by {runbook['id']}" in changed.stdout
    assert "drift: 1 of 1 citations changed or missing" in changed.stdout

    doc.unlink()
    report = stored(run(env, "drift", "--json"))
    assert report["checked"] == 1
    assert [(i["memory_id"], i["path"], i["status"]) for i in report["items"]] == [
        (runbook["id"], "docs/deploy.md", "source_missing")
    ]


def test_knowledge_commands_work_the_same_through_the_owner_process(
    env: dict[str, str], project: Path
) -> None:
    (project / "notes.md").write_text("sessions: postgres\n", encoding="utf-8")
    started = run(env, "daemon", "start")
    assert started.returncode == 0, started.stderr
    try:
        fact = stored(run(env, "decision", "--decision", "Sessions live in Postgres",
                          "--rationale", "durable", "--json"))  # fmt: skip
        assert run(env, "cite", fact["id"], "notes.md").returncode == 0
        (project / "notes.md").write_text("sessions: redis\n", encoding="utf-8")

        report = stored(run(env, "drift", "--json"))
        timeline = stored(run(env, "timeline", "--id", fact["id"], "--json"))
        context = stored(run(env, "context", "--json"))
    finally:
        run(env, "daemon", "stop")

    assert [i["status"] for i in report["items"]] == ["source_changed"]
    assert [e["memory"]["id"] for e in timeline["entries"]] == [fact["id"]]
    assert [m["id"] for m in context["recent"]] == [fact["id"]]


def test_outdated_of_an_unknown_id_exits_3_with_one_line(env: dict[str, str]) -> None:
    proc = run(env, "outdated", "01NOSUCHMEMORY0000000000000", "--reason", "gone")

    assert proc.returncode == 3, proc.stderr
    assert "Traceback" not in proc.stderr + proc.stdout
    (line,) = proc.stderr.strip().splitlines()
    assert line.startswith("error: ")
    assert "01NOSUCHMEMORY0000000000000" in line


# -- CliRunner: records ----------------------------------------------------------------------------


def test_each_record_command_stores_a_memory_of_its_kind(invoke: Any, home: Path) -> None:
    dead_end = stored(invoke("dead-end", "--attempted", "yarn pnp", "--why-failed",
                             "tooling broke", "--alternative", "pnpm", "--tags", "js,deps",
                             "--json"))  # fmt: skip
    decision = stored(invoke("decision", "--decision", "Use pnpm", "--rationale", "disk space",
                             "--consequences", "new lockfile", "--status", "accepted",
                             "--avoids", dead_end["id"], "--title", "pnpm", "--context", "web",
                             "--service", "frontend", "--importance", "0.9", "--json"))  # fmt: skip
    incident = stored(invoke("incident", "--summary", "Checkout returned 502", "--impact",
                             "no orders", "--root-cause", "OOM", "--resolution", "more memory",
                             "--severity", "sev2", "--occurred-at", "2024-03-12", "--json"))  # fmt: skip
    runbook = stored(invoke("runbook", "--trigger", "release day", "--step", "tag the commit",
                            "--step", "push the tag", "--verification", "CI is green",
                            "--rollback", "delete the tag", "--json"))  # fmt: skip
    postmortem = stored(invoke("postmortem", "--summary", "Checkout 502s", "--root-cause",
                               "no headroom", "--action-item", "alert at 80%", "--action-item",
                               "load test", "--incident", incident["id"], "--json"))  # fmt: skip

    kinds = [m["kind"] for m in (dead_end, decision, incident, runbook, postmortem)]
    assert kinds == ["dead_end", "decision", "incident", "runbook", "postmortem"]
    assert dead_end["tags"] == ["js", "deps"]
    assert (decision["title"], decision["context"], decision["service"]) == (
        "pnpm",
        "web",
        "frontend",
    )
    assert decision["importance"] == 0.9
    assert incident["created_at"].startswith("2024-03-12")
    assert runbook["content"].index("tag the commit") < runbook["content"].index("push the tag")
    assert "alert at 80%" in postmortem["content"]
    assert "load test" in postmortem["content"]
    assert total(home) == 5


def test_record_commands_print_what_they_stored(invoke: Any) -> None:
    result = invoke("dead-end", "--attempted", "a", "--why-failed", "b")

    assert result.exit_code == 0, result.stderr
    assert result.stdout.startswith("stored dead_end ")


def test_runbook_without_a_step_exits_2_with_one_line_and_stores_nothing(
    invoke: Any, home: Path
) -> None:
    one_line_error(invoke("runbook", "--trigger", "disk full"), 2, "steps")

    assert total(home) == 0


def test_incident_with_an_unknown_severity_exits_2(invoke: Any, home: Path) -> None:
    one_line_error(invoke("incident", "--summary", "x", "--severity", "sev9"), 2, "severity")

    assert total(home) == 0


def test_a_decision_that_avoids_an_unknown_dead_end_exits_3_and_stores_nothing(
    invoke: Any, home: Path
) -> None:
    result = invoke("decision", "--decision", "d", "--rationale", "r",
                    "--avoids", "01NOSUCHMEMORY0000000000000")  # fmt: skip

    one_line_error(result, 3, "01NOSUCHMEMORY0000000000000")
    assert total(home) == 0


# -- lifecycle -------------------------------------------------------------------------------------


def test_outdated_without_a_successor_and_merge(invoke: Any) -> None:
    fact = stored(invoke("decision", "--decision", "Staging on GKE", "--rationale", "x", "--json"))
    retired = stored(invoke("outdated", fact["id"], "--reason", "moved to EKS", "--json"))
    assert retired["lifecycle"] == "outdated"
    assert retired["valid_to"] is not None

    one = stored(invoke("dead-end", "--attempted", "a", "--why-failed", "b", "--json"))
    two = stored(invoke("dead-end", "--attempted", "a again", "--why-failed", "b", "--json"))
    merged = invoke("merge", one["id"], two["id"], "--reason", "same")
    assert merged.exit_code == 0, merged.stderr
    assert f"merged 1 into {one['id']}: {two['id']}" in merged.stdout
    assert stored(invoke("get", two["id"], "--json"))["lifecycle"] == "archived"


def test_outdated_with_an_empty_reason_exits_2_and_changes_nothing(invoke: Any) -> None:
    fact = stored(invoke("decision", "--decision", "d", "--rationale", "r", "--json"))

    one_line_error(invoke("outdated", fact["id"], "--reason", "  "), 2, "reason")

    assert stored(invoke("get", fact["id"], "--json")) == as_memory(fact)


# -- recall: as-of, successors, dead-end warnings --------------------------------------------------


def test_recall_as_of_gives_what_was_true_on_each_side_of_the_switch(invoke: Any) -> None:
    old = stored(invoke("decision", "--decision", "Sessions live in Redis", "--rationale",
                        "fast lookups", "--json"))  # fmt: skip
    time.sleep(0.02)
    between = now_iso()
    time.sleep(0.02)
    new = stored(invoke("decision", "--decision", "Sessions live in Postgres", "--rationale",
                        "durable", "--json"))  # fmt: skip
    assert (
        invoke("outdated", old["id"], "--superseded-by", new["id"], "--reason", "r").exit_code == 0
    )

    def ids(*args: str) -> list[str]:
        result = stored(invoke("recall", "where do sessions live", *args, "--json"))
        return [hit["memory"]["id"] for hit in result["hits"]]

    then = ids("--as-of", between)
    assert old["id"] in then
    assert new["id"] not in then
    later = ids("--as-of", now_iso())
    assert new["id"] in later
    assert old["id"] not in later
    assert ids("--as-of", "2000-01-01") == []


def test_recall_as_of_rejects_a_bad_date_and_explain(invoke: Any) -> None:
    one_line_error(invoke("recall", "x", "--as-of", "last tuesday"), 2)
    one_line_error(invoke("recall", "x", "--as-of", "2024-01-01", "--explain"), 2, "--as-of")


def test_recall_text_shows_dead_end_warnings_and_successors(invoke: Any) -> None:
    dead_end = stored(invoke("dead-end", "--attempted", "Cache sessions in Redis with LRU",
                             "--why-failed", "sessions were evicted", "--json"))  # fmt: skip
    old = stored(invoke("decision", "--decision", "Sessions live in Redis", "--rationale",
                        "fast", "--json"))  # fmt: skip
    new = stored(invoke("decision", "--decision", "Sessions live in Postgres", "--rationale",
                        "durable", "--json"))  # fmt: skip
    invoke("outdated", old["id"], "--superseded-by", new["id"], "--reason", "evictions")

    result = invoke("recall", "sessions in Redis", "--limit", "10")

    assert result.exit_code == 0, result.stderr
    warnings = [line for line in result.stdout.splitlines() if line.startswith("warning: ")]
    assert warnings
    assert dead_end["id"] in result.stdout
    old_line = next(line for line in result.stdout.splitlines() if old["id"] in line)
    assert f"(superseded by {new['id']})" in old_line


def test_runbooks_and_incidents_search_their_kind(invoke: Any) -> None:
    runbook = stored(invoke("runbook", "--trigger", "gateway pods are OOM-killed", "--step",
                            "raise the memory limit", "--json"))  # fmt: skip
    incident = stored(invoke("incident", "--summary", "checkout 502 errors", "--json"))
    invoke("decision", "--decision", "gateway memory limit is 2Gi", "--rationale", "OOM")

    found = stored(invoke("runbooks", "gateway OOM", "--json"))
    similar = stored(invoke("incidents", "502 errors at checkout", "--limit", "3", "--json"))

    assert [hit["memory"]["id"] for hit in found["hits"]] == [runbook["id"]]
    assert [hit["memory"]["id"] for hit in similar["hits"]] == [incident["id"]]
    text = invoke("runbooks", "gateway OOM")
    assert runbook["id"] in text.stdout


# -- canonical knowledge, context, bank ------------------------------------------------------------


def test_canonical_promote_list_recall_and_context(invoke: Any) -> None:
    fact = stored(invoke("decision", "--decision", "Deploys go through ArgoCD", "--rationale",
                         "auditable", "--context", "platform", "--json"))  # fmt: skip
    recent = stored(invoke("incident", "--summary", "Rotated the TLS cert", "--context",
                           "platform", "--json"))  # fmt: skip

    promoted = invoke("canonical", "promote", fact["id"], "--owner", "platform-team")
    assert promoted.exit_code == 0, promoted.stderr
    assert f"{fact['id']} is canonical, owner platform-team" in promoted.stdout

    listed = stored(invoke("canonical", "list", "--context", "platform", "--json"))
    assert [m["id"] for m in listed["memories"]] == [fact["id"]]
    assert listed["memories"][0]["owner"] == "platform-team"
    assert "owner platform-team" in invoke("canonical", "list").stdout
    recalled = stored(invoke("canonical", "recall", "how do we deploy", "--json"))
    assert [hit["memory"]["id"] for hit in recalled["hits"]] == [fact["id"]]

    text = invoke("context", "--context", "platform").stdout
    assert text.index(fact["id"]) < text.index("recent") < text.index(recent["id"])
    summary = stored(invoke("context", "--context", "platform", "--limit", "5", "--json"))
    assert [m["id"] for m in summary["canonical"]] == [fact["id"]]
    assert [m["id"] for m in summary["recent"]] == [recent["id"]]


def test_canonical_promote_of_an_unknown_id_exits_3(invoke: Any) -> None:
    one_line_error(
        invoke("canonical", "promote", "01NOSUCHMEMORY0000000000000", "--owner", "me"),
        3,
        "01NOSUCHMEMORY0000000000000",
    )


def test_bank_views_list_the_records_of_their_kind(invoke: Any) -> None:
    decision = stored(invoke("decision", "--decision", "Use pnpm", "--rationale", "x", "--json"))
    dead_end = stored(invoke("dead-end", "--attempted", "yarn pnp", "--why-failed", "y", "--json"))

    decisions = stored(invoke("bank", "decisions", "--json"))
    dead_ends = stored(invoke("bank", "dead_ends", "--limit", "5", "--json"))
    text = invoke("bank", "dead_ends", "--context", "nowhere")

    assert (decisions["view"], [m["id"] for m in decisions["memories"]]) == (
        "decisions",
        [decision["id"]],
    )
    assert [m["id"] for m in dead_ends["memories"]] == [dead_end["id"]]
    assert text.exit_code == 0
    assert "nothing in this view" in text.stdout


def test_an_unknown_bank_view_exits_2_with_one_line_naming_the_views(invoke: Any) -> None:
    one_line_error(invoke("bank", "gossip"), 2, "gossip", "decisions")


# -- timeline, citations, verification ------------------------------------------------------------


def test_timeline_needs_a_query_or_an_id_but_not_both(invoke: Any) -> None:
    fact = stored(invoke("decision", "--decision", "d", "--rationale", "r", "--json"))

    one_line_error(invoke("timeline"), 2)
    one_line_error(invoke("timeline", "d", "--id", fact["id"]), 2)
    shown = stored(invoke("timeline", "--id", fact["id"], "--json"))
    assert [e["memory"]["id"] for e in shown["entries"]] == [fact["id"]]


def test_cite_verify_and_verification_candidates(invoke: Any, project: Path) -> None:
    (project / "crontab").write_text("0 2 * * * backup\n", encoding="utf-8")
    fact = stored(invoke("decision", "--decision", "Backups run at 02:00", "--rationale",
                         "quiet hour", "--importance", "0.9", "--json"))  # fmt: skip

    cited = invoke("cite", fact["id"], "./crontab", "--section", "backup")
    assert cited.exit_code == 0, cited.stderr
    assert f"{fact['id']} cites crontab (backup), sha256 " in cited.stdout
    due = stored(invoke("verify-candidates", "--json"))
    assert [m["id"] for m in due["memories"]] == [fact["id"]]
    assert "never verified" in invoke("verify-candidates").stdout

    verified = invoke("verify", fact["id"], "--method", "read crontab", "--status", "verified",
                      "--note", "still 02:00")  # fmt: skip
    assert verified.exit_code == 0, verified.stderr
    assert f"{fact['id']}: verified (read crontab)" in verified.stdout
    after = stored(invoke("verify-candidates", "--days", "30", "--min-importance", "0.5",
                          "--json"))  # fmt: skip
    assert after["memories"] == []
    assert "nothing to verify" in invoke("verify-candidates").stdout


def test_verify_with_a_bad_status_exits_2_and_changes_nothing(invoke: Any) -> None:
    fact = stored(invoke("decision", "--decision", "d", "--rationale", "r", "--json"))

    one_line_error(invoke("verify", fact["id"], "--method", "m", "--status", "probably"), 2,
                   "status")  # fmt: skip

    assert stored(invoke("get", fact["id"], "--json")) == as_memory(fact)


def test_cite_of_a_missing_file_or_an_unknown_id_fails_with_one_line(
    invoke: Any, project: Path
) -> None:
    (project / "README.md").write_text("# project\n", encoding="utf-8")
    fact = stored(invoke("decision", "--decision", "d", "--rationale", "r", "--json"))

    one_line_error(invoke("cite", fact["id"], "nope.md"), 2, "nope.md")
    one_line_error(invoke("cite", "01NOSUCHMEMORY0000000000000", "README.md"), 3)
    assert "no drift: 0 citations checked" in invoke("drift").stdout


@pytest.mark.parametrize("command", NEW_COMMANDS, ids=lambda c: " ".join(c))
def test_every_knowledge_command_takes_home_and_json(invoke: Any, command: list[str]) -> None:
    result = invoke(*command, "--help")

    assert result.exit_code == 0, result.output
    assert "--json" in result.stdout
    assert "--home" in result.stdout
