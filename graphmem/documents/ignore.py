"""Which project files an agent sees: a walk that honours .gitignore at every level, skips the
vendored and build folders nobody wants in a result, and never leaves the tree it was given.

The walk descends with `openat`-style calls (`dir_fd=` and `O_NOFOLLOW`), so a directory swapped
for a symlink between listing and descending is refused by the kernel rather than followed. What
cannot be read (permissions, races, broken links) is skipped, never raised: a listing of what is
readable beats an error about one file.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Generator, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pathspec import GitIgnoreSpec

SKIP_DIRS: frozenset[str] = frozenset(
    {
        ".git",
        "node_modules",
        "vendor",
        "third_party",
        ".venv",
        "venv",
        "env",
        "__pycache__",
        "build",
        "dist",
        "target",
        "out",
        ".tox",
        ".nox",
        ".mypy_cache",
        ".pytest_cache",
        ".ruff_cache",
        ".idea",
        ".vscode",
        ".next",
        ".terraform",
        ".graphmem",
        "site-packages",
        "bower_components",
        "coverage",
        "htmlcov",
    }
)

# deeper than any real project; bounds open descriptors and generator nesting
MAX_DEPTH = 128
# a .gitignore larger than this is not hand-written; read only its head
MAX_IGNORE_FILE_BYTES = 1 << 20

_DIR_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_FILE_FLAGS = os.O_RDONLY | _NOFOLLOW | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)

EntryKind = Literal["file", "dir", "symlink"]


@dataclass(frozen=True, slots=True)
class Entry:
    """One thing the walk found; `relative` is POSIX and relative to the walk's root."""

    path: Path
    relative: str
    kind: EntryKind
    size: int


class _Layer:
    """The lines of one ignore file, for paths relative to its directory `base`.

    A directory is matched as git does: a dir-only line (`build/`) against `name/`, every other
    line against `name`, so that `a/**` hides what is inside `a` but not `a` itself."""

    __slots__ = ("base", "dirs", "files")

    def __init__(self, base: str, lines: list[str]) -> None:
        self.base = base
        self.files = GitIgnoreSpec.from_lines(lines)
        dir_only = [n for n, line in enumerate(lines) if line.rstrip().endswith("/")]
        plain = sorted(set(range(len(lines))) - set(dir_only))
        self.dirs = [
            (GitIgnoreSpec.from_lines([lines[n] for n in numbers]), numbers, suffix)
            for numbers, suffix in ((dir_only, "/"), (plain, ""))
            if numbers
        ]

    def verdict(self, relative: str, is_dir: bool) -> bool | None:
        """True: ignored, False: re-included by a negation, None: no line matches."""
        probe = relative[len(self.base) + 1 :] if self.base else relative
        if not is_dir:
            # as git: a line that names one of the file's folders ("b" for b/a) says nothing of
            # the file; the walk never entered a folder a line ignored, and a negation that
            # re-includes a folder does not re-include what other lines ignore inside it
            for pattern in reversed(self.files.patterns):
                regex = pattern.regex if pattern.include is not None else None
                found = regex.match(probe) if regex is not None else None
                if found is not None and found.groupdict().get("ps_d") is None:
                    return bool(pattern.include)
            return None
        last, verdict = -1, None
        for spec, numbers, suffix in self.dirs:
            result = spec.check_file(probe + suffix)
            if result.index is not None and numbers[result.index] > last:
                last, verdict = numbers[result.index], result.include
        return verdict


class _Rules:
    """The ignore layers in force in one directory, shallowest first: the deepest layer with a
    matching line decides, and within a layer the last matching line, as in git."""

    __slots__ = ("exclude", "layers")

    def __init__(self, layers: tuple[_Layer, ...], exclude: _Layer | None) -> None:
        self.layers = layers
        self.exclude = exclude

    def with_layer(self, layer: _Layer | None) -> _Rules:
        return self if layer is None else _Rules((*self.layers, layer), self.exclude)

    def ignored(self, relative: str, is_dir: bool) -> bool:
        # the caller's excludes only ever exclude: a negation there cannot un-ignore a file
        if self.exclude is not None and self.exclude.verdict(relative, is_dir):
            return True
        for layer in reversed(self.layers):
            verdict = layer.verdict(relative, is_dir)
            if verdict is not None:
                return verdict
        return False


