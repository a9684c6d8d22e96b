"""What kind of document a file is, and which kinds a question is after.

Recall boosts sections whose source type matches the question's intent ("how do I roll back" wants
a runbook, "why did we choose Kùzu" an ADR), and leaves out boilerplate sections such as a table
of contents, which match many queries by their words and answer none.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import PurePosixPath
from typing import Any, Literal

SourceType = Literal[
    "adr",
    "rfc",
    "runbook",
    "postmortem",
    "dead_end",
    "changelog",
    "readme",
    "docs",
    "ci_config",
    "helm",
    "terraform",
    "k8s",
    "config",
]

_DOC_SUFFIXES = frozenset({".md", ".mdx", ".markdown", ".rst", ".txt", ".adoc", ".asciidoc"})
_YAML_SUFFIXES = frozenset({".yml", ".yaml"})

# front matter `type:`/`category:`/`tags:` values and folder names, normalised to a-z and "-"
_DECLARED: dict[str, SourceType] = {
    "adr": "adr",
    "decision": "adr",
    "decision-record": "adr",
    "architecture-decision": "adr",
    "architecture-decision-record": "adr",
    "rfc": "rfc",
    "runbook": "runbook",
    "playbook": "runbook",
    "postmortem": "postmortem",
    "post-mortem": "postmortem",
    "incident-review": "postmortem",
    "incident-report": "postmortem",
    "dead-end": "dead_end",
    "deadend": "dead_end",
}
_FOLDERS: dict[str, SourceType] = {
    **{name: "adr" for name in ("adr", "adrs", "decisions", "decision-records")},
    **{name: "adr" for name in ("architecture-decisions", "architecture-decision-records")},
    **{name: "rfc" for name in ("rfc", "rfcs")},
    **{name: "runbook" for name in ("runbook", "runbooks", "playbook", "playbooks")},
    **{name: "runbook" for name in ("alerts", "alerting", "sop", "sops", "oncall", "on-call")},
    **{name: "postmortem" for name in ("postmortem", "postmortems", "post-mortem")},
    **{name: "postmortem" for name in ("post-mortems", "incidents", "incident-reviews")},
    **{name: "postmortem" for name in ("incident-reports", "retrospectives")},
    **{name: "dead_end" for name in ("dead-end", "dead-ends", "deadends")},
}
_CHANGELOG_STEMS = frozenset(
    {"changelog", "changes", "history", "news", "releases", "release-notes", "release_notes"}
)
_CI_FILES = frozenset(
    {
        ".gitlab-ci.yml",
        ".gitlab-ci.yaml",
        "azure-pipelines.yml",
        "azure-pipelines.yaml",
        ".travis.yml",
        "bitbucket-pipelines.yml",
        ".drone.yml",
        "appveyor.yml",
        "cloudbuild.yaml",
        "cloudbuild.yml",
        "buildspec.yml",
    }
)
_CHART_FOLDERS = frozenset({"charts", "chart", "helm", "helm-charts"})
_K8S_API = re.compile(r"^apiVersion:[ \t]*\S", re.MULTILINE)
_K8S_KIND = re.compile(r"^kind:[ \t]*\S", re.MULTILINE)
_NAMED: tuple[tuple[re.Pattern[str], SourceType], ...] = (
    (re.compile(r"^adr[-_ ]?\d+"), "adr"),
    (re.compile(r"^rfc[-_ ]?\d+"), "rfc"),
    (re.compile(r"(?:^|[-_ ])(?:runbook|playbook)(?:$|[-_ ])"), "runbook"),
    (re.compile(r"(?:^|[-_ ])post-?mortem(?:$|[-_ ])"), "postmortem"),
)
_TITLED: tuple[tuple[re.Pattern[str], SourceType], ...] = (
    (re.compile(r"^(?:runbook|playbook)\b"), "runbook"),
    (re.compile(r"\b(?:post-?mortem|incident (?:review|report))\b"), "postmortem"),
    (re.compile(r"^(?:adr[-\s]?\d+|architecture decision record)\b"), "adr"),
    (re.compile(r"^rfc[-\s]?\d+"), "rfc"),
    (re.compile(r"^dead[- ]end\b"), "dead_end"),
)
_ATX = re.compile(r"^ {0,3}#{1,6}[ \t]+(.+?)[ \t#]*$", re.MULTILINE)
_STATUS_LINE = re.compile(r"^[*_]*status[*_]*:[*_]*[ \t]*(\w+)", re.MULTILINE | re.IGNORECASE)
_ADR_STATUSES = frozenset(
    {"proposed", "accepted", "rejected", "deprecated", "superseded", "draft", "approved"}
)


def source_type(path: str, metadata: Mapping[str, Any], text: str) -> SourceType:
    """Declared type first, then where the file lives and what it is named, then its content."""
    clean = path.replace("\\", "/").removeprefix("./")
    posix = PurePosixPath(clean)
    name = posix.name.lower()
    suffix = posix.suffix.lower()
    stem = name[: -len(suffix)] if suffix else name
    folders = [_norm(part) for part in posix.parts[:-1]]

    for field in ("type", "category"):
        declared = _DECLARED.get(_norm(str(metadata.get(field, ""))))
        if declared is not None:
            return declared
    if _is_ci(folders, name):
        return "ci_config"
    if _is_helm(folders, name, suffix, text):
        return "helm"
    if suffix in (".tf", ".tfvars") or name.endswith(".tf.json"):
        return "terraform"
    if suffix in _YAML_SUFFIXES and (
        stem == "kustomization" or (_K8S_API.search(text) and _K8S_KIND.search(text))
    ):
        return "k8s"
    if (suffix not in _DOC_SUFFIXES and suffix) or _is_config_text(name):
        return "config"
    if stem in _CHANGELOG_STEMS:
        return "changelog"
    if stem == "readme":
        return "readme"
    if not suffix:
        return "config"  # Dockerfile, Makefile and the like
    for folder in reversed(folders):
        if folder in _FOLDERS:
            return _FOLDERS[folder]
    for pattern, named in _NAMED:
        if pattern.search(stem):
            return named
    for tag in _tags(metadata.get("tags")):
        if tag in _DECLARED:
            return _DECLARED[tag]
    return _from_content(metadata, text)


def _norm(value: str) -> str:
    return re.sub(r"[\s_]+", "-", value.strip().lower())


def _tags(value: Any) -> list[str]:
    if isinstance(value, str):
        return [_norm(tag) for tag in re.split(r"[,\s]+", value) if tag]
    if isinstance(value, list | tuple):
        return [_norm(str(tag)) for tag in value]
    return []


def _is_config_text(name: str) -> bool:
    """.txt files that are settings, not prose."""
    return name.endswith(".txt") and (
        name.startswith(("requirements", "constraints")) or name in ("cmakelists.txt", "robots.txt")
    )


def _is_ci(folders: list[str], name: str) -> bool:
    if name in _CI_FILES or name == "jenkinsfile" or name.startswith("jenkinsfile."):
        return True
    if not name.endswith((".yml", ".yaml")):
        return False
    in_github = ".github" in folders and ("workflows" in folders or "actions" in folders)
    return in_github or ".circleci" in folders or ".buildkite" in folders


def _is_helm(folders: list[str], name: str, suffix: str, text: str) -> bool:
    if name in ("chart.yaml", "chart.yml", "helmfile.yaml", "helmfile.yml"):
        return True
    if suffix not in _YAML_SUFFIXES and suffix != ".tpl":
        return False
    if any(folder in _CHART_FOLDERS for folder in folders):
        return True
    return "templates" in folders and ".Values" in text


def _from_content(metadata: Mapping[str, Any], text: str) -> SourceType:
    headings = [h.lower() for h in _ATX.findall(text)]
    title = metadata.get("title")
    if not isinstance(title, str) or not title.strip():
        title = headings[0] if headings else text.strip().partition("\n")[0]
    title = title.strip().lower()
    for pattern, titled in _TITLED:
        if pattern.search(title):
            return titled
    status = str(metadata.get("status", "")).strip().lower()
    if not status and (line := _STATUS_LINE.search(text)):
        status = line.group(1).lower()
    has = {word: any(h.startswith(word) for h in headings) for word in ("context", "decision")}
    if has["context"] and has["decision"] and (status in _ADR_STATUSES or _has("status", headings)):
        return "adr"
    if _has("root cause", headings) and (_has("timeline", headings) or _has("impact", headings)):
        return "postmortem"
    return "docs"


def _has(word: str, headings: list[str]) -> bool:
    return any(word in heading for heading in headings)


# --- sections and questions --------------------------------------------------------------------

_NOISE_TITLES = frozenset(
    {
        "table of contents",
        "contents",
        "toc",
        "references",
        "see also",
        "further reading",
        "related links",
        "links",
        "external links",
        "changelog",
        "change log",
        "changes log",
        "revision history",
        "version history",
        "document history",
        "change history",
        "acknowledgements",
        "acknowledgments",
        "acknowledgement",
        "acknowledgment",
        "license",
        "licence",
        "licensing",
    }
)
_NUMBERING = re.compile(r"^(?:\d+(?:\.\d+)*\.?|[ivxlcdm]+\.|[a-z][.)])\s+")


def is_noise_section(title: str) -> bool:
    """Sections that list other places rather than say anything themselves."""
    words = title.strip().lower().strip("*_`#: \t")
    words = _NUMBERING.sub("", words)
    words = re.sub(r"[\W_]+$", "", words)
    return " ".join(words.split()) in _NOISE_TITLES


def _words(*patterns: str) -> re.Pattern[str]:
    return re.compile(r"\b(?:" + "|".join(patterns) + r")\b", re.IGNORECASE)


_INTENTS: tuple[tuple[re.Pattern[str], frozenset[SourceType]], ...] = (
    (
        _words(
            r"how (?:do|can|should|would) (?:i|we|you)",
            r"how to",
            r"steps?",
            r"step[- ]by[- ]step",
            r"roll(?:s|ed|ing)?[- ]?back",
            r"restart(?:s|ed|ing)?",
            r"recover(?:s|ed|ing|y)?",
            r"fix(?:es|ed|ing)?",
            r"alert(?:s|ing)?",
            r"runbooks?",
            r"playbooks?",
            r"what to do (?:when|if)",
            r"mitigat(?:e|es|ed|ing|ion)",
        ),
        frozenset({"runbook"}),
    ),
    (
        _words(
            r"why (?:did|do|does|are|were|is|was) (?:we|they|it|you|the team)",
            r"decided",
            r"decide",
            r"decisions?",
            r"chose",
            r"choose",
            r"chosen",
            r"alternatives?",
            r"trade[- ]?offs?",
            r"adrs?",
            r"rfcs?",
        ),
        frozenset({"adr", "rfc"}),
    ),
    (
        _words(
            r"what happened",
            r"outages?",
            r"incidents?",
            r"root cause",
            r"post-?mortems?",
            r"sev[- ]?[0-4]",
        ),
        frozenset({"postmortem"}),
    ),
    (
        _words(r"changed", r"changelog", r"releases?", r"released", r"versions?"),
        frozenset({"changelog"}),
    ),
    (
        _words(r"pipelines?", r"ci", r"workflows?", r"builds?", r"github actions", r"jenkins"),
        frozenset({"ci_config"}),
    ),
    (
        _words(
            r"deploy(?:s|ed|ing|ments?)?",
            r"kubernetes",
            r"k8s",
            r"pods?",
            r"helm",
            r"charts?",
            r"kubectl",
        ),
        frozenset({"k8s", "helm"}),
    ),
    (
        _words(r"terraform", r"infrastructure", r"infra", r"buckets?", r"iam"),
        frozenset({"terraform"}),
    ),
)


def query_intent(query: str) -> frozenset[SourceType]:
    found: set[SourceType] = set()
    for pattern, types in _INTENTS:
        if pattern.search(query):
            found |= types
    return frozenset(found)
