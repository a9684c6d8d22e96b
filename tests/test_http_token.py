"""The store's HTTP token file: made private (0600) from its first byte, whole or not at all,
the same token for every maker and every later run, refused when others could read or change it;
the http_token setting wins over it."""

from __future__ import annotations

import os
import stat
import threading
from pathlib import Path

import pytest

from graphmem.errors import InvalidInput
from graphmem.http_token import TOKEN_FILE, http_token, load_or_create
from graphmem.settings import load_settings


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_a_token_file_is_made_private_and_then_reused(tmp_path: Path) -> None:
    home = tmp_path / "store"
    first, created = load_or_create(home)
    assert created and len(first) >= 40
    path = home / TOKEN_FILE
    assert mode(path) == 0o600
    assert path.read_text(encoding="ascii").strip() == first
    again, created_again = load_or_create(home)
    assert (again, created_again) == (first, False)
    assert "http_token" in (home / ".gitignore").read_text(encoding="utf-8")
    assert not [p.name for p in home.iterdir() if p.name.endswith(".tmp")]


def test_a_token_file_is_private_whatever_the_umask(tmp_path: Path) -> None:
    previous = os.umask(0)  # a umask that would leave a plain open() world-writable
    try:
        load_or_create(tmp_path / "store")
    finally:
        os.umask(previous)
    assert mode(tmp_path / "store" / TOKEN_FILE) == 0o600


def test_makers_racing_for_the_file_all_get_the_one_token(tmp_path: Path) -> None:
    home = tmp_path / "store"
    tokens: list[str] = []
    start = threading.Barrier(8)

    def make() -> None:
        start.wait()
        tokens.append(load_or_create(home)[0])

    threads = [threading.Thread(target=make) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert len(tokens) == 8 and len(set(tokens)) == 1
    assert (home / TOKEN_FILE).read_text(encoding="ascii").strip() == tokens[0]


@pytest.mark.parametrize("loose", [0o644, 0o640, 0o604, 0o620])
def test_a_token_file_others_can_read_or_change_is_refused_with_the_fix(
    tmp_path: Path, loose: int
) -> None:
    home = tmp_path / "store"
    load_or_create(home)
    os.chmod(home / TOKEN_FILE, loose)
    with pytest.raises(InvalidInput) as raised:
        load_or_create(home)
    message = raised.value.message
    assert f"{loose:04o}" in message and "chmod 600" in message and "delete" in message
    assert mode(home / TOKEN_FILE) == loose  # left for the user to decide


def test_a_symlinked_or_empty_token_file_is_refused(tmp_path: Path) -> None:
    home = tmp_path / "store"
    home.mkdir()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.write_text("token\n")
    os.chmod(elsewhere, 0o600)
    (home / TOKEN_FILE).symlink_to(elsewhere)
    with pytest.raises(InvalidInput, match="not a link"):
        load_or_create(home)
    (home / TOKEN_FILE).unlink()
    fd = os.open(home / TOKEN_FILE, os.O_WRONLY | os.O_CREAT, 0o600)
    os.close(fd)
    with pytest.raises(InvalidInput, match="empty"):
        load_or_create(home)


def test_the_setting_wins_over_the_file_and_a_blank_setting_is_refused(tmp_path: Path) -> None:
    home = tmp_path / "store"
    set_here = http_token(load_settings(home, environ={"GRAPHMEM_HTTP_TOKEN": "chosen-token"}))
    assert set_here is not None and set_here.value == "chosen-token" and set_here.file is None
    assert not (home / TOKEN_FILE).exists()
    assert "chosen-token" not in repr(set_here)
    with pytest.raises(InvalidInput, match="empty"):
        http_token(load_settings(home, environ={"GRAPHMEM_HTTP_TOKEN": "  "}))
    assert http_token(load_settings(home, environ={}), create=False) is None
    made = http_token(load_settings(home, environ={}))
    assert made is not None and made.created and made.file == home / TOKEN_FILE
