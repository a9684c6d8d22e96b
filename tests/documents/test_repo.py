"""repo_list, repo_read and repo_search: bounded views of the project that never leak outside."""

from __future__ import annotations

import hashlib
import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from graphmem.documents.guard import PathGuard
from graphmem.documents.repo import repo_list, repo_read, repo_search
from graphmem.errors import InvalidInput, NotFound
from graphmem.models import Model

MARKER = "MARKER-5e1d0b-OUTSIDE"


def _write(root: Path, files: dict[str, str | bytes]) -> None:
    for name, content in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")


@pytest.fixture
def project(tmp_path: Path) -> tuple[PathGuard, Path, Path]:
    root = tmp_path / "root"
    outside = tmp_path / "outside"
    _write(
        root,
        {
            ".gitignore": "*.log\n.env\n",
            "README.md": "# Project\nHello world\n",
            "src/app.py": "def main():\n    return 'hello'\n",
            "src/util.py": "HELLO = 1\n",
            "src/debug.log": "hello from a log\n",
            ".env": "TOKEN=hello\n",
            "node_modules/lib/index.js": "hello()\n",
            "image.png": b"\x89PNG\r\n\x1a\n\0\0hello",
        },
    )
    _write(outside, {"SECRET-OUTSIDE": f"hello {MARKER}\n", "dir/inner.txt": MARKER})
    (root / "escape").symlink_to(outside)
    (root / "secret").symlink_to(outside / "SECRET-OUTSIDE")
    (root / "readme-link").symlink_to("README.md")
    (root / "src-link").symlink_to("src")
    return PathGuard([root]), root, outside


def _paths(listing: object) -> list[str]:
    return [entry.path for entry in listing.entries]  # type: ignore[attr-defined]


# ---- repo_list ----------------------------------------------------------------------------


def test_listing_shows_one_level_with_kinds_and_sizes(
    project: tuple[PathGuard, Path, Path],
) -> None:
    guard, _, _ = project
    listing = repo_list(guard)
    rows = {entry.path: (entry.kind, entry.size) for entry in listing.entries}
    assert rows == {
        ".gitignore": ("file", 11),
        "README.md": ("file", 22),
        "image.png": ("file", 15),
        "readme-link": ("file", 22),
        "src": ("dir", None),
        "src-link": ("dir", None),
    }
    assert listing.path == "." and not listing.truncated


def test_listing_hides_gitignored_files_and_vendored_folders(
    project: tuple[PathGuard, Path, Path],
) -> None:
    guard, _, _ = project
    assert _paths(repo_list(guard, "src")) == ["src/app.py", "src/util.py"]
    assert "node_modules" not in _paths(repo_list(guard))
    assert ".env" not in _paths(repo_list(guard))


def test_symlinks_pointing_outside_are_never_listed(project: tuple[PathGuard, Path, Path]) -> None:
    guard, _, _ = project
    for recursive in (False, True):
        paths = _paths(repo_list(guard, recursive=recursive, limit=1000))
        assert "escape" not in paths and "secret" not in paths
        assert not any(MARKER in p or "SECRET" in p for p in paths)


def test_a_recursive_listing_walks_the_tree_without_following_links(
    project: tuple[PathGuard, Path, Path],
) -> None:
    guard, _, _ = project
    paths = _paths(repo_list(guard, recursive=True))
    assert paths == [
        ".gitignore",
        "README.md",
        "image.png",
        "readme-link",
        "src",
        "src/app.py",
        "src/util.py",
        "src-link",
    ]


def test_a_pattern_filters_entry_names(project: tuple[PathGuard, Path, Path]) -> None:
    guard, _, _ = project
    assert _paths(repo_list(guard, pattern="*.py", recursive=True)) == ["src/app.py", "src/util.py"]
    assert _paths(repo_list(guard, pattern="README*")) == ["README.md"]


def test_a_listing_over_the_limit_is_truncated(project: tuple[PathGuard, Path, Path]) -> None:
    guard, _, _ = project
    listing = repo_list(guard, limit=2)
    assert len(listing.entries) == 2 and listing.truncated
    assert not repo_list(guard, "src", limit=2).truncated


def test_listing_a_file_shows_that_file(project: tuple[PathGuard, Path, Path]) -> None:
    guard, _, _ = project
    assert _paths(repo_list(guard, "src/app.py")) == ["src/app.py"]


