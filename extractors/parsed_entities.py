"""Mentions a parsed document adds to the patterns: named entities, noun phrases, likely people.

The small English model was trained on news, so its labels are filtered before they count:
an ORG or PERSON must contain a proper noun and not be a lone acronym ("JWT" is not a
company), and a DATE must look like a date ("MySQL to PostgreSQL" was tagged as one).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from .mentions import NER, PATTERN, PHRASE, SOFT, Mention, mention
from .vocabulary import DATE_WORDS, HUMAN_VERBS, PRONOUNS, TRIM_WORDS

if TYPE_CHECKING:
    from spacy.tokens import Doc, Span, Token

NER_LABELS = {
    "PERSON": "person",
    "ORG": "org",
    "GPE": "place",
    "LOC": "place",
    "FAC": "place",
    "NORP": "org",
    "DATE": "date",
    "TIME": "date",
    "PRODUCT": "product",
    "WORK_OF_ART": "product",
    "LAW": "product",
    "EVENT": "event",
}
_NEEDS_PROPER_NOUN = {"PERSON", "ORG", "NORP", "PRODUCT", "GPE"}
_TRIM_TAGS = {"DT", "PDT", "PRP$", "WDT", "WP", "WP$", "POS", "CC", "HYPH", "-LRB-", "-RRB-"}
_COMMON_NOUN_TAGS = {"NN", "NNS"}


_CLOCK_OR_YEAR = re.compile(r"\b(?:1[89]|20)\d\d\b|\b\d{1,2}(?::\d\d)?\s?(?:am|pm)\b", re.I)


def needs_ner(doc: Doc, patterns: list[Mention]) -> bool:
    """Whether the statistical NER could add a label the patterns do not already give.

    It labels proper nouns (a capitalised word that is not an acronym, a covered pattern, or
    a capitalised common noun opening a sentence) and dates (a date word, a year, a clock
    time). Numbers, quantities and money it would label are dropped anyway. Skipping it on
    the rest saves about half the parse time for typical engineering notes.
    """
    if _CLOCK_OR_YEAR.search(doc.text):
        return True
    covered = [(m.start, m.end) for m in patterns if m.rank == PATTERN]
    for token in doc:
        if token.lower_ in DATE_WORDS:
            return True
        text = token.text
        if not text[:1].isupper() or text.rstrip("s").isupper() or not token.is_alpha:
            continue  # lower case, or an acronym ("DNS", "TTLs")
        if token.is_sent_start and token.tag_ not in ("NNP", "NNPS"):
            continue
        if not any(start <= token.idx < end for start, end in covered):
            return True
    return False


_DATE_SHAPE = re.compile(r"\b(?:1[89]|20)\d\d\b|\d{1,2}[/.\-]\d{1,2}|\d(?::\d\d|\s?[ap]m\b)", re.I)


def _looks_like_date(ent: Span) -> bool:
    """ "last week", "2024", "5/12", "3pm": not a bare "50" or "MySQL to PostgreSQL"."""
    return any(t.lower_ in DATE_WORDS for t in ent) or bool(_DATE_SHAPE.search(ent.text))


def _lone_acronym(ent: Span) -> bool:
    text = ent.text.rstrip("s")
    return len(ent) == 1 and len(text) >= 2 and text.isupper()


def named_entities(doc: Doc) -> Iterator[Mention | None]:
    for ent in doc.ents:
        label = NER_LABELS.get(ent.label_)
        if label is None:
            continue
        proper = any(t.tag_ in ("NNP", "NNPS") for t in ent) and not _lone_acronym(ent)
        if ent.label_ in _NEEDS_PROPER_NOUN and not proper:
            continue
        if label == "date" and not _looks_like_date(ent):
            continue
        yield mention(ent.start_char, ent.end_char, ent.text, label, NER)


def likely_people(doc: Doc, lemma: Callable[[Token], str]) -> Iterator[Mention | None]:
    """A capitalised subject of "went", "said", "painted"... that the NER missed.

    The small model often misses a first name at the start of a sentence, the usual place
    for one in a chat turn ("Caroline went to the support group").
    """
    for token in doc:
        if (
            token.dep_ == "nsubj"
            and token.tag_ == "NNP"
            and token.is_alpha
            and token.is_title
            and not token.ent_type_
            and token.head.tag_.startswith("VB")
            and lemma(token.head) in HUMAN_VERBS
        ):
            yield mention(token.idx, token.idx + len(token), token.text, "person", SOFT)


def noun_phrases(doc: Doc) -> Iterator[Mention | None]:
    """Noun chunks, trimmed to their name; a possessive chunk is two names, its owner and its
    head: "sqlc's prepared statements" names sqlc and the prepared statements (a fact links them,
    see `parsed_facts`), never "sqlc's prepared statements" as one thing."""
    for chunk in doc.noun_chunks:
        tokens = list(chunk)
        cut = max((i for i, t in enumerate(tokens) if t.tag_ == "POS"), default=None)
        if cut is not None:
            owner = tokens[:cut]
            earlier = max((i for i, t in enumerate(owner) if t.tag_ == "POS"), default=None)
            if earlier is not None:
                owner = owner[earlier + 1 :]  # "a friend's sister's car": the sister owns it
            if owner:
                yield _phrase(doc, owner, owner[-1])
            tokens = tokens[cut + 1 :]
        yield _phrase(doc, tokens, chunk.root)


def _phrase(doc: Doc, tokens: list[Token], root: Token) -> Mention | None:
    while tokens and (tokens[0].tag_ in _TRIM_TAGS or tokens[0].lower_ in TRIM_WORDS):
        tokens.pop(0)
    while tokens and tokens[-1].tag_ in _TRIM_TAGS:
        tokens.pop()
    if not tokens or all(t.is_stop or t.lower_ in PRONOUNS or t.is_punct for t in tokens):
        return None
    if root.tag_ in ("PRP", "CD") or root.lower_ in PRONOUNS:
        return None
    tokens = _from_the_name(tokens)
    start, end = tokens[0].idx, tokens[-1].idx + len(tokens[-1])
    name = doc.text[start:end]
    first = tokens[0]
    if first.is_sent_start and first.tag_ in _COMMON_NOUN_TAGS and first.is_title:
        name = name[0].lower() + name[1:]  # "Runbooks are..." is "runbooks", not a name
    head = (root.idx, root.idx + len(root))
    return mention(start, end, name, "concept", PHRASE, head=head)


_NAME_TAGS = {"NNP", "NNPS"}
_NEVER_IN_NAMES = {"RB", "RBR", "RBS", "UH", "VB", "VBG", "VBN", "VBD", "VBP", "VBZ"}


def _from_the_name(tokens: list[Token]) -> list[Token]:
    """A proper name takes no adjective or greeting: "great Jon", "Absolutely Jon" and "Sure
    thing Nate" name Jon and Nate. Words before a run of proper nouns that ends the phrase are
    dropped when they are adverbs, interjections or verbs, or lower case, or open the sentence
    or the chat turn (a capitalised adjective inside a sentence may be part of the name:
    "Irish Sea")."""
    first_name = next((i for i, t in enumerate(tokens) if t.tag_ in _NAME_TAGS), None)
    if not first_name or any(t.tag_ not in _NAME_TAGS for t in tokens[first_name:]):
        return tokens
    if all(_not_a_name_word(t) for t in tokens[:first_name]):
        return tokens[first_name:]
    return tokens


def _not_a_name_word(token: Token) -> bool:
    if token.tag_ in _NEVER_IN_NAMES or token.is_lower:
        return True
    opening = token.i == 0 or token.is_sent_start or token.nbor(-1).text in {":", ".", "!", "?"}
    return opening and token.is_alpha
