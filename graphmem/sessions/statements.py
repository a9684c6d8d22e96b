"""A session summary, read without an LLM: its statements, what kind each is, and the session's
mode.

Rules match whole words and phrases ("several" is not "sev"), first match wins in the order of
`_KINDS`: a statement that says it failed is a dead end even when it also mentions a decision.
"""

from __future__ import annotations

import re

from graphmem.sessions.models import SessionMode, StatementKind

_BULLET = re.compile(r"^\s*(?:[-*+•]|\d+[.)])\s+")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z`\"'(])")
_MIN_CHARS = 12  # "Done." says nothing worth keeping


def _words(*patterns: str) -> re.Pattern[str]:
    return re.compile(r"\b(?:" + "|".join(patterns) + r")\b", re.IGNORECASE)


def statements(summary: str) -> list[str]:
    """Bullets and lines as they are; a paragraph split into its sentences."""
    out: list[str] = []
    for line in summary.splitlines():
        text = _BULLET.sub("", line).strip()
        if not text or text.startswith("#"):
            continue
        pieces = [text] if _BULLET.match(line) else _SENTENCE_END.split(text)
        out += [p.strip() for p in pieces if len(p.strip()) >= _MIN_CHARS]
    return out


_TODO_START = re.compile(
    r"^(?:todo\b|to-do\b|next(?: steps?)?:|open questions?\b|follow[- ]up:|later:|remaining:"
    # what is left to do: "should also add", "need a review", "still have to", "have yet to"
    r"|(?:we |i )?(?:still )?(?:should|need|needs|must still|have to|have yet to)\b(?! not\b)"
    # an instruction to the team rather than a command of a runbook: "Write up the comparison"
    r"|(?:write(?: up)?|document|file|ask|schedule|ping|draft|plan|book|email|follow up"
    r"|figure out|decide|look into) (?:the|a|an|our|this|that|these|those|it|them|with|how"
    r"|whether|why)\b)",
    re.IGNORECASE,
)
# a date a to-do is due by: "by Friday", "before the next release"
_DUE = _words(
    r"by (?:mon|tues|wednes|thurs|fri|satur|sun)day",
    r"by (?:the )?end of (?:the )?(?:day|week)",
    r"by eod",
    r"before the next (?:release|deploy|sprint)",
    r"needs? to be (?:written|done|reviewed|decided|fixed)",
)
_COMMAND_VERBS = (
    r"run|restart|redeploy|roll ?back|scale|drain|cordon|uncordon|rotate|flush|clear|reindex|"
    r"re-?run|delete|pause|resume|set|export|apply|trigger|enable|disable|re-?enable|reboot|"
    r"promote|fail ?over|patch|kubectl|helm|make|docker|psql|curl|terraform|aws|gcloud|kill"
)

_KINDS: tuple[tuple[StatementKind, re.Pattern[str]], ...] = (
    ("todo", _TODO_START),
    ("todo", _DUE),
    ("dead_end", _words(
        r"did(?:n't| not) work", r"does(?:n't| not) work", r"failed because", r"dead end",
        r"gave up on", r"abandoned", r"no luck", r"does(?:n't| not) help", r"did(?:n't| not) help",
        r"reverted", r"rolled back (?:the|our|my) (?:change|attempt)", r"won't work",
        r"tried .{1,80} but", r"turned out not to", r"not viable", r"ran out of memory")),
    ("incident", _words(
        r"outage", r"incident(?! (?:dashboard|channel|review|template|process|doc\w*|runbook))",
        r"sev[- ]?[1-4]", r"paged", r"(?<!no )(?<!without )downtime", r"(?:was|were|went) down",
        r"production (?:issue|is down|was down)", r"broke prod(?:uction)?", r"root cause",
        r"customers? (?:saw|hit|got|could not|couldn't)", r"hotfix", r"on-?call",
        r"(?:errors?|5xx|latency) .{0,20}spiked", r"rolled back to (?:release|version|v?\d)")),
    ("decision", _words(
        r"decided(?! yet)", r"we chose", r"chose to", r"going with", r"went with",
        r"we(?:'ll| will) use", r"settled on", r"switched (?:\S+ ){0,4}to",
        r"moved (?:\S+ ){0,4}(?:to|off)", r"replaced (?:\S+ ){0,4}with", r"decision",
        r"opted for", r"agreed to", r"adopt(?:ed)?", r"standardi[sz]ed? on",
        r"we(?:'re| are) (?:now )?using", r"(?:we |it |\S+ )now (?:use|uses|run|runs|go(?:es)? through)",
        r"no longer (?:use|uses|run|runs|need|needs|depends? on)", r"rather than",
        r"^we use", r"instead of")),
    ("runbook_step", re.compile(
        r"^(?:(?:to|when|for|after|before|if) [^:,]{3,80}[:,]\s*)?`?(?:" + _COMMAND_VERBS + r")\b"
        r"|\bfirst,? .{1,60} then\b", re.IGNORECASE)),
    ("migration_note", _words(
        r"migrat(?:e|ed|ion|ing)", r"backfill(?:ed)?", r"schema change",
        r"upgraded? (?:\S+ ){0,3}(?:from|to)", r"cut ?over", r"deprecat(?:e|ed|ing)")),
    ("caveat", _words(
        r"note that", r"note:", r"beware", r"careful", r"gotcha", r"watch out", r"caveat",
        r"must", r"never", r"do(?:n't| not)", r"keep in mind", r"be aware", r"only works",
        r"(?:have|has) to", r"otherwise", r"only if")),
    ("todo", _words(
        r"todo", r"to-do", r"follow[- ]up", r"next step", r"later we", r"still have to",
        r"remaining work", r"tbd")),
)  # fmt: skip


