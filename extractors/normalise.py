"""One key per thing: "JWT", "the JWT" and "JWTs" must land on the same graph node, and so
must "the repo" and "the repository".

Only the last word is singularised, and only when it looks like an ordinary English plural
(all lower case) or an acronym plural ("APIs"). Title-case words ("James", "Paris") and
identifiers ("PaymentGateways", "s3", "user_ids") keep their letters, because a wrong
singular there merges two different things, which is worse than leaving two nodes.
"""

from __future__ import annotations

import re

from .vocabulary import words

_SPACES = re.compile(r"\s+")
_ACRONYM_PLURAL = re.compile(r"[A-Z0-9]*[A-Z][A-Z0-9]*s")
_LEAD = "\"'`“”‘’«»([{<*,;:!?"
_TRAIL = "\"'`“”‘’«»)]}>*,;:!?."
_PAIRS = {"(": ")", "[": "]", "{": "}", "<": ">"}
_ARTICLES = ("the ", "a ", "an ")

# plural-looking words that are singular, names, or mean something else without the "s"
_KEEP = words(
    """
    redis kubernetes postgres status news series species means lens always perhaps sometimes
    whereas towards afterwards besides thanks analytics physics mathematics economics politics
    ethics diabetes pandas rails express jenkins windows macos chaos kudos https devops mlops
    gitops sales goods headquarters lots does goes this thus plus canvas atlas alias bias texas
    christmas unless across yes iris mumps measles billiards athletics gymnastics
    """
)
_ES_PLURALS = ("sses", "xes", "ches", "shes", "zzes")
_NOT_ES_PLURALS = frozenset({"caches", "headaches", "niches", "moustaches", "avalanches"})
_IES_TO_IE = frozenset({"cookies", "movies", "zombies", "rookies", "selfies", "goodies", "ties"})
# Latin and Greek plurals engineering text uses
_IRREGULAR = {
    "indices": "index",
    "vertices": "vertex",
    "matrices": "matrix",
    "appendices": "appendix",
    "analyses": "analysis",
    "criteria": "criterion",
    "phenomena": "phenomenon",
}
# short forms of engineering words, written either way: "the repo", "the repository"
_SHORT_FORMS = {
    "repo": "repository",
    "app": "application",
    "db": "database",
    "config": "configuration",
    "env": "environment",
    "k8s": "kubernetes",
}
# markup left inside a name: '"Site Manager" permission', "`govuk-infrastructure` repo"
_INNER_QUOTES = str.maketrans("", "", '"`“”')


def singular(word: str) -> str:
    """ "runbooks" -> "runbook": the singular of a lower-case English plural (any other word as
    it is)."""
    if word in _IRREGULAR:
        return _IRREGULAR[word]
    if len(word) < 4 or word in _KEEP or word.endswith(("ss", "us", "is")):
        return word
    if word.endswith("ies") and word not in _IES_TO_IE:
        return word[:-3] + "y"
    if word.endswith(_ES_PLURALS) and word not in _NOT_ES_PLURALS:
        return word[:-2]
    if word.endswith("s"):
        return word[:-1]
    return word


def _balanced(text: str) -> bool:
    return all(text.count(o) == text.count(c) for o, c in _PAIRS.items())


def _strip_surrounding(text: str) -> str:
    previous = None
    while text and text != previous:
        previous = text
        if text.endswith(("'s", "’s")) and len(text) > 2:
            text = text[:-2]
        head, tail = text[0], text[-1]
        if _PAIRS.get(head) == tail and _balanced(text[1:-1]):
            text = text[1:-1]
        elif (head in _PAIRS and text.count(head) > text.count(_PAIRS[head])) or (
            head in _LEAD and head not in _PAIRS
        ):
            text = text[1:]
        elif tail in _PAIRS.values():
            opener = next(k for k, v in _PAIRS.items() if v == tail)
            if text.count(tail) > text.count(opener):
                text = text[:-1]
        elif tail in _TRAIL:
            text = text[:-1]
        text = text.strip()
    return text


def _singular_last_word(text: str) -> str:
    head, _, last = text.rpartition(" ")
    if _ACRONYM_PLURAL.fullmatch(last) and len(last) >= 3:
        last = last[:-1]
    elif last.isalpha() and last.islower():
        last = singular(last)
    return f"{head} {last}" if head else last


def long_form(word: str) -> str:
    """ "repo" -> "repository": the word a short form stands for (any other word as it is)."""
    return _SHORT_FORMS.get(word, word)


def _long_forms(text: str) -> str:
    return " ".join(long_form(word) for word in text.split(" "))


def normalise(name: str) -> str:
    """The merge key of an entity name: case-folded, unquoted, article-free, singular."""
    text = _strip_surrounding(_SPACES.sub(" ", name).strip())
    lowered = text.casefold()
    while lowered.startswith(_ARTICLES):
        cut = lowered.index(" ") + 1
        text, lowered = text[cut:].lstrip(), lowered[cut:].lstrip()
    text = _strip_surrounding(text)
    if not text:
        return ""
    norm = _singular_last_word(text).casefold().translate(_INNER_QUOTES)
    return _long_forms(_SPACES.sub(" ", norm).strip())
