"""The steward's findings scored against what eval/steward.py injected.

Per family (duplicates, conflicts, stale) and per finding kind:

- a duplicate or conflict finding is right when two of its targets are a pair the benchmark made
  (reported under any kind of its family: a paraphrase called `exact_duplicate` is still a
  duplicate); a stale finding when its target has that very kind of staleness;
- precision counts the findings that touch a memory the benchmark made or chose a role for
  (the injected set, hard negatives and counter-examples included); the others, findings on the
  real text alone, are reported apart (`outside`, with `precision_all` over every finding);
- recall: the injected problems some finding got right, per kind of problem, with the kinds they
  were reported as;
- wrong automatic actions: findings the policy applied on its own that are not right.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from itertools import combinations
from typing import Any

from eval.steward import Pair, Truth

FAMILIES: dict[str, tuple[str, ...]] = {
    "duplicates": ("exact_duplicate", "near_duplicate", "similar"),
    "conflicts": ("fact_conflict", "canonical_conflict", "decision_dead_end"),
    "stale": ("drifted_citation", "unverified", "expired_working", "live_middle"),
}
FAMILY_OF = {kind: family for family, kinds in FAMILIES.items() for kind in kinds}
TARGETS = {  # family -> (metric, floor) the benchmark holds the steward to
    "duplicates": {"precision": 0.90, "recall": 0.80},
    "conflicts": {"precision": 0.80, "recall": 0.60},
    "stale": {"precision": 0.95},
}


def _ratio(hits: int, total: int) -> float | None:
    return round(hits / total, 4) if total else None


def _pairs(targets: Sequence[str]) -> Iterator[Pair]:
    for a, b in combinations(dict.fromkeys(targets), 2):
        yield frozenset({a, b})


def _truth_of(family: str, truth: Truth) -> Mapping[Any, str]:
    if family == "stale":
        return truth.stale
    return truth.duplicates if family == "duplicates" else truth.conflicts


def matches(finding: Any, truth: Truth) -> list[Any]:
    """The injected problems a finding gets right (pairs, or memory ids for stale)."""
    family = FAMILY_OF.get(finding.kind)
    if family is None:
        return []
    if family == "stale":
        return [t for t in finding.targets if truth.stale.get(t) == finding.kind]
    known = _truth_of(family, truth)
    return [p for p in _pairs(finding.targets) if p in known]


def _negatives(family: str, finding: Any, truth: Truth) -> bool:
    """Whether the finding names a pair (or a memory) the benchmark put there as a trap."""
    if family == "stale":
        return any(t in truth.fresh for t in finding.targets)
    traps = truth.hard_negatives if family == "duplicates" else truth.conflict_negatives
    return any(p in traps for p in _pairs(finding.targets))


def score_family(family: str, findings: Sequence[Any], truth: Truth) -> dict[str, Any]:
    """Precision, recall and their parts for one family (see the module's doc)."""
    kinds = FAMILIES[family]
    injected = truth.injected()
    got = [f for f in findings if f.kind in kinds]
    right = [bool(matches(f, truth)) for f in got]
    judged = [any(t in injected for t in f.targets) for f in got]
    found: dict[Any, Counter[str]] = {}
    for f in got:
        for item in matches(f, truth):
            found.setdefault(item, Counter())[f.kind] += 1
    expected = _truth_of(family, truth)
    by_truth = {}
    for kind in sorted(set(expected.values())):
        items = [item for item, k in expected.items() if k == kind]
        reported: Counter[str] = Counter()
        for item in items:
            reported.update(found.get(item, Counter()).keys())
        hits = sum(item in found for item in items)
        by_truth[kind] = {"n": len(items), "found": hits, "recall": _ratio(hits, len(items)),
                          "reported_as": dict(reported.most_common())}  # fmt: skip
    by_kind = {}
    for kind in kinds:
        rows = [(r, j) for f, r, j in zip(got, right, judged, strict=True) if f.kind == kind]
        if rows:
            by_kind[kind] = {
                "findings": len(rows), "right": sum(r for r, _ in rows),
                "judged": sum(j for _, j in rows), "outside": sum(not j for _, j in rows),
                "precision": _ratio(sum(r for r, _ in rows), sum(j for _, j in rows)),
            }  # fmt: skip
    tp = sum(right)
    return {
        "findings": len(got),
        "judged": sum(judged),
        "right": tp,
        "precision": _ratio(tp, sum(judged)),
        "precision_all": _ratio(tp, len(got)),
        "recall": _ratio(len(found), len(expected)),
        "injected": len(expected),
        "found": len(found),
        "wrong_on_injected": sum(j and not r for r, j in zip(right, judged, strict=True)),
        "outside": sum(not j for j in judged),
        "traps_reported": sum(_negatives(family, f, truth) for f in got),
        "by_truth": by_truth,
        "by_kind": by_kind,
    }


def duplicates_by_source(
    findings: Sequence[Any], truth: Truth, source_of: Mapping[str, str]
) -> dict[str, dict[str, Any]]:
    """Duplicate precision and recall per corpus the texts came from (a finding by its first
    target's): rules that hold on chat, on long chat histories and on engineering docs alike,
    not on one of them."""
    injected = truth.injected()
    got = [f for f in findings if FAMILY_OF.get(f.kind) == "duplicates"]
    out: dict[str, dict[str, Any]] = {}
    for source in sorted({source_of[min(p)] for p in truth.duplicates}):
        mine = [f for f in got if source_of.get(f.targets[0]) == source]
        judged = [f for f in mine if any(t in injected for t in f.targets)]
        right = sum(bool(matches(f, truth)) for f in judged)
        expected = [p for p in truth.duplicates if source_of[min(p)] == source]
        found = {p for f in mine for p in matches(f, truth)}
        out[source] = {
            "findings": len(mine), "precision": _ratio(right, len(judged)),
            "injected": len(expected), "recall": _ratio(len(found & set(expected)), len(expected)),
        }  # fmt: skip
    return out


def wrong_automatic(findings: Sequence[Any], truth: Truth) -> dict[str, Any]:
    """Findings applied by the policy on its own, and those of them that are not right."""
    applied = [f for f in findings if getattr(f, "auto", False) and f.status == "applied"]
    wrong = [f for f in applied if not matches(f, truth)]
    return {
        "applied": len(applied),
        "by_kind": dict(Counter(f.kind for f in applied).most_common()),
        "wrong": len(wrong),
        "wrong_by_kind": dict(Counter(f.kind for f in wrong).most_common()),
        "wrong_examples": [{"kind": f.kind, "targets": list(f.targets)} for f in wrong[:10]],
    }


def score(findings: Sequence[Any], truth: Truth) -> dict[str, Any]:
    """Every family's scores, the findings of other scopes by kind, and the targets met."""
    families = {family: score_family(family, findings, truth) for family in FAMILIES}
    met = {
        f"{family}_{metric}": {
            "target": floor,
            "value": families[family][metric],
            "met": (families[family][metric] or 0.0) >= floor,
        }
        for family, floors in TARGETS.items()
        for metric, floor in floors.items()
    }
    return {
        "families": families,
        "other_findings": dict(Counter(f.kind for f in findings if f.kind not in FAMILY_OF)),
        "targets": met,
    }
