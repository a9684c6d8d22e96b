"""LongMemEval `_S` session retrieval, by the official protocol (`src/retrieval` of LongMemEval).

Per question, one temp store holds only that question's haystack: every user turn is a memory
dated by its session and tagged with the session id. Turns are ranked by the system, the ranking
is folded into sessions by first appearance, and session-level recall_any@k, recall_all@k and
ndcg_any@k are scored. As in the official turn-level run, a session is relevant when its id
contains "answer" and one of its user turns has the answer: the questions answered only by the
assistant (most of single-session-assistant) have no relevant user-side session and are skipped,
like the `_abs` (abstention) questions. recall_any and recall_all match the official script;
ndcg_any here is the standard nDCG over sessions, where the official one scores the turns up to
the k-th distinct session, so it reads a little differently.
"""

from __future__ import annotations

import gzip
import json
import re
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from eval.metrics import mean, ndcg, recall_all, recall_any
from eval.systems import GRAPH, needs_entities
from graphmem import open_store
from graphmem.embeddings.base import Embedder
from graphmem.models import Hit

KS = (5, 10)
MAX_LIMIT = 1000  # graphmem.errors.check_limit's ceiling: ask for every turn the system ranks
_DATE = re.compile(r"(\d{4})[/-](\d{1,2})[/-](\d{1,2})(?:\D*?(\d{1,2}):(\d{2}))?")


def load(path: Path) -> list[dict[str, Any]]:
    """The question list, gzipped or not."""
    raw = Path(path).read_bytes()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    data: list[dict[str, Any]] = json.loads(raw)
    return data


def parse_date(text: str) -> datetime | None:
    """'2023/05/20 (Sat) 02:21' and its variants (dashes, no weekday, no time, ISO); None if
    the text holds no date, so the memory is stored undated rather than the question lost."""
    match = _DATE.search(text or "")
    if match:
        year, month, day, hour, minute = (int(g) if g else 0 for g in match.groups())
        try:
            return datetime(year, month, day, hour, minute)
        except ValueError:
            pass
    try:
        return datetime.fromisoformat(text.strip())
    except (ValueError, AttributeError):
        return None


def relevant_sessions(entry: dict[str, Any]) -> set[str]:
    """Answer sessions with the answer on the user side: what a user-turn index can find."""
    return {
        sid
        for sid, turns in zip(
            entry["haystack_session_ids"], entry["haystack_sessions"], strict=True
        )
        if "answer" in sid and any(t["role"] == "user" and t.get("has_answer") for t in turns)
    }


def scorable(entry: dict[str, Any]) -> bool:
    return not entry["question_id"].endswith("_abs") and bool(relevant_sessions(entry))


def user_turns(entry: dict[str, Any]) -> list[dict[str, Any]]:
    """One memory per user turn of the haystack, in order."""
    out = []
    sessions = zip(
        entry["haystack_session_ids"],
        entry["haystack_dates"],
        entry["haystack_sessions"],
        strict=True,
    )
    for sid, date, turns in sessions:
        when = parse_date(date)
        for turn in turns:
            if turn["role"] != "user" or not turn["content"].strip():
                continue
            memory = {"content": turn["content"], "session_id": sid, "metadata": {"session": sid}}
            if when is not None:
                memory["created_at"] = when
            out.append(memory)
    return out


def rank_sessions(turn_sessions: Iterable[str]) -> list[str]:
    """Sessions in the order their first turn appears in the turn ranking."""
    return list(dict.fromkeys(s for s in turn_sessions if s))


def score(sessions: Sequence[str], relevant: set[str]) -> dict[str, float]:
    """Session-level metrics at every k; ndcg_any is binary nDCG over the session ranking."""
    gains = dict.fromkeys(relevant, 1.0)
    out = {}
    for k in KS:
        out[f"recall_any@{k}"] = recall_any(sessions, relevant, k)
        out[f"recall_all@{k}"] = recall_all(sessions, relevant, k)
        out[f"ndcg_any@{k}"] = ndcg(sessions, gains, k)
    return out


