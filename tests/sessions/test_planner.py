"""The planner's relations between a statement and the memories closest to it: a change retires
what it names whatever kind either has, a restatement or a reaffirmation adds nothing, an
addition updates. Neighbours are given with their cosines, so the rules are tested alone."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from graphmem.models import Memory, MemoryKind
from graphmem.sessions.planner import Neighbour, plan_statement
from graphmem.sessions.statements import replaced_terms, statement_kind

NOW = datetime(2026, 12, 1, tzinfo=UTC)


def memory(content: str, kind: MemoryKind = "note", **fields: object) -> Memory:
    return Memory(
        id=f"m-{abs(hash(content)) % 10_000}",
        content=content,
        kind=kind,
        created_at=NOW,
        updated_at=NOW,
        **fields,  # type: ignore[arg-type]
    )


def plan(statement: str, *near: tuple[Memory, float], mode: str = "coding") -> tuple[str, str]:
    action = plan_statement(
        statement,
        statement_kind(statement),
        [Neighbour(m, cosine) for m, cosine in near],
        mode=mode,  # type: ignore[arg-type]
        context=None,
        service=None,
    )
    return action.action, action.target or ""


RUNBOOK = memory("To rotate the TLS certificates, run `certbot renew` on each edge node", "runbook")


def test_a_change_supersedes_the_memory_naming_what_it_replaced_whatever_its_kind() -> None:
    statement = (
        "TLS certificates are now rotated by cert-manager instead of running `certbot renew`"
    )
    assert statement_kind(statement) == "decision"  # and the memory is a runbook
    assert plan(statement, (RUNBOOK, 0.62)) == ("supersede", RUNBOOK.id)


def test_a_change_naming_nothing_a_memory_says_is_new() -> None:
    statement = "Logs are now shipped by Vector instead of Fluentd"
    assert plan(statement, (RUNBOOK, 0.45)) == ("new", "")


def test_the_replaced_terms_are_the_names_and_words_of_the_replaced_clause() -> None:
    found = replaced_terms("Now built by `cargo-dist` instead of running `make release` by hand")
    assert found == ["make release"]  # "by hand" is how, not what
    assert replaced_terms("We replaced marshmallow with pydantic v2.") == ["marshmallow"]
    assert replaced_terms("The worker no longer uses Redis, for good") == ["Redis"]


def test_a_restatement_in_other_words_and_of_another_kind_is_merged() -> None:
    decision = memory(
        "Network calls in the app go through the `ApiClient` class; screens never call fetch",
        "decision",
    )
    statement = "Screens never call `fetch` directly; every call goes through `ApiClient`"
    assert plan(statement, (decision, 0.85)) == ("merge_into", decision.id)
    # the same words with a name the memory does not have say something new
    other = "Screens never call `fetch` directly; every call goes through `HttpGateway`"
    assert plan(other, (decision, 0.85))[0] != "merge_into"


def test_a_statement_that_something_still_holds_is_merged_into_it() -> None:
    decision = memory("tidepool-cli parses its arguments with clap's derive API", "decision")
    statement = "Argument parsing stays on clap's derive API, as already agreed"
    assert plan(statement, (decision, 0.72)) == ("merge_into", decision.id)
    assert plan(statement, (decision, 0.4)) == ("new", "")  # about something else


def test_an_addition_updates_the_memory_it_adds_to() -> None:
    runbook = memory("To reindex a single product, call `POST /admin/reindex/{id}`", "runbook")
    statement = "A single product can also be reindexed with `python -m indexer.one <id>`"
    assert plan(statement, (runbook, 0.69)) == ("update", runbook.id)


@pytest.mark.parametrize(
    "text",
    [
        "Should also add an idempotency key to charge requests",
        "We should fetch the IdP metadata URL instead of pinning the fingerprint.",
        "Need a security review before any production rollout",
        "Still have to hook the saved items into the feed",
        "Write up the comparison for the architecture review",
        "Postmortem doc needs to be written by Friday",
    ],
)
def test_what_is_left_to_do_is_a_todo(text: str) -> None:
    assert statement_kind(text) == "todo"


@pytest.mark.parametrize(
    "text",
    [
        "Write time with zstd went up by only 8% on the hourly job",
        "Access tokens expire after 15 minutes and refresh tokens after 30 days",
        "You should not retry a 409 from the payments API",
    ],
)
def test_a_statement_about_how_things_are_is_not_a_todo(text: str) -> None:
    assert statement_kind(text) != "todo"
