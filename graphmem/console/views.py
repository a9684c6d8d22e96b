"""Small helpers the pages format with: stored values as text a person reads, not as Python."""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from graphmem.errors import InvalidInput

# what an inbox decision did, by `kind-decision`; anything else in the URL says nothing
DONE = {
    "review-accept": "Accepted review item {}",
    "review-reject": "Rejected review item {}",
    "review-defer": "Deferred review item {}: it waits under Deferred",
    "finding-accept": "Applied finding {}",
    "finding-reject": "Dismissed finding {}",
    "finding-defer": "Left finding {} in the inbox for later",
    "audit-undo": "Undid change {}: the memories it touched are as they were before it",
}


# what a change from a memory's page did, by action; `{}` is the other memory's id
CURATED = {
    "edit": "Saved the changes",
    "outdated": "Marked outdated",
    "verify": "Recorded the check",
    "canonical": "Promoted to canonical",
    "merge": "Merged {} into this memory: it is archived and points here",
    "delete": "Deleted memory {}",
}


def curated_message(done: str, item: str) -> str:
    template = CURATED.get(done, "")
    if "{}" in template:
        return template.format(item) if item else ""
    if done == "outdated" and item:
        return f"Marked outdated, superseded by {item}"
    return template


def edited(memory: Any, form: Mapping[str, str]) -> dict[str, Any]:
    """The fields an edit form changes: content, title, and tags one a line; a browser sends a
    text area's lines ending in CR LF, read as LF so text left alone is not a change."""
    given = {
        "content": form.get("content", "").replace("\r\n", "\n"),
        "title": form.get("title", "").replace("\r\n", "\n").strip(),
        "tags": [t.strip() for t in form.get("tags", "").splitlines() if t.strip()],
    }
    current = {"content": memory.content, "title": memory.title or "", "tags": list(memory.tags)}
    return {k: v for k, v in given.items() if v != current[k]}


BULK = {"bulk-accept": "Accepted", "bulk-reject": "Rejected", "bulk-defer": "Deferred"}


def is_id(text: str) -> bool:
    """An id as the store makes them: letters, digits, `-` and `_`, nothing else."""
    return 0 < len(text) <= 80 and all(c.isascii() and (c.isalnum() or c in "-_") for c in text)


def bulk_message(done: str, count: str, failed: str) -> str:
    """What one decision on several items did: how many, and the ids it failed on (only ids
    are taken from the URL, so a link cannot put words on the page)."""
    verb = BULK.get(done)
    if not verb or not count.isdigit():
        return ""
    n = int(count)
    message = f"{verb} {n} item{'' if n == 1 else 's'}"
    missed = [i for i in failed.split(",") if is_id(i)] if failed else []
    if missed:
        message += (
            f"; {len(missed)} not done (decided already, gone, or its action failed: "
            f"see it below): {', '.join(missed)}"
        )
    return message


def done_message(done: str, item: str) -> str:
    template = DONE.get(done)
    return template.format(item) if template and item else ""


def day(text: str, name: str) -> datetime | None:
    """A date from a date field (YYYY-MM-DD) as midnight UTC; empty is None, anything else is
    refused."""
    if not text:
        return None
    try:
        return datetime.strptime(text, "%Y-%m-%d").replace(tzinfo=UTC)
    except ValueError:
        raise InvalidInput(f"{name} must be a date, YYYY-MM-DD", **{name: text}) from None


def when(value: Any) -> str:
    """A time as `YYYY-MM-DD HH:MM`, whether it came as a datetime or as ISO text."""
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value)
        except ValueError:
            return ""
    return value.strftime("%Y-%m-%d %H:%M") if isinstance(value, datetime) else ""


def _scalar(value: Any) -> str:
    if isinstance(value, bool) or value is None:
        return json.dumps(value)
    return str(value)


def metadata_rows(
    metadata: Mapping[str, Any], prefix: str = "metadata"
) -> list[tuple[str, str, bool]]:
    """A memory's metadata as (key, text, is_json) rows: nested objects by dotted keys, lists of
    plain values joined with commas, anything deeper as indented JSON."""
    rows: list[tuple[str, str, bool]] = []
    for key, value in metadata.items():
        name = f"{prefix}.{key}" if prefix else str(key)
        if isinstance(value, Mapping) and value:
            rows += metadata_rows(value, name)
        elif isinstance(value, list | tuple) and not any(
            isinstance(v, Mapping | list | tuple) for v in value
        ):
            rows.append((name, ", ".join(_scalar(v) for v in value), False))
        elif isinstance(value, Mapping | list | tuple):
            rows.append((name, json.dumps(value, indent=2, ensure_ascii=False, default=str), True))
        else:
            rows.append((name, _scalar(value), False))
    return rows
