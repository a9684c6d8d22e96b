"""One merge key per thing: case, articles, quotes and plural endings must not split a node."""

from __future__ import annotations

import pytest
from graphmem.extractors import normalise


@pytest.mark.parametrize("name", ["JWT", "jwt", "JWTs", "the JWT", "The JWTs", "`JWT`", "a JWT."])
def test_every_spelling_of_jwt_is_one_key(name: str) -> None:
    assert normalise(name) == "jwt"


@pytest.mark.parametrize(
    ("name", "norm"),
    [
        ("runbooks", "runbook"),
        ("the rollback runbooks", "rollback runbook"),
        ("policies", "policy"),
        ("index locks", "index lock"),
        ("classes", "class"),
        ("patches", "patch"),
        ("databases", "database"),
        ("caches", "cache"),
        ("APIs", "api"),
        ("an   Index    Lock", "index lock"),
    ],
)
def test_simple_english_plurals_of_the_last_word_are_singularised(name: str, norm: str) -> None:
    assert normalise(name) == norm


@pytest.mark.parametrize(
    "name", ["redis", "kubernetes", "status", "postgres", "s3", "access", "focus", "analysis"]
)
def test_words_that_only_look_plural_are_kept(name: str) -> None:
    assert normalise(name) == name


@pytest.mark.parametrize(
    ("name", "norm"),
    [
        ("billing-service", "billing-service"),
        ("user_id", "user_id"),
        ("user_ids", "user_ids"),
        ("app.settings", "app.settings"),
        ("src/app/main.py", "src/app/main.py"),
        ("./config.yaml", "./config.yaml"),
        ("PAY-123", "pay-123"),
        ("#47", "#47"),
        ("v2.1", "v2.1"),
        ("PaymentGateway", "paymentgateway"),
        ("PaymentGateways", "paymentgateways"),
        ("AWS", "aws"),
    ],
)
def test_identifiers_keep_their_punctuation_and_letters(name: str, norm: str) -> None:
    assert normalise(name) == norm


@pytest.mark.parametrize(
    ("name", "norm"),
    [
        ('"billing-service"', "billing-service"),
        ("(Redis)", "redis"),
        ("main()", "main()"),
        ("the billing service.", "billing service"),
        ("Caroline's", "caroline"),
        ("  the   auth   service  ", "auth service"),
    ],
)
def test_surrounding_quotes_brackets_and_punctuation_are_stripped(name: str, norm: str) -> None:
    assert normalise(name) == norm


def test_names_are_not_mangled_into_singulars() -> None:
    assert normalise("James") == "james"
    assert normalise("Paris") == "paris"


def test_nothing_left_is_an_empty_key() -> None:
    assert normalise(' "" ') == ""
    assert normalise("the") == "the"


@pytest.mark.parametrize(
    ("name", "norm"),
    [
        ("the GitHub repo", "github repository"),
        ("GitHub repositories", "github repository"),
        ("a Rails app", "rails application"),
        ("the db", "database"),
        ("k8s", "kubernetes"),
        ("app-config", "app-config"),  # a word inside an identifier is left alone
    ],
)
def test_short_forms_of_engineering_words_share_a_key_with_the_long_form(
    name: str, norm: str
) -> None:
    assert normalise(name) == norm


@pytest.mark.parametrize(
    ("name", "norm"),
    [("Elasticsearch indices", "elasticsearch index"), ("vertices", "vertex")],
)
def test_latin_plurals_are_singularised(name: str, norm: str) -> None:
    assert normalise(name) == norm


def test_quotes_left_inside_a_name_by_markup_are_dropped() -> None:
    assert normalise('Site Manager" permission') == "site manager permission"
    assert normalise("govuk-infrastructure` repo") == "govuk-infrastructure repository"
