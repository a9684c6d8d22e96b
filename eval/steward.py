"""A messy store with known problems, for measuring the steward: real text (eval/steward_texts.py)
and, at a `rate` of the store's size, the problems a store accumulates, each recorded as the
finding a careful steward files:

- duplicates, same kind, type and context as their original: exact copies once case, spaces and
  punctuation are set aside (`exact_duplicate`), light rewordings (`near_duplicate`) and heavier
  ones (`similar`), by eval/paraphrase.py; any duplicate kind counts as found. Beside them, hard
  negatives: pairs of texts of one session or document sharing the most words, never duplicates;
- contradicting facts (`fact_conflict`): two memories giving one service a different owner,
  region or datastore, in sentences the entity extractor reads; beside them, pairs on one service
  that do not contradict (its owner, and its region);
- stale memories: paragraphs citing their document in the store's project folder, whose file is
  then changed or deleted (`drifted_citation`; against: files left alone, and files changed then
  verified again); working memory past its time to live (`expired_working`; against: fresh
  working memory); knowledge (runbooks and decisions, from the docs) neither verified nor
  changed for longer than `stale_days` (`unverified`; against: as old, but verified lately, and
  conversation turns as old: what happened does not go stale).

Everything else is dated within the last 90 days. Ids, dates and choices follow `seed`; ids and
dates are relative to `now`. Nothing in a memory says what the benchmark made of it.
"""

from __future__ import annotations

import json
import random
import time
from collections import defaultdict
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from itertools import combinations
from pathlib import Path
from typing import Any

from eval.paraphrase import exact_variant, paraphrase
from eval.progress import every
from eval.steward_texts import SAME_TEXT, Text, jaccard, pool
from graphmem.models import utcnow
from graphmem.steward.models import StewardPolicy

Pair = frozenset[str]
# Jaccard of the content words of a hard negative pair: one topic, not one text (from
# SAME_TEXT up, eval/steward_texts keeps one text of a context only)
HARD_NEGATIVE = (0.2, SAME_TEXT)
CONFLICT_CONTEXT = "platform"
KNOWLEDGE_KINDS = ("decision", "runbook")  # of the kinds the real text has (eval/steward_texts)
_ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"

# contradictions: a service and the owner, region or datastore two memories disagree on
_AREAS = (
    "billing", "ledger", "orders", "payments", "search", "catalog", "inventory", "checkout",
    "profile", "reports", "scheduler", "mailer", "pricing", "shipping", "refunds", "invoices",
    "accounts", "sessions", "media", "thumbnails", "audit", "fraud", "loyalty", "tax", "quotes",
    "carts", "reviews", "ratings", "recommendations", "notifications", "webhooks", "exports",
    "imports", "metrics", "alerts", "identity", "consent", "documents", "uploads", "translations",
    "geo", "routing", "maps", "fleet", "dispatch", "warehouse", "returns", "vouchers",
    "subscriptions", "usage",
)  # fmt: skip
_ROLES = ("sync", "batch", "edge", "core", "public", "internal", "stream", "admin", "cache", "bulk")
_SUFFIXES = ("api", "service", "worker", "gateway", "daemon", "server", "proxy")
_OBJECTS = {
    "owned_by": (
        "the payments team", "the platform team", "the data team", "the identity team",
        "the growth team", "the search team", "the infrastructure team", "the billing team",
        "the mobile team", "the reliability team", "the checkout team", "the core team",
    ),
    "deployed_to": (
        "eu-west-1", "eu-west-2", "eu-central-1", "us-east-1", "us-east-2", "us-west-2",
        "ap-south-1", "ap-southeast-2", "ca-central-1", "sa-east-1",
    ),
    "migrated_to": (
        "postgres", "mysql", "dynamodb", "cassandra", "mongodb", "mariadb", "opensearch",
    ),
}  # fmt: skip
_TEMPLATES = {  # each read by the spaCy extractor as (service, predicate, object), every time
    "owned_by": (
        "The {s} is owned by {o}.", "{O} owns the {s}.", "The {s} is maintained by {o}.",
        "{O} owns the {s} now.", "The {s} is owned by {o} since the reorg.", "{O} maintains the {s}.",
    ),
    "deployed_to": (
        "The {s} is deployed to {o}.", "The {s} was deployed to {o} last week.",
        "The {s} is now deployed to {o}.",
    ),
    "migrated_to": (
        "The {s} was migrated to {o}.", "The {s} has been migrated to {o}.",
        "Last quarter the {s} was migrated to {o}.",
    ),
}  # fmt: skip
_TAILS = (
    "", "", "", " Confirmed in the on-call handover.", " See the service catalogue for details.",
    " This came up in the incident review.", " Double-check before paging anyone.",
)  # fmt: skip


