"""Engineering names found by regular expressions over the raw text, with character offsets.

These run before and win over the statistical model: a ticket key, a file path or an env var
has a shape no tagger trained on news text knows, and a shape is cheap to recognise exactly.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from .mentions import PATTERN, SOFT, SPEAKER, Mention, mention
from .normalise import normalise
from .vocabulary import (
    CAPITALISED_ONLY,
    FILE_EXTENSIONS,
    NOT_TICKET_PREFIXES,
    PACKAGES,
    PHRASE_STOPS,
    PRODUCTS,
    PRONOUNS,
    SERVICE_SUFFIXES,
    TRIM_WORDS,
    words,
)

_KNOWN = PACKAGES | PRODUCTS | {"node.js", "next.js", "vue.js"}
# one cheap word scan and a set lookup; a 150-way alternation regex is ten times slower
_WORD_RE = re.compile(r"(?<![\w.\-/@])[A-Za-z][A-Za-z0-9]*(?:\.js)?(?![\w\-/@]|\.\w)")
_VERSIONED_RE = re.compile(
    r"(?<![\w.\-/@])(?P<pkg>[A-Za-z][A-Za-z0-9]*(?:\.js)?)\s+(?P<ver>v?\d+(?:\.\d+){0,3})(?!\w|\.\d)"
)
_URL_RE = re.compile(r"\b(?:https?|wss?|ftp)://[^\s<>\"'`)\]]+")
_ABS_PATH_RE = re.compile(r"(?<![\w/.:@\-])(?:~|\.{1,2})?/(?:[\w.@\-]+/)*[\w.@\-]+/?")
_REL_PATH_RE = re.compile(r"(?<![\w/.:@\-])[\w.\-]+(?:/[\w.@\-]+)+/?")
_EXTS = "|".join(sorted(FILE_EXTENSIONS, key=len, reverse=True))
_FILE_RE = re.compile(rf"(?<![\w/.\-])[\w\-]+(?:\.[\w\-]+)*\.(?:{_EXTS})(?![\w\-])", re.IGNORECASE)
_BUILD_FILE_RE = re.compile(r"\b(?:Dockerfile|Makefile|Procfile|Jenkinsfile|Containerfile)\b")
_TICKET_RE = re.compile(r"\b(?P<key>[A-Z][A-Z0-9]{1,9})-\d+\b")
_ISSUE_RE = re.compile(r"(?<![\w&#])#\d+\b")
_ENV_RE = re.compile(r"(?<![\w$])\$?[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+\b|\$[A-Z][A-Z0-9]+\b")
_HTTP_PREFIX_RE = re.compile(r"\bHTTP(?:/\d(?:\.\d)?)?[ -]?(?P<code>[1-5]\d\d)\b", re.IGNORECASE)
_HTTP_STATUS_RE = re.compile(r"\bstatus(?: code)?\s+(?P<code>[1-5]\d\d)\b", re.IGNORECASE)
# "returned 100 rows" is no status: after a verb only 4xx and 5xx count
_HTTP_AFTER_RE = re.compile(
    r"\b(?:error(?: code)?|returned|returns|returning|respond(?:ed|s)? with|got|gets|getting"
    r"|threw|throws|throwing|code)\s+(?:an?\s+)?(?P<code>[45]\d\d)s?\b",
    re.IGNORECASE,
)
_HTTP_BEFORE_RE = re.compile(
    r"\b(?P<code>[45]\d\d)s?\s+(?:errors?|status|responses?|response codes?|from)\b", re.IGNORECASE
)
_V_VERSION_RE = re.compile(r"(?<![\w.\-])v\d+(?:\.\d+){0,3}(?:-[0-9A-Za-z.]+)?(?!\w|\.\d)")
_NAMED_VERSION_RE = re.compile(
    r"\b(?:release|version|ver\.?|rel)\s+v?\d+(?:\.\d+)*(?!\w|\.\d)", re.IGNORECASE
)
_SEMVER_RE = re.compile(r"(?<![\w.])\d+\.\d+\.\d+(?!\w|\.\d)")
_SUFFIXES = "|".join(SERVICE_SUFFIXES)
_KEBAB_SERVICE_RE = re.compile(rf"\b[a-z][a-z0-9]*(?:[-_][a-z0-9]+)*[-_](?:{_SUFFIXES})\b")
_SPACED_SERVICE_RE = re.compile(r"\b(?P<word>[A-Za-z][\w\-]*)\s+services?\b")
_SNAKE_RE = re.compile(r"\b[A-Za-z_][A-Za-z0-9]*(?:_[A-Za-z0-9]+)+\b")
_DOTTED_RE = re.compile(r"(?<![\w.])[A-Za-z_]\w+(?:\.[A-Za-z_]\w+)+(?:\(\))?(?![\w.]|\.\w)")
_CAMEL_RE = re.compile(
    r"\b(?:[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]+)+|[a-z][a-z0-9]+(?:[A-Z][a-z0-9]*)+)\b"
)
_KEBAB_RE = re.compile(r"\b[a-z][a-z0-9]*(?:-[a-z0-9]+)+\b")
_BACKTICK_RE = re.compile(r"`(?P<code>[^`\n]{1,80})`")
_INSTALL_RE = re.compile(
    r"\b(?:pip install|npm install|npm i|yarn add|pnpm add|poetry add|uv add|cargo add"
    r"|go get|installed|install|upgraded|bumped|pinned)\s+(?:the\s+)?(?P<pkg>[a-z][\w.\-]*[a-z0-9])"
    r"(?:[=<>~!]=?\S*)?",
)
_ACRONYM_RE = re.compile(r"\b[A-Z][A-Z0-9]{1,5}s?\b(?!-\d)")
_QUOTED_RE = re.compile(r'["\u201c](?P<title>[A-Z0-9][^"\u201d\n]{0,79})["\u201d]')
_TITLE_SMALL_WORDS = frozenset(
    {"a", "an", "and", "as", "at", "by", "for", "from", "in", "of", "on", "or", "the", "to", "with"}
)
_SPEAKER_RE = re.compile(rf"(?m)^[ \t]*(?P<name>{SPEAKER}):[ \t]")

_NOT_ACRONYMS = frozenset({"OK", "AM", "PM", "I", "A"})
_CAMEL_NAME_PREFIXES = ("Mc", "Mac", "De", "Di", "Le", "La", "Van", "Von", "Du", "St", "Da")
_KEBAB_TECH_PARTS = words(
    """
    db cache queue bucket cluster topic job cron pool lib sdk cli ui app bot index table
    config flag env prod staging dev test ci cd node pod svc repo branch
    """
)
# "Decision: ..." starts a note, not a chat turn
_HEADINGS = words(
    """
    Note Notes Update Fix Fixed Cause Summary Decision Todo Action Actions Impact Resolution
    Context Question Answer Problem Solution Issue Incident Symptom Symptoms Error Warning
    Status Step Steps Result Results Outcome Reason Why What How When Where Who Goal Goals
    Plan Idea Tip Hint Example Lesson Lessons Runbook Postmortem Owner Workaround Root Risk
    Background Followup Next Done Pending Blocked Info Debug Trace Log Logs Output Input Yes No
    """
)
_SERVICE_WORD_STOPS = PRONOUNS | TRIM_WORDS | PHRASE_STOPS | {"new", "old", "same", "whole"}

Found = Iterator[Mention | None]


def _known(text: str) -> Found:
    for m in _WORD_RE.finditer(text):
        word = m.group()
        if word.lower() not in _KNOWN:
            continue
        if word.lower() in CAPITALISED_ONLY and not word[0].isupper():
            continue
        label = "product" if word.lower() in PRODUCTS else "package"
        yield mention(m.start(), m.end(), word, label, PATTERN)


def _versioned(text: str) -> Found:
    for m in _VERSIONED_RE.finditer(text):
        pkg, ver = m.group("pkg"), m.group("ver")
        lowered = pkg.lower()
        known = lowered in PACKAGES or lowered in PRODUCTS
        if lowered in CAPITALISED_ONLY and not pkg[0].isupper():
            continue
        if not known and (not pkg[0].isupper() or "." not in ver or lowered in _STOP_VERSIONED):
            continue
        label = "product" if lowered in PRODUCTS or not known else "package"
        yield mention(m.start("pkg"), m.end("pkg"), pkg, label, PATTERN)
        yield mention(
            m.start("ver"), m.end("ver"), f"{pkg} {ver}", "version", PATTERN,
            anchor=normalise(pkg),
        )  # fmt: skip


_STOP_VERSIONED = frozenset({"release", "version", "ver", "rel", "step", "chapter", "section"})


def _paths(text: str) -> Found:
    for m in _URL_RE.finditer(text):
        url = m.group().rstrip(".,;:!?")
        yield mention(m.start(), m.start() + len(url), url, "url", PATTERN)
    for m in _ABS_PATH_RE.finditer(text):
        if text[m.start() - 1 : m.start()] == "<":
            continue  # a closing tag, "</main>", is no path
        path = m.group().rstrip(".")
        yield mention(m.start(), m.start() + len(path), path, "path", PATTERN)
    for m in _REL_PATH_RE.finditer(text):
        path = m.group().rstrip(".")
        last = path.rstrip("/").rsplit("/", 1)[-1]
        has_ext = "." in last and last.rsplit(".", 1)[-1].lower() in FILE_EXTENSIONS
        if has_ext or path.count("/") >= 2:
            yield mention(m.start(), m.start() + len(path), path, "path", PATTERN)
    for m in _FILE_RE.finditer(text):
        if m.group().lower() not in _KNOWN:
            yield mention(m.start(), m.end(), m.group(), "path", PATTERN)
    for m in _BUILD_FILE_RE.finditer(text):
        yield mention(m.start(), m.end(), m.group(), "path", PATTERN)


def _tickets_and_env(text: str) -> Found:
    for m in _TICKET_RE.finditer(text):
        if m.group("key") not in NOT_TICKET_PREFIXES:
            yield mention(m.start(), m.end(), m.group(), "ticket", PATTERN)
    for m in _ISSUE_RE.finditer(text):
        yield mention(m.start(), m.end(), m.group(), "ticket", PATTERN)
    for m in _ENV_RE.finditer(text):
        start = m.start() + (1 if m.group().startswith("$") else 0)
        yield mention(start, m.end(), text[start : m.end()], "env_var", PATTERN)


def _http(text: str) -> Found:
    for m in _HTTP_PREFIX_RE.finditer(text):
        yield mention(m.start(), m.end(), f"HTTP {m.group('code')}", "http_status", PATTERN)
    for regex in (_HTTP_STATUS_RE, _HTTP_AFTER_RE, _HTTP_BEFORE_RE):
        for m in regex.finditer(text):
            code = m.group("code")
            yield mention(m.start("code"), m.end("code"), f"HTTP {code}", "http_status", PATTERN)


def _versions(text: str) -> Found:
    for regex in (_V_VERSION_RE, _NAMED_VERSION_RE, _SEMVER_RE):
        for m in regex.finditer(text):
            yield mention(m.start(), m.end(), m.group(), "version", PATTERN)


def _services(text: str) -> Found:
    for m in _KEBAB_SERVICE_RE.finditer(text):
        yield mention(m.start(), m.end(), m.group(), "service", PATTERN)
    for m in _SPACED_SERVICE_RE.finditer(text):
        word = m.group("word")
        if word.lower() not in _SERVICE_WORD_STOPS and not word.isdigit():
            yield mention(m.start(), m.end(), m.group(), "service", PATTERN)


def _identifiers(text: str) -> Found:
    for m in _SNAKE_RE.finditer(text):
        yield mention(m.start(), m.end(), m.group(), "identifier", PATTERN)
    for m in _DOTTED_RE.finditer(text):
        yield mention(m.start(), m.end(), m.group(), "identifier", PATTERN)
    for m in _CAMEL_RE.finditer(text):
        if not m.group().startswith(_CAMEL_NAME_PREFIXES):
            yield mention(m.start(), m.end(), m.group(), "identifier", PATTERN)
    for m in _KEBAB_RE.finditer(text):
        parts = m.group().split("-")
        if len(parts) > 2 or any(ch.isdigit() for ch in m.group()) or _KEBAB_TECH_PARTS & {*parts}:
            yield mention(m.start(), m.end(), m.group(), "identifier", PATTERN)
    for m in _BACKTICK_RE.finditer(text):
        code = m.group("code").strip()
        if code:
            yield mention(m.start("code"), m.end("code"), code, "identifier", PATTERN)
    for m in _INSTALL_RE.finditer(text):
        pkg = m.group("pkg")
        if pkg.lower() not in TRIM_WORDS | PRONOUNS:
            yield mention(m.start("pkg"), m.end("pkg"), pkg, "package", PATTERN)


def _soft(text: str) -> Found:
    for m in _ACRONYM_RE.finditer(text):
        word = m.group()
        if word not in _NOT_ACRONYMS and sum(ch.isupper() for ch in word) >= 2:
            yield mention(m.start(), m.end(), word, "concept", SOFT)
    for start, end in speaker_spans(text):
        yield mention(start, end, text[start:end], "person", SOFT)


def _titles(text: str) -> Found:
    """A quoted name in title case ("The Name of the Wind", "Dune") is a work: a book, film,
    song or show. The small model labels such names as people or organisations, or misses them."""
    for m in _QUOTED_RE.finditer(text):
        title = m.group("title")
        words = title.split()
        if not 1 <= len(words) <= 8 or title[-1] in ".!?,;:":
            continue
        if len(words) == 1 and words[0].lower() in PRONOUNS | TRIM_WORDS:
            continue
        if all(w[0].isupper() or not w[0].isalpha() or w in _TITLE_SMALL_WORDS for w in words):
            yield mention(m.start("title"), m.end("title"), title, "product", PATTERN)


def speaker_spans(text: str) -> list[tuple[int, int]]:
    """Where a chat turn names its speaker ("Caroline: I went ..."), one per line at most."""
    spans = []
    for m in _SPEAKER_RE.finditer(text):
        name = m.group("name")
        if name.split()[0] not in _HEADINGS and name.lower() not in _KNOWN:
            spans.append((m.start("name"), m.end("name")))
    return spans


_FINDERS = (_known, _versioned, _paths, _tickets_and_env, _http, _versions, _services, _titles)


def find_patterns(text: str) -> list[Mention]:
    """Every candidate span of an engineering shape, overlapping; `resolve` picks among them."""
    found: list[Mention] = []
    for finder in (*_FINDERS, _identifiers, _soft):
        found.extend(m for m in finder(text) if m is not None)
    return found
