"""`graphmem hook EVENT`: each client's output format, the relevance bar, checkpoints of the
transcript, and a hook that never breaks the agent, whatever fails."""

from __future__ import annotations

import io
import json
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from graphmem.agents import hook
from graphmem.agents.context import RelevanceBar
from graphmem.agents.transcript import read_since, state_file
from graphmem.daemon.client import connect, stop_owner
from graphmem.daemon.owner import Owner
from graphmem.daemon.paths import live_owner
from graphmem.embeddings.hashing import HashEmbedder
from graphmem.models import Memory
from graphmem.service import GraphMemory
from graphmem.settings import load_settings

FIXTURES = Path(__file__).parent / "fixtures"
ROOT = Path(__file__).resolve().parents[2]
SESSION = "sess-1"
# what the fixture transcript holds that must never be stored: tool output, thinking, client
# notes, hook output, a subagent's turns, a private block and two secrets
NEVER_STORED = (
    "TOOL-OUTPUT", "SECRET-THOUGHT", "META-NOTE", "REMINDER-NOISE", "ATTACHMENT-NOISE",
    "SIDECHAIN-NOISE", "SYSTEM-NOISE", "/cost", "Total cost", "12 Elm", "AKIAIOSFODNN7EXAMPLE",
    "hunter2", "⏺", "⎿", "hook_event_name", "interrupted", "this line is cut",
)  # fmt: skip


def wait_for(predicate: Callable[[], Any], timeout: float = 30.0) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if value := predicate():
            return value
        time.sleep(0.05)
    return None


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "shop"
    (root / ".git").mkdir(parents=True)
    (root / ".graphmem").mkdir()
    return root


@pytest.fixture
def owner(project: Path) -> Iterator[Owner]:
    """An owner of the project's store, serving from a thread of this process."""
    settings = load_settings(
        project / ".graphmem",
        environ={},
        overrides={"lock_timeout": 0.2, "extract_on_write": False},
    )
    served = Owner(GraphMemory(settings, embedder=HashEmbedder()))
    thread = threading.Thread(target=served.serve, daemon=True)
    thread.start()
    assert wait_for(lambda: live_owner(served.home) is not None)
    yield served
    served.stop()
    thread.join(timeout=15)


def seed(gm: GraphMemory) -> None:
    gm.store_decision(
        decision="Use Postgres advisory locks for the billing scheduler",
        rationale="Redis locks expired under GC pauses and the invoice run happened twice",
    )
    gm.store_dead_end(
        attempted_approach="Retrying the Stripe webhook inline in the request handler",
        why_failed="the handler timed out and Stripe retried, creating duplicate charges",
        alternative="queue webhooks and process them idempotently by event id",
    )
    note = gm.remember("Deploys go through ArgoCD from the release branch only.")
    gm.promote_to_canonical(note.id, owner="platform")


def run_hook(
    home: Path | None, event: str, payload: dict[str, Any] | str, client: str = "claude-code"
) -> str:
    out = io.StringIO()
    data = payload if isinstance(payload, str) else json.dumps(payload)
    argv = [event, "--client", client, *(["--home", str(home)] if home else [])]
    assert hook.main(argv, stdin=io.StringIO(data), stdout=out) == 0
    return out.getvalue()


def injected(output: str) -> str:
    """The text an output adds to the agent's context, whatever the client."""
    value = json.loads(output)
    return value.get("hookSpecificOutput", {}).get("additionalContext") or value.get(
        "additional_context", ""
    )


def transcript(tmp_path: Path) -> Path:
    path = tmp_path / "transcript.jsonl"
    shutil.copy(FIXTURES / "claude_code_transcript.jsonl", path)
    return path


def checkpoints(gm: GraphMemory) -> list[Memory]:
    return gm.list({"kind": "checkpoint"}).memories


# -- output formats -------------------------------------------------------------------------

PROMPT = "why did the Stripe webhook retries create duplicate charges?"


