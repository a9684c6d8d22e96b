"""The path guard: nothing outside the allowed roots is ever resolved or opened."""

from __future__ import annotations

import os
import shutil
import socket
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from graphmem.documents.guard import GuardedPath, PathGuard
from graphmem.errors import InvalidInput, NotFound

MARKER = "MARKER-7f3a9c-OUTSIDE"


@pytest.fixture
def layout(tmp_path: Path) -> tuple[Path, Path]:
    """A root with a little tree and, next to it, an outside directory holding a secret."""
    root = tmp_path / "root"
    (root / "src" / "pkg").mkdir(parents=True)
    (root / "src" / "pkg" / "mod.py").write_text("print('hi')\n", encoding="utf-8")
    (root / "README.md").write_text("# readme\n", encoding="utf-8")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "SECRET-OUTSIDE").write_text(MARKER, encoding="utf-8")
    return root, outside


def test_a_relative_path_resolves_under_the_first_root(layout: tuple[Path, Path]) -> None:
    root, _ = layout
    guarded = PathGuard([root]).resolve("src/pkg/mod.py")
    assert guarded == GuardedPath(
        root.resolve(), root.resolve() / "src/pkg/mod.py", "src/pkg/mod.py"
    )


def test_dots_and_doubled_slashes_are_normalised(layout: tuple[Path, Path]) -> None:
    root, _ = layout
    guard = PathGuard([root])
    assert guard.resolve("./src//pkg/./mod.py").relative == "src/pkg/mod.py"
    assert guard.resolve(".").relative == "."
    assert guard.resolve("src/pkg/../../README.md").relative == "README.md"


def test_an_absolute_path_inside_any_root_is_allowed(
    layout: tuple[Path, Path], tmp_path: Path
) -> None:
    root, _ = layout
    second = tmp_path / "second"
    second.mkdir()
    (second / "notes.txt").write_text("n", encoding="utf-8")
    guard = PathGuard([root, second])
    guarded = guard.resolve(str(second / "notes.txt"))
    assert guarded.root == second.resolve()
    assert guarded.relative == "notes.txt"
    assert guard.display(guarded) == str(second.resolve() / "notes.txt")
    assert guard.display(guard.resolve(str(root / "README.md"))) == "README.md"


@pytest.mark.parametrize("path", ["", "   "])
def test_an_empty_path_is_refused(layout: tuple[Path, Path], path: str) -> None:
    with pytest.raises(InvalidInput, match="empty"):
        PathGuard([layout[0]]).resolve(path)


def test_a_nul_byte_is_refused(layout: tuple[Path, Path]) -> None:
    with pytest.raises(InvalidInput, match="NUL"):
        PathGuard([layout[0]]).resolve("README.md\0.txt")


def test_a_path_longer_than_the_limit_is_refused(layout: tuple[Path, Path]) -> None:
    with pytest.raises(InvalidInput, match="longer than"):
        PathGuard([layout[0]]).resolve("a/" * 3000)


@pytest.mark.parametrize(
    "path", ["..", "../outside/SECRET-OUTSIDE", "src/../../outside", "src/../.."]
)
def test_dotdot_that_climbs_out_of_the_root_is_refused(
    layout: tuple[Path, Path], path: str
) -> None:
    with pytest.raises(InvalidInput, match=r"'\.\.'") as caught:
        PathGuard([layout[0]]).resolve(path)
    assert caught.value.fields["path"] == path


def test_dotdot_back_into_the_same_root_by_name_is_still_refused(layout: tuple[Path, Path]) -> None:
    with pytest.raises(InvalidInput):
        PathGuard([layout[0]]).resolve("../root/README.md")


def test_an_absolute_path_outside_every_root_is_refused(layout: tuple[Path, Path]) -> None:
    root, outside = layout
    guard = PathGuard([root])
    for path in ["/etc/passwd", str(outside / "SECRET-OUTSIDE"), "/", str(root) + "-sibling"]:
        with pytest.raises(InvalidInput, match="outside the allowed roots"):
            guard.resolve(path)


def test_a_symlink_to_etc_passwd_is_refused(layout: tuple[Path, Path]) -> None:
    root, _ = layout
    (root / "passwd").symlink_to("/etc/passwd")
    with pytest.raises(InvalidInput, match="symlink"):
        PathGuard([root]).resolve("passwd")


