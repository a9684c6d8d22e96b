"""The gates between an agent's arguments and the machine: paths, and search regexes.

Every path an agent gives is resolved here, component by component, the way the kernel would
resolve it, but checking at each step that the walk is still inside an allowed root: a symlink
at any depth that points outside, or a `..` that climbs out, is refused before anything beyond
it is looked at, so error messages cannot be used to probe what exists outside either.

Resolving is not opening: between the two a file could be swapped for a symlink. `open_file`
therefore re-walks the resolved, symlink-free path from the root with `O_NOFOLLOW` on every
component and checks with `fstat` that what it holds is a regular file.

The other argument that can hurt is a search regex. `compile_query` guards it by refusal, not by
a time budget (`re` cannot be interrupted mid-match, so a budget checked between lines cannot stop
the one line that hangs): a pattern is refused when a repeated part contains a repeat (`(a+)+`,
`(\\w+\\s?)*`: exponential backtracking) or when two unbounded repeats over the same characters
follow each other (`.*.*x`, `a*a+`: polynomial). Overlapping alternatives inside a repeat
(`(a|ab)*`) are not detected.
"""

from __future__ import annotations

import errno
import importlib
import os
import re
import stat
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from graphmem.errors import InvalidInput, NotFound

MAX_PATH_CHARS = 4096
# as Linux's MAXSYMLINKS: enough for any honest chain, and what ends a loop
MAX_SYMLINK_HOPS = 40

_DIR_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
# O_NONBLOCK: should a FIFO be swapped in after resolving, opening it must not hang
_FILE_FLAGS = (
    os.O_RDONLY
    | _NOFOLLOW
    | getattr(os, "O_NONBLOCK", 0)
    | getattr(os, "O_NOCTTY", 0)
    | getattr(os, "O_CLOEXEC", 0)
)
_MISSING = (errno.ENOENT, errno.ENOTDIR)

_OUTSIDE_DOTDOT = "climbs out of the allowed roots with '..'"
_OUTSIDE_LINK = "goes through a symlink that points outside the allowed roots"


@dataclass(frozen=True, slots=True)
class GuardedPath:
    """A path proven to lie inside `root`: `path` is absolute and symlink-free, `relative` is
    POSIX and relative to `root` ("." for the root itself)."""

    root: Path
    path: Path
    relative: str


class _Missing(Exception):
    """A component does not exist; `path` is where it would be, or None when that is not a
    place a file could ever be (below a file, or `..` after a missing directory)."""

    def __init__(self, path: Path | None) -> None:
        super().__init__()
        self.path = path


def _shown(path: str) -> str:
    return repr(path if len(path) <= 200 else path[:200] + "…")


