"""HookOps, the service of GraphMemory that answers `graphmem hook` in the owner.

Results are plain dicts and strings: the hook that asks is a stdlib-only process that renders
them without models. Text to inject is phrased as short facts ("Decision (2026-11-30): ...",
"Dead end: ... — failed because ...") and capped well under the clients' limits (Claude Code
shows 10,000 characters of hook context whole).
"""

from __future__ import annotations

import json
import logging
import re
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from graphmem.agents.hook import save_pending
from graphmem.agents.owner_link import hook_log
from graphmem.agents.transcript import (
    HOOKS_DIR,
    last_assistant_turn,
    load_state,
    read_since,
    save_state,
)
from graphmem.documents.search import DocRecipe
from graphmem.documents.search import search as search_sections
from graphmem.errors import EmbeddingError, InvalidInput
from graphmem.jobs import Jobs
from graphmem.models import MemoryFilter
from graphmem.recall.config import get_recipe
from graphmem.recall.pipeline import hydrate, rank
from graphmem.recall.query import embedding_text
from graphmem.recall.relevance import RelevanceBar
from graphmem.service_context import Service, ServiceContext
from graphmem.sessions.statements import statements

if TYPE_CHECKING:
    from graphmem.knowledge.ops import KnowledgeOps
    from graphmem.models import DocHit, Hit, Memory
    from graphmem.sessions.checkpoint import CheckpointOps
    from graphmem.sessions.ops import SessionOps

log = logging.getLogger("graphmem.hooks")
SESSION_BUDGET = 4000  # characters injected at session start
PROMPT_BUDGET = 1500  # ... with a prompt, which happens many times a session
LINE_CHARS = 300
SESSION_LIMIT = 10  # canonical entries, dead ends and decisions read for session start, each
PROMPT_MEMORIES = 3
PROMPT_SECTIONS = 2
MAX_QUERY = 2000
PENDING = "pending"
# a prompt's candidates: 30 by meaning and 30 by words, of memories and of document chunks
PROMPT_RECALL = {"vector_candidates": 30, "keyword_candidates": 30, "w_answer": 0.0}
PROMPT_DOCS = DocRecipe("hook", vector_candidates=30, keyword_candidates=30)
_WORD = re.compile(r"\w{3,}")
_SPACES = re.compile(r"\s+")


