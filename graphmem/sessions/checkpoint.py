"""CheckpointOps, the service of GraphMemory that keeps a running session's recent conversation
as a `checkpoint` memory.

An agent's context is compacted or thrown away when its session ends; what was said since the
last checkpoint is stored so that the next session can recall it. Hooks fire often (a Stop hook
after every turn) and a turn may add nothing new, so a checkpoint that repeats the session's last
one is not stored again. Text inside `<private>...</private>` and secrets never reach the store.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

import numpy as np
from pydantic import Field

from graphmem.documents.redact import redact
from graphmem.errors import InvalidInput
from graphmem.models import Memory, Model
from graphmem.service_context import Service, ServiceContext
from graphmem.storage.selection import MemorySelection

if TYPE_CHECKING:
    from graphmem.memory_ops import MemoryOps

# a private block; one left open hides everything after it (a cut-off paste must not leak)
_PRIVATE = re.compile(r"<private>.*?(?:</private>|\Z)", re.IGNORECASE | re.DOTALL)
_STRAY_CLOSE = re.compile(r"</private>", re.IGNORECASE)
_SPACES = re.compile(r"\s+")
_BLANK_LINES = re.compile(r"\n{3,}")
MAX_CHECKPOINT_CHARS = 20_000  # the newest part of a longer capture is kept
CHECKPOINT_IMPORTANCE = 0.3  # below curated knowledge (0.5-0.6), so it never outranks it

Reason = Literal["stored", "empty", "same_text", "similar"]


@dataclass(frozen=True)
class DedupPolicy:
    """When a checkpoint repeats the session's last one: the same text once whitespace and case
    are normalised, or a cosine of its vector to the last one's of at least `min_cosine`."""

    min_cosine: float = 0.95
    same_text: bool = True


class CheckpointResult(Model):
    stored: bool
    memory_id: str | None = Field(
        default=None, description="the new checkpoint, or the earlier one it repeats"
    )
    reason: Reason = Field(
        description="stored; empty: nothing left once private parts and noise were removed; "
        "same_text or similar: it repeats the session's last checkpoint"
    )
    similarity: float | None = Field(default=None, description="cosine to the last checkpoint")
    chars: int = Field(default=0, description="characters stored (or that would have been)")
    redacted: int = Field(default=0, description="secrets replaced by [REDACTED]")


def strip_private(text: str) -> str:
    """The text without its `<private>...</private>` parts."""
    return _STRAY_CLOSE.sub("", _PRIVATE.sub("", text))


def normalised(text: str) -> str:
    return _SPACES.sub(" ", text).strip().lower()


def clean_capture(text: str) -> tuple[str, int]:
    """What may be stored of `text`: private parts dropped, secrets redacted, capped to its
    newest MAX_CHECKPOINT_CHARS; and how many secrets were redacted."""
    kept, count = redact(strip_private(text))
    kept = _BLANK_LINES.sub("\n\n", kept).strip()
    if len(kept) > MAX_CHECKPOINT_CHARS:
        tail = kept[-MAX_CHECKPOINT_CHARS:]
        newline = tail.find("\n", 0, 2000)  # start at a line when one starts early enough
        kept = "…" + tail[newline + 1 :]
    return kept, count


class CheckpointOps(Service):
    """`checkpoint`: store a session's recent conversation unless it repeats the last one."""

    def __init__(self, context: ServiceContext, memories: MemoryOps) -> None:
        super().__init__(context)
        self._memories = memories
        self.dedup: DedupPolicy | None = None  # None: the settings' thresholds

    def checkpoint(
        self,
        text: str,
        *,
        context: str | None = None,
        session_id: str | None = None,
        client: str | None = None,
    ) -> CheckpointResult:
        """Store `text` as an episodic `checkpoint` memory of the session, tagged with the
        client; not when it is empty once cleaned or repeats the session's last checkpoint."""
        if not isinstance(text, str):
            raise InvalidInput("text must be a string")
        kept, redacted = clean_capture(text)
        if not kept:
            return CheckpointResult(stored=False, reason="empty", redacted=redacted)
        last = self.last_checkpoint(session_id) if session_id else None
        if last is not None:
            policy = self.dedup or DedupPolicy(min_cosine=self.settings.checkpoint_min_cosine)
            if policy.same_text and normalised(last.content) == normalised(kept):
                return CheckpointResult(
                    stored=False, memory_id=last.id, reason="same_text", similarity=1.0,
                    chars=len(kept), redacted=redacted,
                )  # fmt: skip
            similarity = self._similarity(last, kept)
            if similarity is not None and similarity >= policy.min_cosine:
                return CheckpointResult(
                    stored=False, memory_id=last.id, reason="similar",
                    similarity=round(similarity, 4), chars=len(kept), redacted=redacted,
                )  # fmt: skip
        tags = ["checkpoint", *([client] if client else [])]
        memory = self._memories.remember(
            kept,
            kind="checkpoint",
            type="episodic",
            session_id=session_id,
            tags=tags,
            context=context,
            importance=CHECKPOINT_IMPORTANCE,
            metadata={"client": client, "redacted": redacted} if client else {"redacted": redacted},
        )
        return CheckpointResult(
            stored=True, memory_id=memory.id, reason="stored", chars=len(kept), redacted=redacted
        )

    def last_checkpoint(self, session_id: str) -> Memory | None:
        """The session's newest checkpoint."""
        found = self.store.memories.select(
            MemorySelection(kinds=("checkpoint",), session_id=session_id), limit=1
        )
        return found[0] if found else None

    def _similarity(self, last: Memory, text: str) -> float | None:
        """Cosine of `text` to the last checkpoint's stored vector (None: it has none here)."""
        space = self.embedder.space
        row_ids, matrix = self.store.vectors.matrix(space)
        rows = row_ids.within([last.id], len(matrix))
        if not rows:
            return None
        vector = self.embedder.embed([text])[0]
        return float(np.dot(matrix[rows[0][1]], vector))