def is_unicode(value: str) -> bool:
    """Whether `value` is valid Unicode: a name holding undecodable bytes comes back from the
    file system with lone surrogates, which no JSON answer can carry."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _split(path: str) -> list[str]:
    return [part for part in path.split("/") if part not in ("", ".")]


def _kind_refused(mode: int) -> str | None:
    if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
        return None
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "is a device file"
    if stat.S_ISFIFO(mode):
        return "is a FIFO"
    if stat.S_ISSOCK(mode):
        return "is a socket"
    return "is not a regular file or directory"


class PathGuard:
    """An allowlist of root directories; the first is where relative paths start."""

    def __init__(self, roots: Sequence[Path]) -> None:
        if not roots:
            raise InvalidInput("a path guard needs at least one root")
        resolved: list[Path] = []
        aliases: set[tuple[tuple[str, ...], Path]] = set()
        for root in roots:
            try:
                real = Path(root).resolve(strict=True)
            except (OSError, RuntimeError, ValueError) as exc:
                raise InvalidInput(f"root {str(root)!r} cannot be resolved: {exc}") from None
            if not real.is_dir():
                raise InvalidInput(f"root {str(root)!r} is not a directory", path=str(root))
            if real not in resolved:
                resolved.append(real)
            # an absolute symlink target may spell a root the way it was given (/tmp/x for
            # /private/tmp/x): both spellings lead to the same real root
            aliases.add((real.parts, real))
            aliases.add((Path(os.path.abspath(root)).parts, real))
        self.roots: tuple[Path, ...] = tuple(resolved)
        self._aliases = sorted(aliases, key=lambda alias: len(alias[0]), reverse=True)

    @property
    def default_root(self) -> Path:
        return self.roots[0]

    def contains(self, path: Path) -> bool:
        """Whether an absolute, symlink-free path lies in a root."""
        return any(path.is_relative_to(root) for root in self.roots)

    def display(self, guarded: GuardedPath) -> str:
        """How to show a path so that `resolve` takes it back: relative under the default root,
        absolute under the others."""
        if guarded.root == self.default_root:
            return guarded.relative
        return guarded.path.as_posix()

    def resolve(self, path: str, *, must_exist: bool = True) -> GuardedPath:
        """`path` (relative to the default root, or absolute inside some root) as a GuardedPath,
        or InvalidInput saying why not; NotFound when it does not exist and `must_exist`."""
        if not isinstance(path, str):
            raise InvalidInput("path must be a string")
        field = path[:1000]
        if not is_unicode(path):
            raise InvalidInput("path is not valid Unicode text", path=repr(field))
        if not path.strip():
            raise InvalidInput("path is empty", path=field)
        if "\0" in path:
            raise InvalidInput(f"path {_shown(path)} contains a NUL byte", path=field)
        if len(path) > MAX_PATH_CHARS:
            raise InvalidInput(
                f"path {_shown(path)} is longer than {MAX_PATH_CHARS} characters", path=field
            )
        start = self._start(path)
        if start is None:
            raise InvalidInput(f"path {_shown(path)} is outside the allowed roots", path=field)
        try:
            real, mode = self._walk(*start, path, [MAX_SYMLINK_HOPS], _OUTSIDE_DOTDOT)
        except _Missing as missing:
            if must_exist or missing.path is None:
                raise NotFound(f"path {_shown(path)} does not exist", path=field) from None
            real = missing.path
        else:
            refused = _kind_refused(mode)
            if refused is not None:
                raise InvalidInput(f"path {_shown(path)} {refused}", path=field)
        root = self._owner(real)
        relative = real.relative_to(root).as_posix()
        if not is_unicode(relative):
            raise InvalidInput(f"path {_shown(path)} leads to a name that is not UTF-8", path=field)
        return GuardedPath(root=root, path=real, relative=relative)

    def open_file(self, guarded: GuardedPath) -> BinaryIO:
        """The regular file at `guarded`, opened for reading without following any symlink on
        the way, so a swap made after `resolve` is refused instead of followed."""
        parts = [] if guarded.relative == "." else guarded.relative.split("/")
        shown = _shown(guarded.relative)
        if guarded.root not in self.roots or any(p in ("", ".", "..") for p in parts):
            raise InvalidInput(f"path {shown} is not a resolved path inside the roots")
        if not parts:
            raise InvalidInput(f"path {shown} is a directory, not a file")
        opened: list[int] = []
        try:
            opened.append(os.open(guarded.root, _DIR_FLAGS))
            for part in parts[:-1]:
                opened.append(os.open(part, _DIR_FLAGS | _NOFOLLOW, dir_fd=opened[-1]))
            fd = os.open(parts[-1], _FILE_FLAGS, dir_fd=opened[-1])
        except OSError as exc:
            if exc.errno == errno.ENOENT:
                raise NotFound(f"path {shown} does not exist", path=guarded.relative) from None
            if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                raise InvalidInput(
                    f"path {shown} changed into a symlink after it was checked",
                    path=guarded.relative,
                ) from None
            raise InvalidInput(
                f"path {shown} cannot be opened: {exc.strerror}", path=guarded.relative
            ) from None
        finally:
            for each in opened:
                os.close(each)
        try:
            mode = os.fstat(fd).st_mode
            if not stat.S_ISREG(mode):
                why = "is a directory" if stat.S_ISDIR(mode) else _kind_refused(mode)
                raise InvalidInput(f"path {shown} {why}, not a file", path=guarded.relative)
        except BaseException:
            os.close(fd)
            raise
        return os.fdopen(fd, "rb")

    def _start(self, path: str) -> tuple[Path, list[str]] | None:
        """The real root an absolute path starts in and the parts after it; None when none."""
        parts = _split(path)
        if not path.startswith("/"):
            return self.default_root, parts
        for prefix, real in self._aliases:
            inner = list(prefix[1:])
            if parts[: len(inner)] == inner:
                return real, parts[len(inner) :]
        return None

    def _owner(self, real: Path) -> Path:
        if real.is_relative_to(self.default_root):
            return self.default_root
        return next(root for root in self.roots if real.is_relative_to(root))

    def _walk(
        self, start: Path, parts: list[str], shown: str, hops: list[int], outside: str
    ) -> tuple[Path, int]:
        """Resolve `parts` from the real directory `start` one component at a time; returns the
        real path and its mode. `hops` is the symlink budget shared by the whole resolution."""
        current, mode = start, stat.S_IFDIR
        for index, part in enumerate(parts):
            if not stat.S_ISDIR(mode):
                raise _Missing(None)
            if part == "..":
                current = current.parent
                if not self.contains(current):
                    raise InvalidInput(f"path {_shown(shown)} {outside}", path=shown[:1000])
                continue
            candidate = current / part
            try:
                mode = os.lstat(candidate).st_mode
            except OSError as exc:
                if exc.errno in _MISSING:
                    raise _Missing(_tail(candidate, parts[index + 1 :])) from None
                raise self._unresolvable(shown, exc) from None
            except ValueError as exc:  # a name the file system cannot encode
                raise self._unresolvable(shown, exc) from None
            if stat.S_ISLNK(mode):
                try:
                    candidate, mode = self._follow(current, candidate, shown, hops)
                except _Missing as missing:
                    tail = None if missing.path is None else _tail(missing.path, parts[index + 1 :])
                    raise _Missing(tail) from None
            current = candidate
        return current, mode

    def _follow(self, directory: Path, link: Path, shown: str, hops: list[int]) -> tuple[Path, int]:
        hops[0] -= 1
        if hops[0] < 0:
            raise InvalidInput(
                f"path {_shown(shown)} has too many levels of symbolic links", path=shown[:1000]
            )
        try:
            target = os.readlink(link)
        except OSError as exc:
            raise self._unresolvable(shown, exc) from None
        start = self._start(target) if target.startswith("/") else (directory, _split(target))
        if start is None:
            raise InvalidInput(f"path {_shown(shown)} {_OUTSIDE_LINK}", path=shown[:1000])
        return self._walk(*start, shown, hops, _OUTSIDE_LINK)

    @staticmethod
    def _unresolvable(shown: str, exc: Exception) -> InvalidInput:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        return InvalidInput(f"path {_shown(shown)} cannot be resolved: {reason}", path=shown[:1000])


def _tail(base: Path, rest: list[str]) -> Path | None:
    return None if ".." in rest else base.joinpath(*rest)


_parser: Any = importlib.import_module("re._parser")
_REPEATS = frozenset({"MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"})


def _risky(subpattern: Any, inside: bool) -> bool:
    """A repeat inside a repeat (exponential backtracking), or two unbounded repeats in a row
    over the same characters (`.*.*`, `a*a+`: polynomial)."""
    previous = None
    for op, value in subpattern:
        if str(op) not in _REPEATS:
            previous = None
            if any(_risky(child, inside) for child in _subpatterns(value)):
                return True
            continue
        repeats = value[1] > 1
        single = _one_char(value[2]) if value[1] == _parser.MAXREPEAT else None
        if (repeats and inside) or (single is not None and _overlap(previous, single)):
            return True
        if _risky(value[2], inside or repeats):
            return True
        previous = single
    return False


def _one_char(body: Any) -> Any:
    items = list(body)
    one = len(items) == 1 and str(items[0][0]) in ("ANY", "LITERAL", "NOT_LITERAL", "IN")
    return items[0] if one else None


def _overlap(first: Any, second: Any) -> bool:
    return first is not None and ("ANY" in (str(first[0]), str(second[0])) or first == second)


def _subpatterns(value: Any) -> Iterator[Any]:
    if isinstance(value, _parser.SubPattern):
        yield value
    elif isinstance(value, (tuple, list)):
        for item in value:
            yield from _subpatterns(item)


def compile_query(query: str, *, regex: bool, case_sensitive: bool) -> re.Pattern[str]:
    """A search query as a compiled pattern; a regex that could backtrack for ever is refused
    (InvalidInput) before it ever runs."""
    flags = 0 if case_sensitive else re.IGNORECASE
    if not regex:
        return re.compile(re.escape(query), flags)
    try:
        compiled = re.compile(query, flags)
        risky = _risky(_parser.parse(query, flags), False)
    except (re.error, OverflowError, RecursionError, ValueError) as exc:
        raise InvalidInput(f"invalid regular expression: {exc}", query=query) from None
    if risky:
        raise InvalidInput(
            "regular expression repeats a part that itself repeats (like (a+)+), or has two "
            "unbounded repeats in a row over the same characters (like .*.*): either can take "
            "forever to fail on a long line; rewrite it without them",
            query=query,
        )
    return compiled