@dataclass(frozen=True)
class Plan:
    """How many of each problem a store of `memories` gets at `rate` (a share of its size)."""

    memories: int
    rate: float
    exact: int
    near: int
    similar: int
    hard_negatives: int
    conflicts: int
    conflict_negatives: int
    cited: int
    expired_working: int
    fresh_working: int
    unverified: int
    verified_old: int
    old_episodes: int

    @classmethod
    def of(cls, memories: int, rate: float) -> Plan:
        units = memories * rate

        def part(share: float) -> int:
            return max(1, round(units * share)) if units else 0

        return cls(
            memories, rate, exact=part(0.2), near=part(0.15), similar=part(0.15),
            hard_negatives=part(0.25), conflicts=part(0.1), conflict_negatives=part(0.05),
            cited=part(0.2), expired_working=part(0.1), fresh_working=part(0.1),
            unverified=part(0.1), verified_old=part(0.1), old_episodes=part(0.05),
        )  # fmt: skip

    @property
    def extra(self) -> int:
        """Memories added to the real texts: duplicates, and both sides of every fact pair."""
        return (
            self.exact + self.near + self.similar + 2 * (self.conflicts + self.conflict_negatives)
        )


@dataclass
class Truth:
    """What the steward should find, and what it should leave alone."""

    duplicates: dict[Pair, str] = field(default_factory=dict)  # pair -> tier's finding kind
    conflicts: dict[Pair, str] = field(default_factory=dict)
    stale: dict[str, str] = field(default_factory=dict)  # memory id -> finding kind
    hard_negatives: set[Pair] = field(default_factory=set)
    conflict_negatives: set[Pair] = field(default_factory=set)
    fresh: dict[str, str] = field(default_factory=dict)  # counter-example id -> why it is fine

    def injected(self) -> set[str]:
        """Every memory the benchmark made or chose a role for."""
        ids = {i for pairs in (self.duplicates, self.conflicts) for pair in pairs for i in pair}
        ids |= {i for pair in self.hard_negatives | self.conflict_negatives for i in pair}
        return ids | set(self.stale) | set(self.fresh)

    def counts(self) -> dict[str, int]:
        out: dict[str, int] = defaultdict(int)
        for kind in [*self.duplicates.values(), *self.conflicts.values(), *self.stale.values()]:
            out[kind] += 1
        return dict(sorted(out.items()))


@dataclass
class Corpus:
    """A store to build: memories to import, files to cite, then what happens to the files."""

    plan: Plan
    items: list[dict[str, Any]]  # import lines (graphmem export format), oldest first
    truth: Truth
    files: dict[str, str]  # project-relative path -> text, written before citing
    citations: list[tuple[str, str]]  # (memory id, path)
    changes: dict[str, str | None]  # path -> its new text, or None: deleted
    reverify: list[str]  # memories verified again after their file changed
    now: datetime

    def sources(self) -> dict[str, int]:
        found: dict[str, int] = defaultdict(int)
        for item in self.items:
            found[item["metadata"]["source"]] += 1
        return dict(sorted(found.items()))


def ulid(at: datetime, rng: random.Random) -> str:
    """A graphmem-style id (graphmem.ids) for a memory created `at`, its random part seeded."""
    value = (int(at.timestamp() * 1000) << 80) | rng.getrandbits(80)
    return "".join(_ALPHABET[(value >> shift) & 31] for shift in range(125, -5, -5))


