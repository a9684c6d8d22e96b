"""One action per statement of a session summary, against what the store already holds.

For each statement, the closest memories come from hybrid recall (its raw cosine, the better of
the memory's own and its best passage's). Then:

- a to-do stays in the session's summary only (`raw_only`);
- an exact or near-exact restatement of a memory of the same kind is merged into it (nothing new
  stored; the session is linked to it);
- a change ("instead of Y", "no longer uses Y") supersedes the memory that names Y, of whatever
  kind: a decision retires the runbook that said otherwise;
- a statement that calls something the standard way promotes the memory that says it;
- a restatement in other words (every name and number of it, most of its words, in a close
  memory of any kind) and a reaffirmation ("stays", "still", "as agreed") are merged into it;
- a close one of the same kind and place (context, service) updates it, or supersedes it when the
  statement says something changed, and an addition ("also") updates the memory it adds to;
- anything else is new.

Kinds are read by rules and are often wrong on other people's phrasing, so the relations that
carry most weight (change, restatement, reaffirmation, addition) do not depend on them.

Each action carries a confidence, a risk and a one-line rationale; the session's mode decides
which risks may apply without review (`may_auto_apply`).
"""

from __future__ import annotations

from dataclasses import dataclass

from graphmem.models import Memory
from graphmem.sessions.models import ActionKind, PlannedAction, Risk, SessionMode, StatementKind
from graphmem.sessions.statements import (
    ADDITION_WORDS,
    CANONICAL_WORDS,
    CHANGE_WORDS,
    CONTINUATION_WORDS,
    MODE_KIND,
    NARRATIVE,
    SHORT_LINE_WORDS,
    identifiers,
    replaced_terms,
    says_nothing_new,
)

SAME_TEXT = 0.95  # cosine of the same words, whatever kind either was given
DUPLICATE = 0.90  # cosine of a restatement of the same thing, of the same kind
RELATED = 0.80  # cosine of a statement about the same thing
SHARED_TERMS = 0.5  # cosine above which naming the same identifier makes two about one thing
REAFFIRMS = 0.6  # cosine above which "X still holds" is about a memory
NAMES_REPLACED = 0.4  # cosine above which a change that names what a memory says is about it

# what a statement becomes when it is stored: (memory kind, memory type, tags)
STORED_AS: dict[StatementKind, tuple[str, str, list[str]]] = {
    "decision": ("decision", "semantic", []),
    "dead_end": ("dead_end", "episodic", []),
    "incident": ("incident", "episodic", []),
    "runbook_step": ("runbook", "procedural", []),
    "caveat": ("note", "semantic", ["caveat"]),
    "migration_note": ("note", "episodic", ["migration"]),
    "fact": ("note", "semantic", []),
    "todo": ("note", "working", ["todo"]),
}

# which risks each mode applies without review; and what it never applies on its own
AUTO_RISKS: dict[SessionMode, frozenset[Risk]] = {
    "coding": frozenset({"auto"}),
    "migration": frozenset({"auto"}),
    "cleanup": frozenset({"auto", "soft"}),
    "incident": frozenset({"auto"}),
    "research": frozenset(),  # findings of a research session are tentative: all reviewed
}
NEVER_AUTO: dict[SessionMode, frozenset[ActionKind]] = {
    "incident": frozenset({"merge_into", "supersede", "update"}),  # memories of an incident stand
}


@dataclass(frozen=True)
class Neighbour:
    memory: Memory
    cosine: float


def may_auto_apply(action: PlannedAction, mode: SessionMode) -> bool:
    return action.risk in AUTO_RISKS[mode] and action.action not in NEVER_AUTO.get(mode, ())


