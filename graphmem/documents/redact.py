"""Secrets out of document text before it is stored or embedded.

A memory store is shared and long-lived, so a key pasted into a runbook must not live on in it.
The key's name stays (`password=[REDACTED]`) so the text still says what was there. Placeholders
(`${VAR}`, `<your-password>`, `***`) and prose ("the password policy", "token bucket") are left
alone: redacting them would only make the documents harder to read.
"""

from __future__ import annotations

import re
from collections.abc import Callable

REDACTED = "[REDACTED]"

_PEM = re.compile(
    r"(?P<begin>-----BEGIN (?P<label>[A-Z0-9 ]*?)PRIVATE KEY(?: BLOCK)?-----)"
    r"(?P<body>.{0,16384}?)"  # bounded: a big RSA key is under 7 kB; keeps this linear
    r"(?P<end>-----END (?P=label)PRIVATE KEY(?: BLOCK)?-----)",
    re.DOTALL,
)
# a key cut short (no END line): up to the first blank line
_PEM_CUT = re.compile(
    r"(?P<begin>-----BEGIN [A-Z0-9 ]*?PRIVATE KEY(?: BLOCK)?-----)"
    r"(?!(?:\s|\\n)*\[REDACTED\])(?P<body>[^\n]*(?:\n[ \t]*\S[^\n]*)*)(?P<end>)"
)
_LEAD_SPACE = re.compile(r"(?:\s|\\n)*")
_TAIL_SPACE = re.compile(r"(?:\s|\\n)*\Z")
# vendor formats that are secrets wherever they appear
_TOKENS = re.compile(
    "|".join(
        (
            r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b",
            r"\bgh[pousr]_[A-Za-z0-9]{20,}\b",
            r"\bgithub_pat_[A-Za-z0-9_]{20,}",
            r"\bxox[abprs]-[A-Za-z0-9-]{10,}",
            r"\b[sr]k_(?:live|test)_[A-Za-z0-9]{10,}",
            r"\bAIza[0-9A-Za-z_-]{35}(?![0-9A-Za-z_-])",
            r"\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}",
        )
    )
)
_SLACK_HOOK = re.compile(r"(?P<keep>https://hooks\.slack\.com/services/)[A-Za-z0-9/]{10,}")
_URL_PASSWORD = re.compile(
    r"(?P<keep>\b[A-Za-z][\w+.-]{0,30}://[^\s:/@]+:)(?P<value>[^\s@/]+)(?=@)"
)
_AUTH_HEADER = re.compile(
    r"(?P<keep>\b(?:[Bb]earer|BEARER|[Bb]asic|BASIC)[ \t]+)"
    r"(?P<value>[A-Za-z0-9_~+/-]+(?:\.[A-Za-z0-9_~+/-]+)*=*)"
)
_ASSIGNMENT = re.compile(
    r"(?<![\w.])(?P<quote>[\"']?)(?P<name>[A-Za-z_][\w.-]{0,80})(?P=quote)"
    r"(?P<sep>[ \t]*(?:=>|:=|=|:)[ \t]*)"
    r"(?P<value>\"(?:[^\"\\\n]|\\.)*\"|'[^'\n]*'|\$?\{\{[^\n]*?\}\}|\$\{[^}\n]*\}"
    r"|[^\s,;&}\]{\[][^\s,;&}\]]*)"
)
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_SECRET_WORDS = frozenset({"password", "passwd", "pwd", "secret", "token", "apikey", "passphrase"})
_SECRET_PAIRS = frozenset({"apikey", "accesskey", "secretkey", "privatekey", "clientsecret"})
_SECRET_ENDINGS = ("password", "passwd", "secret", "token", "apikey")
_PLACEHOLDER = re.compile(
    r"\$\{[^}]*\}+|\$\{\{.*\}\}|\$\([^)]*\)|\$[A-Za-z_]\w*|<[^<>]*>|\{\{.*\}\}|%\([^)]*\)s"
    r"|[*xX.•]{3,}|[|>][+-]?\d?|!\w+.*"
)
# `environ["TOKEN"]`, `getenv("X")`: code that fetches the secret, not the secret itself
_CODE_REFERENCE = re.compile(r"[A-Za-z_][\w.]*[\[(]")
_NON_VALUES = frozenset(
    {"null", "none", "nil", "~", "true", "false", "yes", "no", "required", "optional", "n/a"}
)


