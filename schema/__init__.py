"""Schema migrations: `NNNN_name.cypher` files applied in order and recorded in `_Migration`."""

from __future__ import annotations

import re
from dataclasses import dataclass
from importlib import resources

_NAME = re.compile(r"^(\d{4})_([a-z0-9_]+)\.cypher$")


@dataclass(frozen=True)
class Migration:
    version: int
    name: str
    statements: tuple[str, ...]


def _split(text: str) -> tuple[str, ...]:
    lines = [line for line in text.splitlines() if not line.strip().startswith("//")]
    return tuple(s.strip() for s in "\n".join(lines).split(";") if s.strip())


def migrations() -> list[Migration]:
    """Every migration shipped with this version, in order."""
    found = []
    for entry in resources.files(__name__).iterdir():
        match = _NAME.match(entry.name)
        if match:
            found.append(
                Migration(int(match[1]), match[2], _split(entry.read_text(encoding="utf-8")))
            )
    return sorted(found, key=lambda m: m.version)
