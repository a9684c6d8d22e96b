"""LoCoMo, LongMemEval and a BEIR collection in one run, reduced to a table of headline metrics.

`QUICK` is the slice CI's regression gate runs (tests/eval/test_regression_gate.py) and
eval/baseline_quick.json records: small enough for about a minute on 2 cores with the local
embedder, and still every benchmark, every system and every LoCoMo category.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from eval import beir, locomo, longmemeval
from graphmem.embeddings.base import Embedder

SYSTEMS = ("hybrid", "bm25", "vector")
BENCHMARKS = ("locomo", "longmemeval", "beir")
LOCOMO_R10 = ("overall", *locomo.CATEGORIES.values())


@dataclass(frozen=True)
class Slice:
    """How much of each benchmark to run; None means all of it."""

    locomo_conversations: int | None = None
    longmemeval_per_type: int | None = None  # scorable questions of each question type
    beir_queries: int | None = None
    beir_distractors: int | None = None  # None indexes the whole corpus
    beir_seed: int = 0


FULL = Slice()
# LongMemEval's sample is sorted by question type, so its first N questions would cover one or
# two types; one scorable question per type gates every type, and each costs ~240 turns to embed.
# The Cranfield slice embeds the relevant documents of its 60 queries (316) and a seeded sample of
# 100 others: the whole corpus (1,400 documents of ~190 tokens) took 60 s at best to embed on
# 2 cores, and 2-3 minutes beside another busy process; the results say "sliced".
QUICK = Slice(locomo_conversations=1, longmemeval_per_type=1, beir_queries=60, beir_distractors=100)


@dataclass(frozen=True)
class Paths:
    locomo: Path
    longmemeval: Path
    beir: Path

    @classmethod
    def under(cls, bench: Path) -> Paths:
        """The files of the shared bench folder (../shared/bench from the project root)."""
        return cls(
            locomo=bench / "locomo" / "locomo_dev.json",
            longmemeval=bench / "longmemeval" / "longmemeval_s_sample48.json.gz",
            beir=bench / "ir" / "cranfield",
        )


def run_suite(
    paths: Paths,
    *,
    embedder: Embedder,
    part: Slice = FULL,
    systems: Sequence[str] = SYSTEMS,
    locomo_systems: Sequence[str] | None = None,
    benchmarks: Sequence[str] = BENCHMARKS,
    progress: Callable[[str], None] = lambda _: None,
) -> dict[str, Any]:
    """Each of `benchmarks` for `systems` (LoCoMo for `locomo_systems`, which may add
    "graph")."""
    results: dict[str, Any] = {"slice": asdict(part), "embedding_space": embedder.space.label}
    runs: dict[str, Callable[[], Any]] = {
        "locomo": lambda: locomo.run(
            paths.locomo,
            list(locomo_systems or systems),
            embedder=embedder,
            limit_conversations=part.locomo_conversations,
            progress=progress,
        ),
        "longmemeval": lambda: longmemeval.run(
            paths.longmemeval,
            list(systems),
            embedder=embedder,
            per_type=part.longmemeval_per_type,
            progress=progress,
        ),
        "beir": lambda: beir.run(
            paths.beir,
            list(systems),
            embedder=embedder,
            limit_queries=part.beir_queries,
            distractors=part.beir_distractors,
            seed=part.beir_seed,
            progress=progress,
        ),
    }
    for name in benchmarks:
        results[name] = runs[name]()
    results["headline"] = headline(results)
    return results


def headline(results: dict[str, Any]) -> dict[str, dict[str, float]]:
    """benchmark/system -> the metrics the table shows and the gate compares."""
    rows: dict[str, dict[str, float]] = {}
    for system, res in results.get("locomo", {}).items():
        rows[f"locomo/{system}"] = {f"R@10 {c}": res["recall"]["10"][c] for c in LOCOMO_R10}
    for system, res in results.get("longmemeval", {}).items():
        rows[f"longmemeval/{system}"] = {
            name: res["metrics"][name]["overall"] for name in ("recall_all@5", "ndcg_any@5")
        }
    for system, res in results.get("beir", {}).items():
        name = res["benchmark"].split(":", 1)[-1]
        rows[f"{name}/{system}"] = dict(res["metrics"])
    return rows


def table(
    rows: dict[str, dict[str, float]], baseline: dict[str, dict[str, float]] | None = None
) -> str:
    """A block per benchmark, a line per system; with a baseline, each cell is 'now (baseline)'."""
    lines: list[str] = []
    groups: dict[str, list[str]] = {}
    for key in rows:
        groups.setdefault(key.split("/")[0], []).append(key)
    for bench, keys in groups.items():
        names = list(rows[keys[0]])
        width = max(16 if baseline else 7, *(len(n) for n in names))
        lines.append(f"{bench:<12} {'system':<8} " + " ".join(f"{n:>{width}}" for n in names))
        for key in keys:
            cells = []
            for name in names:
                now = rows[key].get(name)
                was = (baseline or {}).get(key, {}).get(name)
                cell = "-" if now is None else f"{now:.4f}"
                cells.append(cell + (f" ({was:.4f})" if was is not None else ""))
            system = key.split("/", 1)[1]
            lines.append(f"{'':<12} {system:<8} " + " ".join(f"{c:>{width}}" for c in cells))
    return "\n".join(lines)


def question_counts(results: dict[str, Any]) -> dict[str, dict[str, int]]:
    """benchmark/system -> how many questions each headline metric averages."""
    counts: dict[str, dict[str, int]] = {}
    for system, res in results.get("locomo", {}).items():
        per = {"overall": res["n_questions"], **res["per_category_questions"]}
        counts[f"locomo/{system}"] = {f"R@10 {c}": per[c] for c in LOCOMO_R10}
    for system, res in results.get("longmemeval", {}).items():
        names = ("recall_all@5", "ndcg_any@5")
        counts[f"longmemeval/{system}"] = dict.fromkeys(names, res["n_questions"])
    for system, res in results.get("beir", {}).items():
        name = res["benchmark"].split(":", 1)[-1]
        counts[f"{name}/{system}"] = dict.fromkeys(res["metrics"], res["n_queries"])
    return counts


def regressions(
    rows: dict[str, dict[str, float]],
    baseline: dict[str, dict[str, float]],
    tolerance: float,
    counts: dict[str, dict[str, int]] | None = None,
) -> list[str]:
    """Every baseline metric that dropped by more than `tolerance`, or is missing now.

    With `counts` (questions per metric), a metric may also drop by one question's worth:
    a category of 13 questions cannot tell a 0.02 change from one answer flipped by the last
    bits of a vector, which differ between CPUs (int8 products with and without VNNI)."""
    found = []
    for key, metrics in baseline.items():
        for name, was in metrics.items():
            now = rows.get(key, {}).get(name)
            questions = (counts or {}).get(key, {}).get(name)
            allowed = max(tolerance, 1 / questions) if questions else tolerance
            if now is None:
                found.append(f"{key} {name}: missing (baseline {was:.4f})")
            elif now < was - allowed - 1e-4:  # metrics are kept to four places
                found.append(f"{key} {name}: {now:.4f} < baseline {was:.4f} - {allowed:.4g}")
    return found