@pytest.mark.parametrize(
    ("client", "event", "expected"),
    [
        ("claude-code", "session-start", {"hookSpecificOutput": ["SessionStart"]}),
        ("claude-code", "prompt-submit", {"hookSpecificOutput": ["UserPromptSubmit"]}),
        ("codex", "session-start", {"hookSpecificOutput": ["SessionStart"]}),
        ("codex", "prompt-submit", {"hookSpecificOutput": ["UserPromptSubmit"]}),
        ("vscode", "prompt-submit", {"hookSpecificOutput": ["UserPromptSubmit"]}),
        ("gemini", "session-start", {"hookSpecificOutput": ["SessionStart"]}),
        ("gemini", "prompt-submit", {"hookSpecificOutput": ["BeforeAgent"]}),
        ("cursor", "session-start", {"additional_context": []}),
        ("cursor", "prompt-submit", {"continue": [], "additional_context": []}),
    ],
)
def test_each_client_gets_context_in_its_own_output_format(
    owner: Owner, client: str, event: str, expected: dict[str, list[str]]
) -> None:
    seed(owner.gm)
    output = run_hook(owner.home, event, {"session_id": SESSION, "prompt": PROMPT}, client)
    value = json.loads(output)
    assert sorted(value) == sorted(expected)  # Codex rejects fields it does not know
    if "hookSpecificOutput" in value:
        specific = value["hookSpecificOutput"]
        assert sorted(specific) == ["additionalContext", "hookEventName"]
        assert specific["hookEventName"] == expected["hookSpecificOutput"][0]
    if "continue" in value:
        assert value["continue"] is True
    assert "Stripe webhook" in injected(output)


@pytest.mark.parametrize("event", ["pre-compact", "stop", "session-end"])
@pytest.mark.parametrize("client", ["claude-code", "codex", "cursor", "gemini"])
def test_events_that_add_no_context_print_what_the_client_reads_as_nothing(
    owner: Owner, tmp_path: Path, client: str, event: str
) -> None:
    payload = {"session_id": SESSION, "transcript_path": str(transcript(tmp_path))}
    assert run_hook(owner.home, event, payload, client) == ("{}\n" if client == "gemini" else "")


def test_session_start_injects_canonical_knowledge_dead_ends_and_decisions_as_short_facts(
    owner: Owner,
) -> None:
    seed(owner.gm)
    output = run_hook(owner.home, "session-start", {"session_id": SESSION, "source": "compact"})
    text = injected(output)
    assert "Canonical note: Deploys go through ArgoCD" in text
    assert (
        "- Dead end: Retrying the Stripe webhook inline in the request handler — failed because "
        "the handler timed out" in text
    )
    assert "; instead: queue webhooks" in text
    day = owner.gm.list({"kind": "decision"}).memories[0].created_at.date().isoformat()
    assert (
        f"- Decision ({day}): Use Postgres advisory locks for the billing scheduler — because"
        in text
    )
    assert len(text) <= 4000


def test_session_start_stays_under_its_budget_however_much_is_known(owner: Owner) -> None:
    for i in range(40):
        owner.gm.store_decision(decision=f"Decision number {i} " + "x" * 400, rationale="because")
    text = injected(run_hook(owner.home, "session-start", {"session_id": SESSION}))
    assert 3000 < len(text) <= 4000
    assert all(len(line) <= 302 for line in text.splitlines())


def test_an_empty_store_injects_nothing(owner: Owner) -> None:
    assert run_hook(owner.home, "session-start", {"session_id": SESSION}) == ""
    assert run_hook(owner.home, "prompt-submit", {"prompt": PROMPT}) == ""


# -- relevance ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "prompt",
    [
        "write a haiku about autumn leaves",
        "rename the variable foo to bar in utils.py",
        "thanks, looks good",
        "ok",
        "/compact",
    ],
)
def test_an_unrelated_prompt_injects_nothing(owner: Owner, prompt: str) -> None:
    seed(owner.gm)
    assert run_hook(owner.home, "prompt-submit", {"session_id": SESSION, "prompt": prompt}) == ""


