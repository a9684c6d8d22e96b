"""Project-document search on a real docs folder (GOV.UK runbooks, alert playbooks, ADRs).

One temp store indexes the folder once; every question of `eval/data/docs_questions.json` is then
asked of each doc-search recipe. A question names the sections that answer it (path relative to
the folder, and the deepest heading), so two levels are scored:

- doc: the rank of the first hit whose path is an expected one, read off the hit list as the
  user sees it (sections, several per document possible): hit@1, hit@5, MRR@10;
- section: whether one of the top 5 hits is an expected section, i.e. same path and either the
  same heading or a breadcrumb below the title naming it (the hit sits inside that section).

Headings compare case-insensitively with whitespace collapsed and Markdown code ticks and
`{#anchor}` attributes dropped, so an indexer that renders headings as plain text still matches.
The questions are for measuring, never tuning: see eval/data/docs_questions.json.
"""

from __future__ import annotations

import json
import re
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from eval import embedding as embedding_spec
from eval.metrics import mean, percentile, recall_any, reciprocal_rank
from graphmem import open_store
from graphmem.embeddings.factory import make_embedder

LIMIT = 10  # hits asked for per question
DOC_KS = (1, 5)
MRR_K = 10
SECTION_K = 5
DETAIL_K = 5
METRICS = ("doc_hit@1", "doc_hit@5", "doc_mrr@10", "section_hit@5")
_ANCHOR = re.compile(r"\s*\{#[^}]*\}\s*$")


def load_questions(path: Path) -> dict[str, Any]:
    """The questions file: {corpus, root, questions: [{id, kind, phrasing, question, expected}]}."""
    data: dict[str, Any] = json.loads(Path(path).read_text(encoding="utf-8"))
    return data


def norm_heading(text: str | None) -> str:
    """A heading as compared: no anchor attribute or code ticks, whitespace collapsed, casefolded."""
    return " ".join(_ANCHOR.sub("", text or "").replace("`", "").split()).casefold()


def section_matches(hit: Any, expected: Mapping[str, str]) -> bool:
    """Whether `hit` is the expected section or lies inside it (a breadcrumb below the title)."""
    if hit.path != expected["path"]:
        return False
    want = norm_heading(expected["heading"])
    crumbs = [norm_heading(c) for c in (hit.breadcrumb or [])]
    if norm_heading(hit.heading) == want or want in crumbs[1:]:
        return True
    # text before the first heading is named by the title: a hit with no heading below it
    return crumbs[:1] == [want] and len(crumbs) == 1


def score_question(hits: Sequence[Any], expected: Sequence[Mapping[str, str]]) -> dict[str, float]:
    """Every metric of one question from its ranked hits."""
    paths = [h.path for h in hits]
    wanted = {e["path"] for e in expected}
    scores = {f"doc_hit@{k}": recall_any(paths, wanted, k) for k in DOC_KS}
    scores[f"doc_mrr@{MRR_K}"] = reciprocal_rank(paths, wanted, MRR_K)
    scores[f"section_hit@{SECTION_K}"] = float(
        any(section_matches(h, e) for h in hits[:SECTION_K] for e in expected)
    )
    return scores


def summarise(rows: Iterable[tuple[Mapping[str, str], Mapping[str, float]]]) -> dict[str, Any]:
    """Mean of each metric overall, by kind and by phrasing, with the number of questions."""
    groups: dict[str, dict[str, list[Mapping[str, float]]]] = {
        "overall": defaultdict(list),
        "by_kind": defaultdict(list),
        "by_phrasing": defaultdict(list),
    }
    for question, scores in rows:
        groups["overall"]["all"].append(scores)
        groups["by_kind"][question["kind"]].append(scores)
        groups["by_phrasing"][question["phrasing"]].append(scores)

    def agg(scored: list[Mapping[str, float]]) -> dict[str, Any]:
        return {"n": len(scored), **{m: mean([s[m] for s in scored]) for m in METRICS}}

    return {
        "overall": agg(groups["overall"]["all"]),
        "by_kind": {k: agg(v) for k, v in sorted(groups["by_kind"].items())},
        "by_phrasing": {k: agg(v) for k, v in sorted(groups["by_phrasing"].items())},
    }