def _compile(base: str, lines: Sequence[str]) -> _Layer | None:
    """A layer from gitignore lines; a line pathspec cannot parse is dropped, as git drops it."""
    kept = []
    for line in lines:
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        try:
            GitIgnoreSpec.from_lines([line])
        except Exception:
            continue
        kept.append(line)
    return _Layer(base, kept) if kept else None


def _read_small(name: str, dir_fd: int) -> str | None:
    """A regular file's head, opened without following a symlink; None when absent or odd."""
    try:
        fd = os.open(name, _FILE_FLAGS, dir_fd=dir_fd)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        data = os.read(fd, MAX_IGNORE_FILE_BYTES)
    except OSError:
        return None
    finally:
        os.close(fd)
    return data.decode("utf-8", errors="replace")


def _ignore_layer(base: str, dir_fd: int) -> _Layer | None:
    text = _read_small(".gitignore", dir_fd)
    return None if text is None else _compile(base, text.splitlines())


def _open_dir(name: str, dir_fd: int | None, follow: bool) -> int | None:
    flags = _DIR_FLAGS if follow else _DIR_FLAGS | _NOFOLLOW
    try:
        return os.open(name, flags, dir_fd=dir_fd)
    except OSError:
        return None


def _root_rules(root_fd: int, exclude: Sequence[str]) -> _Rules:
    rules = _Rules((), _compile("", list(exclude)))
    git_fd = _open_dir(".git", root_fd, follow=False)
    if git_fd is not None:
        try:
            info_fd = _open_dir("info", git_fd, follow=False)
            if info_fd is not None:
                try:
                    text = _read_small("exclude", info_fd)
                finally:
                    os.close(info_fd)
                if text is not None:
                    rules = rules.with_layer(_compile("", text.splitlines()))
        finally:
            os.close(git_fd)
    return rules.with_layer(_ignore_layer("", root_fd))


def _under_parts(under: str) -> list[str]:
    parts = [part for part in under.split("/") if part not in ("", ".")]
    if under.startswith("/") or ".." in parts or "\0" in under:
        raise ValueError(f"under must be a plain relative path inside the root: {under!r}")
    return parts


def scan(
    root: Path,
    *,
    under: str = "",
    recursive: bool = True,
    exclude: Sequence[str] = (),
    skip_dirs: frozenset[str] = SKIP_DIRS,
    follow_symlinks: bool = False,
) -> Generator[Entry, None, None]:
    """Directories, regular files and (when not following them) symlinks below `root/under`, in
    pre-order, sorted by name within each directory.

    `under` starts the walk in a subdirectory while the .gitignore files of `root` and of every
    directory on the way down still apply, as they would for git. The directories on the way down
    are opened without following symlinks, whatever `follow_symlinks` says. Special files
    (FIFOs, sockets, devices) are never yielded."""
    parts = _under_parts(under)
    fd = _open_dir(os.fspath(root), None, follow=True)
    if fd is None:
        return
    opened = [fd]
    try:
        rules = _root_rules(fd, exclude)
        relative = ""
        for part in parts:
            child = _open_dir(part, opened[-1], follow=False)
            if child is None:
                return
            opened.append(child)
            relative = f"{relative}/{part}" if relative else part
            rules = rules.with_layer(_ignore_layer(relative, child))
        seen: set[tuple[int, int]] = set()
        if follow_symlinks:
            here = os.fstat(opened[-1])
            seen.add((here.st_dev, here.st_ino))
        yield from _walk(
            root, opened[-1], relative, rules, skip_dirs, follow_symlinks, recursive, 0, seen
        )
    finally:
        for each in reversed(opened):
            os.close(each)