class _Builder:
    """The generator's state: the real texts still free for a role, and what was made."""

    def __init__(self, texts: list[Text], rng: random.Random, now: datetime) -> None:
        self.free = list(texts)
        self.rng = rng
        self.now = now
        self.items: list[dict[str, Any]] = []
        self.truth = Truth()

    def ago(self, low: timedelta, high: timedelta) -> datetime:
        return self.now - low - (high - low) * self.rng.random()

    def add(self, content: str, **fields: Any) -> str:
        created = fields.pop("created_at", None) or self.ago(timedelta(hours=2), timedelta(90))
        item = {"content": content, "kind": "note", "type": "episodic", "created_at": created,
                "updated_at": created, **fields}  # fmt: skip
        item["id"] = ulid(created, self.rng)
        self.items.append(item)
        return str(item["id"])

    def add_text(self, text: Text, **fields: Any) -> str:
        fields = {"kind": text.kind, "type": text.type, "context": text.context,
                  "metadata": {"source": text.source}, **fields}  # fmt: skip
        return self.add(text.content, **fields)

    def take(self, n: int, keep: Callable[[Text], bool] = lambda _: True) -> list[Text]:
        """Up to `n` free texts that `keep` accepts, taken out of the free ones."""
        chosen = [t for t in self.free if keep(t)][:n]
        taken = {id(t) for t in chosen}
        self.free = [t for t in self.free if id(t) not in taken]
        return chosen


def _citations(
    b: _Builder, plan: Plan, bench: Path
) -> tuple[dict[str, str], list[tuple[str, str]], dict[str, str | None], list[str]]:
    """Docs paragraphs citing their file; a file's fate cycles changed, intact, deleted,
    reverified, so about half the citing memories drift."""
    by_path: dict[str, list[Text]] = defaultdict(list)
    for text in b.free:
        if text.path is not None:
            by_path[text.path].append(text)
    paths = sorted(by_path)
    b.rng.shuffle(paths)
    files: dict[str, str] = {}
    citations: list[tuple[str, str]] = []
    changes: dict[str, str | None] = {}
    reverify: list[str] = []
    fates = ("changed", "intact", "deleted", "reverified")
    taken: set[int] = set()
    for n, path in enumerate(paths):
        if len(citations) >= plan.cited:
            break
        texts = by_path[path][: min(4, plan.cited - len(citations))]
        taken |= {id(t) for t in texts}
        original = (bench / "docs" / path).read_text(encoding="utf-8")
        relative = f"docs/{path}"
        files[relative] = original
        fate = fates[n % len(fates)]
        if fate in ("changed", "reverified"):
            stamp = b.ago(timedelta(1), timedelta(20)).strftime("%d %B %Y")
            changes[relative] = f"{original.rstrip()}\n\nReviewed and updated on {stamp}.\n"
        elif fate == "deleted":
            changes[relative] = None
        for text in texts:
            memory_id = b.add_text(text)
            citations.append((memory_id, relative))
            if fate in ("changed", "deleted"):
                b.truth.stale[memory_id] = "drifted_citation"
            else:
                b.truth.fresh[memory_id] = f"{fate}_citation"
                if fate == "reverified":
                    reverify.append(memory_id)
    b.free = [t for t in b.free if id(t) not in taken]
    return files, citations, changes, reverify