def test_listing_a_symlinked_directory_inside_lists_its_real_location(
    project: tuple[PathGuard, Path, Path],
) -> None:
    guard, _, _ = project
    assert _paths(repo_list(guard, "src-link")) == ["src/app.py", "src/util.py"]


@pytest.mark.parametrize(
    "kwargs",
    [
        {"limit": 0},
        {"limit": 10_001},
        {"limit": "5"},
        {"limit": True},
        {"pattern": ""},
        {"pattern": "x" * 501},
        {"path": "../outside"},
    ],
)
def test_bad_listing_arguments_are_refused(
    project: tuple[PathGuard, Path, Path], kwargs: dict[str, object]
) -> None:
    with pytest.raises(InvalidInput):
        repo_list(project[0], **kwargs)  # type: ignore[arg-type]


def test_listing_through_an_outside_link_is_refused(project: tuple[PathGuard, Path, Path]) -> None:
    guard, _, _ = project
    with pytest.raises(InvalidInput):
        repo_list(guard, "escape")
    with pytest.raises(NotFound):
        repo_list(guard, "no-such-dir")


# ---- repo_read ----------------------------------------------------------------------------


def test_reading_returns_the_whole_file_with_its_hash(
    project: tuple[PathGuard, Path, Path],
) -> None:
    guard, root, _ = project
    read = repo_read(guard, "src/app.py")
    data = (root / "src/app.py").read_bytes()
    assert read.text == data.decode()
    assert (read.start_line, read.end_line, read.total_lines) == (1, 2, 2)
    assert read.sha256 == hashlib.sha256(data).hexdigest()
    assert not read.truncated and read.path == "src/app.py"


def test_reading_a_line_range_clamps_the_end_to_the_file(tmp_path: Path) -> None:
    (tmp_path / "f.txt").write_text("".join(f"line {i}\n" for i in range(1, 11)), encoding="utf-8")
    guard = PathGuard([tmp_path])
    read = repo_read(guard, "f.txt", start_line=3, end_line=4)
    assert read.text == "line 3\nline 4\n" and (read.end_line, read.total_lines) == (4, 10)
    tail = repo_read(guard, "f.txt", start_line=9, end_line=500)
    assert tail.text == "line 9\nline 10\n" and tail.end_line == 10


def test_the_last_line_without_a_newline_still_counts(tmp_path: Path) -> None:
    (tmp_path / "f.txt").write_bytes(b"a\nb\nc")
    read = repo_read(PathGuard([tmp_path]), "f.txt", start_line=3)
    assert (read.text, read.end_line, read.total_lines) == ("c", 3, 3)


def test_an_empty_file_reads_as_no_lines(tmp_path: Path) -> None:
    (tmp_path / "e").write_bytes(b"")
    read = repo_read(PathGuard([tmp_path]), "e")
    assert (read.text, read.start_line, read.end_line, read.total_lines) == ("", 1, 0, 0)


def test_max_bytes_stops_at_the_last_whole_line_that_fits(tmp_path: Path) -> None:
    (tmp_path / "f.txt").write_text("aaaa\nbbbb\ncccc\n", encoding="utf-8")
    read = repo_read(PathGuard([tmp_path]), "f.txt", max_bytes=16 + 0)
    assert read.text == "aaaa\nbbbb\ncccc\n" and not read.truncated
    (tmp_path / "g.txt").write_text("a" * 10 + "\n" + "b" * 10 + "\n", encoding="utf-8")
    read = repo_read(PathGuard([tmp_path]), "g.txt", max_bytes=20)
    assert (read.text, read.end_line, read.truncated) == ("a" * 10 + "\n", 1, True)
    assert read.total_lines == 2


def test_a_single_long_line_is_cut_on_a_character_boundary(tmp_path: Path) -> None:
    (tmp_path / "f.txt").write_text("é" * 100 + "\nnext\n", encoding="utf-8")
    read = repo_read(PathGuard([tmp_path]), "f.txt", max_bytes=17)
    assert read.text == "é" * 8 and read.truncated and read.end_line == 1
    assert "\ufffd" not in read.text


