"""Retrieval metrics shared by the runners."""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence


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


def recall_any(ranked: Sequence[str], relevant: Collection[str], k: int) -> float:
    """1 if any relevant id is in the top k (LongMemEval's recall_any@k)."""
    top = set(ranked[:k])
    return float(any(r in top for r in relevant))


def recall_all(ranked: Sequence[str], relevant: Collection[str], k: int) -> float:
    """1 if every relevant id is in the top k (LongMemEval's recall_all@k): the strict one."""
    top = set(ranked[:k])
    return float(bool(relevant) and all(r in top for r in relevant))


def recall_at(ranked: Sequence[str], relevant: Collection[str], k: int) -> float:
    """Fraction of the relevant ids found in the top k; 0 when nothing is relevant (trec_eval)."""
    if not relevant:
        return 0.0
    top = set(ranked[:k])
    return sum(r in top for r in relevant) / len(relevant)


def reciprocal_rank(ranked: Sequence[str], relevant: Collection[str], k: int) -> float:
    """1/rank of the first relevant id in the top k, 0 if none is there (MRR@k once averaged)."""
    for rank, item in enumerate(ranked[:k], 1):
        if item in relevant:
            return 1.0 / rank
    return 0.0


def ndcg(ranked: Sequence[str], gains: Mapping[str, float], k: int) -> float:
    """nDCG@k with graded gains and the standard 1/log2(rank + 1) discount; ids missing from
    `gains` or with gain <= 0 count 0, and the ideal ranking puts every positive gain first."""
    positive = sorted((g for g in gains.values() if g > 0), reverse=True)[:k]
    ideal = sum(g / math.log2(i + 2) for i, g in enumerate(positive))
    if ideal == 0:
        return 0.0
    dcg = sum(max(gains.get(d, 0.0), 0.0) / math.log2(i + 2) for i, d in enumerate(ranked[:k]))
    return dcg / ideal
