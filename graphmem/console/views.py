"""Small helpers the pages format with: what a decision did, as text a person reads."""

from __future__ import annotations

# what an inbox decision did, by `kind-decision`; anything else in the URL says nothing
DONE = {
    "review-accept": "Accepted review item {}",
    "review-reject": "Rejected review item {}",
    "review-defer": "Deferred review item {}: it waits under Deferred",
    "finding-accept": "Applied finding {}",
    "finding-reject": "Dismissed finding {}",
    "finding-defer": "Left finding {} in the inbox for later",
}


def done_message(done: str, item: str) -> str:
    template = DONE.get(done)
    return template.format(item) if template and item else ""
