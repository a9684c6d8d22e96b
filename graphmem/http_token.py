"""The store's HTTP token: what every HTTP client of a store must present, so that no HTTP
surface (MCP at /mcp, the console, /health's details) is open by default, loopback included.

The token is the `http_token` setting (GRAPHMEM_HTTP_TOKEN) when one is set; otherwise a random
one kept in `<data dir>/http_token`, made on first use and reused after, so clients configured
with it keep working across restarts. The file is created private (mode 0600) from its first
byte, complete before it appears under its name, and is refused when anyone but its owner could
read or change it: a token others could read protects nothing.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
from dataclasses import dataclass, field
from pathlib import Path

from graphmem.errors import InvalidInput
from graphmem.settings import Settings

__all__ = ["TOKEN_FILE", "HttpToken", "http_token", "load_or_create", "token_path"]

TOKEN_FILE = "http_token"
TOKEN_BYTES = 32  # secrets.token_urlsafe(32): 256 random bits, 43 characters
_IGNORE = ".gitignore"


@dataclass(frozen=True)
class HttpToken:
    """A token and where it comes from (never shown by repr)."""

    value: str = field(repr=False)
    file: Path | None = None  # None: the http_token setting
    created: bool = False  # the file was made just now

    @property
    def source(self) -> str:
        """Where a person finds it, for messages."""
        return f"the token in {self.file}" if self.file else "GRAPHMEM_HTTP_TOKEN"


def token_path(home: Path) -> Path:
    return home / TOKEN_FILE


def http_token(settings: Settings, *, create: bool = True) -> HttpToken | None:
    """The store's token: the setting when set, else the data dir's token file (made if missing
    and `create`; None when missing and not `create`). Raises InvalidInput for a blank setting
    and for a file others could read."""
    if settings.http_token is not None:
        value = settings.http_token.get_secret_value()
        if not value.strip():
            raise InvalidInput(
                "GRAPHMEM_HTTP_TOKEN (http_token) is empty; unset it to use the store's own "
                f"token ({token_path(settings.home)}), or set it to a long random string"
            )
        return HttpToken(value)
    path = token_path(settings.home)
    if not create:
        found = _read(path)
        return HttpToken(found, path) if found is not None else None
    value, created = load_or_create(settings.home)
    return HttpToken(value, path, created)


def load_or_create(home: Path) -> tuple[str, bool]:
    """The token in `home`'s token file, making the file first if there is none; returns the
    token and whether it was made now. Safe against a concurrent maker: both read one token."""
    path = token_path(home)
    value = _read(path)
    if value is not None:
        return value, False
    home.mkdir(parents=True, exist_ok=True)
    temp = home / f".{TOKEN_FILE}.{secrets.token_hex(4)}.tmp"
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    fd = os.open(temp, flags, 0o600)  # private from the start, whatever the umask allows
    created = False
    try:
        with os.fdopen(fd, "w", encoding="ascii") as handle:
            handle.write(secrets.token_urlsafe(TOKEN_BYTES) + "\n")
            handle.flush()
            os.fsync(handle.fileno())
        with contextlib.suppress(FileExistsError):  # another process made it first: use theirs
            os.link(temp, path)  # appears whole under its name, or not at all
            created = True
    finally:
        temp.unlink(missing_ok=True)
    if created:
        _keep_out_of_git(home)
    value = _read(path)
    if value is None:  # removed between link and read: nothing sensible to do but say so
        raise InvalidInput(f"{path} disappeared while it was being made; try again")
    return value, created


def _read(path: Path) -> str | None:
    """The token in `path`, None when there is no such file; InvalidInput when the file is not
    a private regular file of this user, or holds no token."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except FileNotFoundError:
        return None
    except OSError as exc:  # ELOOP: a symlink, which could point anywhere
        raise InvalidInput(
            f"cannot read the HTTP token file {path} ({exc.strerror}); it must be a regular "
            "file, not a link: delete it to have a new token made",
            path=str(path),
        ) from exc
    with os.fdopen(fd, encoding="utf-8") as handle:
        info = os.fstat(handle.fileno())
        _check_private(path, info)
        value = handle.read().strip()
    if not value:
        raise InvalidInput(
            f"the HTTP token file {path} is empty: delete it to have a new token made",
            path=str(path),
        )
    return value


def _check_private(path: Path, info: os.stat_result) -> None:
    if not stat.S_ISREG(info.st_mode):
        raise InvalidInput(f"the HTTP token file {path} is not a regular file", path=str(path))
    if os.name != "posix":
        return  # Windows: the file inherits the user profile's ACL
    mode = stat.S_IMODE(info.st_mode)
    if info.st_uid != os.geteuid():
        raise InvalidInput(
            f"the HTTP token file {path} belongs to another user (uid {info.st_uid}): delete it "
            "to have a new token made",
            path=str(path),
        )
    if mode & 0o077:
        raise InvalidInput(
            f"the HTTP token file {path} can be read or changed by other users (mode "
            f"{mode:04o}), so the token may be known to them: delete the file to have a new "
            f"token made (then run `graphmem setup` again for HTTP clients), or keep it with "
            f"`chmod 600 {path}`",
            path=str(path),
            mode=f"{mode:04o}",
        )


def _keep_out_of_git(home: Path) -> None:
    """A data dir someone commits must not carry the token along: ignore it there, unless the
    data dir already has ignore rules of its own."""
    with contextlib.suppress(OSError), open(home / _IGNORE, "x", encoding="utf-8") as handle:
        handle.write(f"# the HTTP token is a secret: never commit it\n{TOKEN_FILE}\n")