def _stale(b: _Builder, plan: Plan, policy: StewardPolicy) -> None:
    """Old knowledge (unverified, and verified lately), old episodes (what happened stays what
    happened), expired and fresh working memory."""
    old = (timedelta(policy.stale_days + 10), timedelta(policy.stale_days + 400))
    for text in b.take(plan.old_episodes, lambda t: t.type == "episodic"):
        b.truth.fresh[b.add_text(text, created_at=b.ago(*old))] = "old_episode"

    def knowledge(t: Text) -> bool:
        return t.kind in KNOWLEDGE_KINDS

    for n, text in enumerate(b.take(plan.unverified + plan.verified_old, knowledge)):
        created = b.ago(*old)
        if n < plan.unverified:
            b.truth.stale[b.add_text(text, created_at=created)] = "unverified"
        else:
            verified = b.ago(timedelta(1), timedelta(60)).isoformat()
            memory_id = b.add_text(
                text, created_at=created, verified_at=verified, verify_status="verified"
            )
            b.truth.fresh[memory_id] = "verified_knowledge"
    ttl = timedelta(hours=policy.working_ttl_hours)
    expired = (ttl + timedelta(1), ttl + timedelta(30))
    fresh = (timedelta(hours=1), max(ttl - timedelta(1), timedelta(hours=2)))
    for n, text in enumerate(b.take(plan.expired_working + plan.fresh_working)):
        if n < plan.expired_working:
            memory_id = b.add_text(text, type="working", created_at=b.ago(*expired))
            b.truth.stale[memory_id] = "expired_working"
        else:
            memory_id = b.add_text(text, type="working", created_at=b.ago(*fresh))
            b.truth.fresh[memory_id] = "fresh_working"


def _hard_negatives(b: _Builder, n: int) -> None:
    """Pairs of one session or document sharing the most content words, short of the same text."""
    by_group: dict[str, list[Text]] = defaultdict(list)
    for text in b.free:
        by_group[text.group].append(text)
    low, high = HARD_NEGATIVE
    scored = [
        (jaccard(a.words, c.words), a.ref, c.ref, a, c)
        for group in by_group.values()
        for a, c in combinations(group, 2)
        if low <= jaccard(a.words, c.words) < high
    ]
    scored.sort(key=lambda row: (-row[0], row[1], row[2]))
    used: set[int] = set()
    for _, _, _, a, c in scored:
        if len(b.truth.hard_negatives) >= n:
            break
        if id(a) in used or id(c) in used:
            continue
        used |= {id(a), id(c)}
        b.truth.hard_negatives.add(frozenset({b.add_text(a), b.add_text(c)}))
    b.free = [t for t in b.free if id(t) not in used]


def _duplicates(b: _Builder, plan: Plan) -> None:
    tiers = [("exact_duplicate", plan.exact), ("near_duplicate", plan.near),
             ("similar", plan.similar)]  # fmt: skip
    for kind, n in tiers:
        for text in b.take(n):
            original = b.add_text(text)
            created = b.items[-1]["created_at"]
            if kind == "exact_duplicate":
                content = exact_variant(text.content, b.rng)
            else:
                content = paraphrase(text.content, b.rng, heavy=kind == "similar")
            later = min(created + timedelta(hours=1) + timedelta(30) * b.rng.random(),
                        b.now - timedelta(minutes=30))  # fmt: skip
            fields = {"kind": text.kind, "type": text.type, "context": text.context,
                      "metadata": {"source": text.source}, "created_at": later}  # fmt: skip
            b.truth.duplicates[frozenset({original, b.add(content, **fields)})] = kind


def _services(rng: random.Random, n: int) -> list[str]:
    names = [f"{a}-{r}-{s}" for a in _AREAS for r in _ROLES for s in _SUFFIXES]
    return rng.sample(names, min(n, len(names)))


def _fact(rng: random.Random, predicate: str, service: str, obj: str) -> str:
    template = rng.choice(_TEMPLATES[predicate])
    sentence = template.format(s=service, o=obj, O=obj[:1].upper() + obj[1:])
    return sentence + rng.choice(_TAILS)


def _conflicts(b: _Builder, plan: Plan) -> None:
    """Pairs giving one service two owners (regions, datastores), and pairs that do not
    contradict: one service's owner and its region."""
    services = _services(b.rng, plan.conflicts + plan.conflict_negatives)
    older = (timedelta(30), timedelta(90))
    newer = (timedelta(hours=2), timedelta(29))
    for n, service in enumerate(services):
        common = {"type": "semantic", "context": CONFLICT_CONTEXT, "service": service,
                  "kind": b.rng.choice(("note", "note", "decision")),
                  "metadata": {"source": "facts"}}  # fmt: skip
        if n < plan.conflicts:
            predicate = b.rng.choice(sorted(_OBJECTS))
            first, second = b.rng.sample(_OBJECTS[predicate], 2)
            sentences = [(predicate, first), (predicate, second)]
        else:
            sentences = [(p, b.rng.choice(_OBJECTS[p])) for p in ("owned_by", "deployed_to")]
        ids = frozenset(
            b.add(_fact(b.rng, p, service, o), created_at=b.ago(*span), **common)
            for (p, o), span in zip(sentences, (older, newer), strict=True)
        )
        if n < plan.conflicts:
            b.truth.conflicts[ids] = "fact_conflict"
        else:
            b.truth.conflict_negatives.add(ids)