def _walk(
    root: Path,
    dir_fd: int,
    relative: str,
    rules: _Rules,
    skip_dirs: frozenset[str],
    follow: bool,
    recursive: bool,
    depth: int,
    seen: set[tuple[int, int]],
) -> Iterator[Entry]:
    try:
        with os.scandir(dir_fd) as listing:
            entries = sorted(listing, key=lambda entry: entry.name)
    except OSError:
        return
    for entry in entries:
        child = f"{relative}/{entry.name}" if relative else entry.name
        try:
            is_link = entry.is_symlink()
            info = entry.stat(follow_symlinks=follow)
        except OSError:
            continue  # vanished, a broken link being followed, or unreadable
        mode = info.st_mode
        if is_link and not follow:
            if entry.name not in skip_dirs and not rules.ignored(child, False):
                yield Entry(root / child, child, "symlink", 0)
        elif stat.S_ISDIR(mode):
            if entry.name in skip_dirs or rules.ignored(child, True):
                continue
            yield Entry(root / child, child, "dir", 0)
            if recursive and depth + 1 < MAX_DEPTH:
                yield from _descend(
                    root, dir_fd, entry.name, child, rules, skip_dirs, follow, depth, seen
                )
        elif stat.S_ISREG(mode) and not rules.ignored(child, False):
            yield Entry(root / child, child, "file", info.st_size)


def _descend(
    root: Path,
    dir_fd: int,
    name: str,
    relative: str,
    rules: _Rules,
    skip_dirs: frozenset[str],
    follow: bool,
    depth: int,
    seen: set[tuple[int, int]],
) -> Iterator[Entry]:
    child_fd = _open_dir(name, dir_fd, follow)
    if child_fd is None:
        return
    try:
        if follow:
            # a followed link may lead back up the tree or to a directory already walked
            here = os.fstat(child_fd)
            key = (here.st_dev, here.st_ino)
            if key in seen:
                return
            seen.add(key)
        child_rules = rules.with_layer(_ignore_layer(relative, child_fd))
        yield from _walk(
            root, child_fd, relative, child_rules, skip_dirs, follow, True, depth + 1, seen
        )
    finally:
        os.close(child_fd)


def walk_files(
    root: Path,
    *,
    exclude: Sequence[str] = (),
    skip_dirs: frozenset[str] = SKIP_DIRS,
    follow_symlinks: bool = False,
) -> Iterator[Path]:
    """Every regular file under `root` that git would not ignore, minus `exclude` (gitignore
    patterns relative to `root`). Symlinks are neither yielded nor followed unless asked; when
    followed, each directory is walked once, so link loops end."""
    for entry in scan(root, exclude=exclude, skip_dirs=skip_dirs, follow_symlinks=follow_symlinks):
        if entry.kind == "file":
            yield entry.path


def looks_binary(data: bytes) -> bool:
    """A NUL byte, or more undecodable UTF-8 than a stray Latin-1 character or two explains."""
    if b"\0" in data:
        return True
    allowed = max(2, len(data) // 100)
    bad = 0
    view = data
    while view:
        try:
            view.decode("utf-8")
            return False
        except UnicodeDecodeError as exc:
            if exc.reason == "unexpected end of data" and exc.end == len(view):
                return False  # a character cut by the sniff window, not a bad byte
            bad += 1
            if bad > allowed:
                return True
            view = view[exc.start + 1 :]
    return False


def is_binary(path: Path, sniff: int = 8192) -> bool:
    """Whether the head of `path` looks binary; a file that cannot be read counts as binary, so
    callers that skip binaries skip it too."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return True
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return True  # a FIFO or device has no text to show, and reading one may block
        return looks_binary(os.read(fd, max(sniff, 1)))
    except OSError:
        return True
    finally:
        os.close(fd)
