"""Real text for the steward's benchmark store, read where the bench data lives (never copied).

LoCoMo's conversation turns and the GOV.UK engineering docs' paragraphs first, then LongMemEval's
chat paragraphs (the `_S` sample, then the oracle split) and Cranfield's abstracts when a large
store needs more. Each text becomes one memory of the kind a store of that origin would hold, in a
context of its own (a conversation, a docs repository, a chat session), with a `group` (a
conversation's session, a document, a chat session) within which texts share a topic.

Texts repeated in the data, and texts of one context saying nearly the same (sharing `SAME_TEXT`
of their content words), are kept once: a duplicate the data already holds is not one the
benchmark made, and would be counted against the steward.
"""

from __future__ import annotations

import gzip
import json
import math
import random
import re
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from eval import locomo
from eval.paraphrase import content_words, normalised

MIN_WORDS = 8
MAX_CHARS = 2_000
SAME_TEXT = 0.6  # Jaccard of content words from which two texts of one context say the same
SHARES = {"locomo": 0.3, "docs": 0.45}  # of the store at most; the rest from the others


@dataclass
class Text:
    """One memory to be, from real data."""

    content: str
    source: str  # locomo | docs | longmemeval | cranfield
    group: str  # a topic unit: a conversation's session, a document, a chat session
    context: str
    kind: str = "note"
    type: str = "episodic"
    ref: str = ""  # where it comes from: a dia_id, a path and paragraph, a session and turn
    path: str | None = None  # docs: the file, relative to the docs folder
    words: frozenset[str] = field(default_factory=frozenset)


def _usable(text: str) -> bool:
    return len(text.split()) >= MIN_WORDS and len(text) <= MAX_CHARS


def locomo_texts(bench: Path) -> Iterator[Text]:
    """Every turn of LoCoMo's dev conversations, "speaker: text" (image captions included)."""
    for sample in json.loads((bench / "locomo" / "locomo_dev.json").read_text(encoding="utf-8")):
        for turn in locomo.turns(sample):
            if _usable(turn["content"]):
                yield Text(
                    turn["content"], "locomo", turn["session_id"], sample["sample_id"],
                    ref=turn["metadata"]["dia_id"],
                )  # fmt: skip


_FRONT_MATTER = re.compile(r"\A---\n.*?\n---\n", re.DOTALL)
_FENCE = re.compile(r"^\s*(```|~~~)")
_NOT_PROSE = ("#", "|", "<", "{%", "---", "===", "    ")


def paragraphs(markdown: str) -> list[str]:
    """The prose paragraphs and lists of a Markdown document: no front matter, headings, code,
    tables or HTML."""
    out: list[str] = []
    block: list[str] = []
    fenced = False
    for line in [*_FRONT_MATTER.sub("", markdown).splitlines(), ""]:
        if _FENCE.match(line):
            fenced, block = not fenced, []
            continue
        if fenced:
            continue
        if line.strip():
            block.append(line.rstrip())
            continue
        text = "\n".join(block).strip()
        block = []
        if text and not text.startswith(_NOT_PROSE):
            out.append(text)
    return out


def _doc_kind(path: str) -> tuple[str, str]:
    if "/decisions/" in path or "/adr" in path:
        return "decision", "semantic"
    if "/manual/" in path:
        return "runbook", "procedural"
    return "note", "semantic"


def doc_texts(bench: Path) -> Iterator[Text]:
    """The paragraphs of the engineering docs, in the context of their repository."""
    root = bench / "docs"
    for file in sorted(root.rglob("*.md")):
        path = file.relative_to(root).as_posix()
        kind, type_ = _doc_kind(path)
        for n, text in enumerate(paragraphs(file.read_text(encoding="utf-8"))):
            if _usable(text):
                yield Text(text, "docs", path, path.split("/")[0], kind, type_, f"{path}#{n}", path)


def longmemeval_texts(bench: Path, name: str) -> Iterator[Text]:
    """The paragraphs of LongMemEval's chat sessions, each session a context of its own."""
    with gzip.open(bench / "longmemeval" / name, "rt", encoding="utf-8") as f:
        data: list[dict[str, Any]] = json.load(f)
    for question in data:
        pairs = zip(question["haystack_session_ids"], question["haystack_sessions"], strict=True)
        for session_id, session in pairs:
            for n, turn in enumerate(session):
                type_ = "episodic" if turn["role"] == "user" else "semantic"
                for k, text in enumerate(re.split(r"\n\s*\n", turn["content"])):
                    if _usable(text.strip()):
                        yield Text(
                            text.strip(), "longmemeval", session_id, f"lme-{session_id}",
                            type=type_, ref=f"{session_id}:{n}:{k}",
                        )  # fmt: skip


