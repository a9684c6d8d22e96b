"""The house rules of the design: transports stay thin and each heavy dependency has one home."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "graphmem"

# module prefix -> the only package directory allowed to import it
HOMES = {"kuzu": "storage", "mcp": "mcp", "typer": "cli"}


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module.split(".")[0])
            if node.module.startswith("graphmem."):
                found.add(node.module)
    return found


SOURCES = sorted(PACKAGE.rglob("*.py")) + sorted((ROOT / "extractors").rglob("*.py"))


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(ROOT)))
def test_heavy_dependencies_are_imported_only_in_their_home_package(path: Path) -> None:
    relative = path.relative_to(ROOT).parts
    for module, home in HOMES.items():
        if module in _imports(path):
            assert relative[:2] == ("graphmem", home), f"{path.name} imports {module}"


@pytest.mark.parametrize(
    "path",
    sorted((PACKAGE / "cli").glob("*.py")) + sorted((PACKAGE / "mcp").glob("*.py")),
    ids=lambda p: str(p.relative_to(ROOT)),
)
def test_transports_neither_write_cypher_nor_touch_storage(path: Path) -> None:
    imported = _imports(path)
    assert not any(
        m.startswith("graphmem.storage") and m != "graphmem.storage.connection" for m in imported
    )
    assert not any(m.startswith("graphmem.recall.pipeline") for m in imported)
    assert ".execute(" not in path.read_text(encoding="utf-8"), f"{path.name} runs queries"


def test_core_never_reads_the_environment() -> None:
    allowed = {"settings.py", "common.py"}  # entry points build settings
    for path in SOURCES:
        if path.name in allowed:
            continue
        assert "os.environ" not in path.read_text(encoding="utf-8"), f"{path} reads os.environ"


def test_modules_stay_small() -> None:
    big = [p for p in SOURCES if len(p.read_text(encoding="utf-8").splitlines()) > 600]
    assert not big, f"split these modules: {big}"
