"""Closing sessions, measured: how well `close_session` reads end-of-session summaries.

Each case of `eval/data/sessions.json` is a summary, the memories already in the store, and the
kind and action a careful reviewer wants for each statement. A fresh temp store gets the case's
memories, then closes the session (`dry_run=False`, `auto_apply_low_risk=True`, the case's mode or
none). An expected statement is matched to the planned action whose statement contains its
`contains` substring (case-insensitively; a plan action already matched to another expectation is
used only when no other contains it). Scored:

- kind accuracy: the statement's kind is the expected one;
- action accuracy: the action is the expected one, and for update, merge_into, supersede and
  promote its target is the expected existing memory;
- mode accuracy, over the cases whose mode is left to inference;
- wrong auto-applies (target 0): actions applied on their own that change an existing memory
  (merge_into, supersede, update, promote) where the case expected another action or target, or
  nothing at all (a statement it does not list);
- missed: expected statements no planned action contains. They count as wrong in both accuracies.

The cases measure the rules; they must never be fitted to them.
"""

from __future__ import annotations

import json
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, get_args

from eval import embedding as embedding_spec
from graphmem import open_store
from graphmem.embeddings.factory import make_embedder
from graphmem.sessions.models import SESSION_MODES, ActionKind, StatementKind

KINDS: tuple[str, ...] = get_args(StatementKind)
ACTIONS: tuple[str, ...] = get_args(ActionKind)
MODES: tuple[str, ...] = SESSION_MODES
TARGETED = frozenset({"update", "merge_into", "supersede", "promote"})  # act on an existing memory


def load_cases(path: Path) -> list[dict[str, Any]]:
    """The cases of a sessions file: {about, labels, cases: [...]} or a bare list."""
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    cases: list[dict[str, Any]] = data["cases"] if isinstance(data, dict) else data
    return cases


def _label(action: str | None, target: int | str | None) -> str:
    """An action as the mistakes list shows it: `supersede[0]`, `new`, `update[?]`."""
    if action is None:
        return "missing"
    return f"{action}[{target}]" if action in TARGETED else action


def match(expected: Sequence[Mapping[str, Any]], actions: Sequence[Any]) -> list[int | None]:
    """For each expectation, the index of the planned action whose statement contains its
    substring (case-insensitive); an unclaimed action first, None when none contains it."""
    claimed: set[int] = set()
    out: list[int | None] = []
    for exp in expected:
        needle = exp["contains"].casefold()
        found = [i for i, a in enumerate(actions) if needle in a.statement.casefold()]
        free = [i for i in found if i not in claimed]
        pick = (free or found or [None])[0]
        if pick is not None:
            claimed.add(pick)
        out.append(pick)
    return out


def score_case(
    case: Mapping[str, Any],
    ids: Sequence[str],
    plan: Any,
    cosine: Callable[[str, str], float | None] | None = None,
) -> dict[str, Any]:
    """One case's statements scored against its plan; `ids` are the ids its existing memories got
    in the store, in order. With `cosine(statement, memory_id)`, a wrong action where a change to
    an existing memory was expected says how close the statement came to that memory."""
    index = {memory_id: i for i, memory_id in enumerate(ids)}
    actions = list(plan.actions)
    expected = case["expected"]
    picks = match(expected, actions)
    rows: list[dict[str, Any]] = []
    mistakes: list[dict[str, Any]] = []
    base = {"case": case["id"], "mode": case["expected_mode"]}
    for exp, pick in zip(expected, picks, strict=True):
        want = _label(exp["action"], exp.get("target"))
        if pick is None:
            rows.append({"expected": exp, "found": False, "kind_ok": False, "action_ok": False,
                         "got_kind": None, "got_action": None})  # fmt: skip
            mistakes.append({**base, "what": "missed", "statement": exp["contains"],
                             "expected": f"{exp['kind']} / {want}", "got": None})  # fmt: skip
            continue
        got = actions[pick]
        got_target = index.get(got.target, "?") if got.target else None
        kind_ok = got.statement_kind == exp["kind"]
        action_ok = got.action == exp["action"] and (
            got.action not in TARGETED or got_target == exp.get("target")
        )
        rows.append({"expected": exp, "found": True, "kind_ok": kind_ok, "action_ok": action_ok,
                     "got_kind": got.statement_kind, "got_action": got.action})  # fmt: skip
        if not kind_ok:
            mistakes.append({**base, "what": "kind", "statement": got.statement,
                             "expected": exp["kind"], "got": got.statement_kind})  # fmt: skip
        if not action_ok:
            mistakes.append({**base, "what": "action", "statement": got.statement, "expected": want,
                             "got": _label(got.action, got_target), "rationale": got.rationale})  # fmt: skip
            if cosine is not None and exp["action"] in TARGETED:
                mistakes[-1]["cosine_to_expected"] = cosine(got.statement, ids[exp["target"]])
    judged = {
        pick: ok["action_ok"] for pick, ok in zip(picks, rows, strict=True) if pick is not None
    }
    wrong_applies = 0
    for i, action in enumerate(actions):
        if action.applied and action.action in TARGETED and not judged.get(i, False):
            wrong_applies += 1
            target = index.get(action.target, "?") if action.target else None
            mistakes.append({**base, "what": "wrong_auto_apply", "statement": action.statement,
                             "expected": "listed" if i in judged else "unlisted",
                             "got": _label(action.action, target)})  # fmt: skip
    inferred = case.get("mode") is None
    mode_ok = plan.mode == case["expected_mode"]
    if inferred and not mode_ok:
        mistakes.append({**base, "what": "mode", "statement": None,
                         "expected": case["expected_mode"], "got": plan.mode})  # fmt: skip
    return {
        "id": case["id"],
        "mode": case["expected_mode"],
        "inferred": inferred,
        "mode_ok": mode_ok,
        "got_mode": plan.mode,
        "rows": rows,
        "wrong_auto_applies": wrong_applies,
        "applied": sum(1 for a in actions if a.applied),
        "unlisted": len(actions) - len({p for p in picks if p is not None}),
        "mistakes": mistakes,
    }