def redact(text: str) -> tuple[str, int]:
    """The text with each secret replaced by [REDACTED], and how many were replaced."""
    count = 0

    def counted(replace: Callable[[re.Match[str]], str | None]) -> Callable[[re.Match[str]], str]:
        def run(match: re.Match[str]) -> str:
            nonlocal count
            replaced = replace(match)
            if replaced is None:
                return match.group(0)
            count += 1
            return replaced

        return run

    text = _PEM.sub(counted(_pem), text)
    text = _PEM_CUT.sub(counted(_pem), text)
    text = _TOKENS.sub(counted(lambda m: REDACTED), text)
    text = _SLACK_HOOK.sub(counted(lambda m: m.group("keep") + REDACTED), text)
    text = _URL_PASSWORD.sub(counted(_url_password), text)
    text = _AUTH_HEADER.sub(counted(_auth_header), text)
    text = _ASSIGNMENT.sub(counted(_assignment), text)
    return text, count


def _pem(match: re.Match[str]) -> str:
    """Keeps the BEGIN/END lines and the body's surrounding line breaks and indentation."""
    body = match.group("body")
    lead = _LEAD_SPACE.match(body)
    tail = _TAIL_SPACE.search(body)
    if lead is None or tail is None or lead.end() >= tail.start():
        return match.group("begin") + body + REDACTED + match.group("end")
    return match.group("begin") + lead.group() + REDACTED + tail.group() + match.group("end")


def _url_password(match: re.Match[str]) -> str | None:
    if _is_placeholder(match.group("value")):
        return None
    return match.group("keep") + REDACTED


def _auth_header(match: re.Match[str]) -> str | None:
    """Needs a credential-like value, so "Bearer authentication" stays prose."""
    value = match.group("value")
    inner_case = any(c.isupper() for c in value[1:]) and any(c.islower() for c in value)
    looks_random = any(c.isdigit() for c in value) or inner_case or "=" in value
    if len(value) < 8 or not (looks_random or len(value) >= 24):
        return None
    return match.group("keep") + REDACTED


def _assignment(match: re.Match[str]) -> str | None:
    if not _is_secret_name(match.group("name")):
        return None
    value = match.group("value")
    quoted = len(value) >= 2 and value[0] in "\"'" and value[-1] == value[0]
    inner = value[1:-1] if quoted else value
    if _is_placeholder(inner):
        return None
    if not quoted and match.group("sep").strip() == ":":
        # "Password: see the vault" is prose; a value alone on its line is a setting
        rest = match.string[match.end() :].split("\n", 1)[0].strip()
        if rest and not rest.startswith(("#", "//")):
            return None
    replacement = value[0] + REDACTED + value[-1] if quoted else REDACTED
    return match.group(0)[: match.start("value") - match.start()] + replacement


def _is_secret_name(name: str) -> bool:
    words = [w.lower() for w in re.split(r"[_.\-]+", _CAMEL.sub("_", name)) if w]
    if not words:
        return False
    last = words[-1]
    return (
        last in _SECRET_WORDS
        or "".join(words[-2:]) in _SECRET_PAIRS
        or last.endswith(_SECRET_ENDINGS)
    )


def _is_placeholder(value: str) -> bool:
    value = value.strip()
    return (
        not value
        or REDACTED in value
        or value.lower() in _NON_VALUES
        or _CODE_REFERENCE.match(value) is not None
        or _PLACEHOLDER.fullmatch(value) is not None
    )