def test_a_related_prompt_gets_the_few_memories_that_clear_the_bar(owner: Owner) -> None:
    seed(owner.gm)
    text = injected(run_hook(owner.home, "prompt-submit", {"prompt": PROMPT}))
    assert text.startswith("graphmem: memories related to this prompt:")
    assert "Dead end: Retrying the Stripe webhook" in text
    assert "advisory locks" not in text  # recalled, but under the bar


def test_a_related_document_section_is_injected_with_where_it_is(
    owner: Owner, project: Path
) -> None:
    docs = project / "docs"
    docs.mkdir()
    (docs / "rollback.md").write_text(
        "# Deploy runbook\n\n## Rolling back a deploy\n\nRun `argocd app rollback shop` and "
        "watch the rollout until every pod is ready.\n",
        encoding="utf-8",
    )
    owner.gm.index_documents()
    owner.gm.relevance = RelevanceBar(doc_cosine=0.2)  # the hash embedder's cosines are low
    text = injected(
        run_hook(owner.home, "prompt-submit", {"prompt": "how do I roll back a deploy"})
    )
    assert "Doc docs/rollback.md › Rolling back a deploy (lines 3-" in text
    assert "argocd app rollback shop" in text


def test_the_relevance_bar_needs_meaning_or_meaning_and_shared_words() -> None:
    bar = RelevanceBar()
    assert bar.memory({"cosine_raw": 0.5, "features": {"terms": 0.0}})
    assert bar.memory({"cosine_raw": 0.2, "passage_raw": 0.46, "features": {}})
    assert bar.memory({"cosine_raw": 0.36, "features": {"terms": 0.5}})
    assert not bar.memory({"cosine_raw": 0.36, "features": {"terms": 0.4}})
    assert not bar.memory({"cosine_raw": 0.3, "features": {"terms": 1.0}})
    assert not bar.memory(None)
    assert bar.section({"raw_cosine": 0.41, "features": {"terms": 0.75}})
    assert not bar.section({"raw_cosine": 0.41, "features": {"terms": 0.4}})
    assert not bar.section({"raw_cosine": None, "features": {"terms": 1.0}})


# -- checkpoints ----------------------------------------------------------------------------


def test_stop_checkpoints_the_user_and_assistant_text_of_the_transcript(
    owner: Owner, tmp_path: Path
) -> None:
    path = transcript(tmp_path)
    assert run_hook(owner.home, "stop", {"session_id": SESSION, "transcript_path": str(path)}) == ""
    [memory] = checkpoints(owner.gm)
    assert (memory.type, memory.session_id, memory.tags) == (
        "episodic", SESSION, ["checkpoint", "claude-code"],
    )  # fmt: skip
    assert memory.content.startswith("User: Let's fix the flaky billing test")
    assert "Assistant: The invoice test reads the wall clock" in memory.content
    assert memory.content.endswith("the staging password goes to the vault.")
    assert json.loads(state_file(owner.home, SESSION).read_text())["offset"] == path.stat().st_size


def test_private_blocks_and_secrets_in_a_transcript_never_reach_the_store(
    owner: Owner, tmp_path: Path
) -> None:
    path = transcript(tmp_path)
    run_hook(owner.home, "pre-compact", {"session_id": SESSION, "transcript_path": str(path)})
    [memory] = checkpoints(owner.gm)
    for leaked in NEVER_STORED:
        assert leaked not in memory.content, leaked
    assert memory.content.count("[REDACTED]") == 2
    dump = json.dumps([m.model_dump(mode="json") for m in owner.gm.list().memories])
    assert "12 Elm" not in dump and "hunter2" not in dump


