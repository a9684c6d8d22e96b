"""The log of entity-graph commits: a change is known only when every write of its commit was
described, and a commit that began and never finished is unknown."""

from __future__ import annotations

from graphmem.storage import entity_log
from graphmem.storage.entity_log import EntityLog

MENTION = "MATCH (m:Memory {id: $m}), (e:Entity {id: $e}) CREATE (m)-[:MENTIONS]->(e)"
DELETE = "MATCH (m:Memory {id: $m}) DETACH DELETE m"


def _commit(log: EntityLog) -> None:
    log.statement("COMMIT", commits=True)
    log.committed()


def test_a_described_transaction_is_known_and_any_other_write_is_not() -> None:
    log = EntityLog()
    with log.describing() as said:
        log.statement(MENTION, commits=False)
        said.append("added m1")
    _commit(log)
    log.statement("MATCH (m:Memory) SET m.title = 'x'", commits=True)
    log.committed()  # not the entity graph: no new generation
    assert (log.generation, log.between(0, 1)) == (1, ["added m1"])

    with log.describing() as said:
        log.statement(MENTION, commits=False)
        said.append("added m2")
    log.statement(DELETE, commits=False)  # outside the description
    _commit(log)
    with log.describing():
        log.statement(MENTION, commits=False)  # nothing said
    _commit(log)
    assert log.generation == 3
    assert log.between(1, 2) is None and log.between(2, 3) is None


def test_a_commit_that_began_and_failed_is_unknown_and_a_rollback_forgets() -> None:
    log = EntityLog()
    log.statement(MENTION, commits=True)  # an autocommit write that raised: never committed
    assert log.begun == 1 and log.generation == 0
    log.statement(MENTION, commits=False)
    log.rolled_back()
    _commit(log)
    assert (log.generation, log.between(0, 1)) == (1, None)


def test_old_changes_are_let_go() -> None:
    log = EntityLog()
    for n in range(entity_log.KEPT + 1):
        with log.describing() as said:
            log.statement(MENTION, commits=False)
            said.append(n)
        _commit(log)
    assert log.between(0, log.generation) is None
    assert log.between(1, log.generation) == list(range(1, entity_log.KEPT + 1))