def test_a_symlinked_directory_deep_in_the_path_is_refused(layout: tuple[Path, Path]) -> None:
    root, outside = layout
    (root / "src" / "pkg" / "escape").symlink_to(outside)
    guard = PathGuard([root])
    with pytest.raises(InvalidInput, match="symlink"):
        guard.resolve("src/pkg/escape/SECRET-OUTSIDE")
    # refused whether or not the target exists, so errors cannot probe outside
    with pytest.raises(InvalidInput, match="symlink"):
        guard.resolve("src/pkg/escape/no-such-file")


def test_a_relative_symlink_climbing_out_is_refused(layout: tuple[Path, Path]) -> None:
    root, _ = layout
    (root / "src" / "up").symlink_to("../../outside/SECRET-OUTSIDE")
    with pytest.raises(InvalidInput, match="symlink"):
        PathGuard([root]).resolve("src/up")


def test_a_symlink_that_leaves_and_comes_back_is_refused(layout: tuple[Path, Path]) -> None:
    root, outside = layout
    (outside / "back").symlink_to(root / "README.md")
    (root / "detour").symlink_to(outside / "back")
    with pytest.raises(InvalidInput, match="symlink"):
        PathGuard([root]).resolve("detour")


def test_a_symlink_that_stays_inside_is_followed_to_its_real_path(
    layout: tuple[Path, Path],
) -> None:
    root, _ = layout
    (root / "alias").symlink_to("src/pkg")
    (root / "chain1").symlink_to("chain2")
    (root / "chain2").symlink_to(root / "alias" / "mod.py")
    guard = PathGuard([root])
    assert guard.resolve("alias/mod.py").relative == "src/pkg/mod.py"
    assert guard.resolve("chain1").relative == "src/pkg/mod.py"


def test_dotdot_after_a_symlink_goes_up_from_the_real_target(layout: tuple[Path, Path]) -> None:
    root, _ = layout
    (root / "alias").symlink_to("src/pkg")
    (root / "src" / "x.txt").write_text("x", encoding="utf-8")
    assert PathGuard([root]).resolve("alias/../x.txt").relative == "src/x.txt"


def test_a_symlink_loop_is_refused_not_followed_forever(layout: tuple[Path, Path]) -> None:
    root, _ = layout
    (root / "a").symlink_to("b")
    (root / "b").symlink_to("a")
    (root / "self").symlink_to("self")
    guard = PathGuard([root])
    for path in ["a", "self/x", "b/c/d"]:
        with pytest.raises(InvalidInput, match="too many levels"):
            guard.resolve(path)


def test_a_root_given_through_a_symlink_is_resolved_and_its_alias_accepted(
    layout: tuple[Path, Path], tmp_path: Path
) -> None:
    root, _ = layout
    alias = tmp_path / "alias-root"
    alias.symlink_to(root)
    guard = PathGuard([alias])
    assert guard.roots == (root.resolve(),)
    assert guard.resolve(str(alias / "README.md")).path == root.resolve() / "README.md"
    (root / "abs").symlink_to(alias / "src")
    assert guard.resolve("abs/pkg/mod.py").relative == "src/pkg/mod.py"


def test_a_symlinked_root_component_inside_the_root_pointing_out_is_refused(
    layout: tuple[Path, Path],
) -> None:
    root, outside = layout
    (root / "vendor").symlink_to(outside)
    with pytest.raises(InvalidInput, match="symlink"):
        PathGuard([root]).resolve(str(root / "vendor" / "SECRET-OUTSIDE"))


def test_a_missing_file_is_not_found_unless_existence_is_optional(
    layout: tuple[Path, Path],
) -> None:
    root, _ = layout
    guard = PathGuard([root])
    with pytest.raises(NotFound):
        guard.resolve("src/nope.py")
    assert guard.resolve("src/new/file.py", must_exist=False).relative == "src/new/file.py"
    with pytest.raises(NotFound):
        guard.resolve("README.md/below")
    with pytest.raises(NotFound):
        guard.resolve("missing/../README.md", must_exist=False)


def test_a_dangling_symlink_inside_is_not_found(layout: tuple[Path, Path]) -> None:
    root, _ = layout
    (root / "dangling").symlink_to("nowhere")
    guard = PathGuard([root])
    with pytest.raises(NotFound):
        guard.resolve("dangling")
    assert guard.resolve("dangling", must_exist=False).relative == "nowhere"


