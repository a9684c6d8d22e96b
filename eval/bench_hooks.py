"""`python -m eval hooks`: how long `graphmem hook EVENT` takes as a new process, the way an agent
client runs it, with the store's owner running and without one, and what it injects.

The store is a project of its own: a few engineering records, synthetic notes and this
repository's docs/ indexed. Prompts written for it say whether the relevance bar lets the related
ones through and keeps the unrelated ones silent (graphmem.agents.context.RelevanceBar).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from eval.bench import _compile_bytecode, machine_ms, synthetic_memories
from eval.embedding import environ
from graphmem.daemon.client import start_owner, stop_owner
from graphmem.embeddings.base import Embedder
from graphmem.process import pid_alive
from graphmem.service import GraphMemory
from graphmem.settings import load_settings

ROOT = Path(__file__).resolve().parents[1]
# prompts the seeded store (and docs/) answers, and prompts it has nothing for
RELATED = [
    "why do we get duplicate charges from stripe webhooks?",
    "the billing scheduler runs twice at night, how do we lock it?",
    "can I upgrade kuzu to the latest version?",
    "checkout is returning 502 after the deploy",
    "how do I start the frontend dev server",
    "where does the orders service get its database url",
    "let's cache sessions in sqlite",
    "how does hybrid recall score memories?",
    "how do I back up the store while it is serving?",
    "what does graphmem doctor check",
]
UNRELATED = [
    "write a haiku about autumn leaves",
    "rename the variable foo to bar in utils.py",
    "fix the typo in the button label",
    "what's the capital of Australia?",
    "add a unit test for the date parser",
    "thanks, looks good",
    "refactor this function to use a list comprehension",
    "explain how async generators work in python",
    "make the login page background blue",
    "translate this paragraph into French",
]


def _seed(gm: GraphMemory, memories: int) -> None:
    gm.store_decision(
        decision="Use Postgres advisory locks for the billing job scheduler",
        rationale="only one worker may run the nightly invoice run; Redis locks expired under "
        "GC pauses",
    )
    gm.store_decision(
        decision="Pin kuzu to 0.11.3", rationale="0.11.4 changed the WAL format and broke backups"
    )
    gm.store_dead_end(
        attempted_approach="Retrying the Stripe webhook inline in the request handler",
        why_failed="the handler timed out after 10 s and Stripe retried, creating duplicate "
        "charges",
        alternative="queue webhooks and process them idempotently by event id",
    )
    gm.store_dead_end(
        attempted_approach="Using SQLite for the session cache",
        why_failed="database is locked errors under concurrent writers",
    )
    gm.store_incident(
        summary="Checkout returned 502 for 20 minutes",
        root_cause="nginx upstream keepalive exhausted after the deploy",
        resolution="raised keepalive_requests and rolled the pods",
    )
    note = gm.remember("Deploys go through ArgoCD; production syncs only from the release branch.")
    gm.promote_to_canonical(note.id, owner="platform")
    gm.remember("The frontend uses React 18 with Vite; run `npm run dev` on port 5173.")
    gm.remember("The orders service reads its DB URL from ORDERS_DATABASE_URL.")
    gm.remember_many(synthetic_memories(memories))
    gm.index_documents()


def _hook(
    home: Path, event: str, payload: dict[str, Any], env: dict[str, str]
) -> tuple[float, str]:
    """Wall time of one hook as a new process (the console script), and its stdout."""
    command = [str(Path(sys.executable).with_name("graphmem")), "hook", event, "--home", str(home)]
    started = time.perf_counter()
    done = subprocess.run(
        command, input=json.dumps(payload), capture_output=True, text=True, env=env, timeout=60
    )
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        raise RuntimeError(f"hook {event} exited {done.returncode}: {done.stderr[-500:]}")
    return elapsed, done.stdout


def _injected(stdout: str) -> str:
    if not stdout.strip():
        return ""
    value = json.loads(stdout)
    text = value.get("hookSpecificOutput", {}).get("additionalContext", "")
    return text if isinstance(text, str) else ""


def _stats(times: list[float], sizes: list[int] | None = None) -> dict[str, Any]:
    ordered = sorted(times)

    def at(q: float) -> float:
        return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000, 1)

    out: dict[str, Any] = {"runs": len(times), "p50_ms": at(0.5), "p95_ms": at(0.95)}
    out["max_ms"] = round(ordered[-1] * 1000, 1)
    if sizes is not None:
        out["bytes_mean"] = round(sum(sizes) / len(sizes), 1)
        out["bytes_max"] = max(sizes)
    return out


def _stop_started_owner(home: Path) -> None:
    """Stop the owner a hook started (it may still be coming up) and wait for it to exit."""
    marker = home / "hooks" / "owner-starting.json"
    try:
        pid = int(json.loads(marker.read_text())["pid"])
    except (OSError, ValueError, KeyError):
        return
    if pid_alive(pid):
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + 60
    while pid_alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    marker.unlink(missing_ok=True)
    for name in ("owner.json", "owner.sock"):
        (home / name).unlink(missing_ok=True)


def _transcript_turn(path: Path, i: int) -> None:
    """A user and an assistant turn that say something new (a checkpoint stores them)."""
    note = synthetic_memories(i + 1, seed=i)[i]["content"]
    with path.open("a", encoding="utf-8") as handle:
        for kind, text in (
            ("user", f"Look into this: {note}"),
            ("assistant", f"Checked step {i}: the fix holds, and I added a regression test."),
        ):
            handle.write(json.dumps({"type": kind, "message": {"content": text}}) + "\n")


def run_bench_hooks(runs: int, embedding: str, embedder: Embedder, memories: int) -> dict[str, Any]:
    _compile_bytecode()
    result: dict[str, Any] = {"runs": runs, "embedding": embedding, "machine_ms": machine_ms()}
    # other work on a shared machine's cores shows in every new process: say how busy it was
    result["load_average_1m"] = {"start": round(os.getloadavg()[0], 2)}
    with tempfile.TemporaryDirectory(prefix="graphmem-bench-hooks-") as tmp:
        project = Path(tmp) / "project"
        (project / ".git").mkdir(parents=True)
        shutil.copytree(ROOT / "docs", project / "docs")
        home = project / ".graphmem"
        settings = load_settings(home, environ={}, overrides={"extract_on_write": False})
        with GraphMemory(settings, embedder=embedder) as gm:
            _seed(gm, memories)
            stats = gm.stats()
            result["store"] = {"memories": stats.total, "embedding_space": stats.embedding_space}
        env = {k: v for k, v in os.environ.items() if not k.startswith("GRAPHMEM_")}
        env.update(environ(embedding), GRAPHMEM_EXTRACT_ON_WRITE="false")
        session = {"session_id": "bench", "cwd": str(project)}

        no_owner: dict[str, list[float]] = {"session-start": [], "prompt-submit": []}
        for i in range(runs):
            for event in no_owner:
                payload = {**session, "prompt": RELATED[i % len(RELATED)]}
                elapsed, stdout = _hook(home, event, payload, env)
                if stdout.strip():
                    raise RuntimeError(f"{event} injected without an owner: {stdout[:200]}")
                no_owner[event].append(elapsed)
                _stop_started_owner(home)
        result["no_owner"] = {event: _stats(times) for event, times in no_owner.items()}

        os.environ.update(environ(embedding), GRAPHMEM_EXTRACT_ON_WRITE="false")
        start_owner(home)
        try:
            _hook(home, "prompt-submit", {**session, "prompt": RELATED[0]}, env)  # warm
            result["owner_running"], result["relevance"] = _with_owner(home, runs, session, env)
        finally:
            stop_owner(home)
    result["load_average_1m"]["end"] = round(os.getloadavg()[0], 2)
    return result


def _with_owner(
    home: Path, runs: int, session: dict[str, Any], env: dict[str, str]
) -> tuple[dict[str, Any], dict[str, Any]]:
    out: dict[str, Any] = {}
    times: list[float] = []
    sizes: list[int] = []
    for _ in range(runs):
        elapsed, stdout = _hook(home, "session-start", {**session, "source": "startup"}, env)
        times.append(elapsed)
        sizes.append(len(_injected(stdout)))
    out["session-start"] = _stats(times, sizes)

    relevance: dict[str, Any] = {"prompts": []}
    for label, prompts in (("related", RELATED), ("unrelated", UNRELATED)):
        times, sizes = [], []
        for i in range(max(runs, len(prompts))):  # every prompt once, for the relevance
            prompt = prompts[i % len(prompts)]
            elapsed, stdout = _hook(home, "prompt-submit", {**session, "prompt": prompt}, env)
            times.append(elapsed)
            sizes.append(len(_injected(stdout)))
            if i < len(prompts):
                relevance["prompts"].append(
                    {"prompt": prompt, "related": label == "related", "injected": sizes[-1]}
                )
        out[f"prompt-submit ({label})"] = _stats(times, sizes)
    related = [p for p in relevance["prompts"] if p["related"]]
    unrelated = [p for p in relevance["prompts"] if not p["related"]]
    relevance["related_injected"] = f"{sum(p['injected'] > 0 for p in related)}/{len(related)}"
    relevance["unrelated_silent"] = f"{sum(p['injected'] == 0 for p in unrelated)}/{len(unrelated)}"

    path = home.parent / "transcript.jsonl"
    for event in ("stop", "pre-compact"):
        times = []
        for i in range(runs):
            _transcript_turn(path, i + (0 if event == "stop" else runs))
            payload = {**session, "transcript_path": str(path)}
            times.append(_hook(home, event, payload, env)[0])
        out[event] = _stats(times)
    times = []
    for i in range(runs):
        _transcript_turn(path, 10_000 + i)
        payload = {**session, "session_id": f"bench-end-{i}", "transcript_path": str(path)}
        times.append(_hook(home, "session-end", payload, env)[0])
    out["session-end"] = _stats(times)
    return out, relevance
