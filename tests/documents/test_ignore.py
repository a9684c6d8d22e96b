"""The walk behind repo_list and repo_search: git's ignore rules, no symlink following, no errors."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from graphmem.documents.ignore import SKIP_DIRS, is_binary, looks_binary, scan, walk_files


def _tree(root: Path, files: dict[str, str | bytes]) -> Path:
    for name, content in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")
    return root


def _walked(root: Path, **kwargs: object) -> list[str]:
    return [p.relative_to(root).as_posix() for p in walk_files(root, **kwargs)]  # type: ignore[arg-type]


def test_files_come_sorted_within_each_directory_depth_first(tmp_path: Path) -> None:
    _tree(tmp_path, {"b.txt": "", "a/z.txt": "", "a/c.txt": "", "c.txt": "", "a/b/y.txt": ""})
    assert _walked(tmp_path) == ["a/b/y.txt", "a/c.txt", "a/z.txt", "b.txt", "c.txt"]


def test_the_root_gitignore_hides_what_it_matches(tmp_path: Path) -> None:
    _tree(
        tmp_path, {".gitignore": "*.log\nsecrets/\n", "a.log": "", "keep.py": "", "secrets/k": ""}
    )
    assert _walked(tmp_path) == [".gitignore", "keep.py"]


def test_a_negation_brings_back_one_file(tmp_path: Path) -> None:
    _tree(tmp_path, {".gitignore": "*.log\n!keep.log\n", "a.log": "", "keep.log": ""})
    assert _walked(tmp_path) == [".gitignore", "keep.log"]


def test_a_nested_gitignore_applies_only_to_its_own_subtree(tmp_path: Path) -> None:
    _tree(tmp_path, {"sub/.gitignore": "*.txt\n", "sub/a.txt": "", "a.txt": "", "other/b.txt": ""})
    assert _walked(tmp_path) == ["a.txt", "other/b.txt", "sub/.gitignore"]


def test_a_deeper_gitignore_overrides_a_shallower_one(tmp_path: Path) -> None:
    _tree(
        tmp_path,
        {
            ".gitignore": "*.gen\n",
            "sub/.gitignore": "!wanted.gen\n",
            "sub/wanted.gen": "",
            "x.gen": "",
        },
    )
    assert _walked(tmp_path) == [".gitignore", "sub/.gitignore", "sub/wanted.gen"]


def test_an_anchored_pattern_matches_only_next_to_its_gitignore(tmp_path: Path) -> None:
    _tree(
        tmp_path, {"sub/.gitignore": "/only.txt\n", "sub/only.txt": "", "sub/deeper/only.txt": ""}
    )
    assert _walked(tmp_path) == ["sub/.gitignore", "sub/deeper/only.txt"]


def test_a_directory_pattern_hides_the_directory_but_not_a_file_of_that_name(
    tmp_path: Path,
) -> None:
    _tree(tmp_path, {".gitignore": "cache/\n", "cache/x": "", "a/cache": "file"})
    assert _walked(tmp_path) == [".gitignore", "a/cache"]


def test_git_info_exclude_at_the_root_is_honoured(tmp_path: Path) -> None:
    _tree(tmp_path, {".git/info/exclude": "local.txt\n", "local.txt": "", "shared.txt": ""})
    assert _walked(tmp_path) == ["shared.txt"]


def test_a_gitignore_beats_git_info_exclude(tmp_path: Path) -> None:
    _tree(tmp_path, {".git/info/exclude": "*.txt\n", ".gitignore": "!a.txt\n", "a.txt": ""})
    assert _walked(tmp_path) == [".gitignore", "a.txt"]


def test_caller_excludes_use_gitignore_syntax_relative_to_the_root(tmp_path: Path) -> None:
    _tree(tmp_path, {"docs/a.md": "", "docs/b.txt": "", "src/a.md": "", "top.md": ""})
    assert _walked(tmp_path, exclude=["docs/*.md", "/top.md"]) == ["docs/b.txt", "src/a.md"]


def test_a_caller_negation_cannot_unignore_a_gitignored_file(tmp_path: Path) -> None:
    _tree(tmp_path, {".gitignore": "*.env\n", "a.env": "", "b.log": "", "keep.log": ""})
    walked = _walked(tmp_path, exclude=["*.log", "!keep.log", "!a.env"])
    assert walked == [".gitignore", "keep.log"]


def test_vendored_and_build_folders_are_skipped_by_default(tmp_path: Path) -> None:
    files = {f"{name}/x.py": "" for name in SKIP_DIRS}
    _tree(tmp_path, {**files, "src/node_modules/y.js": "", "src/main.py": ""})
    assert _walked(tmp_path) == ["src/main.py"]
    assert "node_modules/x.py" in _walked(tmp_path, skip_dirs=frozenset())


def test_a_file_named_like_a_skipped_folder_is_still_listed(tmp_path: Path) -> None:
    _tree(tmp_path, {"build": "a file", "dist.txt": ""})
    assert _walked(tmp_path) == ["build", "dist.txt"]


def test_symlinks_are_neither_yielded_nor_followed_by_default(tmp_path: Path) -> None:
    outside = _tree(tmp_path / "outside", {"secret.txt": "s"})
    root = _tree(tmp_path / "root", {"real.txt": ""})
    (root / "to_file").symlink_to(outside / "secret.txt")
    (root / "to_dir").symlink_to(outside)
    (root / "inside_link").symlink_to(root / "real.txt")
    assert _walked(root) == ["real.txt"]


def test_followed_symlink_loops_end_and_each_directory_is_walked_once(tmp_path: Path) -> None:
    _tree(tmp_path, {"a/x.txt": ""})
    (tmp_path / "a" / "loop").symlink_to(tmp_path)
    (tmp_path / "again").symlink_to(tmp_path / "a")
    walked = _walked(tmp_path, follow_symlinks=True)
    assert walked == ["a/x.txt"]


def test_following_yields_linked_files(tmp_path: Path) -> None:
    _tree(tmp_path, {"real.txt": ""})
    (tmp_path / "alias.txt").symlink_to(tmp_path / "real.txt")
    (tmp_path / "broken").symlink_to(tmp_path / "nowhere")
    assert _walked(tmp_path, follow_symlinks=True) == ["alias.txt", "real.txt"]


def test_fifos_and_sockets_are_skipped(tmp_path: Path) -> None:
    _tree(tmp_path, {"a.txt": ""})
    os.mkfifo(tmp_path / "pipe")
    short = Path(tempfile.mkdtemp(dir="/tmp"))  # AF_UNIX paths must be short
    try:
        with socket.socket(socket.AF_UNIX) as server:
            server.bind(str(short / "s"))
            (tmp_path / "sock").symlink_to(short / "s")
            assert _walked(short) == []
            assert _walked(tmp_path, follow_symlinks=True) == ["a.txt"]
    finally:
        shutil.rmtree(short)
    assert _walked(tmp_path) == ["a.txt"]


def test_unreadable_directories_are_skipped_without_raising(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _tree(tmp_path, {"locked/x.txt": "", "open/y.txt": ""})
    real_scandir = os.scandir
    locked = os.stat(tmp_path / "locked").st_ino

    def scandir(target: int) -> Iterator[os.DirEntry[str]]:
        if os.fstat(target).st_ino == locked:
            raise PermissionError(13, "Permission denied")
        return real_scandir(target)

    monkeypatch.setattr(os, "scandir", scandir)
    assert _walked(tmp_path) == ["open/y.txt"]


def test_a_missing_root_yields_nothing(tmp_path: Path) -> None:
    assert _walked(tmp_path / "absent") == []


def test_an_unparseable_gitignore_line_is_dropped_not_fatal(tmp_path: Path) -> None:
    _tree(tmp_path, {".gitignore": "!\n\\\n*.tmp\n# comment\n", "a.tmp": "", "b.txt": ""})
    assert _walked(tmp_path) == [".gitignore", "b.txt"]


def test_a_symlinked_gitignore_outside_is_not_read(tmp_path: Path) -> None:
    outside = _tree(tmp_path / "outside", {"ignore": "*.txt\n"})
    root = _tree(tmp_path / "root", {"a.txt": ""})
    (root / ".gitignore").symlink_to(outside / "ignore")
    assert _walked(root) == ["a.txt"]


def test_scan_under_a_subdirectory_still_applies_the_ancestors_gitignores(tmp_path: Path) -> None:
    _tree(tmp_path, {".gitignore": "*.log\n", "a/.gitignore": "*.tmp\n", "a/b/x.log": ""})
    _tree(tmp_path, {"a/b/y.tmp": "", "a/b/z.py": ""})
    found = [(e.relative, e.kind) for e in scan(tmp_path, under="a/b")]
    assert found == [("a/b/z.py", "file")]


def test_scan_refuses_an_under_that_climbs_out(tmp_path: Path) -> None:
    with pytest.raises(ValueError):
        list(scan(tmp_path, under="../x"))


def test_scan_one_level_lists_directories_files_and_symlinks_without_descending(
    tmp_path: Path,
) -> None:
    _tree(tmp_path, {"d/inner.txt": "", "f.txt": "abc"})
    (tmp_path / "link").symlink_to("/etc")
    found = [(e.relative, e.kind, e.size) for e in scan(tmp_path, recursive=False)]
    assert found == [("d", "dir", 0), ("f.txt", "file", 3), ("link", "symlink", 0)]


def test_a_nul_byte_makes_a_file_binary(tmp_path: Path) -> None:
    (tmp_path / "b").write_bytes(b"text\0more")
    assert is_binary(tmp_path / "b")


def test_utf8_text_and_an_empty_file_are_not_binary(tmp_path: Path) -> None:
    (tmp_path / "t").write_text("héllo wörld ✓ 日本\n" * 100, encoding="utf-8")
    (tmp_path / "e").write_bytes(b"")
    assert not is_binary(tmp_path / "t")
    assert not is_binary(tmp_path / "e")


def test_a_stray_latin1_byte_is_tolerated_but_random_bytes_are_not() -> None:
    assert not looks_binary(b"caf\xe9 au lait, " * 2)
    assert not looks_binary(b"caf\xe9 au lait, " * 3 + b"plain ascii text " * 20)
    assert looks_binary(bytes(range(128, 256)) * 4)


def test_a_character_cut_by_the_sniff_window_is_not_a_bad_byte(tmp_path: Path) -> None:
    (tmp_path / "t").write_bytes(b"a" * 8191 + "é".encode() * 10)
    assert not is_binary(tmp_path / "t")


def test_unreadable_or_special_files_count_as_binary(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe")
    assert is_binary(tmp_path / "pipe")
    assert is_binary(tmp_path / "missing")


# ---- properties ---------------------------------------------------------------------------

_NAMES = st.sampled_from(["a", "b", "c.txt", "d.log", "é", "日本.md", "keep.log", "build"])
_PATTERNS = st.sampled_from(
    ["*.log", "!keep.log", "/a", "b/", "*.txt", "!c.txt", "**/c.txt", "é", "d*", "!b", "a/**"]
)


@st.composite
def _repos(draw: st.DrawFn) -> tuple[list[str], dict[str, list[str]]]:
    paths = draw(st.lists(st.lists(_NAMES, min_size=1, max_size=3), min_size=1, max_size=12))
    files = sorted({"/".join(p) for p in paths})
    dirs = sorted({"/".join(p[:i]) for p in paths for i in range(len(p))})
    ignores = {
        d: draw(st.lists(_PATTERNS, max_size=4))
        for d in draw(st.lists(st.sampled_from(dirs), max_size=3, unique=True))
    }
    return files, ignores


def _materialise(root: Path, files: list[str], ignores: dict[str, list[str]]) -> list[str]:
    made: list[str] = []
    for name in files:
        path = root / name
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text("x", encoding="utf-8")
        except (FileExistsError, NotADirectoryError, IsADirectoryError):
            continue  # the same name drawn as a file and as a directory
        made.append(name)
    for directory, lines in ignores.items():
        folder = root / directory
        if folder.is_dir():
            (folder / ".gitignore").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return made


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
@settings(
    max_examples=60,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(repo=_repos())
# a negation re-including a folder (`!b`) does not re-include what `a/**` ignores inside it
@example(repo=(["a/a", "a/b/a"], {"a": ["!b"], "": ["a/**"]}))
def test_the_walk_agrees_with_git_about_what_is_ignored(
    tmp_path: Path, repo: tuple[list[str], dict[str, list[str]]]
) -> None:
    root = Path(tempfile.mkdtemp(dir=tmp_path))
    _materialise(root, *repo)
    env = {"GIT_CONFIG_NOSYSTEM": "1", "HOME": str(root), "PATH": os.environ["PATH"]}
    subprocess.run(["git", "init", "-q", str(root)], check=True, env=env)
    listed = subprocess.run(
        ["git", "-c", "core.quotepath=off", "ls-files", "-z", "--others", "--exclude-standard"],
        cwd=root,
        check=True,
        env=env,
        capture_output=True,
    ).stdout.decode()
    expected = sorted(name for name in listed.split("\0") if name)
    assert sorted(_walked(root, skip_dirs=frozenset({".git"}))) == expected


@settings(
    max_examples=60,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(repo=_repos(), links=st.lists(st.tuples(_NAMES, st.booleans()), max_size=4))
def test_the_walk_never_leaves_the_root_nor_yields_a_symlink(
    tmp_path: Path,
    repo: tuple[list[str], dict[str, list[str]]],
    links: list[tuple[str, bool]],
) -> None:
    base = Path(tempfile.mkdtemp(dir=tmp_path))
    root = base / "root"
    root.mkdir()
    outside = _tree(base / "outside", {"SECRET-OUTSIDE": "marker"})
    made = _materialise(root, *repo)
    for name, to_outside in links:
        link = root / f"link-{name}"
        if not link.exists() and not link.is_symlink():
            link.symlink_to(outside if to_outside else root)
    walked = list(walk_files(root))
    assert all(p.is_relative_to(root) and not p.is_symlink() for p in walked)
    assert {p.relative_to(root).as_posix() for p in walked} <= set(made) | {
        f"{d}/.gitignore" if d else ".gitignore" for d in repo[1]
    }
    assert walked == list(walk_files(root))  # stable
