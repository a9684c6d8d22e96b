"""The log of entity-graph commits: a change is known only when every write of its commit was
described, and a commit that began and never finished is unknown. Writers say they change the
graph; a static check holds every writer of the store to it."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from graphmem.indexes import entity_log
from graphmem.indexes.entity_log import EntityLog

STORAGE = Path(__file__).resolve().parents[2] / "graphmem" / "storage"


def _write(log: EntityLog, *, commits: bool = False) -> None:
    """A statement that writes the entity graph, as `KuzuConnection.execute` reports it."""
    log.changing()
    log.statement(commits=commits)


def _commit(log: EntityLog) -> None:
    log.statement(commits=True)
    log.committed()


def test_a_described_transaction_is_known_and_any_other_write_is_not() -> None:
    log = EntityLog()
    with log.describing() as said:
        _write(log)
        said.append("added m1")
    _commit(log)
    log.statement(commits=True)  # a write elsewhere (a memory's title)
    log.committed()  # not the entity graph: no new generation
    assert (log.generation, log.between(0, 1)) == (1, ["added m1"])

    with log.describing() as said:
        _write(log)
        said.append("added m2")
    _write(log)  # outside the description
    _commit(log)
    with log.describing():
        _write(log)  # nothing said
    _commit(log)
    assert log.generation == 3
    assert log.between(1, 2) is None and log.between(2, 3) is None


def test_a_commit_that_began_and_failed_is_unknown_and_a_rollback_forgets() -> None:
    log = EntityLog()
    _write(log, commits=True)  # an autocommit write that raised: never committed
    assert log.begun == 1 and log.generation == 0
    _write(log)
    log.rolled_back()
    _commit(log)
    assert (log.generation, log.between(0, 1)) == (1, None)


def test_old_changes_are_let_go() -> None:
    log = EntityLog()
    for n in range(entity_log.KEPT + 1):
        with log.describing() as said:
            _write(log)
            said.append(n)
        _commit(log)
    assert log.between(0, log.generation) is None
    assert log.between(1, log.generation) == list(range(1, entity_log.KEPT + 1))


# What writes the entity graph the multi-hop walk reads: mentions, versions, facts and their
# sources, entities and their aliases, or anything deleted with its edges.
ENTITY_GRAPH = re.compile(
    r"MENTIONS|SUPERSEDES|SUBJECT|OBJECT|EXTRACTED_FROM|:Entity\b|:EntityAlias\b|:Fact\b"
    r"|DETACH DELETE"
)
WRITES = re.compile(r"\b(CREATE|MERGE|DELETE|SET|COPY)\b")


def _text(node: ast.expr) -> str:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(_text(v) if isinstance(v, ast.Constant) else "{}" for v in node.values)
    if isinstance(node, ast.BinOp):
        return _text(node.left) + _text(node.right)
    return ""


def _unsaid(path: Path) -> list[int]:
    """Lines of writes to the entity graph that do not say so (`entity_graph=True`)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in ("execute", "execute_each")
            and node.args
        ):
            continue
        text = _text(node.args[0])
        if ENTITY_GRAPH.search(text) and WRITES.search(text):
            said = {k.arg: k.value for k in node.keywords}
            value = said.get("entity_graph")
            if not (isinstance(value, ast.Constant) and value.value is True):
                found.append(node.lineno)
    return found


@pytest.mark.parametrize(
    "path", sorted(STORAGE.rglob("*.py")), ids=lambda p: str(p.relative_to(STORAGE))
)
def test_every_write_of_the_entity_graph_says_so(path: Path) -> None:
    assert _unsaid(path) == [], f"{path.name}: pass entity_graph=True to these writes"


def test_the_check_sees_an_unsaid_write(tmp_path: Path) -> None:
    module = tmp_path / "writer.py"
    module.write_text(
        "def f(store):\n"
        "    store.execute('MATCH (m:Memory {id: $m}) DETACH DELETE m', {'m': 1})\n"
        "    store.execute('MATCH (m:Memory) SET m.title = 1')\n"
        "    store.execute('MATCH (e:Entity) DETACH DELETE e', entity_graph=True)\n"
    )
    assert _unsaid(module) == [2]