def plan_statement(
    statement: str,
    kind: StatementKind,
    neighbours: list[Neighbour],
    *,
    mode: SessionMode = "coding",
    context: str | None,
    service: str | None,
) -> PlannedAction:
    if kind == "todo":
        return _action(statement, kind, "raw_only", None, 0.9, "auto",
                       "a to-do belongs to this session, not to lasting knowledge")  # fmt: skip
    if kind == "fact" and (
        NARRATIVE.search(statement) or len(statement.split()) <= SHORT_LINE_WORDS
    ):
        return _action(statement, kind, "raw_only", None, 0.8, "auto",
                       "says what the session did, not what it learnt")  # fmt: skip
    if kind == "fact" and mode in MODE_KIND:  # in an incident, a plain statement is what happened
        kind = MODE_KIND[mode]
    live = [  # a session's own record is not knowledge to merge into
        n for n in neighbours
        if n.memory.lifecycle != "archived" and n.memory.kind not in ("summary", "checkpoint")
    ]  # fmt: skip
    same_text = max(live, key=lambda n: n.cosine, default=None)
    if same_text is not None and same_text.cosine >= SAME_TEXT:
        return _action(statement, kind, "merge_into", same_text, same_text.cosine, "auto",
                       f"says what {same_text.memory.id} says (cosine {same_text.cosine:.2f})")  # fmt: skip
    stored_kind = STORED_AS[kind][0]
    same = [n for n in live if n.memory.kind == stored_kind]
    best = max(same, key=lambda n: n.cosine, default=None)
    if best is not None and best.cosine >= DUPLICATE:
        return _action(statement, kind, "merge_into", best, best.cosine, "auto",
                       f"says again what {best.memory.id} says (cosine {best.cosine:.2f})")  # fmt: skip
    changes = bool(CHANGE_WORDS.search(statement)) and kind in (
        "decision",
        "fact",
        "caveat",
        "runbook_step",
    )
    # what changed is what a memory of any kind said: "now X instead of Y" retires the runbook
    # or the note that says Y, whatever kind the statement itself was given
    replaced = _naming(live, replaced_terms(statement), floor=NAMES_REPLACED) if changes else None
    if replaced is not None:
        return _action(statement, kind, "supersede", replaced, replaced.cosine, "hard",
                       f"says that what {replaced.memory.id} says has changed")  # fmt: skip
    if CANONICAL_WORDS.search(statement):  # the standard way may be any kind of memory
        named = _naming(live, identifiers(statement), floor=SHARED_TERMS)
        standard = named or (same_text if same_text and same_text.cosine >= RELATED else None)
        if standard is not None:
            return _action(statement, kind, "promote", standard, standard.cosine, "hard",
                           f"calls what {standard.memory.id} says the standard way")  # fmt: skip
    adds = bool(ADDITION_WORDS.search(statement))
    restated = next(
        (n for n in sorted(live, key=lambda n: -n.cosine)
         if n.cosine >= RELATED and says_nothing_new(statement, _text(n.memory))),
        None,
    )  # fmt: skip
    if restated is not None and not changes:
        return _action(statement, kind, "merge_into", restated, restated.cosine, "soft",
                       f"says nothing {restated.memory.id} does not (cosine "
                       f"{restated.cosine:.2f})")  # fmt: skip
    if CONTINUATION_WORDS.search(statement) and not changes and not adds:  # "X stays Y"
        kept = _naming(live, identifiers(statement), floor=SHARED_TERMS) or _above(
            same_text, REAFFIRMS
        )
        if kept is not None:
            return _action(statement, kind, "merge_into", kept, kept.cosine,
                           "soft" if kept.cosine >= RELATED else "hard",
                           f"says that what {kept.memory.id} says still holds")  # fmt: skip
    shared = _naming(same, identifiers(statement), floor=SHARED_TERMS)
    close = best if best is not None and best.cosine >= RELATED else shared
    if close is None and adds:  # "X can also be done with Y"
        close = _naming(live, identifiers(statement), floor=SHARED_TERMS) or _above(
            same_text, SHARED_TERMS
        )
    if close is not None and _same_place(close.memory, context, service):
        if changes:
            return _action(statement, kind, "supersede", close, close.cosine, "hard",
                           f"says that what {close.memory.id} says has changed")  # fmt: skip
        return _action(statement, kind, "update", close, close.cosine, "soft",
                       f"adds to {close.memory.id}, which is about the same thing "
                       f"(cosine {close.cosine:.2f})")  # fmt: skip
    confidence = 0.9 if kind != "fact" else 0.7
    return _action(statement, kind, "new", None, confidence, "auto",
                   f"a {kind.replace('_', ' ')} the store does not hold yet")  # fmt: skip


def _naming(
    neighbours: list[Neighbour], terms: list[str], *, floor: float = 0.0
) -> Neighbour | None:
    """The closest neighbour whose text names one of `terms` (case aside), above `floor`."""
    if not terms:
        return None
    found = [
        n
        for n in neighbours
        if n.cosine >= floor and any(t.lower() in _text(n.memory).lower() for t in terms)
    ]
    return max(found, key=lambda n: n.cosine, default=None)


def _above(neighbour: Neighbour | None, floor: float) -> Neighbour | None:
    return neighbour if neighbour is not None and neighbour.cosine >= floor else None


def _text(memory: Memory) -> str:
    return f"{memory.title or ''} {memory.content}"


def _same_place(memory: Memory, context: str | None, service: str | None) -> bool:
    """Same context and service, where both sides say."""
    return all(
        mine is None or theirs is None or mine == theirs
        for mine, theirs in ((context, memory.context), (service, memory.service))
    )


def _action(
    statement: str,
    kind: StatementKind,
    action: ActionKind,
    target: Neighbour | None,
    confidence: float,
    risk: Risk,
    rationale: str,
) -> PlannedAction:
    excerpt = None
    if target is not None:
        text = target.memory.title or target.memory.content
        excerpt = text if len(text) <= 80 else text[:79] + "…"
    return PlannedAction(
        statement=statement,
        statement_kind=kind,
        action=action,
        target=target.memory.id if target is not None else None,
        target_excerpt=excerpt,
        confidence=round(min(max(confidence, 0.0), 1.0), 3),
        risk=risk,
        rationale=rationale,
    )