def test_fifos_sockets_and_devices_are_refused(layout: tuple[Path, Path]) -> None:
    root, _ = layout
    os.mkfifo(root / "pipe")
    with pytest.raises(InvalidInput, match="FIFO"):
        PathGuard([root]).resolve("pipe")
    with pytest.raises(InvalidInput, match="device"):
        PathGuard([Path("/dev")]).resolve("null")
    short = Path(tempfile.mkdtemp(dir="/tmp"))  # AF_UNIX paths must be short
    try:
        with socket.socket(socket.AF_UNIX) as server:
            server.bind(str(short / "s"))
            with pytest.raises(InvalidInput, match="socket"):
                PathGuard([short]).resolve("s")
    finally:
        shutil.rmtree(short)


def test_a_path_with_lone_surrogates_is_refused_not_crashing(layout: tuple[Path, Path]) -> None:
    for path in ["bad\ud800name", "\udcff.txt"]:
        with pytest.raises(InvalidInput, match="not valid Unicode"):
            PathGuard([layout[0]]).resolve(path)


def test_a_symlink_to_an_undecodable_name_is_refused(layout: tuple[Path, Path]) -> None:
    root, _ = layout
    (root / os.fsdecode(b"\xff.txt")).write_text("x", encoding="utf-8")
    (root / "link").symlink_to(os.fsdecode(b"\xff.txt"))
    with pytest.raises(InvalidInput, match="not UTF-8"):
        PathGuard([root]).resolve("link")


def test_a_guard_needs_existing_directory_roots(tmp_path: Path) -> None:
    with pytest.raises(InvalidInput):
        PathGuard([])
    with pytest.raises(InvalidInput):
        PathGuard([tmp_path / "absent"])
    (tmp_path / "file").write_text("", encoding="utf-8")
    with pytest.raises(InvalidInput):
        PathGuard([tmp_path / "file"])


def test_open_file_reads_a_regular_file(layout: tuple[Path, Path]) -> None:
    guard = PathGuard([layout[0]])
    with guard.open_file(guard.resolve("src/pkg/mod.py")) as handle:
        assert handle.read() == b"print('hi')\n"


def test_open_file_refuses_a_file_swapped_for_a_symlink_after_resolving(
    layout: tuple[Path, Path],
) -> None:
    root, outside = layout
    guard = PathGuard([root])
    guarded = guard.resolve("README.md")
    (root / "README.md").unlink()
    (root / "README.md").symlink_to(outside / "SECRET-OUTSIDE")
    with pytest.raises(InvalidInput, match="symlink"):
        guard.open_file(guarded)


def test_open_file_refuses_a_directory_swapped_for_a_symlink_after_resolving(
    layout: tuple[Path, Path],
) -> None:
    root, outside = layout
    guard = PathGuard([root])
    guarded = guard.resolve("src/pkg/mod.py")
    shutil.rmtree(root / "src")
    (root / "src").symlink_to(outside)
    (outside / "pkg").mkdir()
    (outside / "pkg" / "mod.py").write_text(MARKER, encoding="utf-8")
    with pytest.raises(InvalidInput, match="symlink"):
        guard.open_file(guarded)


def test_open_file_refuses_a_fifo_swapped_in_without_hanging(layout: tuple[Path, Path]) -> None:
    root, _ = layout
    guard = PathGuard([root])
    guarded = guard.resolve("README.md")
    (root / "README.md").unlink()
    os.mkfifo(root / "README.md")
    with pytest.raises(InvalidInput, match="FIFO"):
        guard.open_file(guarded)


def test_open_file_refuses_directories_and_forged_paths(layout: tuple[Path, Path]) -> None:
    root, outside = layout
    guard = PathGuard([root])
    with pytest.raises(InvalidInput, match="directory"):
        guard.open_file(guard.resolve("src"))
    forged = GuardedPath(root.resolve(), outside / "SECRET-OUTSIDE", "../outside/SECRET-OUTSIDE")
    with pytest.raises(InvalidInput):
        guard.open_file(forged)
    with pytest.raises(InvalidInput):
        guard.open_file(GuardedPath(outside, outside / "SECRET-OUTSIDE", "SECRET-OUTSIDE"))
    (root / "README.md").unlink()
    with pytest.raises(NotFound):
        guard.open_file(GuardedPath(root.resolve(), root.resolve() / "README.md", "README.md"))


# ---- properties ---------------------------------------------------------------------------