def test_reading_past_the_end_or_a_reversed_range_is_refused(tmp_path: Path) -> None:
    (tmp_path / "f.txt").write_text("one\ntwo\n", encoding="utf-8")
    guard = PathGuard([tmp_path])
    with pytest.raises(InvalidInput, match="past the end"):
        repo_read(guard, "f.txt", start_line=3)
    with pytest.raises(InvalidInput, match="before start_line"):
        repo_read(guard, "f.txt", start_line=2, end_line=1)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"start_line": 0},
        {"start_line": -1},
        {"end_line": 0},
        {"max_bytes": 0},
        {"max_bytes": 2_000_000},
        {"start_line": True},
    ],
)
def test_out_of_range_read_arguments_are_refused(tmp_path: Path, kwargs: dict[str, int]) -> None:
    (tmp_path / "f.txt").write_text("x\n", encoding="utf-8")
    with pytest.raises(InvalidInput):
        repo_read(PathGuard([tmp_path]), "f.txt", **kwargs)


def test_a_binary_file_is_refused(project: tuple[PathGuard, Path, Path]) -> None:
    with pytest.raises(InvalidInput, match="binary"):
        repo_read(project[0], "image.png")


def test_a_directory_is_not_readable(project: tuple[PathGuard, Path, Path]) -> None:
    with pytest.raises(InvalidInput, match="directory"):
        repo_read(project[0], "src")


def test_reading_a_symlink_to_etc_passwd_or_outside_is_refused(
    project: tuple[PathGuard, Path, Path],
) -> None:
    guard, root, _ = project
    (root / "passwd").symlink_to("/etc/passwd")
    for path in [
        "passwd",
        "secret",
        "escape/SECRET-OUTSIDE",
        "../outside/SECRET-OUTSIDE",
        "/etc/passwd",
    ]:
        with pytest.raises(InvalidInput):
            repo_read(guard, path)


def test_reading_a_gitignored_file_by_name_is_allowed(
    project: tuple[PathGuard, Path, Path],
) -> None:
    assert repo_read(project[0], ".env").text == "TOKEN=hello\n"


def test_reading_a_symlink_inside_reads_its_target(project: tuple[PathGuard, Path, Path]) -> None:
    read = repo_read(project[0], "readme-link")
    assert read.path == "README.md" and read.text.startswith("# Project")


# ---- repo_search --------------------------------------------------------------------------


def test_a_literal_search_is_case_insensitive_by_default(
    project: tuple[PathGuard, Path, Path],
) -> None:
    result = repo_search(project[0], "hello")
    found = [(m.path, m.line, m.text) for m in result.matches]
    assert found == [
        ("README.md", 2, "Hello world"),
        ("src/app.py", 2, "    return 'hello'"),
        ("src/util.py", 1, "HELLO = 1"),
    ]
    assert result.files_searched == 4 and not result.truncated


def test_a_case_sensitive_search_matches_exact_case(project: tuple[PathGuard, Path, Path]) -> None:
    result = repo_search(project[0], "HELLO", case_sensitive=True)
    assert [m.path for m in result.matches] == ["src/util.py"]


def test_a_literal_query_is_not_a_regex(tmp_path: Path) -> None:
    (tmp_path / "f.txt").write_text("a.b\naxb\n", encoding="utf-8")
    assert [m.line for m in repo_search(PathGuard([tmp_path]), "a.b").matches] == [1]
    assert [m.line for m in repo_search(PathGuard([tmp_path]), "a.b", regex=True).matches] == [1, 2]


def test_a_regex_search_finds_pattern_matches(project: tuple[PathGuard, Path, Path]) -> None:
    result = repo_search(project[0], r"^def \w+\(", regex=True)
    assert [(m.path, m.line) for m in result.matches] == [("src/app.py", 1)]


def test_an_invalid_regex_is_refused(project: tuple[PathGuard, Path, Path]) -> None:
    with pytest.raises(InvalidInput, match="invalid regular expression"):
        repo_search(project[0], "(unclosed", regex=True)


@pytest.mark.parametrize(
    "pattern",
    [
        r"(a+)+$",
        r"(\w+\s?)*x",
        r"(?:a|b*)+",
        r"((ab)*c)*",
        r"(a{2,})*",
        r".*.*b",
        r"a*a+b",
        r"x\w*.+",
    ],
)
def test_a_regex_with_nested_or_stacked_quantifiers_is_refused_before_it_runs(
    tmp_path: Path, pattern: str
) -> None:
    (tmp_path / "f.txt").write_text("a" * 5000 + "!\n", encoding="utf-8")
    started = time.monotonic()
    with pytest.raises(InvalidInput, match="repeats"):
        repo_search(PathGuard([tmp_path]), pattern, regex=True)
    assert time.monotonic() - started < 1


