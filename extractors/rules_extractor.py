"""Extraction without a statistical model: patterns, capitalised runs, short noun phrases, and
verb phrases matched between two consecutive names in a sentence.

This is what runs when no spaCy model is installed. It finds fewer facts than the parser
("we fixed it by ..." has no name on the left), but what it finds it finds the same way
every time, in well under a millisecond per text.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator
from typing import TYPE_CHECKING

from spacy.lang.en.stop_words import STOP_WORDS

from .base import Extraction
from .facts import RULES, FactTable
from .mentions import PHRASE, SOFT, EntityTable, Mention, mention, resolve
from .patterns import find_patterns
from .vocabulary import PHRASE_STOPS, TRIM_WORDS

if TYPE_CHECKING:
    from spacy.tokens import Doc, Span

_BE = r"(?:is|was|are|were|has been|have been|had been|will be|got|gets)"
_VERB_GAPS: list[tuple[str, str, bool]] = [
    # (gap between two names, predicate, reversed: the right-hand name is the subject)
    (rf"{_BE} replaced (?:by|with)", "replaced", True),
    (rf"{_BE} caused by", "caused", True),
    (rf"{_BE} (?:fixed|resolved) by", "fixed", True),
    (rf"{_BE} used by", "uses", True),
    (rf"{_BE} broken by", "broke", True),
    (rf"(?:{_BE} )?(?:owned|maintained) by", "owned_by", False),
    (rf"(?:{_BE} )?blocked by", "blocked_by", False),
    (rf"(?:{_BE} )?mitigated (?:by|with)", "mitigated_by", False),
    (rf"(?:{_BE} )?deployed (?:to|on|onto|into)|deploys to", "deployed_to", False),
    (r"(?:depends|depend|depended|relies|rely|relied) on|is dependent on", "depends_on", False),
    (r"uses|used|use|(?:is|are|was|were) using", "uses", False),
    (
        r"caused|causes|cause|led to|leads to|resulted in|results in|triggered|triggers",
        "caused",
        False,
    ),
    (r"fixed|fixes|resolved|resolves", "fixed", False),
    (r"replaced|replaces|superseded|supersedes", "replaced", False),
    (r"broke|breaks", "broke", False),
    (r"owns|owned|maintains|maintained", "owned_by", True),
    (r"blocks|blocked", "blocked_by", True),
    (r"mitigates|mitigated", "mitigated_by", True),
]
_LEAD = r"\s*(?P<and>,?\s*and\s+)?(?:(?:also|then|now|still|eventually|has|have|had|will)\s+)*"
_TAIL = r"(?:\s+(?:the|a|an|our|their|its|this|that|some))?\s*"
_GAPS = [
    (re.compile(_LEAD + f"(?:{verb})" + _TAIL, re.IGNORECASE), predicate, reverse)
    for verb, predicate, reverse in _VERB_GAPS
]
_MOVE = r"(?:migrated|migrate|migrating|moved|move|moving|switched|switch|ported|port)"
_MOVE_BEFORE = re.compile(rf"\b{_MOVE}\s+(?:the\s+|our\s+|a\s+)?$", re.IGNORECASE)
_MOVE_AFTER = re.compile(rf"\s*(?:{_BE}\s+)?{_MOVE}\s+(?=from|to|onto|into)", re.IGNORECASE)
_FROM = re.compile(r"\s*from\s+(?:the\s+|our\s+|a\s+)?$", re.IGNORECASE)
_TO = re.compile(r"\s*(?:to|onto|into)\s+(?:the\s+|our\s+|a\s+)?$", re.IGNORECASE)
_DETERMINER = re.compile(
    r"\b(?:the|a|an|our|their|its|this|that|my|your|his|her|some)\s+(?=[A-Za-z0-9])",
    re.IGNORECASE,
)
_WORDS = re.compile(r"[A-Za-z0-9][\w\-]*(?:\s+[A-Za-z0-9][\w\-]*){0,3}")
_WITH = re.compile(r"\s*(?:with|using|via|by)\s+(?:the\s+|our\s+|a\s+|an\s+)?$", re.IGNORECASE)
_WITH_VERB = re.compile(
    r"\b(?P<stem>mitigat|replac|fix|resolv)(?:e|ed|es)?\s+(?:the\s+|our\s+|a\s+|an\s+)?$",
    re.IGNORECASE,
)
# "we mitigated X with Y" -> (X, mitigated_by, Y); "we replaced X with Y" -> (Y, replaced, X)
_WITH_PREDICATES = {
    "mitigat": ("mitigated_by", False),
    "replac": ("replaced", True),
    "fix": ("fixed", True),
    "resolv": ("fixed", True),
}
_VERBISH = {pattern for verb, _, _ in _VERB_GAPS for pattern in re.findall(r"[a-z]+", verb)}


def _phrase_words(words: list[str]) -> list[str]:
    kept: list[str] = []
    for i, word in enumerate(words):
        low = word.lower()
        if low in STOP_WORDS or low in PHRASE_STOPS or low in _VERBISH or low in TRIM_WORDS:
            break
        if i and low.endswith(("ed", "ly", "ing")):
            break
        kept.append(word)
    return kept


def determined_phrases(text: str) -> Iterator[Mention | None]:
    """ "the billing migration", "an index lock": a determiner and up to four plain words."""
    for det in _DETERMINER.finditer(text):
        m = _WORDS.match(text, det.end())
        words = _phrase_words(m.group().split()) if m else []
        if not words:
            continue
        start = det.end()
        end = start + len(" ".join(words))
        if text[start:end] != " ".join(words):
            continue  # the words were separated by more than one space; leave them out
        last = end - len(words[-1])
        yield mention(start, end, text[start:end], "concept", PHRASE, head=(last, end))


def capitalised_runs(doc: Doc) -> Iterator[Mention | None]:
    """Runs of capitalised words not opening a sentence: "Caroline", "Google Cloud"."""
    for sent in doc.sents:
        run: list[int] = []
        for token in [*sent, None]:
            capital = token is not None and token.is_alpha and (token.is_title or token.is_upper)
            # a stop word may continue a run ("Google Cloud Next") but not open one ("The")
            if capital and token is not None and (run or token.lower_ not in STOP_WORDS):
                run.append(token.i)
                continue
            if run and not (run[0] == sent.start and len(run) == 1):
                if run[0] == sent.start:
                    run = run[1:]
                first, last = doc[run[0]], doc[run[-1]]
                start, end = first.idx, last.idx + len(last)
                yield mention(start, end, doc.text[start:end], "concept", SOFT)
            run = []


def _outer(mentions: list[Mention], sent: Span) -> list[Mention]:
    inside = [
        m
        for m in mentions
        if sent.start_char <= m.start and m.end <= sent.end_char and m.anchor is None
    ]
    return [
        m
        for m in inside
        if not any(o is not m and o.start <= m.start and m.end <= o.end for o in inside)
    ]


def _verb_facts(text: str, names: list[Mention], sentence: str, table: FactTable) -> None:
    subject: str | None = None
    for a, b in itertools.pairwise(names):
        gap = text[a.end : b.start]
        for regex, predicate, reverse in _GAPS:
            m = regex.fullmatch(gap)
            if m is None:
                continue
            left = subject if m.group("and") and subject else a.norm
            s, o = (b.norm, left) if reverse else (left, b.norm)
            table.add(s, predicate, o, sentence, RULES)
            subject = left
            break


def _instrument_facts(text: str, names: list[Mention], sentence: str, table: FactTable) -> None:
    for i, (a, b) in enumerate(itertools.pairwise(names)):
        verb = _WITH_VERB.search(text[names[i - 1].end if i else 0 : a.start])
        if verb is None or not _WITH.fullmatch(text[a.end : b.start]):
            continue
        predicate, reverse = _WITH_PREDICATES[verb.group("stem").lower()]
        s, o = (b.norm, a.norm) if reverse else (a.norm, b.norm)
        table.add(s, predicate, o, sentence, RULES)


def _migration_facts(
    text: str, names: list[Mention], sent_start: int, sentence: str, table: FactTable
) -> None:
    for i, moved in enumerate(names):
        before = text[names[i - 1].end if i else sent_start : moved.start]
        after = text[moved.end : names[i + 1].start] if i + 1 < len(names) else ""
        verb_after = _MOVE_AFTER.match(after)
        if not _MOVE_BEFORE.search(before) and not verb_after:
            continue
        offset = verb_after.end() if verb_after else 0
        for prev, nxt in zip(names[i:], names[i + 1 :], strict=False):
            gap = text[prev.end : nxt.start]
            if prev is moved:
                gap = gap[offset:]
            if _FROM.fullmatch(gap):
                table.add(moved.norm, "migrated_from", nxt.norm, sentence, RULES)
            elif _TO.fullmatch(gap):
                table.add(moved.norm, "migrated_to", nxt.norm, sentence, RULES)
            else:
                break


def rules_extraction(doc: Doc, extractor: str) -> Extraction:
    text = doc.text
    found = [*find_patterns(text), *capitalised_runs(doc), *determined_phrases(text)]
    mentions = resolve(m for m in found if m is not None)
    entities = EntityTable()
    for m in mentions:
        entities.add(m)
    facts = FactTable()
    for sent in doc.sents:
        names = _outer(mentions, sent)
        _verb_facts(text, names, sent.text, facts)
        _instrument_facts(text, names, sent.text, facts)
        _migration_facts(text, names, sent.start_char, sent.text, facts)
    return Extraction(entities=entities.entities(), facts=facts.facts(), extractor=extractor)