def statement_kind(statement: str) -> StatementKind:
    for kind, pattern in _KINDS:
        if pattern.search(statement):
            return kind
    return "fact"


# what a mode makes of a statement that is only a fact otherwise: in an incident, what happened
MODE_KIND: dict[SessionMode, StatementKind] = {
    "incident": "incident",
    "migration": "migration_note",
}

_MODES: tuple[tuple[SessionMode, re.Pattern[str]], ...] = (
    ("incident", _words(
        r"incident(?! (?:dashboard|channel|review|template|process))", r"outage",
        r"sev[- ]?[1-4]", r"paged", r"pager", r"post-?mortem", r"(?<!no )(?<!without )downtime",
        r"on-?call", r"hotfix", r"(?:was|were|went) down", r"root cause", r"rolled back to")),
    ("cleanup", _words(
        r"clean(?:ed|ing)? ?up", r"refactor(?:ed|ing)?", r"dead code", r"tidy", r"tidied",
        r"remov(?:e|ed|ing) unused", r"delet(?:e|ed|ing) (?:unused|old|stale)",
        r"lint(?:ing)? fixes")),
    ("research", _words(
        r"investigat(?:e|ed|ing|ion)", r"research(?:ed)?", r"spike", r"explor(?:e|ed|ing)",
        r"evaluat(?:e|ed|ing)", r"compar(?:e|ed|ing)", r"prototyp(?:e|ed|ing)",
        r"proof of concept", r"checked whether", r"looked into", r"benchmark(?:ed|ing)?",
        r"trade-?offs?")),
    ("migration", _words(
        r"migrat(?:e|ed|ion|ions|ing)", r"backfill(?:ed|ing)?", r"schema change", r"cut ?over",
        r"upgrad(?:e|ed|ing)", r"moved (?:\S+ ){0,3}(?:to|off)")),
)  # fmt: skip


def infer_mode(summary: str) -> SessionMode:
    """The mode whose words weigh most (a word in the first line counts twice), when they weigh
    at least two; coding otherwise. Ties go to the earlier mode of `_MODES`."""
    lines = summary.strip().splitlines()
    first, rest = (lines[0], "\n".join(lines[1:])) if lines else ("", "")
    best, weight = "coding", 1
    for mode, pattern in _MODES:
        score = 2 * len(pattern.findall(first)) + len(pattern.findall(rest))
        if score > weight:
            best, weight = mode, score
    return best  # type: ignore[return-value]


