"""The core of the repo_list, repo_read and repo_search tools: an agent's view of the project's
files, bounded in size and confined to the guard's roots.

Every path goes through the PathGuard, every file is opened through `PathGuard.open_file`, and
walks use `scan`, which never follows a symlink: a link is listed only when it resolves inside
the roots, and is never descended into or searched, so a link farm cannot widen or multiply what
an agent sees.

Regexes are compiled by `guard.compile_query`, which refuses the shapes that backtrack for ever;
a regex also sees only the first MAX_REGEX_LINE_CHARS characters of a line, which bounds the
quadratic cost of a pattern starting with a repeat (`\\w+x`) on a minified bundle.
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
from collections.abc import Generator
from contextlib import closing
from fnmatch import fnmatchcase
from pathlib import Path
from typing import BinaryIO, Literal

from pathspec import GitIgnoreSpec

from graphmem.documents.guard import GuardedPath, PathGuard, compile_query, is_unicode
from graphmem.documents.ignore import Entry, looks_binary, scan
from graphmem.documents.models import RepoEntry, RepoFile, RepoListing, RepoMatch, RepoMatches
from graphmem.errors import GraphmemError, InvalidInput

MAX_LIST_LIMIT = 10_000
MAX_SEARCH_LIMIT = 1000
MAX_READ_BYTES = 1 << 20
# hashing a larger file takes seconds; a sparse multi-terabyte file would never end
MAX_FILE_BYTES = 256 << 20
MAX_SEARCH_FILE_BYTES = 50_000_000
MAX_QUERY_CHARS = 1000
MAX_PATTERN_CHARS = 500
MAX_MATCH_TEXT = 300
MAX_REGEX_LINE_CHARS = 4000
SNIFF_BYTES = 8192
_CHUNK = 1 << 16


def _check_range(name: str, value: int, low: int, high: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise InvalidInput(f"{name} must be an integer between {low} and {high}", **{name: value})


def _check_pattern(name: str, value: str) -> None:
    if not isinstance(value, str) or not 0 < len(value) <= MAX_PATTERN_CHARS or "\0" in value:
        raise InvalidInput(f"{name} must be 1 to {MAX_PATTERN_CHARS} characters, without NUL")


def _kind(guarded: GuardedPath) -> tuple[Literal["file", "dir"], int | None]:
    try:
        info = guarded.path.lstat()  # resolved: no symlink left to follow
    except OSError:
        raise InvalidInput(f"path {guarded.relative!r} cannot be read") from None
    return ("dir", None) if stat.S_ISDIR(info.st_mode) else ("file", info.st_size)


def _entry(guard: PathGuard, root: Path, entry: Entry) -> RepoEntry | None:
    """A listing row; a symlink shows as what it points to, or not at all if that is outside."""
    if not is_unicode(entry.relative):
        return None  # an undecodable name: no JSON answer could carry it, no agent could ask
    shown = guard.display(GuardedPath(root, entry.path, entry.relative))
    if entry.kind == "file":
        return RepoEntry(path=shown, kind="file", size=entry.size)
    if entry.kind == "dir":
        return RepoEntry(path=shown, kind="dir")
    try:
        kind, size = _kind(guard.resolve(entry.path.as_posix()))
    except GraphmemError:
        return None
    return RepoEntry(path=shown, kind=kind, size=size)


def repo_list(
    guard: PathGuard,
    path: str = ".",
    *,
    pattern: str | None = None,
    recursive: bool = False,
    limit: int = 200,
) -> RepoListing:
    """The entries of a directory (or, recursively, of its tree) that git would not ignore;
    `pattern` is a shell glob on entry names."""
    _check_range("limit", limit, 1, MAX_LIST_LIMIT)
    if pattern is not None:
        _check_pattern("pattern", pattern)
    base = guard.resolve(path)
    kind, size = _kind(base)
    shown = guard.display(base)
    if kind == "file":
        entries = [RepoEntry(path=shown, kind="file", size=size)]
        return RepoListing(path=shown, entries=entries, truncated=False)
    found: list[RepoEntry] = []
    under = "" if base.relative == "." else base.relative
    with closing(scan(base.root, under=under, recursive=recursive)) as walk:
        for entry in walk:
            if pattern is None or fnmatchcase(entry.path.name, pattern):
                row = _entry(guard, base.root, entry)
                found += [] if row is None else [row]
            if len(found) > limit:  # one more than fits tells truncation
                break
    return RepoListing(path=shown, entries=found[:limit], truncated=len(found) > limit)


class _LineCollector:
    """Keeps the lines [start, end] that fit in `budget` bytes while the file streams past."""

    def __init__(self, start: int, end: int | None, budget: int) -> None:
        self.start, self.end, self.budget = start, end, budget
        self.kept = bytearray()
        self.last = start - 1
        self.truncated = False
        self.done = False
        self.line = bytearray()  # the current line, capped at budget + 4 bytes
        self.line_size = 0

    def wants(self, number: int) -> bool:
        return not self.finished(number) and number >= self.start

    def finished(self, number: int) -> bool:
        return self.done or (self.end is not None and number > self.end)

    def add(self, piece: bytes) -> None:
        room = self.budget + 4 - len(self.line)
        if room > 0:
            self.line += piece[:room]
        self.line_size += len(piece)

    def finish_line(self, number: int) -> None:
        if self.line_size <= self.budget - len(self.kept):
            self.kept += self.line
            self.last = number
        else:
            if not self.kept:  # one line longer than the budget: show its head
                self.kept += _cut_utf8(bytes(self.line), self.budget)
                self.last = number
            self.truncated = self.done = True
        self.line.clear()
        self.line_size = 0


def _cut_utf8(data: bytes, limit: int) -> bytes:
    """The longest prefix of at most `limit` bytes that does not end inside a UTF-8 character."""
    if len(data) <= limit:
        return data
    cut = limit
    while cut > 0 and limit - cut < 3 and (data[cut] & 0xC0) == 0x80:
        cut -= 1
    return data[:cut] if cut > 0 else data[:limit]


def _read_lines(handle: BinaryIO, collector: _LineCollector, shown: str) -> tuple[int, str]:
    """Stream the file once: hash it, count its lines, collect the wanted ones."""
    if looks_binary(os.pread(handle.fileno(), SNIFF_BYTES, 0)):
        raise InvalidInput(f"path {shown!r} is a binary file", path=shown)
    digest = hashlib.sha256()
    number, ended = 0, True  # lines begun so far; whether the last one has its newline
    while piece := handle.readline(_CHUNK):
        digest.update(piece)
        number += 1 if ended else 0
        wanted = collector.wants(number)
        if wanted:
            collector.add(piece)
        ended = piece.endswith(b"\n")
        if ended and wanted:
            collector.finish_line(number)
        if ended and collector.finished(number + 1):
            break
    tail = b"\n"
    while chunk := handle.read(_CHUNK):  # nothing more to keep: hash and count
        digest.update(chunk)
        number += chunk.count(b"\n")
        tail = chunk[-1:]
    number += 0 if tail == b"\n" else 1
    if not ended and collector.wants(number):
        collector.finish_line(number)
    return number, digest.hexdigest()


def repo_read(
    guard: PathGuard,
    path: str,
    *,
    start_line: int = 1,
    end_line: int | None = None,
    max_bytes: int = 65536,
) -> RepoFile:
    """Lines of a text file, whole lines only unless the first line alone is over `max_bytes`."""
    _check_range("start_line", start_line, 1, 10**9)
    if end_line is not None:
        _check_range("end_line", end_line, 1, 10**9)
        if end_line < start_line:
            raise InvalidInput("end_line must not be before start_line", end_line=end_line)
    _check_range("max_bytes", max_bytes, 16, MAX_READ_BYTES)
    target = guard.resolve(path)
    shown = guard.display(target)
    with guard.open_file(target) as handle:
        size = os.fstat(handle.fileno()).st_size
        if size > MAX_FILE_BYTES:
            raise InvalidInput(
                f"path {shown!r} is {size} bytes, over the {MAX_FILE_BYTES} bytes it reads",
                path=shown,
            )
        collector = _LineCollector(start_line, end_line, max_bytes)
        total, sha = _read_lines(handle, collector, shown)
    if start_line > max(total, 1):
        raise InvalidInput(
            f"start_line {start_line} is past the end of {shown!r} ({total} lines)",
            start_line=start_line,
            total_lines=total,
        )
    return RepoFile(
        path=shown,
        start_line=start_line,
        end_line=collector.last,
        total_lines=total,
        text=collector.kept.decode("utf-8", errors="replace"),
        truncated=collector.truncated,
        sha256=sha,
    )


def _excerpt(line: str, start: int) -> str:
    if start + 1 <= MAX_MATCH_TEXT or len(line) <= MAX_MATCH_TEXT:
        return line[:MAX_MATCH_TEXT]
    begin = min(start - 100, len(line) - MAX_MATCH_TEXT)
    return line[begin : begin + MAX_MATCH_TEXT]


def _search_file(
    guard: PathGuard,
    target: GuardedPath,
    matcher: re.Pattern[str],
    regex: bool,
    max_bytes: int,
    room: int,
) -> list[tuple[int, str]] | None:
    """(line, excerpt) of up to `room` matching lines, or None when the file is skipped: too
    big, binary, or no longer a plain file inside the roots."""
    try:
        with guard.open_file(target) as handle:
            if os.fstat(handle.fileno()).st_size > max_bytes:
                return None
            data = handle.read(max_bytes + 1)
    except (GraphmemError, OSError):
        return None
    if len(data) > max_bytes or looks_binary(data[:SNIFF_BYTES]):
        return None
    found: list[tuple[int, str]] = []
    for number, raw in enumerate(data.decode("utf-8", errors="replace").split("\n"), 1):
        line = raw.rstrip("\r")
        hit = matcher.search(line[:MAX_REGEX_LINE_CHARS] if regex else line)
        if hit is not None:
            found.append((number, _excerpt(line, hit.start())))
            if len(found) == room:
                break
    return found


def _glob_spec(glob: str | None) -> GitIgnoreSpec | None:
    if glob is None:
        return None
    _check_pattern("glob", glob)
    try:
        return GitIgnoreSpec.from_lines([glob])
    except Exception as exc:
        raise InvalidInput(f"invalid glob {glob!r}: {exc}", glob=glob) from None


def _search_targets(
    base: GuardedPath, spec: GitIgnoreSpec | None
) -> Generator[GuardedPath, None, None]:
    if _kind(base)[0] == "file":
        yield base
        return
    under = "" if base.relative == "." else base.relative
    prefix = len(under) + 1 if under else 0
    with closing(scan(base.root, under=under)) as entries:
        for entry in entries:
            if entry.kind != "file" or not is_unicode(entry.relative):
                continue
            if spec is not None and not spec.match_file(entry.relative[prefix:]):
                continue
            yield GuardedPath(base.root, entry.path, entry.relative)


def repo_search(
    guard: PathGuard,
    query: str,
    *,
    path: str = ".",
    regex: bool = False,
    case_sensitive: bool = False,
    glob: str | None = None,
    limit: int = 100,
    max_file_bytes: int = 2_000_000,
) -> RepoMatches:
    """Lines matching `query` in the text files under `path`, one match per line, in walk order.

    `glob` is a gitignore-style pattern on paths relative to `path` (`*.py`, `src/**/test_*`)."""
    if not isinstance(query, str) or not query or len(query) > MAX_QUERY_CHARS:
        raise InvalidInput(f"query must be 1 to {MAX_QUERY_CHARS} characters")
    if "\n" in query and not regex:
        raise InvalidInput("query matches within one line and cannot contain a newline")
    _check_range("limit", limit, 1, MAX_SEARCH_LIMIT)
    _check_range("max_file_bytes", max_file_bytes, 1, MAX_SEARCH_FILE_BYTES)
    spec = _glob_spec(glob)
    matcher = compile_query(query, regex=regex, case_sensitive=case_sensitive)
    base = guard.resolve(path)
    matches: list[RepoMatch] = []
    searched = 0
    with closing(_search_targets(base, spec)) as targets:
        for target in targets:
            room = limit + 1 - len(matches)  # one more than fits tells truncation
            found = _search_file(guard, target, matcher, regex, max_file_bytes, room)
            if found is not None:
                searched += 1
                shown = guard.display(target)
                matches += [RepoMatch(path=shown, line=n, text=text) for n, text in found]
            if len(matches) > limit:
                break
    return RepoMatches(
        query=query,
        matches=matches[:limit],
        truncated=len(matches) > limit,
        files_searched=searched,
    )