def test_only_what_was_said_since_the_last_checkpoint_is_checkpointed(
    owner: Owner, tmp_path: Path
) -> None:
    path = transcript(tmp_path)
    payload = {"session_id": SESSION, "transcript_path": str(path)}
    run_hook(owner.home, "stop", payload)
    run_hook(owner.home, "stop", payload)  # nothing new
    assert len(checkpoints(owner.gm)) == 1
    with path.open("a", encoding="utf-8") as handle:
        turn = {"type": "user", "message": {"content": "Now bump the freezegun version."}}
        handle.write(json.dumps(turn) + "\n" + '{"type": "assistant", "message": {"cont')
    run_hook(owner.home, "stop", payload)
    newest = checkpoints(owner.gm)[0]
    assert newest.content == "User: Now bump the freezegun version."


def test_a_checkpoint_that_repeats_the_last_one_is_not_stored_again(
    owner: Owner, tmp_path: Path
) -> None:
    path = transcript(tmp_path)
    payload = {"session_id": SESSION, "transcript_path": str(path)}
    run_hook(owner.home, "stop", payload)
    state_file(owner.home, SESSION).unlink()  # the position is lost: the whole file again
    result = owner.gm.hook_checkpoint(payload, client="claude-code")
    assert not result["stored"] and result["reason"] == "same_text"
    assert len(checkpoints(owner.gm)) == 1


def test_session_end_queues_the_final_checkpoint_and_returns_at_once(
    owner: Owner, tmp_path: Path
) -> None:
    path = transcript(tmp_path)
    payload = {"session_id": SESSION, "transcript_path": str(path), "reason": "prompt_input_exit"}
    assert run_hook(owner.home, "session-end", payload) == ""  # returns before the work is done
    assert owner.gm.hook_jobs_done(timeout=30)
    [memory] = checkpoints(owner.gm)
    assert memory.session_id == SESSION
    assert not list((owner.home / "hooks" / "pending").glob("*.json"))  # kept until done


def test_codex_and_gemini_transcripts_are_read_as_well(tmp_path: Path) -> None:
    lines = [
        {"type": "session_meta", "payload": {"id": "c-1"}},
        {"type": "response_item", "payload": {"type": "message", "role": "user", "content": [
            {"type": "input_text", "text": "<environment_context>cwd</environment_context>"},
            {"type": "input_text", "text": "Add retries to the Stripe client"}]}},
        {"type": "response_item", "payload": {"type": "function_call", "name": "shell"}},
        {"type": "response_item", "payload": {"type": "message", "role": "assistant",
                                              "content": [{"type": "output_text", "text": "Done."}]}},
        {"sessionId": "g-1", "projectHash": "p"},
        {"id": "m1", "type": "user", "content": [{"text": "Explain the invoice job"}]},
        {"id": "m2", "type": "gemini", "content": "It runs"},
        {"id": "m2", "type": "gemini", "content": "It runs nightly at 02:00"},
        {"id": "m3", "type": "info", "content": "INFO-NOISE"},
    ]  # fmt: skip
    path = tmp_path / "rollout.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    assert read_since(path, 0).text == (
        "User: Add retries to the Stripe client\n\nAssistant: Done.\n\n"
        "User: Explain the invoice job\n\nAssistant: It runs nightly at 02:00"
    )


# -- never breaking the agent ----------------------------------------------------------------


class FakeOwner:
    """A socket that answers each request line with `reply` (None: never answers)."""

    def __init__(self, home: Path, reply: bytes | None) -> None:
        self.path = str(home / "owner.sock")
        self.server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.server.bind(self.path)
        self.server.listen()
        self.reply = reply
        (home / "owner.json").write_text(json.dumps({"pid": os.getpid(), "socket": self.path}))
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.server.accept()
            except OSError:
                return
            conn.makefile("rb").readline()
            if self.reply is not None:
                conn.sendall(self.reply)
                conn.close()

    def close(self) -> None:
        self.server.close()