# what a session did rather than what it learnt: kept in its summary only
NARRATIVE = re.compile(
    r"^(?:worked on|today|this session|in this session|spent|started|continued|looked (?:at|into)"
    r"|paired|went through|reviewed|wrapped up|session (?:summary|notes)|added|fixed|implemented"
    r"|built|set up|rewrote|removed|deleted|ran|investigated|evaluated|profiled|compared|checked"
    r"|refactored|tidied|followed up|updated|wrote|created|bumped|merged|tested|debugged|explored"
    r"|cleaned|renamed|documented|shipped|deployed|spike|finished|opened|closed|triaged)\b",
    re.IGNORECASE,
)
SHORT_LINE_WORDS = 5  # a line this short is a heading or a remark, not knowledge
CHANGE_WORDS = _words(
    r"instead",
    r"no longer",
    r"now (?:we|it|the)",
    r"switched",
    r"replaced?",
    r"moved (?:to|from)",
    r"changed",
    r"not any ?more",
    r"anymore",
    r"supersed(?:e|es|ed)",
    r"from now on",
)
CANONICAL_WORDS = _words(
    r"canonical",
    r"the (?:official|standard|accepted|recommended|supported) way",
    r"the only (?:accepted|supported|approved|allowed) way",
    r"(?:is|stays|remains|becomes|became) the (?:standard|default|norm|convention)",
    r"always (?:use|do|run)",
    r"source of truth",
    r"verified that",
    r"confirmed that",
)


_REPLACED = re.compile(
    r"\b(?:instead of|rather than|replac(?:ed|ing)|no longer (?:uses?|runs?|needs?|depends? on)"
    r"|(?:moved|switched|migrated) (?:away )?from)\s+(.+)",
    re.IGNORECASE,
)
_CLAUSE_END = re.compile(r"[;,()]|\.(?:\s|$)|\s(?:with|to|by)\s")
_REPLACED_WORD = re.compile(r"`([^`\n]{2,60})`|([\w@/-]+(?:\.[\w@/-]+)*)")
_PLAIN = frozenset(
    re.findall(
        r"\w+",
        "the a an of on in at to by for from with and or its it this that those these each every "
        "all any our we us was were is are be been being running using calling triggering doing "
        "having manual manually old new previous one two",
    )
)
# a statement that something stays as it was: a reaffirmation of what a memory says
CONTINUATION_WORDS = _words(
    r"still",
    r"stays?",
    r"remains?",
    r"unchanged",
    r"as (?:already )?(?:agreed|decided|before)",
    r"(?:is|are) kept",
    r"keeps?",
    r"continues? to",
)
ADDITION_WORDS = _words(r"also", r"as well", r"in addition", r"addition to", r"besides")
_IDENTIFIER = re.compile(
    r"`([^`\n]{2,60})`|\b([A-Za-z]+[A-Z][A-Za-z0-9]+|[a-z0-9]+(?:[-_.][a-z0-9]+)+)\b"
)
_NUMBER = re.compile(r"\b\d+(?:[.,]\d+)?\b")
_CONTENT_WORD = re.compile(r"[a-z][a-z0-9]{2,}")


def replaced_terms(statement: str) -> list[str]:
    """What a statement says was replaced, as the names and words of the clause after "instead
    of", "replaced", "no longer uses", "moved from"...: "instead of running `certbot renew` on each
    edge node" gives certbot renew, edge, node."""
    found: list[str] = []
    for cue in _REPLACED.finditer(statement):
        clause = _CLAUSE_END.split(cue.group(1), maxsplit=1)[0]
        for match in _REPLACED_WORD.finditer(clause):
            term = match.group(1) or match.group(2)
            wanted = (match.group(1) or len(term) >= 3) and term.lower() not in _PLAIN
            if wanted and term not in found:
                found.append(term)
    return found


def says_nothing_new(statement: str, text: str) -> bool:
    """Whether every name and number of `statement` is in `text`, and most of its words: a
    restatement, however it is worded and whatever kind it was given."""
    lowered = text.lower()
    names = identifiers(statement) + _NUMBER.findall(statement)
    if any(name.lower() not in lowered for name in names):
        return False
    words = [w for w in _CONTENT_WORD.findall(statement.lower()) if w not in _PLAIN]
    return bool(words) and sum(w in lowered for w in words) >= 0.7 * len(words)


def identifiers(statement: str) -> list[str]:
    """Code-like names: `backticked`, CamelCase, dotted, dashed or underscored."""
    found = []
    for match in _IDENTIFIER.finditer(statement):
        term = (match.group(1) or match.group(2)).strip()
        if len(term) >= 4 and term not in found:
            found.append(term)
    return found