class HookOps(Service):
    """Context for session start and each prompt; checkpoints of the transcript."""

    def __init__(
        self,
        context: ServiceContext,
        knowledge: KnowledgeOps,
        checkpoints: CheckpointOps,
        sessions: SessionOps,
    ) -> None:
        super().__init__(context)
        self._knowledge = knowledge
        self._checkpoints = checkpoints
        self._sessions = sessions
        self._jobs = Jobs("graphmem-hooks")  # its thread starts with the first job
        self._pending_failed: set[str] = set()  # captures that failed: the next owner's
        self._pending_queued = False
        self._locks: dict[str, threading.Lock] = {}
        self._locks_lock = threading.Lock()

    @property
    def relevance(self) -> RelevanceBar:
        """The bar a memory or section clears to go with a prompt: the store's, which recall's
        dead-end warnings clear too (replace it on the facade to move both)."""
        return self.context.relevance

    # -- served to `graphmem hook` ----------------------------------------------------------

    def hook_context(
        self, event: str, payload: Mapping[str, Any], *, client: str | None = None
    ) -> dict[str, Any]:
        """What to add to the agent's context: {"text", "items"}; text "" when nothing is
        worth it. `session-start`: canonical knowledge, open dead ends, recent decisions.
        `prompt-submit`: the memories and document sections that clear the relevance bar."""
        self._take_on_pending()
        if event == "session-start":
            text, items = self._session_context()
        elif event == "prompt-submit":
            text, items = self._prompt_context(payload)
        else:
            raise InvalidInput(f"no context for event {event!r}", event=event)
        return {"event": event, "text": text, "items": items}

    def hook_checkpoint(
        self, payload: Mapping[str, Any], *, client: str | None = None, event: str = "stop"
    ) -> dict[str, Any]:
        """Checkpoint the transcript at `payload["transcript_path"]` since this session's last
        capture; the CheckpointResult's fields, with `turns` read."""
        return self._capture(payload, client, event)

    def end_session(
        self, payload: Mapping[str, Any], *, client: str | None = None
    ) -> dict[str, Any]:
        """Queue what ending a session does (`_session_ended`) and return at once: a client
        gives its session-end hooks ~1.5 s in all. The request is written to `hooks/pending/`
        first, so an owner stopped before the job ran leaves it to the next one."""
        queued = save_pending(self.settings.home, "session-end", client or "", payload)
        if queued:
            self._jobs.submit(self._run_pending)
        return {"queued": queued, "session_id": payload.get("session_id")}

    def hook_jobs_done(self, timeout: float | None = None) -> bool:
        """Wait for queued session ends and pending captures; False when `timeout` ran out."""
        return self._jobs.wait(timeout)

    # -- session start ----------------------------------------------------------------------

    def _session_context(self) -> tuple[str, list[dict[str, Any]]]:
        canonical = self._knowledge.list_canonical_knowledge(limit=SESSION_LIMIT).memories
        dead_ends = [
            m
            for m in self._knowledge.project_bank_view("dead_ends", limit=SESSION_LIMIT).memories
            if m.lifecycle in ("active", "canonical")
        ]
        decisions = self._knowledge.project_bank_view("decisions", limit=SESSION_LIMIT).memories
        chosen: dict[str, Memory] = {}
        for memory in [*canonical, *dead_ends, *decisions]:
            chosen.setdefault(memory.id, memory)
        if not chosen:
            return "", []
        header = (
            "graphmem, this project's shared memory (recall it for more; do not retry a dead end):"
        )
        text, used = _budgeted(header, [(m, fact(m)) for m in chosen.values()], SESSION_BUDGET)
        items = [{"kind": "memory", "id": m.id, "memory_kind": m.kind} for m in used]
        return text, items

    # -- each prompt ------------------------------------------------------------------------

    def _prompt_context(self, payload: Mapping[str, Any]) -> tuple[str, list[dict[str, Any]]]:
        prompt = payload.get("prompt")
        query = prompt.strip()[:MAX_QUERY] if isinstance(prompt, str) else ""
        if len(_WORD.findall(query)) < 2 or query.startswith("/"):  # "ok", "/compact"
            return "", []
        hits, found_sections = self._related(query)
        session = payload.get("session_id")
        memories: list[Hit] = [
            hit
            for hit in hits
            if self.relevance.memory(hit.explain)
            and hit.memory.lifecycle in ("active", "canonical")
            and not (hit.memory.kind == "checkpoint" and hit.memory.session_id == session)
        ][:PROMPT_MEMORIES]
        sections = [s for s in found_sections if self.relevance.section(s.explain)]
        sections = sections[:PROMPT_SECTIONS]
        if not memories and not sections:
            return "", []
        lines: list[tuple[Any, str]] = [(h, fact(h.memory, query)) for h in memories]
        lines += [(s, section_fact(s)) for s in sections]
        text, used = _budgeted("graphmem: memories related to this prompt:", lines, PROMPT_BUDGET)
        items: list[dict[str, Any]] = []
        for thing in used:
            if hasattr(thing, "memory"):
                items.append({"kind": "memory", "id": thing.memory.id, "score": thing.score})
            else:
                items.append({"kind": "section", "path": thing.path, "score": thing.score})
        return text, items

    def _related(self, query: str) -> tuple[list[Hit], list[DocHit]]:
        """Memories and document sections for a prompt, explained: what recall with scope
        "all" finds, for a third of its time (a prompt waits for it). The query is embedded
        once for both, the candidate pools are smaller (the bar reads raw cosines, which a
        smaller pool does not change), and recall's warnings and answer hop are left out."""
        space = self.embedder.space
        try:
            vector = self.embedder.embed_query(embedding_text(query, self.store.memories.speakers))
        except EmbeddingError:  # keyword-only scores have no cosine for the bar to read
            return [], []
        config = get_recipe(self.settings.recall_recipe).model_copy(update=PROMPT_RECALL)
        everything = MemoryFilter()
        ranked, scored_by = rank(self.store, query, vector, space, everything, config)
        hits = hydrate(self.store, ranked[:8], everything, scored_by, explain=True)
        sections: list[DocHit] = []
        if space.name in self.store.documents.spaces():  # else embedded by another model
            sections = search_sections(
                self.store, query, vector, space, PROMPT_DOCS, limit=4, explain=True
            )
        return hits, sections

    # -- checkpoints ------------------------------------------------------------------------

    def _capture(
        self, payload: Mapping[str, Any], client: str | None, event: str
    ) -> dict[str, Any]:
        """Read the session's transcript since its last capture and checkpoint it; the position
        moves on once the text is stored or found to repeat the last checkpoint."""
        session_id, path = payload.get("session_id"), payload.get("transcript_path")
        if not isinstance(session_id, str) or not isinstance(path, str) or not session_id:
            return {"stored": False, "reason": "no_transcript"}
        home = self.settings.home
        with self._session_lock(session_id):
            state = load_state(home, session_id)
            offset = state.get("offset", 0) if state.get("transcript") == path else 0
            try:
                capture = read_since(Path(path), int(offset))
            except OSError as exc:
                return {"stored": False, "reason": "no_transcript", "error": str(exc)}
            result: dict[str, Any] = {"stored": False, "reason": "empty", "memory_id": None}
            if capture.text:
                result = self._checkpoints.checkpoint(
                    capture.text, session_id=session_id, client=client
                ).model_dump()
            save_state(home, session_id, {
                "transcript": path, "offset": capture.end, "at": time.time(), "event": event,
                "checkpoint": result.get("memory_id") or state.get("checkpoint"),
            })  # fmt: skip
        return {**result, "turns": capture.turns}

    def _session_ended(self, payload: dict[str, Any], client: str | None) -> None:
        """Everything ending a session does, run in the owner's background from
        `hooks/pending/`: its final checkpoint, then `close_session` over the agent's last turn
        (its summing up), applying the low-risk changes and queueing the rest for review."""
        result = self._capture(payload, client, "session-end")
        log.info("session %s ended: %s", payload.get("session_id"), result.get("reason"))
        session_id, path = payload.get("session_id"), payload.get("transcript_path")
        if not isinstance(session_id, str) or not isinstance(path, str):
            return
        try:
            summary = last_assistant_turn(Path(path))
        except OSError:
            return
        if len(statements(summary)) < 2:  # a "Done." is no summary
            return
        cwd = payload.get("cwd")
        plan = self._sessions.close_session(
            summary, session_id=session_id, client=client, cwd=cwd if isinstance(cwd, str) else None,
            dry_run=False, auto_apply_low_risk=True,
        )  # fmt: skip
        applied = sum(a.applied for a in plan.actions)
        log.info("session %s closed: %d applied, %d for review", session_id, applied,
                 sum(bool(a.review_item) for a in plan.actions))  # fmt: skip

    def _take_on_pending(self) -> None:
        """Queue the captures hooks left while no owner ran (graphmem.agents.hook): one run of
        them at a time, on the hook worker's one thread."""
        folder = self.settings.home / HOOKS_DIR / PENDING
        failed = self._pending_failed
        try:
            waiting = any(not e.name.startswith(".") and e.name not in failed
                          for e in folder.iterdir())  # fmt: skip
        except OSError:
            return
        if waiting and not self._pending_queued:
            self._pending_queued = True
            self._jobs.submit(self._run_pending)

    def _run_pending(self) -> None:
        """Run the waiting captures, oldest first. A record that cannot be read is dropped; one
        that failed otherwise (the store closing under it, say) waits for the next owner."""
        self._pending_queued = False  # what arrives from now on queues another run
        failed = self._pending_failed
        folder = self.settings.home / HOOKS_DIR / PENDING
        for path in sorted(folder.glob("*.json")):
            if path.name.startswith(".") or path.name in failed:
                continue
            try:
                record = json.loads(path.read_text(encoding="utf-8"))
                payload, client = dict(record["payload"]), record.get("client") or None
            except (OSError, ValueError, KeyError, TypeError) as exc:
                hook_log(self.settings.home, f"pending capture {path.name} unreadable: {exc}")
                path.unlink(missing_ok=True)
                continue
            try:
                if record.get("event") == "session-end":
                    self._session_ended(payload, client)
                else:
                    self._capture(payload, client, str(record.get("event")))
            except Exception as exc:  # a background job: nobody else would hear of it
                failed.add(path.name)
                log.exception("pending capture %s failed", path.name)
                hook_log(self.settings.home, f"pending capture {path.name} failed: {exc}")
                continue
            path.unlink(missing_ok=True)

    def _session_lock(self, session_id: str) -> threading.Lock:
        with self._locks_lock:
            return self._locks.setdefault(session_id, threading.Lock())