@pytest.mark.parametrize(
    ("reply", "logged"),
    [
        (
            b'{"id": 1, "error": {"type": "StorageError", "message": "disk on fire"}}\n',
            "disk on fire",
        ),
        (b"this is not json\n", "JSONDecodeError"),
        (b"", "closed the connection"),
        (None, "did not answer in time"),
    ],
)
def test_a_failing_owner_means_exit_0_nothing_injected_and_a_line_in_hooks_log(
    project: Path, reply: bytes | None, logged: str
) -> None:
    home = project / ".graphmem"
    fake = FakeOwner(home, reply)
    try:
        assert run_hook(home, "prompt-submit", {"prompt": PROMPT}) == ""
        assert run_hook(home, "session-start", {}, "gemini") == "{}\n"
    finally:
        fake.close()
    assert logged in (home / "hooks.log").read_text()


def test_an_error_inside_the_owner_injects_nothing(
    owner: Owner, monkeypatch: pytest.MonkeyPatch
) -> None:
    seed(owner.gm)

    def broken(*args: Any, **kwargs: Any) -> None:
        raise RuntimeError("index corrupted")

    monkeypatch.setattr(owner.gm.knowledge, "list_canonical_knowledge", broken)
    assert run_hook(owner.home, "session-start", {"session_id": SESSION}) == ""
    assert "index corrupted" in (owner.home / "hooks.log").read_text()


def test_bad_input_still_exits_0(owner: Owner, capsys: pytest.CaptureFixture[str]) -> None:
    seed(owner.gm)
    assert injected(run_hook(owner.home, "session-start", "not json {"))  # the store still speaks
    assert hook.main(["no-such-event"], stdin=io.StringIO("{}"), stdout=io.StringIO()) == 0
    assert "unknown event" in capsys.readouterr().err


def test_a_project_without_a_store_is_left_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("GRAPHMEM_HOME", raising=False)
    (tmp_path / "repo" / ".git").mkdir(parents=True)
    assert run_hook(None, "session-start", {"cwd": str(tmp_path / "repo")}) == ""
    assert not (tmp_path / "repo" / ".graphmem").exists()