def cranfield_texts(bench: Path) -> Iterator[Text]:
    with (bench / "ir" / "cranfield" / "corpus.jsonl").open(encoding="utf-8") as f:
        for line in f:
            doc = json.loads(line)
            if _usable(doc["text"]):
                yield Text(doc["text"], "cranfield", "cranfield", "cranfield", type="semantic",
                           ref=doc["_id"])  # fmt: skip


class _Near:
    """The word sets of one context kept so far, for finding one that shares `SAME_TEXT` of its
    content words with a new text. Prefix filtering: two sets of Jaccard >= t share a word among
    the first |A| - ceil(t |A|) + 1 of each, in any one order; rarest first keeps lists short."""

    def __init__(self, rarity: Mapping[str, int]) -> None:
        self.rarity = rarity
        self.index: dict[str, list[frozenset[str]]] = defaultdict(list)

    def _prefix(self, words: frozenset[str]) -> list[str]:
        ordered = sorted(words, key=lambda w: (self.rarity.get(w, 0), w))
        return ordered[: len(words) - math.ceil(SAME_TEXT * len(words)) + 1]

    def holds_near(self, words: frozenset[str]) -> bool:
        checked: set[int] = set()
        for word in self._prefix(words):
            for other in self.index[word]:
                if id(other) not in checked:
                    checked.add(id(other))
                    if jaccard(words, other) >= SAME_TEXT:
                        return True
        return False

    def add(self, words: frozenset[str]) -> None:
        for word in self._prefix(words):
            self.index[word].append(words)


def _fresh(
    texts: Iterable[Text],
    seen: set[str],
    seen_words: set[frozenset[str]],
    limit: int | None = None,
    rarity: Mapping[str, int] | None = None,
) -> list[Text]:
    """The texts not met before (once case, spaces and punctuation are set aside, nor as the same
    set of content words), nor nearly the same as an earlier text of their context; the first
    `limit` of them. `rarity`: how many texts each word is in, to index the rare ones."""
    out: list[Text] = []
    near: dict[str, _Near] = defaultdict(lambda: _Near(rarity or {}))
    for text in texts:
        key = normalised(text.content)
        text.words = text.words or frozenset(content_words(text.content))
        if key in seen or text.words in seen_words or not text.words:
            continue
        if near[text.context].holds_near(text.words):
            continue
        seen.add(key)
        seen_words.add(text.words)
        near[text.context].add(text.words)
        out.append(text)
        if limit is not None and len(out) >= limit:
            break
    return out


def _counted(texts: Iterable[Text]) -> tuple[list[Text], Counter[str]]:
    """The texts with their content words, and how many texts each word is in."""
    out = list(texts)
    rarity: Counter[str] = Counter()
    for text in out:
        text.words = frozenset(content_words(text.content))
        rarity.update(text.words)
    return out, rarity


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    return len(a & b) / len(a | b) if a or b else 0.0


def pool(bench: Path, n: int, rng: random.Random) -> list[Text]:
    """`n` distinct real texts, shuffled: LoCoMo and the docs up to their share, then
    LongMemEval, then Cranfield. Raises ValueError when the data holds fewer."""
    seen: set[str] = set()
    seen_words: set[frozenset[str]] = set()
    chosen: list[Text] = []
    for source, texts in (("locomo", locomo_texts), ("docs", doc_texts)):
        listed, rarity = _counted(texts(bench))
        found = _fresh(listed, seen, seen_words, rarity=rarity)
        rng.shuffle(found)
        chosen += found[: round(n * SHARES[source])]
    others: tuple[Callable[[], Iterator[Text]], ...] = (
        lambda: longmemeval_texts(bench, "longmemeval_s_sample48.json.gz"),
        lambda: longmemeval_texts(bench, "longmemeval_oracle.json.gz"),
        lambda: cranfield_texts(bench),
    )
    for more in others:
        if len(chosen) >= n:
            break
        need = n - len(chosen)
        found = _fresh(more(), seen, seen_words, limit=3 * need)  # a spread to sample from
        rng.shuffle(found)
        chosen += found[:need]
    if len(chosen) < n:
        raise ValueError(f"{bench} holds {len(chosen)} distinct texts; {n} were asked for")
    rng.shuffle(chosen)
    return chosen