def _line(item: dict[str, Any]) -> dict[str, Any]:
    return {k: v.isoformat() if isinstance(v, datetime) else v for k, v in item.items()}


def generate(
    bench: Path,
    memories: int,
    *,
    rate: float = 0.1,
    seed: int = 0,
    now: datetime | None = None,
    policy: StewardPolicy | None = None,
) -> Corpus:
    """A store of `memories` memories, `rate` of it problems (see the module's doc), from the
    bench data at `bench`; the same arguments give the same store."""
    if not 0 <= rate <= 0.5:
        raise ValueError("rate must be between 0 and 0.5")
    plan = Plan.of(memories, rate)
    rng = random.Random(seed)
    now = now or utcnow()
    policy = policy or StewardPolicy()
    b = _Builder(pool(bench, memories - plan.extra, rng), rng, now)
    files, citations, changes, reverify = _citations(b, plan, bench)
    _stale(b, plan, policy)
    _hard_negatives(b, plan.hard_negatives)
    _duplicates(b, plan)
    _conflicts(b, plan)
    for text in b.take(len(b.free)):
        b.add_text(text)
    items = sorted((_line(i) for i in b.items), key=lambda i: (i["created_at"], i["id"]))
    return Corpus(plan, items, b.truth, files, citations, changes, reverify, now)


def build(
    gm: Any,
    corpus: Corpus,
    progress: Callable[[str], None] = lambda _: None,
    *,
    extract_sources: Collection[str] | None = None,
) -> dict[str, float]:
    """Fill the open store `gm` (empty, its project folder under our control) with `corpus`:
    import, entities and facts, citations, then the files' changes. Returns seconds per step.

    With `extract_sources`, only memories of those sources get entities and facts: they are
    imported and extracted first, the others after (extraction's writes slow down as the store
    grows: at 100k memories a tenth took more than half an hour)."""
    seconds: dict[str, float] = {}
    root = Path(gm.project_root)
    for path, text in corpus.files.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text, encoding="utf-8")
    total = len(corpus.items)
    first = [i for i in corpus.items if extract_sources is None
             or i["metadata"]["source"] in extract_sources]  # fmt: skip
    rest = [i for i in corpus.items if extract_sources is not None
            and i["metadata"]["source"] not in extract_sources]  # fmt: skip
    done = 0
    for part, extract in ((first, True), (rest, False)):
        if not part:
            continue
        start = time.perf_counter()
        report = gm.import_jsonl(
            (json.dumps(item) for item in part),
            on_progress=lambda line, _, before=done: progress(
                f"imported {before + line:,} / {total:,}"
            ),
        )
        if report.errors or report.imported != len(part):
            raise RuntimeError(
                f"import: {report.imported} of {len(part)}, errors {report.errors[:3]}"
            )
        gm.wait_for_passages()
        done += len(part)
        seconds["import"] = seconds.get("import", 0.0) + time.perf_counter() - start
        if extract:
            start = time.perf_counter()
            gm.index_triples(on_progress=every(max(len(part) // 10, 1), "extracted", progress))
            seconds["extract"] = time.perf_counter() - start
    started = time.perf_counter()
    for memory_id, path in corpus.citations:
        gm.cite_source(memory_id, path)
    for path, new in corpus.changes.items():
        if new is None:
            (root / path).unlink()
        else:
            (root / path).write_text(new, encoding="utf-8")
    for memory_id in corpus.reverify:
        gm.verify_entry(memory_id, method="read the changed file again", status="verified")
    seconds["citations"] = time.perf_counter() - started
    return {k: round(v, 2) for k, v in seconds.items()}