def evaluate(
    gm: Any,
    data: Path,
    questions: Sequence[Mapping[str, Any]],
    systems: Sequence[str],
    *,
    details: bool = False,
    progress: Callable[[str], None] = lambda _: None,
) -> dict[str, Any]:
    """Index `data` in the open store `gm` once, then score every question on every system."""
    started = time.perf_counter()
    report = gm.index_documents([data])
    index_seconds = round(time.perf_counter() - started, 2)
    dump = getattr(report, "model_dump", None)
    progress(f"indexed {data} in {index_seconds} s")
    systems_out: dict[str, Any] = {}
    detail_rows: dict[str, list[dict[str, Any]]] = {}
    for system in systems:
        rows = []
        timings: list[float] = []
        detail_rows[system] = []
        for question in questions:
            started = time.perf_counter()
            hits = list(gm.search_docs(question["question"], limit=LIMIT, recipe=system).hits)
            timings.append(1000 * (time.perf_counter() - started))
            scores = score_question(hits, question["expected"])
            rows.append((question, scores))
            if details:
                detail_rows[system].append(
                    {
                        "id": question["id"],
                        "kind": question["kind"],
                        "phrasing": question["phrasing"],
                        "question": question["question"],
                        "expected": [[e["path"], e["heading"]] for e in question["expected"]],
                        "top": [[h.path, h.heading] for h in hits[:DETAIL_K]],
                        **scores,
                    }
                )
        summary = summarise(rows)
        summary["search_ms"] = {
            "p50": percentile(timings, 50) if timings else 0.0,
            "p95": percentile(timings, 95) if timings else 0.0,
            "mean": round(mean(timings), 2),
        }
        systems_out[system] = summary
        overall = summary["overall"]
        progress(
            f"{system}: doc hit@5 {overall['doc_hit@5']}, section hit@5 {overall['section_hit@5']}"
        )
    out: dict[str, Any] = {
        "index_seconds": index_seconds,
        "index_report": _counted(dump(mode="json")) if callable(dump) else None,
        "systems": systems_out,
    }
    if details:
        out["details"] = detail_rows
    return out


def run_docs(
    data: Path,
    questions: Path,
    systems: Sequence[str],
    embedding: str,
    limit: int | None = None,
    *,
    details: bool = False,
    progress: Callable[[str], None] = lambda _: None,
) -> dict[str, Any]:
    """Open a fresh temp store with the `embedding` spec's embedder, index `data`, ask the first
    `limit` questions of the `questions` file on each system and return the scores."""
    data = Path(data).resolve()  # the store resolves a relative root against its own project
    if not data.is_dir():
        raise FileNotFoundError(f"no docs folder at {data}")
    spec = load_questions(questions)
    chosen = spec["questions"][:limit]
    embedder = make_embedder(embedding_spec.config(embedding))
    with (
        tempfile.TemporaryDirectory(prefix="docs-eval-") as tmp,
        open_store(tmp, embedder=embedder, extract_on_write=False) as gm,
    ):
        scored = evaluate(gm, data, chosen, systems, details=details, progress=progress)
    space = getattr(embedder, "space", None)
    return {
        "corpus": spec.get("corpus"),
        "data": str(data),
        "questions": len(chosen),
        "embedding": embedding,
        "embedding_space": getattr(space, "label", None),
        **scored,
    }


def _counted(report: dict[str, Any]) -> dict[str, Any]:
    """The index report with its lists of paths counted: the results file stays readable."""
    return {k: len(v) if isinstance(v, list) else v for k, v in report.items()}
