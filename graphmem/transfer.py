"""JSONL export and import over any MemoryAPI, in pages, so the same code serves a store opened in
this process and one served by the owner process."""

from __future__ import annotations

import codecs
import itertools
import json
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

from graphmem.api import MemoryAPI, Progress
from graphmem.errors import InvalidInput
from graphmem.models import ImportReport

# Lines per call: an import commits at most once per 32,768 lines that bring their vectors, and
# each commit costs a checkpoint, so smaller calls would import slower.
CHUNK_LINES = 32_768


def export_jsonl(api: MemoryAPI, out: IO[str], *, with_vectors: bool = False) -> int:
    """Write every memory as one JSON line, oldest first; returns how many. With vectors, each
    line also carries its `vector` (base64 float32), its `passages`' vectors if it has any, and
    `embedding_space`."""
    count = 0
    cursor: str | None = None
    while True:
        page = api.export_page(cursor, with_vectors=with_vectors)
        for memory in page.memories:
            vector = (page.vectors or {}).get(memory.id)
            if vector is None:
                out.write(memory.model_dump_json() + "\n")
                continue
            data = memory.model_dump(mode="json")
            data.update(vector=vector, embedding_space=page.embedding_space)
            if page.passages and memory.id in page.passages:
                data["passages"] = page.passages[memory.id]
            out.write(json.dumps(data, ensure_ascii=False) + "\n")
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
    return _import_lines(api, iter(lines), len(lines), on_error, on_progress)


def import_file(
    api: MemoryAPI,
    path: Path,
    *,
    on_error: str = "continue",
    on_progress: Progress | None = None,
) -> ImportReport:
    """`import_jsonl` of a file read a chunk at a time: an export of a million memories with
    their vectors is ~2.5 GB, more than an import should hold in memory. The file is checked
    to be UTF-8 (and its lines counted, for progress) before anything is imported."""
    total = _count_utf8_lines(path)
    with _opened(path, "r", encoding="utf-8", newline="\n") as handle:
        lines = (line.rstrip("\r\n") for line in handle)
        return _import_lines(api, lines, total, on_error, on_progress)


def _import_lines(
    api: MemoryAPI,
    lines: Iterator[str],
    total: int,
    on_error: str,
    on_progress: Progress | None,
) -> ImportReport:
    def call(chunk: Sequence[str], first_line: int) -> ImportReport:
        return api.import_jsonl(chunk, on_error=on_error, first_line=first_line)

    return import_chunks(_chunks(lines), call, total_lines=total, on_progress=on_progress)


def _chunks(lines: Iterator[str]) -> Iterator[tuple[int, list[str]]]:
    """The lines, CHUNK_LINES at a time, each chunk with the number of its first line."""
    first = 1
    while chunk := list(itertools.islice(lines, CHUNK_LINES)):
        yield first, chunk
        first += len(chunk)


def _count_utf8_lines(path: Path) -> int:
    decoder = codecs.getincrementaldecoder("utf-8")()
    count, last = 0, b"\n"
    with _opened(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            try:
                decoder.decode(block)
            except UnicodeDecodeError as exc:
                line = count + block.count(b"\n", 0, exc.start) + 1
                raise InvalidInput(
                    f"{path} is not UTF-8 text (line {line}); nothing was imported",
                    path=str(path), line=line,
                ) from exc  # fmt: skip
            count += block.count(b"\n")
            last = block[-1:]
        try:
            decoder.decode(b"", final=True)
        except UnicodeDecodeError as exc:
            raise InvalidInput(f"{path} ends inside a UTF-8 character", path=str(path)) from exc
    return count + (last != b"\n")


@contextmanager
def _opened(path: Path, mode: str, **options: Any) -> Iterator[IO[Any]]:
    try:
        handle = path.open(mode, **options)
    except OSError as exc:
        raise InvalidInput(f"cannot read {path}: {exc.strerror}", path=str(path)) from exc
    with handle:
        yield handle


def import_chunks(
    chunks: Iterable[tuple[int, Sequence[str]]],
    call: Callable[[Sequence[str], int], ImportReport],
    *,
    total_lines: int = 0,
    on_progress: Progress | None = None,
) -> ImportReport:
    """Run `call(lines, first_line)` on each chunk and add up the reports. An import stopped by
    a bad line says how many memories the earlier chunks imported too."""
    total = ImportReport(imported=0, skipped=0, errors=[], seconds=0.0)
    for first_line, chunk in chunks:
        try:
            report = call(chunk, first_line)
        except InvalidInput as exc:
            exc.fields["imported"] = exc.fields.get("imported", 0) + total.imported
            raise
        total.imported += report.imported
        total.skipped += report.skipped
        total.vectors_supplied += report.vectors_supplied
        total.passages_pending += report.passages_pending
        total.errors.extend(report.errors)
        total.seconds = round(total.seconds + report.seconds, 3)
        if on_progress:
            on_progress(first_line - 1 + len(chunk), total_lines)
    return total