# -- phrasing ---------------------------------------------------------------------------------


def fact(memory: Memory, query: str | None = None) -> str:
    """One memory as one short line: "Decision (2026-11-30): ... — because ..."."""
    record = memory.metadata.get("record")
    record = record if isinstance(record, dict) else {}
    day = memory.created_at.date().isoformat()
    canonical = "Canonical " if memory.lifecycle == "canonical" else ""
    if memory.kind == "decision" and record.get("decision"):
        status = record.get("status")
        label = f"decision ({day}{f', {status}' if status not in (None, 'accepted') else ''})"
        text = record["decision"] + _part(" — because ", record.get("rationale"))
    elif memory.kind == "dead_end" and record.get("attempted_approach"):
        label = "dead end"
        text = record["attempted_approach"] + _part(" — failed because ", record.get("why_failed"))
        text += _part("; instead: ", record.get("alternative"))
    elif memory.kind == "incident" and record.get("summary"):
        label = f"incident ({day})"
        text = record["summary"] + _part(" — root cause: ", record.get("root_cause"))
    elif memory.kind == "runbook" and record.get("trigger"):
        label, text = "runbook", f"when {record['trigger']} (steps: graphmem runbooks)"
    else:
        label = {"checkpoint": f"earlier session ({day})", "note": "note"}.get(
            memory.kind, f"{memory.kind.replace('_', ' ')} ({day})"
        )
        text = _excerpt(memory.content, query) if memory.kind == "checkpoint" else memory.content
        if memory.title and memory.kind != "checkpoint":
            text = f"{memory.title}: {text}"
    label = canonical + label if canonical else label[0].upper() + label[1:]
    return _squash(f"{label}: {text}", LINE_CHARS)