@pytest.mark.parametrize("pattern", [r"\s*\w+\(", r".*x.*y", r"^def \w+", r"(ab|cd)+", r"\d+\.\d+"])
def test_ordinary_regexes_with_several_quantifiers_are_accepted(
    tmp_path: Path, pattern: str
) -> None:
    (tmp_path / "f.txt").write_text("nothing here\n", encoding="utf-8")
    assert repo_search(PathGuard([tmp_path]), pattern, regex=True).matches == []


def test_a_regex_starting_with_a_repeat_on_a_huge_line_finishes_quickly(tmp_path: Path) -> None:
    (tmp_path / "min.js").write_text("a" * 1_000_000 + "\n", encoding="utf-8")
    started = time.monotonic()
    assert repo_search(PathGuard([tmp_path]), r"\w+b", regex=True).matches == []
    assert time.monotonic() - started < 5


def test_search_skips_binary_ignored_vendored_and_large_files(
    project: tuple[PathGuard, Path, Path],
) -> None:
    guard, root, _ = project
    (root / "big.txt").write_text("hello\n" * 100, encoding="utf-8")
    paths = {m.path for m in repo_search(guard, "hello", max_file_bytes=300).matches}
    assert paths == {"README.md", "src/app.py", "src/util.py"}


def test_a_glob_limits_the_files_searched(project: tuple[PathGuard, Path, Path]) -> None:
    guard, _, _ = project
    result = repo_search(guard, "hello", glob="*.py")
    assert {m.path for m in result.matches} == {"src/app.py", "src/util.py"}
    assert result.files_searched == 2
    assert {m.path for m in repo_search(guard, "hello", glob="src/app.*").matches} == {"src/app.py"}


def test_search_under_a_path_or_in_one_file(project: tuple[PathGuard, Path, Path]) -> None:
    guard, _, _ = project
    assert {m.path for m in repo_search(guard, "hello", path="src").matches} == {
        "src/app.py",
        "src/util.py",
    }
    assert [m.path for m in repo_search(guard, "hello", path="README.md").matches] == ["README.md"]


def test_more_matches_than_the_limit_are_truncated(tmp_path: Path) -> None:
    (tmp_path / "f.txt").write_text("hit\n" * 50, encoding="utf-8")
    result = repo_search(PathGuard([tmp_path]), "hit", limit=10)
    assert len(result.matches) == 10 and result.truncated
    assert not repo_search(PathGuard([tmp_path]), "hit", limit=50).truncated


def test_a_long_matching_line_is_cut_around_the_match(tmp_path: Path) -> None:
    (tmp_path / "f.txt").write_text("x" * 1000 + "needle" + "y" * 1000 + "\n", encoding="utf-8")
    (tmp_path / "g.txt").write_text("needle" + "z" * 1000 + "\r\n", encoding="utf-8")
    matches = repo_search(PathGuard([tmp_path]), "needle").matches
    assert all(len(m.text) == 300 and "needle" in m.text for m in matches)
    assert len(matches) == 2


@pytest.mark.parametrize(
    "kwargs",
    [
        {"query": ""},
        {"query": "x" * 1001},
        {"query": "a\nb"},
        {"query": "x", "limit": 0},
        {"query": "x", "limit": 1001},
        {"query": "x", "limit": 2.5},
        {"query": "x", "max_file_bytes": 0},
        {"query": "x", "max_file_bytes": 10**9},
        {"query": "x", "glob": ""},
        {"query": "x", "glob": "\\"},
        {"query": "x", "path": "/etc"},
    ],
)
def test_bad_search_arguments_are_refused(
    project: tuple[PathGuard, Path, Path], kwargs: dict[str, object]
) -> None:
    with pytest.raises(InvalidInput):
        repo_search(project[0], **kwargs)  # type: ignore[arg-type]


def test_search_never_reads_through_outside_links(project: tuple[PathGuard, Path, Path]) -> None:
    guard, _, _ = project
    result = repo_search(guard, MARKER, limit=1000)
    assert result.matches == []
    assert repo_search(guard, "hello", limit=1000).files_searched == 4