def _ratio(hits: int, total: int) -> float | None:
    return round(hits / total, 4) if total else None


def aggregate(scored: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Totals over scored cases: statements, both accuracies, mode accuracy, wrong auto-applies,
    missed, and how many actions were applied and how many the cases do not list."""
    rows = [r for case in scored for r in case["rows"]]
    inferred = [case for case in scored if case["inferred"]]
    return {
        "cases": len(scored),
        "statements": len(rows),
        "kind_accuracy": _ratio(sum(r["kind_ok"] for r in rows), len(rows)),
        "action_accuracy": _ratio(sum(r["action_ok"] for r in rows), len(rows)),
        "inferred_cases": len(inferred),
        "mode_accuracy": _ratio(sum(c["mode_ok"] for c in inferred), len(inferred)),
        "wrong_auto_applies": sum(c["wrong_auto_applies"] for c in scored),
        "missed": sum(not r["found"] for r in rows),
        "applied": sum(c["applied"] for c in scored),
        "unlisted_statements": sum(c["unlisted"] for c in scored),
    }


def _by(rows: Sequence[Mapping[str, Any]], key: str) -> dict[str, Any]:
    """Rows grouped by their expected `key` (kind or action), with what they got instead."""
    groups: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for row in rows:
        groups[row["expected"][key]].append(row)
    return {
        name: {
            "n": len(group),
            "kind_accuracy": _ratio(sum(r["kind_ok"] for r in group), len(group)),
            "action_accuracy": _ratio(sum(r["action_ok"] for r in group), len(group)),
            "got": dict(Counter(r[f"got_{key}"] or "missing" for r in group).most_common()),
        }
        for name, group in sorted(groups.items())
    }


def summarise(scored: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Overall, per mode (the case's true mode), per expected action and kind, and mistakes."""
    rows = [r for case in scored for r in case["rows"]]
    modes = sorted({c["mode"] for c in scored}, key=MODES.index)
    return {
        "overall": aggregate(scored),
        "by_mode": {m: aggregate([c for c in scored if c["mode"] == m]) for m in modes},
        "by_expected_action": _by(rows, "action"),
        "by_expected_kind": _by(rows, "kind"),
        "mode_confusion": dict(
            Counter(f"{c['mode']}->{c['got_mode']}" for c in scored if c["inferred"])
        ),
        "mistakes": [m for c in scored for m in c["mistakes"]],
    }


def run_case(gm: Any, case: Mapping[str, Any]) -> dict[str, Any]:
    """Store the case's existing memories in the open store `gm`, close its session, score it."""
    ids = [
        gm.remember(
            m["content"], kind=m["kind"], type=m["type"], context=m.get("context"),
            service=m.get("service"),
        ).id
        for m in case["existing"]
    ]  # fmt: skip
    plan = gm.close_session(
        case["summary"], mode=case.get("mode"), context=case.get("context"), dry_run=False,
        auto_apply_low_risk=True,
    )  # fmt: skip
    return score_case(case, ids, plan, cosine=lambda text, memory_id: _cosine(gm, text, memory_id))


def _cosine(gm: Any, text: str, memory_id: str) -> float | None:
    """The raw cosine the planner sees between `text` and a memory (the better of the memory's
    own and its best passage's); None when recall does not bring the memory back."""
    for hit in gm.recall(text, limit=20, explain=True).hits:
        if hit.memory.id == memory_id:
            parts = hit.explain or {}
            return round(max(parts.get("cosine_raw") or 0.0, parts.get("passage_raw") or 0.0), 3)
    return None


def run_sessions(
    cases_path: Path,
    embedding: str,
    *,
    progress: Callable[[str], None] = lambda _: None,
) -> dict[str, Any]:
    """Every case of `cases_path` in its own fresh temp store, embedding with the `embedding` spec
    (`local`, `hash`, `provider:model`); returns the scores (see the module's doc)."""
    cases = load_cases(cases_path)
    embedder = make_embedder(embedding_spec.config(embedding))
    started = time.perf_counter()
    scored = []
    for case in cases:
        with (
            tempfile.TemporaryDirectory(prefix="sessions-eval-") as tmp,
            open_store(tmp, embedder=embedder, extract_on_write=False) as gm,
        ):
            scored.append(run_case(gm, case))
        wrong = len(scored[-1]["mistakes"])
        progress(f"{case['id']}: {wrong} mistake{'s' if wrong != 1 else ''}")
    space = getattr(embedder, "space", None)
    return {
        "cases_file": str(cases_path),
        "embedding": embedding,
        "embedding_space": getattr(space, "label", None),
        "seconds": round(time.perf_counter() - started, 2),
        **summarise(scored),
    }