def section_fact(hit: DocHit) -> str:
    where = f"{hit.path} › {hit.heading}" if hit.heading else hit.path
    return _squash(f"Doc {where} (lines {hit.lines[0]}-{hit.lines[-1]}): {hit.snippet}", LINE_CHARS)


def _part(prefix: str, value: Any) -> str:
    return f"{prefix}{value}" if isinstance(value, str) and value.strip() else ""


def _excerpt(content: str, query: str | None) -> str:
    """The paragraph of a checkpoint that shares most words with the prompt."""
    paragraphs = [p for p in content.split("\n\n") if p.strip()] or [content]
    if not query:
        return paragraphs[-1]
    wanted = {w.lower() for w in _WORD.findall(query)}
    return max(paragraphs, key=lambda p: len(wanted & {w.lower() for w in _WORD.findall(p)}))


def _squash(text: str, limit: int) -> str:
    flat = _SPACES.sub(" ", text).strip()
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def _budgeted(header: str, lines: list[tuple[Any, str]], budget: int) -> tuple[str, list[Any]]:
    """The header and as many lines as fit in `budget` characters, in order; what they were."""
    out, used, size = [header], [], len(header)
    for thing, line in lines:
        if size + len(line) + 3 > budget:
            continue
        out.append(f"- {line}")
        used.append(thing)
        size += len(line) + 3
    return ("\n".join(out), used) if used else ("", [])