_PARTS = st.one_of(
    st.sampled_from(["..", ".", "", "src", "pkg", "mod.py", "README.md", "link", "loop", "out"]),
    st.sampled_from(["SECRET-OUTSIDE", "outside", "root", "é", "日本", "\0", "a" * 300, "\udcff"]),
    st.text(min_size=1, max_size=8),
)


@st.composite
def _paths(draw: st.DrawFn) -> str:
    path = "/".join(draw(st.lists(_PARTS, max_size=8)))
    return draw(st.sampled_from(["", "/", "//", "./", "../"])) + path


def _build_farm(base: Path, links: list[tuple[str, str]]) -> tuple[Path, Path]:
    """A root with a small tree and symlinks to drawn targets: inside, outside, chains, loops."""
    root = base / "root"
    (root / "src" / "pkg").mkdir(parents=True)
    (root / "src" / "pkg" / "mod.py").write_text("inside\n", encoding="utf-8")
    (root / "日本").mkdir()
    (root / "日本" / "é.txt").write_text("inside\n", encoding="utf-8")
    outside = base / "outside"
    outside.mkdir()
    (outside / "SECRET-OUTSIDE").write_text(MARKER, encoding="utf-8")
    (outside / "back").symlink_to(root)
    fixed = [
        ("in", "src"),
        ("chain", "in/pkg"),
        ("abs-in", "{root}/src/pkg/mod.py"),
        ("loop-a", "loop-b"),
        ("loop-b", "loop-a"),
        ("escape", "{out}"),
        ("detour", "{out}/back/src"),
    ]
    for where, target in fixed + links:
        link = root / where
        if link.exists() or link.is_symlink() or not link.parent.is_dir():
            continue
        link.symlink_to(target.replace("{root}", str(root)).replace("{out}", str(outside)))
    return root, outside


_KNOWN_PATHS = st.sampled_from(
    [
        "in/pkg/mod.py",
        "chain/mod.py",
        "chain/../../README.md",
        "abs-in",
        "loop-a",
        "loop-b/x",
        "escape/SECRET-OUTSIDE",
        "detour/pkg/mod.py",
        "in/../escape/SECRET-OUTSIDE",
        "src/pkg/mod.py",
        "link/SECRET-OUTSIDE",
        "out/SECRET-OUTSIDE",
        "link/pkg/mod.py",
        "src/link/pkg/mod.py",
        "src/link/SECRET-OUTSIDE",
        "日本/link/back/src/pkg/mod.py",
        "loop/x",
        "out",
        "link",
        "日本/é.txt",
    ]
)
_LINK_SITES = st.sampled_from(["link", "loop", "out", "src/link", "src/pkg/out", "日本/link"])
_LINK_TARGETS = st.sampled_from(
    [
        "{out}",
        "{out}/SECRET-OUTSIDE",
        "{out}/back",
        "../outside",
        "../../outside/SECRET-OUTSIDE",
        "..",
        "{root}",
        "{root}/src",
        "src/pkg/mod.py",
        "pkg",
        "loop",
        "link",
        "out",
        "/etc/passwd",
        "/",
        "missing",
    ]
)


@settings(
    max_examples=60,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    links=st.lists(st.tuples(_LINK_SITES, _LINK_TARGETS), max_size=6),
    paths=st.lists(st.one_of(_paths(), _KNOWN_PATHS), min_size=1, max_size=10),
    must_exist=st.booleans(),
)
def test_no_generated_path_through_a_symlink_farm_resolves_or_opens_outside_the_root(
    tmp_path: Path, links: list[tuple[str, str]], paths: list[str], must_exist: bool
) -> None:
    root, _ = _build_farm(Path(tempfile.mkdtemp(dir=tmp_path)), links)
    guard = PathGuard([root])
    real_root = root.resolve()
    for path in [*paths, *(f"{root}/{p}" for p in paths)]:
        try:
            guarded = guard.resolve(path, must_exist=must_exist)
        except (InvalidInput, NotFound):
            continue
        assert guarded.path.is_relative_to(real_root)
        assert real_root / guarded.relative == guarded.path or guarded.relative == "."
        if guarded.path.exists():
            assert os.path.realpath(guarded.path) == str(guarded.path)
        try:
            with guard.open_file(guarded) as handle:
                assert MARKER.encode() not in handle.read()
        except (InvalidInput, NotFound):
            pass
