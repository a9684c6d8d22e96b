"""Retrieval metrics shared by the runners."""

from __future__ import annotations

from collections.abc import Sequence


def evidence_recall(ranked: Sequence[str], evidence: Sequence[str], k: int) -> float:
    """Fraction of evidence ids found in the top k; no evidence counts as found (LoCoMo's rule)."""
    if not evidence:
        return 1.0
    top = set(ranked[:k])
    return sum(e in top for e in evidence) / len(evidence)


def percentile(values: Sequence[float], pct: float) -> float:
    """Nearest-rank percentile, rounded to 0.01."""
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, round(pct / 100 * (len(ordered) - 1)))], 2)


def mean(values: Sequence[float]) -> float:
    return round(sum(values) / len(values), 4) if values else 0.0
