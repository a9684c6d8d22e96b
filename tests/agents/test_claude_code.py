"""The real Claude Code CLI (pinned in claude_code/package.json, installed here with `npm ci` on
first use) reads what `graphmem setup claude-code --scope user` wrote, starts `graphmem serve`
over stdio and reports it connected."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from graphmem.agents.setup import request_for, run
from graphmem.daemon.paths import live_owner
from graphmem.process import pid_alive

CLAUDE_CODE = Path(__file__).parent / "claude_code"
CLAUDE = CLAUDE_CODE / "node_modules" / ".bin" / "claude"
# only for this test: a server that needs no model and an owner that exits soon after
TEST_ENV = {"GRAPHMEM_DAEMON_IDLE_TIMEOUT": "5", "GRAPHMEM_EMBEDDING_PROVIDER": "hash"}


@pytest.fixture(scope="module")
def claude() -> Path:
    npm = shutil.which("npm")
    if npm is None:
        pytest.skip("npm is not on PATH: cannot install the pinned Claude Code CLI")
    if not CLAUDE.exists():
        subprocess.run(
            [npm, "ci", "--no-audit", "--no-fund", "--loglevel=error"],
            cwd=CLAUDE_CODE,
            check=True,
            capture_output=True,
            timeout=600,
        )
    return CLAUDE


@pytest.fixture
def project(tmp_path: Path) -> Iterator[Path]:
    root = tmp_path / "shop"
    (root / ".git").mkdir(parents=True)
    (tmp_path / "home").mkdir()
    yield root
    owner = live_owner(root / ".graphmem")  # the owner `graphmem serve` started for the check
    if owner is not None:
        os.kill(owner.pid, signal.SIGTERM)
        deadline = time.monotonic() + 15
        while pid_alive(owner.pid) and time.monotonic() < deadline:
            time.sleep(0.1)


def test_claude_code_lists_graphmem_as_connected_after_setup(claude: Path, project: Path) -> None:
    home = project.parent / "home"
    request = request_for(
        "claude-code", home=None, cwd=project, user_home=home, scope="user", extra_env=TEST_ENV
    )
    assert request.store == project / ".graphmem"
    changes = run(request)
    assert [change.path for change in changes] == [
        home / ".claude.json",
        home / ".claude/settings.json",
    ]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GRAPHMEM_", "ANTHROPIC_"))}
    env.update(
        HOME=str(home),
        ANTHROPIC_API_KEY="sk-ant-dummy-key-for-tests",
        DISABLE_AUTOUPDATER="1",
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
    )
    listed = subprocess.run(
        [str(claude), "mcp", "list"],
        cwd=project,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert listed.returncode == 0, listed.stdout + listed.stderr
    line = next(line for line in listed.stdout.splitlines() if line.startswith("graphmem:"))
    assert f"{request.executable} serve" in line and "Connected" in line, listed.stdout


def claude_env(home: Path) -> dict[str, str]:
    """Claude Code with no network: a dummy key and an API address that refuses at once."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GRAPHMEM_", "ANTHROPIC_"))}
    env.update(
        HOME=str(home),
        ANTHROPIC_API_KEY="sk-ant-dummy-key-for-tests",
        ANTHROPIC_BASE_URL="http://127.0.0.1:9",
        CLAUDE_CODE_MAX_RETRIES="0",
        DISABLE_AUTOUPDATER="1",
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
        **TEST_ENV,
    )
    return env


def test_claude_codes_transcript_holds_what_the_hooks_injected(claude: Path, project: Path) -> None:
    """SessionStart and UserPromptSubmit run before the model call (which fails here), and
    Claude Code writes the context they added into its transcript."""
    home = project.parent / "home"
    env = claude_env(home)
    store = project / ".graphmem"

    def graphmem(*args: str) -> None:
        done = subprocess.run(
            [str(request_for("claude-code", home=None, cwd=project, user_home=home,
                             scope="user").executable), *args, "--home", str(store)],
            env=env, cwd=project, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr

    graphmem("daemon", "start")
    graphmem("decision", "--decision", "Process Stripe webhooks by event id",
             "--rationale", "retries of the webhook created duplicate charges")  # fmt: skip
    run(request_for("claude-code", home=None, cwd=project, user_home=home, scope="user",
                    extra_env=TEST_ENV))  # fmt: skip

    subprocess.run(
        [str(claude), "-p", "why did the stripe webhook retries create duplicate charges?"],
        cwd=project, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True,
        timeout=120,
    )  # fmt: skip

    [transcript] = (home / ".claude" / "projects").rglob("*.jsonl")
    added = {}
    for line in transcript.read_text().splitlines():
        attachment = json.loads(line).get("attachment") or {}
        if attachment.get("type") == "hook_additional_context":
            added[attachment["hookName"]] = " ".join(attachment["content"])
    assert "Decision" in added["SessionStart"] and "Stripe webhooks" in added["SessionStart"]
    assert "Process Stripe webhooks by event id" in added["UserPromptSubmit"]