def test_the_store_is_found_from_the_payloads_cwd(
    owner: Owner, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("GRAPHMEM_HOME", raising=False)
    seed(owner.gm)
    (project / "src" / "billing").mkdir(parents=True)
    output = run_hook(None, "session-start", {"cwd": str(project / "src" / "billing")})
    assert "Stripe webhook" in injected(output)


# -- as a new process ------------------------------------------------------------------------


def hook_process(
    home: Path, event: str, payload: dict[str, Any], prelude: str = "", **env: str
) -> subprocess.CompletedProcess[str]:
    code = (
        f"import sys\n{prelude}\nsys.argv = ['graphmem', 'hook', {event!r}, '--home', "
        f"{str(home)!r}]\nfrom graphmem.launch import main\nmain()\n"
    )
    environ = {k: v for k, v in os.environ.items() if not k.startswith("GRAPHMEM_")}
    return subprocess.run(
        [sys.executable, "-c", code], input=json.dumps(payload), capture_output=True, text=True,
        timeout=60, env={**environ, **env}, cwd=ROOT,
    )  # fmt: skip


def test_the_hook_imports_neither_typer_pydantic_numpy_nor_kuzu(owner: Owner) -> None:
    seed(owner.gm)
    prelude = (
        "import atexit\natexit.register(lambda: print(' '.join(sorted(sys.modules)), "
        "file=sys.stderr))"
    )
    done = hook_process(owner.home, "prompt-submit", {"prompt": PROMPT}, prelude)
    assert done.returncode == 0
    assert "Stripe webhook" in injected(done.stdout)  # the whole path ran
    loaded = set(done.stderr.split())
    heavy = {"typer", "pydantic", "numpy", "kuzu", "graphmem.cli", "graphmem.models"}
    assert not heavy & loaded, heavy & loaded


def test_with_no_owner_a_hook_answers_and_starts_one_that_takes_on_its_capture(
    project: Path, tmp_path: Path
) -> None:
    home = project / ".graphmem"
    settings = load_settings(home, environ={})
    GraphMemory(settings, embedder=HashEmbedder()).close()
    env = {"GRAPHMEM_EMBEDDING_PROVIDER": "hash", "GRAPHMEM_DAEMON_IDLE_TIMEOUT": "10",
           "GRAPHMEM_EXTRACT_ON_WRITE": "false"}  # fmt: skip
    payload = {"session_id": SESSION, "transcript_path": str(transcript(tmp_path))}
    try:
        done = hook_process(home, "stop", payload, **env)
        assert (done.returncode, done.stdout) == (0, "")
        assert list((home / "hooks" / "pending").glob("*.json"))
        assert wait_for(lambda: live_owner(home)), (home / "owner.log").read_text()
        again = hook_process(home, "session-start", {"session_id": SESSION}, **env)
        assert again.returncode == 0
        remote = connect(load_settings(home, environ={}))
        assert remote is not None
        with remote:
            found = wait_for(lambda: remote.list({"kind": "checkpoint"}).memories)
        assert found and found[0].session_id == SESSION
        assert not list((home / "hooks" / "pending").glob("*.json"))
    finally:
        stop_owner(home)


def test_vscode_and_cursor_names_for_the_session_and_folder_are_understood(
    owner: Owner, project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("GRAPHMEM_HOME", raising=False)
    seed(owner.gm)
    cursor = {"conversation_id": "c-9", "workspace_roots": [str(project)]}
    assert "Stripe webhook" in injected(run_hook(None, "session-start", cursor, "cursor"))
    vscode = {"sessionId": "v-9", "transcript_path": str(transcript(tmp_path))}
    run_hook(owner.home, "stop", vscode, "vscode")
    assert [m.session_id for m in checkpoints(owner.gm)] == ["v-9"]


def test_a_pending_capture_that_fails_waits_and_an_unreadable_one_is_dropped(
    owner: Owner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = owner.home / "hooks" / "pending"
    folder.mkdir(parents=True)
    (folder / "1-bad.json").write_text("{not json")
    payload = {"session_id": SESSION, "transcript_path": str(transcript(tmp_path))}
    hook.save_pending(owner.home, "stop", "codex", payload)

    def broken(*args: Any, **kwargs: Any) -> None:
        raise RuntimeError("store closing")

    monkeypatch.setattr(owner.gm.checkpoints, "checkpoint", broken)
    run_hook(owner.home, "session-start", {"session_id": SESSION})
    assert owner.gm.hook_jobs_done(timeout=30)
    assert not (folder / "1-bad.json").exists()
    assert len(list(folder.glob("*.json"))) == 1  # kept for the next owner
    assert checkpoints(owner.gm) == []


def test_session_end_closes_the_session_over_the_agents_summing_up(
    owner: Owner, tmp_path: Path
) -> None:
    path = transcript(tmp_path)
    summary = (
        "Summary of this session:\n"
        "- We decided to freeze the clock in the invoice tests with time-machine\n"
        "- Tried patching datetime.now directly but it didn't work because of C extensions\n"
        "- TODO: move the staging password to the vault"
    )
    with path.open("a") as handle:
        record = {"type": "assistant", "message": {"role": "assistant", "content": summary}}
        handle.write(json.dumps(record) + "\n")
    payload = {"session_id": SESSION, "transcript_path": str(path), "cwd": str(tmp_path)}

    run_hook(owner.home, "session-end", payload)

    assert owner.gm.hook_jobs_done(timeout=60)
    kinds = {m.kind for m in owner.gm.list({"kind": "decision"}).memories}
    assert kinds == {"decision"}
    dead_ends = owner.gm.list({"kind": "dead_end"}).memories
    assert [m.session_id for m in dead_ends] == [SESSION]
    session = owner.gm.cypher(
        "MATCH (s:Session {id: $id}) RETURN s.client, s.summary_id IS NOT NULL", {"id": SESSION}
    ).rows
    assert session == [["claude-code", True]]
