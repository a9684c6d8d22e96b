"""JSONL export and import over any MemoryAPI, in pages, so the same code serves a store opened in
this process and one served by the owner process."""

from __future__ import annotations

from collections.abc import Sequence
from typing import IO

from graphmem.api import MemoryAPI, Progress
from graphmem.models import ImportReport

CHUNK_LINES = 512


def export_jsonl(api: MemoryAPI, out: IO[str]) -> int:
    """Write every memory as one JSON line, oldest first; returns how many."""
    count = 0
    cursor: str | None = None
    while True:
        page = api.export_page(cursor)
        for memory in page.memories:
            out.write(memory.model_dump_json() + "\n")
        count += len(page.memories)
        if page.next_cursor is None:
            return count
        cursor = page.next_cursor


def import_jsonl(
    api: MemoryAPI,
    lines: Sequence[str],
    *,
    on_error: str = "continue",
    on_progress: Progress | None = None,
) -> ImportReport:
    """Import in chunks (one call each), adding up the reports; line numbers stay the file's."""
    total = ImportReport(imported=0, skipped=0, errors=[], seconds=0.0)
    for start in range(0, len(lines), CHUNK_LINES):
        report = api.import_jsonl(
            lines[start : start + CHUNK_LINES], on_error=on_error, first_line=start + 1
        )
        total.imported += report.imported
        total.skipped += report.skipped
        total.errors.extend(report.errors)
        total.seconds = round(total.seconds + report.seconds, 3)
        if on_progress:
            on_progress(min(start + CHUNK_LINES, len(lines)), len(lines))
    return total
