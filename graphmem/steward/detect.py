"""What the steward looks for, as reads of the graph and of the memories' vectors. Each detector
returns `Proposal`s: a kind, the targets, the evidence, a confidence and the action it proposes.
Nothing here writes.

Duplicates are compared within one kind, type and context only (a decision is not a duplicate of
the incident it mentions, nor what happened of what was learnt from it), by cosine on the stored
vectors in blocks, so a group of n memories costs n^2 dot products in memory-bounded steps. Two
memories that both name entities must share one to be duplicates: a close cosine between "deploy
with ArgoCD" and "deploy with Flux" is a topic, not a copy. Nor is a close cosine between texts
sharing few words (`duplicate_overlap`): a summary and the paragraph it sums up.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import numpy as np
import numpy.typing as npt

from graphmem.extractors.normalise import normalise as normalise_name
from graphmem.foreground import FOREGROUND
from graphmem.models import as_utc
from graphmem.steward.entities import Suggestion
from graphmem.steward.models import SCOPE_OF, StewardPolicy

BLOCK = 1024  # rows compared at once: 1024 x n float32 scores stay a few MB at 10k
PROJECT_FROM = 20_000  # from this many memories in a group, pairs are screened projected first
PROJECTED_DIMS = 128
# what the screen's cosine may lose against the exact one: at most 0.025 over the 1,177 pairs
# from 0.85 of 12k texts of the steward benchmark under the local model (none lost at 0.04)
SCREEN_MARGIN = 0.04
MULTI_VALUED = 3  # a subject-predicate with more objects than this holds several at once
FACT_COSINE = 0.5  # two memories whose facts conflict are about one thing at least this much
KNOWLEDGE_KINDS = ("decision", "runbook", "dead_end", "postmortem")
_WORD = re.compile(r"[a-z0-9]+")
_PUNCT = re.compile(r"[^\w\s]")


@dataclass
class Proposal:
    kind: str
    targets: list[str]
    evidence: dict[str, Any]
    confidence: float
    action: str
    summary: str
    memories: list[str] = field(default_factory=list)  # the targets that are memories
    about: str = ""  # what beside its targets tells it apart (the name a wrong merge took in)

    @property
    def scope(self) -> str:
        return SCOPE_OF[self.kind]

    @property
    def fingerprint(self) -> str:
        """Which finding this is, whatever its evidence: its scope and its targets."""
        key = f"{self.scope}|{'|'.join(sorted(self.targets))}"
        if self.about:
            key += f"|{self.about}"
        return hashlib.sha256(key.encode()).hexdigest()[:32]

    @property
    def evidence_hash(self) -> str:
        """What it is filed for: a change here files it again. A suggestion about entities
        is decided once: whatever its evidence says later, a dismissed one stays dismissed."""
        evidence = {} if self.scope == "entities" else self.evidence
        key = json.dumps({"kind": self.kind, **evidence}, sort_keys=True, default=str)
        return hashlib.sha256(key.encode()).hexdigest()[:32]


@dataclass(frozen=True)
class Row:
    """A live memory as detection sees it."""

    id: str
    kind: str
    type: str
    context: str | None
    content: str
    title: str | None
    lifecycle: str
    importance: float
    accesses: int
    created_at: datetime

    @property
    def label(self) -> str:
        text = self.title or self.content
        return text if len(text) <= 60 else text[:59] + "…"


def rows_of(raw: Sequence[tuple[Any, ...]]) -> list[Row]:
    return [
        Row(i, k, ty, c, t or "", ti, lc, float(imp or 0.5), int(acc or 0), cr)
        for i, k, ty, c, t, ti, lc, imp, acc, cr in raw
    ]


def normalised(text: str) -> str:
    """The text with case, punctuation and spacing set aside: what makes two copies exact."""
    return " ".join(_PUNCT.sub(" ", text.lower()).split())


def _words(text: str) -> set[str]:
    return set(_WORD.findall(text.lower()))


def overlap(a: str, b: str) -> float:
    """Shared words over the words of both (Jaccard)."""
    first, second = _words(a), _words(b)
    union = first | second
    return len(first & second) / len(union) if union else 1.0


def keeper(rows: Sequence[Row]) -> Row:
    """The memory a merge keeps: canonical first, then the more important, the more used, the
    older."""
    return min(
        rows,
        key=lambda r: (r.lifecycle != "canonical", -r.importance, -r.accesses, r.created_at, r.id),
    )


# -- duplicates ------------------------------------------------------------------------------


def close_pairs(matrix: npt.NDArray[np.float32], floor: float) -> Iterator[tuple[int, int, float]]:
    """(i, j, cosine) with i < j of the rows whose cosine is at least `floor`.

    From PROJECT_FROM rows, each block is first screened in the matrix's PROJECTED_DIMS main
    directions (a third of the products), rows normalised there, at `floor - SCREEN_MARGIN`;
    only the pairs that pass are scored exactly."""
    n = len(matrix)
    screen = _projected(matrix) if n >= PROJECT_FROM else None
    for start in range(0, n, BLOCK):
        FOREGROUND.step_aside()
        if screen is None:
            block = matrix[start : start + BLOCK] @ matrix[start:].T
            rows, cols = np.nonzero(block >= floor)
            scores = block[rows, cols]
        else:
            rough = screen[start : start + BLOCK] @ screen[start:].T
            rows, cols = np.nonzero(rough >= floor - SCREEN_MARGIN)
            scores = np.einsum("ij,ij->i", matrix[start + rows], matrix[start + cols])
            keep = scores >= floor
            rows, cols, scores = rows[keep], cols[keep], scores[keep]
        for r, c, score in zip(rows.tolist(), cols.tolist(), scores.tolist(), strict=True):
            FOREGROUND.step_aside()
            i, j = start + r, start + c
            if i < j:
                yield i, j, float(score)


def _projected(matrix: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
    """The rows in the main directions of a sample of them, normalised."""
    sample = np.asarray(matrix[:: max(len(matrix) // 20_000, 1)], np.float64)
    _, directions = np.linalg.eigh(sample.T @ sample)  # ascending eigenvalues
    basis = np.ascontiguousarray(directions[:, ::-1][:, :PROJECTED_DIMS], np.float32)
    projected: npt.NDArray[np.float32] = matrix @ basis
    projected /= np.maximum(np.linalg.norm(projected, axis=1, keepdims=True), 1e-6)
    return projected


def duplicates(
    rows: Sequence[Row],
    vectors: dict[str, npt.NDArray[np.float32]],
    entities: dict[str, set[str]],
    policy: StewardPolicy,
    *,
    apart: set[frozenset[str]] = frozenset(),  # type: ignore[assignment]
) -> list[Proposal]:
    """Pairs of one kind, type and context, close in meaning and wording, naming the same things
    when both name any, and giving the same numbers (a number spelt out counts as its digits):
    "restore within 4 hours" and "within an hour", or eu-west-1 and eu-west-2, say different
    things however close the rest. Pairs in `apart` (a fact conflict) are never duplicates."""
    groups: dict[tuple[str, str, str | None], list[Row]] = defaultdict(list)
    for row in rows:
        groups[(row.kind, row.type, row.context)].append(row)
    found: list[Proposal] = []
    for group in groups.values():
        if len(group) < 2:
            continue
        copies: dict[str, list[Row]] = defaultdict(list)
        for row in group:
            FOREGROUND.step_aside()
            copies[normalised(row.content)].append(row)
        exact: set[frozenset[str]] = set()
        for same in copies.values():
            if len(same) < 2:
                continue
            kept = keeper(same)
            for row in same:
                if row.id != kept.id:
                    exact.add(frozenset((kept.id, row.id)))
                    found.append(_duplicate("exact_duplicate", kept, row, 1.0, 1.0, set()))
        embedded = [row for row in group if row.id in vectors]
        if len(embedded) < 2:
            continue
        matrix = np.stack([vectors[row.id] for row in embedded])
        for i, j, cosine in close_pairs(matrix, policy.duplicate_cosine):
            a, b = embedded[i], embedded[j]
            if frozenset((a.id, b.id)) in exact or frozenset((a.id, b.id)) in apart:
                continue
            if numbers(a.content) != numbers(b.content):
                continue
            ea, eb = entities.get(a.id, set()), entities.get(b.id, set())
            shared = ea & eb
            if ea and eb and not shared:
                continue  # close in meaning, about different things
            words = overlap(a.content, b.content)
            if words < policy.duplicate_overlap:
                continue  # one topic in other statements: a summary and what it sums up
            near = cosine >= policy.near_duplicate_cosine and words >= policy.near_duplicate_overlap
            kept = keeper((a, b))
            other = b if kept is a else a
            kind = "near_duplicate" if near else "similar"
            found.append(_duplicate(kind, kept, other, cosine, words, shared))
    return found


_UNITS = (
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen "
    "fifteen sixteen seventeen eighteen nineteen twenty"
)
_NUMBER_WORDS = {word: str(value) for value, word in enumerate(_UNITS.split(" "))} | {
    "thirty": "30", "forty": "40", "fifty": "50", "hundred": "100", "thousand": "1000",
}  # fmt: skip
_NUMBER_WORD = re.compile(rf"\b(?:{'|'.join(_NUMBER_WORDS)})\b")
_THOUSANDS = re.compile(r"(?<=\d),(?=\d{3}\b)")
_WITH_DIGIT = re.compile(r"[a-z0-9][a-z0-9.\-_/]*")


def numbers(text: str) -> frozenset[str]:
    """The words of a text that carry a digit (3, eu-west-1, v2.1, 12,000), number words read
    as digits: what two notes must share to say the same thing."""
    lowered = _THOUSANDS.sub("", text.lower())
    lowered = _NUMBER_WORD.sub(lambda m: _NUMBER_WORDS[m.group()], lowered)
    return frozenset(
        word.rstrip(".-_/")
        for word in _WITH_DIGIT.findall(lowered)
        if any(ch.isdigit() for ch in word)
    )


def _duplicate(
    kind: str, kept: Row, other: Row, cosine: float, words: float, shared: set[str]
) -> Proposal:
    what = {
        "exact_duplicate": "the same text as",
        "near_duplicate": "nearly the same as",
        "similar": "says what is said by",
    }[kind]
    confidence = (
        1.0 if kind == "exact_duplicate" else round(min(1.0, cosine * (0.9 + 0.1 * words)), 3)
    )
    return Proposal(
        kind=kind,
        targets=[kept.id, other.id],
        evidence={
            "cosine": round(cosine, 2),
            "word_overlap": round(words, 2),
            "shared_entities": sorted(shared)[:10],
            "kind": kept.kind,
            "context": kept.context,
        },
        confidence=confidence,
        action="merge",
        summary=f"{other.id} ({other.label!r}) is {what} {kept.id}: merge it into {kept.id}",
        memories=[kept.id, other.id],
    )


# -- conflicts -------------------------------------------------------------------------------


def fact_conflicts(
    facts: Sequence[tuple[str, str, str, str, str, str]],
    vectors: dict[str, npt.NDArray[np.float32]],
    single_valued: Sequence[str],
) -> list[Proposal]:
    """Two live memories giving one subject two objects of a predicate that holds one at a time
    (`single_valued`: "owned_by", not "uses"). Objects are compared by name, whatever their case
    and articles, and one that names more of the same ("role", "member role") refines the other
    rather than contradicting it. A subject with many objects of the predicate, or a memory that
    gives it two, says the predicate holds several here: no conflict."""
    functional = set(single_valued)
    by_pair: dict[tuple[str, str], dict[frozenset[str], set[str]]] = defaultdict(
        lambda: defaultdict(set)
    )
    names: dict[str, str] = {}
    object_names: dict[frozenset[str], str] = {}
    for memory_id, subject, predicate, _, subject_name, object_name in facts:
        FOREGROUND.step_aside()
        if predicate not in functional:
            continue
        key = _name_words(object_name)
        by_pair[(subject, predicate)][key].add(memory_id)
        names[subject] = subject_name
        object_names.setdefault(key, object_name)
    found: list[Proposal] = []
    for (subject, predicate), objects in by_pair.items():
        if not 2 <= len(objects) <= MULTI_VALUED:
            continue
        holders: dict[str, set[frozenset[str]]] = defaultdict(set)
        for obj, memories in objects.items():
            for memory_id in memories:
                holders[memory_id].add(obj)
        if any(len(held) > 1 for held in holders.values()):
            continue
        items = sorted(objects.items(), key=lambda item: sorted(item[0]))
        for x, (first, first_memories) in enumerate(items):
            for second, second_memories in items[x + 1 :]:
                if first <= second or second <= first:
                    continue
                a, b = min(first_memories), min(second_memories)
                cosine = _cosine(vectors, a, b)
                if cosine is not None and cosine < FACT_COSINE:
                    continue
                first_name, second_name = object_names[first], object_names[second]
                found.append(
                    Proposal(
                        kind="fact_conflict",
                        targets=sorted((a, b)),
                        evidence={
                            "subject": names[subject],
                            "predicate": predicate,
                            "objects": {a: first_name, b: second_name},
                            "cosine": None if cosine is None else round(cosine, 2),
                        },
                        confidence=round(0.6 + 0.4 * (cosine or 0.5), 3),
                        action="supersede",
                        summary=f"{a} says {names[subject]} {predicate} {first_name}; {b} says "
                        f"{second_name}: keep the true one, supersede the other",
                        memories=sorted((a, b)),
                    )
                )
    return found


_ARTICLES = frozenset(("the", "a", "an"))


def _name_words(name: str) -> frozenset[str]:
    words = frozenset(re.findall(r"[\w.-]+", name.casefold())) - _ARTICLES
    return words or frozenset((name.casefold(),))


def _cosine(vectors: dict[str, npt.NDArray[np.float32]], a: str, b: str) -> float | None:
    if a in vectors and b in vectors:
        return float(vectors[a] @ vectors[b])
    return None


def topic_conflicts(
    rows: Sequence[Row],
    vectors: dict[str, npt.NDArray[np.float32]],
    avoids: set[tuple[str, str]],
    policy: StewardPolicy,
) -> list[Proposal]:
    """Two canonical entries on one topic; an active decision and an active dead end about one
    approach that no AVOIDS edge tells apart."""
    found: list[Proposal] = []
    canonical = [r for r in rows if r.lifecycle == "canonical" and r.id in vectors]
    for x, a in enumerate(canonical):
        for b in canonical[x + 1 :]:
            cosine = float(vectors[a.id] @ vectors[b.id])
            if a.context == b.context and cosine >= policy.conflict_cosine:
                found.append(
                    Proposal(
                        kind="canonical_conflict",
                        targets=sorted((a.id, b.id)),
                        evidence={"cosine": round(cosine, 2), "context": a.context},
                        confidence=round(cosine, 3),
                        action="supersede",
                        summary=f"two canonical entries on one topic: {a.label!r} and "
                        f"{b.label!r}: keep one",
                        memories=sorted((a.id, b.id)),
                    )
                )
    decisions = [r for r in rows if r.kind == "decision" and r.id in vectors]
    dead_ends = [r for r in rows if r.kind == "dead_end" and r.id in vectors]
    if decisions and dead_ends:
        left = np.stack([vectors[r.id] for r in decisions])
        right = np.stack([vectors[r.id] for r in dead_ends])
        scores = left @ right.T
        for i, j in zip(*np.nonzero(scores >= policy.conflict_cosine), strict=True):
            d, e = decisions[int(i)], dead_ends[int(j)]
            if d.context != e.context or (d.id, e.id) in avoids:
                continue
            cosine = float(scores[i, j])
            found.append(
                Proposal(
                    kind="decision_dead_end",
                    targets=[d.id, e.id],
                    evidence={"cosine": round(cosine, 2), "context": d.context},
                    confidence=round(cosine, 3),
                    action="mark_outdated",
                    summary=f"decision {d.label!r} takes an approach dead end {e.label!r} says "
                    "failed: retire one, or link them (store_decision avoids=...)",
                    memories=[d.id, e.id],
                )
            )
    return found


# -- stale -----------------------------------------------------------------------------------


def unverified(
    stale: Sequence[tuple[str, str, datetime | None, datetime | None, datetime]],
    policy: StewardPolicy,
) -> list[Proposal]:
    """Knowledge (decisions, runbooks, dead ends, postmortems) neither verified nor used for
    `stale_days` since it was written. What happened (incidents, notes of a conversation) does
    not go stale: it stays what happened."""
    found = []
    for memory_id, kind, verified_at, accessed_at, created_at in stale:
        if kind not in KNOWLEDGE_KINDS:
            continue
        last = max(t for t in (verified_at, accessed_at, created_at) if t is not None)
        found.append(
            Proposal(
                kind="unverified",
                targets=[memory_id],
                evidence={"last_touched": last.date().isoformat(), "stale_days": policy.stale_days},
                confidence=0.9,
                action="verify",
                summary=f"{kind} {memory_id} not verified or used since {last.date()}: check it",
                memories=[memory_id],
            )
        )
    return found


def expired(working: Sequence[tuple[str, datetime]], policy: StewardPolicy) -> list[Proposal]:
    return [
        Proposal(
            kind="expired_working",
            targets=[memory_id],
            evidence={
                "created": as_utc(created).isoformat(),
                "ttl_hours": policy.working_ttl_hours,
            },
            confidence=1.0,
            action="archive",
            summary=f"working memory {memory_id} from {created.date()} is past its "
            f"{policy.working_ttl_hours:g} h: archive it",
            memories=[memory_id],
        )
        for memory_id, created in working
    ]


def live_middles(pairs: Sequence[tuple[str, str]]) -> list[Proposal]:
    return [
        Proposal(
            kind="live_middle",
            targets=[older, newer],
            evidence={"superseded_by": newer},
            confidence=1.0,
            action="supersede",
            summary=f"{older} is still live though {newer} supersedes it: mark it superseded",
            memories=[older, newer],
        )
        for newer, older in pairs
    ]


def drifted(items: Sequence[tuple[str, str, str, str | None]]) -> list[Proposal]:
    """(memory id, path, status, current sha256) of citations whose file changed or is gone."""
    return [
        Proposal(
            kind="drifted_citation",
            targets=[memory_id],
            evidence={"path": path, "status": status, "sha256": sha},
            confidence=0.95 if status == "source_changed" else 1.0,
            action="verify",
            summary=f"{memory_id} cites {path}, which "
            f"{'changed' if status == 'source_changed' else 'is gone'}: check it still holds",
            memories=[memory_id],
        )
        for memory_id, path, status, sha in items
    ]


def stale_before(now: datetime, policy: StewardPolicy) -> tuple[datetime, datetime]:
    """(knowledge untouched before this is stale, working memory created before this expired)."""
    return now - timedelta(days=policy.stale_days), now - timedelta(hours=policy.working_ttl_hours)


# -- canonical candidates and orphans --------------------------------------------------------


def canonical_candidates(
    rows: Sequence[Row],
    verified: set[str],
    references: dict[str, int],
    policy: StewardPolicy,
) -> list[Proposal]:
    """Verified, often used, and referenced by other knowledge (or used twice as often)."""
    found = []
    for row in rows:
        if row.lifecycle != "active" or row.id not in verified:
            continue
        refs = references.get(row.id, 0)
        if row.accesses < policy.canonical_min_accesses:
            continue
        if refs == 0 and row.accesses < 2 * policy.canonical_min_accesses:
            continue
        found.append(
            Proposal(
                kind="canonical_candidate",
                targets=[row.id],
                evidence={"accesses": row.accesses, "references": refs, "verified": True},
                confidence=round(min(1.0, 0.6 + 0.05 * row.accesses + 0.1 * refs), 3),
                action="promote",
                summary=f"{row.label!r} is verified, used {row.accesses} times and referenced "
                f"{refs} times: make it canonical",
                memories=[row.id],
            )
        )
    return found


def orphans(
    entities: Sequence[tuple[str, str]], items: Sequence[tuple[str, str]]
) -> list[Proposal]:
    found = [
        Proposal(
            kind="orphan_entity",
            targets=[entity_id],
            evidence={"name": name},
            confidence=1.0,
            action="prune",
            summary=f"entity {name!r} is named by nothing any more: prune it",
        )
        for entity_id, name in entities
    ]
    found += [
        Proposal(
            kind="orphan_review_item",
            targets=[item_id],
            evidence={"target": target},
            confidence=1.0,
            action="dismiss_item",
            summary=f"review item {item_id} is about {target}, which is gone: dismiss it",
        )
        for item_id, target in items
    ]
    return found


def entity_suggestions(suggestions: Sequence[Suggestion]) -> list[Proposal]:
    """A merge keeps its first target; a split is told apart by the name it takes off."""
    out = []
    for s in suggestions:
        if s.kind == "same_entity":
            targets, evidence, action, about = [s.keep, s.other], s.evidence, "merge_entities", ""
        else:
            targets, evidence = [s.keep], {**s.evidence, "texts": s.texts}
            action, about = "split_entity", normalise_name(s.other)
        out.append(
            Proposal(
                kind=s.kind, targets=targets, evidence=evidence, confidence=s.confidence,
                action=action, summary=s.summary, about=about,
            )
        )  # fmt: skip
    return out
