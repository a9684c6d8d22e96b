"""`graphmem index`, `search`, `expand` and `repo` as a user runs them."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

RUNBOOK = """\
# Certificate expiry

## Renew the certificate

Run `certbot renew` on the edge hosts, then reload nginx.
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "docs" / "runbooks").mkdir(parents=True)
    (tmp_path / "docs" / "runbooks" / "certs.md").write_text(RUNBOOK)
    return tmp_path


def run(project: Path, cli_env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    env = {**cli_env, "GRAPHMEM_HOME": str(project / ".graphmem")}
    return subprocess.run(
        [sys.executable, "-m", "graphmem", *args],
        env=env, cwd=project, capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def test_index_reports_what_it_did_and_search_finds_the_section(
    project: Path, cli_env: dict[str, str]
) -> None:
    first = run(project, cli_env, "index")
    again = run(project, cli_env, "index", "--json")
    found = run(project, cli_env, "search", "how do I renew the TLS certificate", "--json")

    assert first.returncode == 0, first.stderr
    assert first.stdout.startswith("1 added, 0 updated, 0 moved, 0 removed, 0 unchanged")
    assert json.loads(again.stdout)["unchanged"] == 1
    hit = json.loads(found.stdout)["hits"][0]
    assert hit["path"] == "docs/runbooks/certs.md"
    assert hit["section_key"] == "certificate-expiry/renew-the-certificate"
    shown = run(project, cli_env, "expand", hit["path"], hit["section_key"])
    assert "certbot renew" in shown.stdout


def test_search_explain_shows_the_components(project: Path, cli_env: dict[str, str]) -> None:
    run(project, cli_env, "index")

    shown = run(project, cli_env, "search", "certbot", "--explain", "--type", "runbook")

    assert shown.returncode == 0, shown.stderr
    assert "docs/runbooks/certs.md:3-5" in shown.stdout
    assert "bm25" in shown.stdout


def test_expand_of_a_document_that_is_not_indexed_exits_3(
    project: Path, cli_env: dict[str, str]
) -> None:
    shown = run(project, cli_env, "expand", "docs/nope.md")

    assert shown.returncode == 3 and "not_found" not in shown.stdout
    assert "no indexed document" in shown.stderr


def test_repo_commands_read_the_project_and_refuse_what_is_outside(
    project: Path, cli_env: dict[str, str]
) -> None:
    listing = json.loads(run(project, cli_env, "repo", "list", "docs", "-r", "--json").stdout)
    read = run(project, cli_env, "repo", "read", "docs/runbooks/certs.md", "--start", "5")
    found = run(project, cli_env, "repo", "search", "certbot")
    outside = run(project, cli_env, "repo", "read", "/etc/hostname")

    assert "docs/runbooks/certs.md" in [e["path"] for e in listing["entries"]]
    assert read.stdout == "Run `certbot renew` on the edge hosts, then reload nginx.\n"
    assert found.stdout.startswith("docs/runbooks/certs.md:5:")
    assert outside.returncode == 2 and "outside" in outside.stderr
