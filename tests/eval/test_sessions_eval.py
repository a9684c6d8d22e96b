"""The session-closing cases are well formed, and the runner's arithmetic holds: matching statements,
both accuracies, mode accuracy, wrong auto-applies and missed statements, on inline cases with the
hash embedder (and on a canned plan, where no rule of graphmem's is involved)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

import eval.__main__ as cli
from eval import sessions
from graphmem.models import MEMORY_KINDS, MEMORY_TYPES

CASES = Path(__file__).parents[2] / "eval" / "data" / "sessions.json"
CASE_KEYS = {"id", "mode", "expected_mode", "existing", "summary", "expected"}
OPTIONAL_KEYS = {"context"}
EXPECTED_KEYS = {"contains", "kind", "action", "target"}


def _cases() -> list[dict[str, Any]]:
    return sessions.load_cases(CASES)


def test_there_are_enough_cases_of_every_mode() -> None:
    cases = _cases()
    per_mode = Counter(c["expected_mode"] for c in cases)
    inferred = Counter(c["expected_mode"] for c in cases if c["mode"] is None)

    assert len(cases) >= 45
    assert set(per_mode) == set(sessions.MODES) and min(per_mode.values()) >= 6
    assert set(inferred) == set(sessions.MODES)  # every mode is inferred somewhere
    assert 0.3 <= sum(inferred.values()) / len(cases) <= 0.7  # about half given
    assert len({c["id"] for c in cases}) == len(cases)


@pytest.mark.parametrize("case", _cases(), ids=lambda c: c["id"])
def test_each_case_is_well_formed(case: dict[str, Any]) -> None:
    assert CASE_KEYS <= set(case) <= CASE_KEYS | OPTIONAL_KEYS
    assert case["expected_mode"] in sessions.MODES
    assert case["mode"] in (None, case["expected_mode"])
    assert case["summary"].strip() and case["expected"]
    for memory in case["existing"]:
        assert {"content", "kind", "type"} <= set(memory) <= {
            "content", "kind", "type", "context", "service"
        }  # fmt: skip
        assert memory["kind"] in MEMORY_KINDS and memory["type"] in MEMORY_TYPES
    summary = case["summary"].casefold()
    for exp in case["expected"]:
        assert set(exp) == EXPECTED_KEYS
        assert exp["kind"] in sessions.KINDS and exp["action"] in sessions.ACTIONS
        if exp["action"] in sessions.TARGETED:
            assert isinstance(exp["target"], int) and 0 <= exp["target"] < len(case["existing"])
        else:
            assert exp["target"] is None
        # the substring names one statement: it occurs exactly once in the summary
        assert summary.count(exp["contains"].casefold()) == 1, exp["contains"]


def test_every_action_is_expected_somewhere() -> None:
    found = Counter(e["action"] for c in _cases() for e in c["expected"])

    assert set(found) == set(sessions.ACTIONS)
    assert all(found[a] >= 4 for a in sessions.TARGETED)


# -- the runner's arithmetic ------------------------------------------------------------------

INLINE = [
    {
        # all three right: an exact restatement merges, a decision and a to-do
        "id": "right",
        "mode": None,
        "expected_mode": "coding",
        "existing": [
            {
                "content": "Note that the staging database listens on port 5433, not 5432",
                "kind": "note",
                "type": "semantic",
            },
        ],
        "summary": "- Note that the staging database listens on port 5433, not 5432\n"
        "- We decided to use Kafka for the audit log\n"
        "- TODO: add an alert on the session table's size\n",
        "expected": [
            {"contains": "port 5433", "kind": "caveat", "action": "merge_into", "target": 0},
            {"contains": "kafka", "kind": "decision", "action": "new", "target": None},
            {"contains": "add an alert", "kind": "todo", "action": "raw_only", "target": None},
        ],
    },
    {
        # the mode is wrong; the restatement is merged (and applied) where `new` was expected;
        # the dead end's kind is wrong; one statement is not in the summary at all
        "id": "wrong",
        "mode": None,
        "expected_mode": "incident",
        "existing": [
            {
                "content": "We decided to use Kafka for the audit log",
                "kind": "decision",
                "type": "semantic",
            },
        ],
        "summary": "- We decided to use Kafka for the audit log\n"
        "- Tried a bigger pool but it didn't help\n",
        "expected": [
            {"contains": "kafka", "kind": "decision", "action": "new", "target": None},
            {"contains": "bigger pool", "kind": "caveat", "action": "new", "target": None},
            {"contains": "not in the summary", "kind": "fact", "action": "new", "target": None},
        ],
    },
]


@pytest.fixture
def inline_result(tmp_path: Path) -> dict[str, Any]:
    path = tmp_path / "cases.json"
    path.write_text(json.dumps({"cases": INLINE}), encoding="utf-8")
    return sessions.run_sessions(path, "hash")


def test_the_overall_scores_count_every_expected_statement(inline_result: dict[str, Any]) -> None:
    overall = inline_result["overall"]

    assert overall["cases"] == 2 and overall["statements"] == 6
    assert overall["kind_accuracy"] == round(4 / 6, 4)  # the dead end's kind and the missed one
    assert overall["action_accuracy"] == round(4 / 6, 4)  # the merge and the missed one
    assert overall["inferred_cases"] == 2 and overall["mode_accuracy"] == 0.5
    assert overall["wrong_auto_applies"] == 1 and overall["missed"] == 1
    assert overall["unlisted_statements"] == 0


def test_scores_split_by_mode_and_by_expected_action(inline_result: dict[str, Any]) -> None:
    coding, incident = inline_result["by_mode"]["coding"], inline_result["by_mode"]["incident"]
    by_action = inline_result["by_expected_action"]

    assert coding["kind_accuracy"] == coding["action_accuracy"] == coding["mode_accuracy"] == 1.0
    assert incident["statements"] == 3 and incident["mode_accuracy"] == 0.0
    assert incident["wrong_auto_applies"] == 1 and incident["missed"] == 1
    assert by_action["new"]["n"] == 4 and by_action["new"]["action_accuracy"] == 0.5
    assert by_action["new"]["got"] == {"new": 2, "merge_into": 1, "missing": 1}
    assert by_action["merge_into"] == {
        "n": 1, "kind_accuracy": 1.0, "action_accuracy": 1.0, "got": {"merge_into": 1}
    }  # fmt: skip
    assert inline_result["mode_confusion"] == {"coding->coding": 1, "incident->coding": 1}


def test_every_mistake_is_listed_with_what_was_expected(inline_result: dict[str, Any]) -> None:
    found = {(m["case"], m["what"], m["expected"], m["got"]) for m in inline_result["mistakes"]}

    assert found == {
        ("wrong", "action", "new", "merge_into[0]"),
        ("wrong", "wrong_auto_apply", "listed", "merge_into[0]"),
        ("wrong", "kind", "caveat", "dead_end"),
        ("wrong", "missed", "fact / new", None),
        ("wrong", "mode", "incident", "coding"),
    }


def test_the_subcommand_writes_its_results(tmp_path: Path) -> None:
    path, out = tmp_path / "cases.json", tmp_path / "out" / "sessions.json"
    path.write_text(json.dumps({"cases": INLINE[:1]}), encoding="utf-8")

    assert (
        cli.main(["sessions", "--cases", str(path), "--embedding", "hash", "--out", str(out)]) == 0
    )
    assert json.loads(out.read_text())["overall"]["action_accuracy"] == 1.0


# -- on a canned plan -------------------------------------------------------------------------


def act(statement: str, kind: str, action: str, target: str | None = None, applied: bool = True):
    return SimpleNamespace(statement=statement, statement_kind=kind, action=action, target=target,
                           applied=applied, rationale="canned")  # fmt: skip


def test_a_target_must_be_the_expected_memory_and_unlisted_changes_count_as_wrong() -> None:
    case = {
        "id": "canned", "mode": "cleanup", "expected_mode": "cleanup",
        "expected": [
            {"contains": "SAME", "kind": "fact", "action": "update", "target": 1},
            {"contains": "same", "kind": "fact", "action": "update", "target": 0},
        ],
    }  # fmt: skip
    plan = SimpleNamespace(
        mode="cleanup",
        actions=[
            act("the same thing, once", "fact", "update", "id-a"),  # wants target 1: wrong, applied
            act("the same thing, twice", "fact", "update", "id-a"),  # wants target 0 (id-a): right
            act("an unlisted restatement", "fact", "merge_into", "id-b"),  # applied, unlisted
            act("an unlisted promotion", "fact", "promote", "id-b", applied=False),  # not applied
        ],
    )

    scored = sessions.score_case(case, ["id-a", "id-b"], plan)

    # matching is case-insensitive, and a second expectation takes the next statement
    assert [r["action_ok"] for r in scored["rows"]] == [False, True]
    assert scored["wrong_auto_applies"] == 2 and scored["unlisted"] == 2
    assert not scored["inferred"]
    wrong = [(m["statement"], m["expected"]) for m in scored["mistakes"] if m["what"] != "action"]
    assert wrong == [
        ("the same thing, once", "listed"),
        ("an unlisted restatement", "unlisted"),
    ]
