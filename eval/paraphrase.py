"""Rewordings of real text without a language model, for duplicates a steward should find.

Three tiers, each seeded by the caller's `random.Random`:

- `exact_variant`: the same text once spaces, case and punctuation are set aside (case changed,
  spaces doubled, punctuation before a space dropped or added): `normalised` maps both to one
  string;
- `paraphrase(heavy=False)`: one or two small edits a person makes restating a note: a synonym or
  two, a contraction, a filler dropped or added, a number spelt differently;
- `paraphrase(heavy=True)`: three to five edits, one of them structural (two sentences swapped,
  a "because" clause moved to the front, "X and Y" turned round), and more synonyms.

Every edit keeps the words that carry the meaning, so a restatement stays a restatement.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable

from graphmem.text import STOPWORDS

_WORDS = re.compile(r"[a-z0-9]+")
_TOKEN = re.compile(r"[A-Za-z]+")
_SPEAKER = re.compile(r"^[A-Z][\w .'-]{0,40}: ")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z\"'(])")

# one-word swaps that read right in most places (both ways where the reverse is as safe)
_ONE_WAY = {
    "really": "truly", "very": "extremely", "quick": "fast", "quickly": "rapidly",
    "big": "large", "huge": "enormous", "important": "crucial", "help": "assist",
    "helps": "assists", "helped": "assisted", "needs": "requires", "needed": "required",
    "check": "verify", "checks": "verifies", "checked": "verified", "issue": "problem",
    "issues": "problems", "happy": "glad", "awesome": "amazing", "great": "wonderful",
    "kids": "children", "recently": "lately", "maybe": "perhaps", "buy": "purchase",
    "bought": "purchased", "shows": "displays", "creates": "generates", "delete": "remove",
    "deleted": "removed", "deletes": "removes", "often": "frequently", "usually": "typically",
    "currently": "presently", "trying": "attempting", "try": "attempt", "tried": "attempted",
    "enjoy": "like", "enjoyed": "liked", "beautiful": "lovely", "hard": "difficult",
    "easy": "simple", "pictures": "photos", "picture": "photo", "talked": "chatted",
    "definitely": "certainly", "totally": "completely", "documentation": "docs",
    "repository": "repo", "application": "app", "configuration": "config",
    "information": "info", "production": "prod", "because": "since", "before": "prior to",
    "begin": "start", "began": "started", "allows": "lets", "enables": "allows",
    "instructions": "steps", "amazing": "incredible", "glad": "pleased", "sure": "certain",
    "wonderful": "fantastic", "together": "jointly", "whole": "entire", "fun": "enjoyable",
    "mom": "mother", "dad": "father", "start": "begin", "started": "began", "finish": "complete",
    "finished": "completed", "find": "locate", "quite": "rather", "large": "big",
    "small": "little", "job": "task", "jobs": "tasks", "request": "ask", "look": "glance",
}  # fmt: skip
_PHRASES = {
    "a lot of": "lots of", "lots of": "plenty of", "make sure": "ensure", "set up": "configure",
    "find out": "discover", "in order to": "to", "as well as": "and also", "as soon as": "once",
    "want to": "would like to", "going to": "about to", "at the moment": "right now",
    "for example": "for instance", "such as": "like", "you can": "you're able to",
}  # fmt: skip
_CONTRACTIONS = {
    "it is": "it's", "do not": "don't", "does not": "doesn't", "I am": "I'm",
    "you are": "you're", "cannot": "can't", "will not": "won't", "that is": "that's",
    "I have": "I've", "we are": "we're", "is not": "isn't", "there is": "there's",
    "are not": "aren't", "did not": "didn't", "I would": "I'd", "we have": "we've",
}  # fmt: skip
_EXPANSIONS = {short: long for long, short in _CONTRACTIONS.items()}
_FILLERS = ("really", "just", "actually", "basically", "very", "totally", "literally")
_OPENERS = (
    "Honestly, ", "Basically, ", "FYI, ", "Just so you know, ", "To be clear, ", "Note: ",
    "As a reminder, ", "For the record, ",
)  # fmt: skip
_LOWER_AFTER_OPENER = frozenset({
    "the", "it", "this", "we", "you", "that", "there", "a", "an", "my", "our", "if", "when", "to",
    "in", "for", "so", "and", "but", "yes", "no", "thanks", "wow", "hey", "oh", "these", "those",
    "they", "some", "all", "each", "every", "your", "what", "how", "why", "where", "who", "just",
    "last", "yeah", "sounds", "good", "great", "nah", "whoa", "congrats",
})  # fmt: skip
_MOVABLE = ("because", "since", "when", "if", "although", "while")
_NUMBERS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten")

# "X and Y" standing alone, between punctuation or function words: never "still and life"
_AROUND = "|".join(sorted(STOPWORDS))
_CONJUNCTS = re.compile(
    rf"(?:^|[^\w\s]\s*|\b(?:{_AROUND}) )([a-z]{{3,}}) and ([a-z]{{3,}})"
    rf"(?=\s*(?:[^\w\s]|$)|\s(?:{_AROUND})\b)"
)

Edit = Callable[[str, random.Random], str]


def normalised(text: str) -> str:
    """The text with case, spaces and punctuation set aside: what an exact duplicate shares."""
    return " ".join(_WORDS.findall(text.casefold()))


def content_words(text: str) -> set[str]:
    """The words that carry meaning: lower case, no stopwords."""
    return {w for w in _WORDS.findall(text.casefold()) if w not in STOPWORDS}


def _cased(word: str, like: str) -> str:
    if like.isupper() and len(like) > 1:
        return word.upper()
    return word[:1].upper() + word[1:] if like[:1].isupper() else word


def _speaker(text: str) -> tuple[str, str]:
    """("Caroline: ", rest) for a chat turn, ("", text) otherwise: edits leave the speaker be."""
    match = _SPEAKER.match(text)
    return (match.group(), text[match.end() :]) if match else ("", text)


def _synonyms(text: str, rng: random.Random, share: float) -> str:
    spots = [
        m
        for m in _TOKEN.finditer(text)
        if m.group().lower() in _ONE_WAY and "'" not in text[m.start() - 1 : m.start()]
        and not text.startswith("'", m.end())
    ]  # fmt: skip
    if not spots:
        return text
    chosen = {id(m) for m in spots if rng.random() < share} or {id(rng.choice(spots))}
    out, last = [], 0
    for m in spots:
        if id(m) in chosen:
            out += [text[last : m.start()], _cased(_ONE_WAY[m.group().lower()], m.group())]
            last = m.end()
    return "".join([*out, text[last:]])


def _table(table: dict[str, str], *, not_before: frozenset[str] = frozenset()) -> Edit:
    """An edit that swaps one phrase of `table` (whole words, first letter's case kept), unless
    the next word is one of `not_before` ("it's been" is "it has been", not "it is been")."""

    def edit(text: str, rng: random.Random) -> str:
        found = [
            (m, table[key])
            for key in table
            for m in re.finditer(rf"\b{re.escape(key)}\b(?! ?(?:{_joined(not_before)})\b)", text,
                                 re.IGNORECASE)
        ]  # fmt: skip
        if not found:
            return text
        m, new = rng.choice(found)
        return text[: m.start()] + _cased(new, m.group()) + text[m.end() :]

    return edit


def _joined(words: frozenset[str]) -> str:
    return "|".join(sorted(words)) or "(?!)"


def _drop_filler(text: str, rng: random.Random) -> str:
    found = [m for w in _FILLERS for m in re.finditer(rf"\b{w}\b ", text, re.IGNORECASE)]
    if not found:
        return text
    m = rng.choice(found)
    rest = text[m.end() :]
    if m.group()[:1].isupper():
        rest = rest[:1].upper() + rest[1:]
    return text[: m.start()] + rest


def _add_opener(text: str, rng: random.Random) -> str:
    return rng.choice(_OPENERS) + _lowered(text)


def _lowered(text: str) -> str:
    """`text` with its first letter in lower case when its first word is a common one (a name
    or "I" keeps its capital)."""
    first = re.match(r"[A-Za-z]*", text)
    word = first.group().lower() if first else ""
    if word != "i" and word in _LOWER_AFTER_OPENER | STOPWORDS:
        return text[:1].lower() + text[1:]
    return text


def _swap_sentences(text: str, rng: random.Random) -> str:
    parts = _SENTENCE_END.split(text.strip())
    if len(parts) < 2:
        return text
    i = rng.randrange(len(parts) - 1)
    parts[i], parts[i + 1] = parts[i + 1], parts[i]
    return " ".join(parts)


def _move_clause(text: str, rng: random.Random) -> str:
    """ "A because B." -> "Because B, a." in one sentence of the text."""
    parts = _SENTENCE_END.split(text.strip())
    pattern = re.compile(rf"^(.{{12,}}?),? ({'|'.join(_MOVABLE)}) ([^,;]{{8,}}?)([.!?]?)$")
    spots = [i for i, p in enumerate(parts) if pattern.match(p)]
    if not spots:
        return text
    i = rng.choice(spots)
    m = pattern.match(parts[i])
    assert m is not None
    head, conj, tail, end = m.groups()
    head = _lowered(head)
    parts[i] = f"{conj.capitalize()} {tail}, {head}{end or '.'}"
    return " ".join(parts)


def _swap_conjuncts(text: str, rng: random.Random) -> str:
    found = [
        m
        for m in _CONJUNCTS.finditer(text)
        if m.group(1) not in STOPWORDS and m.group(2) not in STOPWORDS
    ]
    if not found:
        return text
    m = rng.choice(found)
    return f"{text[: m.start(1)]}{m.group(2)} and {m.group(1)}{text[m.end(2) :]}"


def _numbers(text: str, rng: random.Random) -> str:
    """A number spelt another way: 3 <-> three, 12000 -> 12,000, 40% -> 40 percent."""
    found: list[tuple[re.Match[str], str]] = []
    for m in re.finditer(r"\b([2-9])\b(?![.,:/]\d)", text):
        found.append((m, _NUMBERS[int(m.group())]))
    for m in re.finditer(rf"\b({'|'.join(_NUMBERS[2:])})\b", text):
        found.append((m, str(_NUMBERS.index(m.group()))))
    for m in re.finditer(r"(?<![\d.,])(\d{4,7})(?![\d.,:/-]\d)", text):
        value = int(m.group())
        if not 1900 <= value <= 2100:
            found.append((m, f"{value:,}"))
    for m in re.finditer(r"(\d+)%", text):
        found.append((m, f"{m.group(1)} percent"))
    if not found:
        return text
    m, new = rng.choice(found)
    return text[: m.start()] + new + text[m.end() :]


def _punctuation(text: str, rng: random.Random) -> str:
    stripped = text.rstrip()
    options = []
    if stripped.endswith("!"):
        options.append(stripped[:-1] + ".")
    if stripped.endswith("."):
        options.append(stripped[:-1])
    if " - " in stripped:
        options.append(stripped.replace(" - ", ", ", 1))
    if "..." in stripped:
        options.append(stripped.replace("...", ".", 1))
    return rng.choice(options) if options else text


_LIGHT: tuple[Edit, ...] = (
    lambda t, r: _synonyms(t, r, 0.25),
    _table(_CONTRACTIONS),
    _table(_EXPANSIONS, not_before=frozenset({"been", "got", "gotten", "had"})),
    _table(_PHRASES),
    _drop_filler,
    _numbers,
    _punctuation,
)
_STRUCTURAL: tuple[Edit, ...] = (_swap_sentences, _move_clause, _swap_conjuncts, _add_opener)


def _apply(text: str, rng: random.Random, edits: tuple[Edit, ...], wanted: int) -> str:
    """Up to `wanted` edits that change something, tried in a seeded order."""
    done = 0
    for edit in rng.sample(edits, len(edits)):
        changed = edit(text, rng)
        if changed != text:
            text, done = changed, done + 1
            if done == wanted:
                break
    return text


def paraphrase(text: str, rng: random.Random, *, heavy: bool = False) -> str:
    """A restatement of `text` (see the module's doc); never an exact duplicate of it."""
    speaker, body = _speaker(text)
    if heavy:
        body = _apply(body, rng, _STRUCTURAL, 1)
        body = _synonyms(body, rng, 0.5)
        body = _apply(body, rng, _LIGHT, rng.randint(2, 3))
    else:
        body = _apply(body, rng, _LIGHT, rng.randint(1, 2))
    if normalised(body) == normalised(_speaker(text)[1]):  # nothing applied: open differently
        body = _add_opener(body, rng)
    return speaker + body


def exact_variant(text: str, rng: random.Random) -> str:
    """`text` with its case, spaces and punctuation changed, and nothing else."""
    edits: list[Callable[[str], str]] = [
        str.lower,
        lambda t: t[:1].swapcase() + t[1:],
        lambda t: re.sub(r" ", lambda m: "  " if rng.random() < 0.2 else " ", t),
        lambda t: f" {t.strip()}\n",
        lambda t: re.sub(r"[,;:!?](?=\s)", lambda m: "" if rng.random() < 0.5 else m.group(), t),
        lambda t: t.rstrip().rstrip(".!?") + rng.choice(["", "!", ".", " ."]),
    ]
    variant = text
    for edit in rng.sample(edits, rng.randint(2, 3)):
        variant = edit(variant)
    if variant == text:
        variant = text.lower() if text.lower() != text else text.upper()
    return variant
