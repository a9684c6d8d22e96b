"""The role of a section in an engineering document, and the role a question asks for.

Runbooks, alert playbooks and postmortems share a skeleton: what it means, what it breaks, how to
diagnose it, how to fix it, how to roll back, how to check it worked. A question says which part
it wants ("what should I check" is diagnosis, "how serious is it" impact, "what can I do" the
fix), but its words are the symptom's, which every section of the document repeats; the section
that restates the symptom (the meaning) then outranks the one that answers. A heading's role
against the question's is a feature of search (`role`).
"""

from __future__ import annotations

import re

Role = str


def _words(*patterns: str) -> re.Pattern[str]:
    return re.compile(r"\b(?:" + "|".join(patterns) + r")\b", re.IGNORECASE)


# role -> (what a heading of that role says, what a question wanting it says)
_ROLES: dict[Role, tuple[re.Pattern[str], re.Pattern[str]]] = {
    "diagnosis": (
        _words(r"diagnos\w*", r"troubleshoot\w*", r"investigat\w*", r"debug\w*", r"checks?",
               r"checking", r"inspect\w*", r"triage"),
        _words(r"check", r"investigate", r"diagnose", r"find out", r"troubleshoot", r"debug",
               r"inspect", r"look at", r"which (?:logs?|metrics?|commands?)", r"how (?:do|can) i "
               r"(?:see|tell|know|find|confirm|verify)", r"what should i (?:look|check)"),
    ),
    "mitigation": (
        _words(r"mitigat\w*", r"resolution", r"resolv\w*", r"remediat\w*", r"fix\w*",
               r"solutions?", r"workarounds?", r"recover\w*", r"what to do", r"repair\w*"),
        _words(r"fix", r"resolve", r"mitigate", r"remediate", r"recover", r"repair", r"solve",
               r"workaround", r"what (?:should|can|do) (?:i|we) do", r"how (?:do|can|should) "
               r"(?:i|we) (?:fix|stop|clear|resolve|get rid|recover|restore|make)"),
    ),
    "impact": (
        _words(r"impacts?", r"consequences?", r"effects?", r"risks?", r"severity"),
        _words(r"how (?:bad|serious|severe)", r"impacts?", r"affects?", r"consequences?",
               r"what (?:happens|breaks|problems?|can go wrong)", r"risks?", r"dangerous"),
    ),
    "meaning": (
        _words(r"meaning", r"overview", r"description", r"summary", r"what is", r"about"),
        _words(r"what does .{1,60} mean", r"what is (?:the|a|an) .{1,40} alert", r"means?"),
    ),
    "rollback": (
        _words(r"roll ?backs?", r"rolling back", r"revert\w*", r"undo\w*"),
        _words(r"roll(?:ed|ing)? ?back", r"revert", r"undo", r"go back"),
    ),
    "verification": (
        _words(r"verif\w*", r"validat\w*", r"confirm\w*", r"testing"),
        _words(r"verify", r"validate", r"confirm (?:that|it)", r"make sure", r"how (?:do|can) "
               r"i (?:tell|know) (?:it|that) (?:worked|is fixed)"),
    ),
}  # fmt: skip


def section_role(heading: str) -> Role | None:
    """The role a heading names, if it names one ("Diagnosis", "How to mitigate")."""
    for role, (heading_words, _) in _ROLES.items():
        if heading_words.search(heading):
            return role
    return None


def wanted_roles(query: str) -> frozenset[Role]:
    """The roles a question asks for; empty when it says nothing of the kind."""
    return frozenset(role for role, (_, asks) in _ROLES.items() if asks.search(query))