def test_files_with_undecodable_names_are_left_out_so_answers_stay_json(tmp_path: Path) -> None:
    (tmp_path / os.fsdecode(b"\xff-bad.txt")).write_text("hello\n", encoding="utf-8")
    (tmp_path / "ok.txt").write_text("hello\n", encoding="utf-8")
    guard = PathGuard([tmp_path])
    listing = repo_list(guard)
    found = repo_search(guard, "hello")
    assert _paths(listing) == ["ok.txt"] and [m.path for m in found.matches] == ["ok.txt"]
    listing.model_dump_json()
    found.model_dump_json()


# ---- properties ---------------------------------------------------------------------------

_NAMES = st.sampled_from(["a", "b.txt", "é.md", "日本", "src", "x y", "-", "SECRET", ".hidden"])
_TARGETS = st.sampled_from(
    [
        "{out}",
        "{out}/SECRET-OUTSIDE",
        "{out}/back",
        "..",
        "../..",
        "{root}",
        ".",
        "a",
        "loop",
        "/etc",
    ]
)
_ARGS = st.one_of(
    st.sampled_from([".", "..", "a", "src", "/", "//", "a/../..", "SECRET-OUTSIDE", "kept/up"]),
    st.sampled_from(["in", "in-file", "esc", "esc-file", "detour", "loop1", "in/../esc", "kept"]),
    st.text(max_size=20),
    st.lists(
        st.sampled_from(["..", ".", "", "a", "link", "日本", "\0", "é" * 200, "\udcff"]), max_size=6
    ).map("/".join),
)


def _build(base: Path, files: list[list[str]], links: list[tuple[list[str], str]]) -> Path:
    root = base / "root"
    outside = base / "outside"
    _write(outside, {"SECRET-OUTSIDE": MARKER + "\n", "sub/SECRET-OUTSIDE": MARKER + "\n"})
    _write(root, {"kept/日本.txt": "hello inside\n"})
    (outside / "back").symlink_to(root)
    fixed = [
        (["in"], "kept"),
        (["in-file"], "{root}/kept/日本.txt"),
        (["esc"], "{out}"),
        (["esc-file"], "{out}/SECRET-OUTSIDE"),
        (["kept", "up"], "../../outside/sub"),
        (["detour"], "{out}/back/kept"),
        (["loop1"], "loop2"),
        (["loop2"], "loop1"),
    ]
    for parts in files:
        path = root.joinpath(*parts)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(f"hello {parts[-1]}\n", encoding="utf-8")
        except OSError:
            continue
    for parts, target in fixed + links:
        link = root.joinpath(*parts)
        if link.exists() or link.is_symlink() or not link.parent.is_dir():
            continue
        link.symlink_to(target.replace("{root}", str(root)).replace("{out}", str(outside)))
    return root


@settings(
    max_examples=60,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    files=st.lists(st.lists(_NAMES, min_size=1, max_size=3), max_size=8),
    links=st.lists(st.tuples(st.lists(_NAMES, min_size=1, max_size=2), _TARGETS), max_size=6),
    args=st.lists(_ARGS, min_size=1, max_size=6),
    regex=st.booleans(),
)
def test_nothing_outside_the_root_is_ever_listed_read_or_searched(
    tmp_path: Path,
    files: list[list[str]],
    links: list[tuple[list[str], str]],
    args: list[str],
    regex: bool,
) -> None:
    root = _build(Path(tempfile.mkdtemp(dir=tmp_path)), files, links)
    guard = PathGuard([root])
    outputs: list[str] = []
    calls: list[Callable[[str], Model]] = [
        lambda a: repo_list(guard, a, recursive=True, limit=10_000),
        lambda a: repo_list(guard, a),
        lambda a: repo_read(guard, a),
        lambda a: repo_search(guard, "MARKER" if not regex else r"MARK\w+", path=a, regex=regex),
        lambda a: repo_search(guard, "hello", path=a, glob="*"),
    ]
    for arg in [".", *args, *(f"{root}/{a}" for a in args)]:
        for call in calls:
            try:
                outputs.append(call(arg).model_dump_json())
            except (InvalidInput, NotFound):
                continue
    assert outputs, "listing the root always works"
    for output in outputs:
        assert MARKER not in output
        assert "SECRET-OUTSIDE" not in output
    for entry in repo_list(guard, recursive=True, limit=10_000).entries:
        assert os.path.realpath(root / entry.path).startswith(str(root.resolve()))