def select(
    entries: Sequence[dict[str, Any]], *, limit: int | None = None, per_type: int | None = None
) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """The scorable questions among the first `limit`, at most `per_type` of each type, and
    how many were skipped and why."""
    skipped: dict[str, int] = defaultdict(int)
    taken: dict[str, int] = defaultdict(int)
    chosen = []
    for entry in entries[:limit]:
        if entry["question_id"].endswith("_abs"):
            skipped["abstention"] += 1
        elif not relevant_sessions(entry):
            skipped["no_user_side_evidence"] += 1
        elif per_type is None or taken[entry["question_type"]] < per_type:
            taken[entry["question_type"]] += 1
            chosen.append(entry)
    return chosen, dict(skipped)


def run(
    data: Path,
    systems: Sequence[str],
    *,
    embedder: Embedder,
    limit_questions: int | None = None,
    per_type: int | None = None,
    progress: Callable[[str], None] = lambda _: None,
) -> dict[str, dict[str, Any]]:
    entries, skipped = select(load(data), limit=limit_questions, per_type=per_type)
    scores: dict[str, dict[str, dict[str, list[float]]]] = {
        s: defaultdict(lambda: defaultdict(list)) for s in systems
    }
    ranked_sessions: dict[str, list[int]] = defaultdict(list)
    counts: dict[str, int] = defaultdict(int)
    timing: dict[str, Any] = {"store_s": 0.0, "extract_s": 0.0, "recall_s": defaultdict(float)}
    turns_stored = 0
    for n, entry in enumerate(entries, 1):
        relevant = relevant_sessions(entry)
        qtype = entry["question_type"]
        counts[qtype] += 1
        memories = user_turns(entry)
        turns_stored += len(memories)
        limit = min(MAX_LIMIT, len(memories))
        with (
            tempfile.TemporaryDirectory(prefix="longmemeval-") as tmp,
            open_store(tmp, embedder=embedder, extract_on_write=False) as gm,
        ):
            started = time.perf_counter()
            gm.remember_many(memories)
            timing["store_s"] += time.perf_counter() - started
            if needs_entities(systems):
                started = time.perf_counter()
                gm.index_triples()
                timing["extract_s"] += time.perf_counter() - started
            question = str(entry["question"])
            for system in systems:
                started = time.perf_counter()
                hits: Sequence[Hit] = (
                    gm.recall_multihop(question, limit=limit).hits
                    if system == GRAPH
                    else gm.recall(question, limit=limit, recipe=system).hits
                )
                timing["recall_s"][system] += time.perf_counter() - started
                sessions = rank_sessions(h.memory.metadata.get("session", "") for h in hits)
                ranked_sessions[system].append(len(sessions))
                for name, value in score(sessions, relevant).items():
                    scores[system][name][qtype].append(value)
                    scores[system][name]["overall"].append(value)
        progress(f"{entry['question_id']} ({qtype}): {n}/{len(entries)} questions")
    n = len(entries)
    results = {}
    for system in systems:
        results[system] = {
            "benchmark": "longmemeval_s",
            "system": system,
            "data": str(data),
            "n_questions": n,
            "per_type_questions": dict(counts),
            "skipped": skipped,
            "metrics": {
                name: {
                    "overall": mean(by_type["overall"]),
                    **{t: mean(v) for t, v in sorted(by_type.items()) if t != "overall"},
                }
                for name, by_type in scores[system].items()
            },
            "sessions_ranked_min": min(ranked_sessions[system], default=0),
            "questions_under_10_sessions": sum(c < 10 for c in ranked_sessions[system]),
            "turns_stored": turns_stored,
            "embedding_space": embedder.space.label,
            "store_seconds": round(timing["store_s"], 2),
            "extract_seconds": round(timing["extract_s"], 2) if system == GRAPH else None,
            "recall_ms_mean": round(1000 * timing["recall_s"][system] / max(n, 1), 2),
        }
    return results
