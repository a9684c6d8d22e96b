"""The analyzer behind keyword search: what gets indexed for a memory and how a query is read.

Kùzu's FTS tokenizer drops every digit and every one-letter token, so "v2", "#47", "502" and "k8s"
would never match, and a custom stopword list crashes inserts in 0.11.3 (measured). We therefore
index a `search_text` of our own tokens: words with digits are spelt with letters ("502" ->
"qxfacq"), compounds like "PAY-123" also keep their joined form, and the memory's date is indexed as
words ("may 2023 monday"), since questions often name a time.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from datetime import datetime
from functools import lru_cache

_WORD = re.compile(r"[A-Za-z0-9]+(?:[._\-/:#][A-Za-z0-9]+)*")
_PART = re.compile(r"[A-Za-z]+|[0-9]+")
_DIGITS = str.maketrans("0123456789", "abcdefghij")
MARK = "qx"
_END = "q"

# Short English function words; kept small on purpose: Kùzu applies its own list as well, and words
# such as "not", "down", "after" carry meaning in engineering notes.
STOPWORDS = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "been",
        "but",
        "by",
        "can",
        "could",
        "did",
        "do",
        "does",
        "for",
        "from",
        "had",
        "has",
        "have",
        "he",
        "her",
        "hers",
        "him",
        "his",
        "how",
        "i",
        "if",
        "in",
        "into",
        "is",
        "it",
        "its",
        "me",
        "my",
        "of",
        "on",
        "or",
        "our",
        "she",
        "so",
        "than",
        "that",
        "the",
        "their",
        "them",
        "then",
        "there",
        "these",
        "they",
        "this",
        "those",
        "to",
        "was",
        "we",
        "were",
        "what",
        "when",
        "where",
        "which",
        "who",
        "whom",
        "why",
        "will",
        "with",
        "would",
        "you",
        "your",
    ]
)


_HAS_DIGIT = re.compile(r"\d")


def _encode(token: str) -> str:
    # The closing mark keeps Kùzu's porter stemmer off the spelt digits ("8043" would end in
    # "ed" and stem to the same term as "80").
    if _HAS_DIGIT.search(token):
        return MARK + token.translate(_DIGITS) + _END
    return token


def tokens(text: str) -> list[str]:
    """Lowercased index tokens of a text, digits encoded, compounds kept whole as well."""
    out: list[str] = []
    for word in _WORD.findall(text.lower()):
        out.extend(_word_tokens(word))
    return out


@lru_cache(maxsize=65_536)
def _word_tokens(word: str) -> tuple[str, ...]:
    """One word's tokens; cached, since a store's vocabulary repeats (imports are 2x faster)."""
    parts = _PART.findall(word)
    out = [_encode("".join(parts))] if len(parts) > 1 else []
    out.extend(_encode(p) for p in parts if len(p) > 1 or p.isdigit())
    return tuple(out)


def content_terms(text: str) -> list[str]:
    """Distinct query terms that carry meaning (no stopwords), in order."""
    seen: dict[str, None] = {}
    for token in tokens(text):
        if token not in STOPWORDS and token not in seen:
            seen[token] = None
    return list(seen)


def date_words(when: datetime | None) -> list[str]:
    if when is None:
        return []
    return [when.strftime("%B").lower(), str(when.year), str(when.day), when.strftime("%A").lower()]


def index_text(
    content: str,
    *,
    title: str | None = None,
    tags: Iterable[str] = (),
    context: str | None = None,
    service: str | None = None,
    when: datetime | None = None,
) -> str:
    """The string stored in `Memory.search_text`; the title counts twice."""
    parts = [content]
    if title:
        parts += [title, title]
    parts.extend(tags)
    parts += [p for p in (context, service) if p]
    parts += date_words(when)
    return " ".join(tokens(" ".join(parts)))


def query_text(query: str) -> str:
    return " ".join(tokens(query))


_TRAILING_NOTE = re.compile(r"(?:\s*[\[(][^\[\]()]*[\])])+\s*$")


def ends_asking(text: str) -> bool:
    """Whether the text ends on a question, bracketed notes after it aside ("What's your best
    camping memory? [shares an image: ...]")."""
    return _TRAILING_NOTE.sub("", text).rstrip().endswith("?")


def shortened(text: str, limit: int) -> str:
    """`text` on one line, at most `limit` characters: cut at a word where one is near, with
    an ellipsis that says it was cut."""
    flat = " ".join(text.split())
    if len(flat) <= limit:
        return flat
    cut = flat[: limit - 1]
    space = cut.rfind(" ")
    if space >= limit * 2 // 3:
        cut = cut[:space]
    return cut.rstrip(" ,;:.-") + "…"
