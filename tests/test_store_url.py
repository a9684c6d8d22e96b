"""The `store_url` setting: a FalkorDB address parsed into a StoreUrl when the settings are built,
anything else refused by name, and a server off loopback refused without a user and password."""

from __future__ import annotations

from pathlib import Path

import pytest

from graphmem.errors import InvalidInput, StorageError
from graphmem.settings import load_settings
from graphmem.storage import open_store_backend
from graphmem.store_url import StoreUrl, parse_store_url

SECRET = "s3cr:et/@pw"
QUOTED = "s3cr%3Aet%2F%40pw"


def test_a_loopback_address_needs_no_user() -> None:
    url = parse_store_url("falkordb://127.0.0.1:7000/project")
    assert url == StoreUrl(host="127.0.0.1", port=7000, graph="project")
    assert not url.tls and url.loopback and url.username is None


def test_the_port_defaults_to_redis_and_localhost_and_ipv6_loopback_count() -> None:
    assert parse_store_url("falkordb://localhost/p").port == 6379
    assert parse_store_url("falkordb://[::1]:7000/p").loopback


def test_user_and_password_are_percent_decoded_and_tls_comes_with_falkordbs() -> None:
    url = parse_store_url(f"falkordbs://team%20a:{QUOTED}@db.internal:6380/payments")
    assert (url.username, url.password, url.tls) == ("team a", SECRET, True)
    assert (url.host, url.port, url.graph) == ("db.internal", 6380, "payments")


def test_a_password_alone_is_the_default_users() -> None:
    url = parse_store_url("falkordb://:pw@db.internal:6379/p")
    assert (url.username, url.password) == ("default", "pw")


def test_the_password_is_never_in_its_repr_or_str() -> None:
    url = parse_store_url(f"falkordb://u:{QUOTED}@db.internal:6379/p")
    for shown in (repr(url), str(url)):
        assert SECRET not in shown and QUOTED not in shown
    assert str(url) == "falkordb://u@db.internal:6379/p"


def test_the_graph_and_its_keys_share_one_hash_tag() -> None:
    url = parse_store_url("falkordb://127.0.0.1:7000/payments")
    assert url.graph_key == "{payments}"
    assert url.key("changes") == "{payments}:changes"


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("redis://127.0.0.1:6379/p", "unknown scheme redis://"),
        ("127.0.0.1:6379/p", "unknown scheme"),
        ("falkordb:///p", "no host"),
        ("falkordb://127.0.0.1:6379", "no graph name"),
        ("falkordb://127.0.0.1:6379/", "no graph name"),
        ("falkordb://127.0.0.1:99999/p", "not a URL"),
        ("falkordb://127.0.0.1:0/p", "port 0"),
        ("falkordb://127.0.0.1:6379/a/b", "a graph name is"),
        ("falkordb://127.0.0.1:6379/{p}", "a graph name is"),
        ("falkordb://127.0.0.1:6379/p?tls=1", "no query"),
    ],
)
def test_anything_else_is_invalid_input_saying_what(text: str, why: str) -> None:
    with pytest.raises(InvalidInput, match=why) as raised:
        parse_store_url(text)
    assert raised.value.fields["field"] == "store_url"


@pytest.mark.parametrize(
    "text",
    [
        "falkordb://db.internal:6379/p",
        "falkordb://u@db.internal:6379/p",
        "falkordb://10.0.0.5:6379/p",
    ],
)
def test_a_server_off_loopback_needs_a_user_and_a_password(text: str) -> None:
    with pytest.raises(InvalidInput, match="needs a user and a password"):
        parse_store_url(text)


def test_a_bad_address_is_refused_without_echoing_its_password() -> None:
    with pytest.raises(InvalidInput) as raised:
        parse_store_url(f"falkordb://u:{QUOTED}@db.internal:notaport/p")
    assert SECRET not in str(raised.value) and QUOTED not in str(raised.value)


def test_the_setting_comes_from_the_environment_config_or_an_override(tmp_path: Path) -> None:
    home = tmp_path / "store"
    environ = {"GRAPHMEM_STORE_URL": "falkordb://127.0.0.1:7000/from-env"}
    assert load_settings(home, environ=environ).store_url == parse_store_url(
        "falkordb://127.0.0.1:7000/from-env"
    )
    home.mkdir()
    (home / "config.toml").write_text('store_url = "falkordb://localhost/from-toml"\n')
    assert load_settings(home, environ={}).store_url == StoreUrl("localhost", 6379, "from-toml")
    overridden = load_settings(
        home, environ=environ, overrides={"store_url": "falkordb://localhost/from-flag"}
    )
    assert overridden.store_url is not None and overridden.store_url.graph == "from-flag"
    assert load_settings(tmp_path / "other", environ={}).store_url is None


def test_a_bad_setting_fails_when_the_settings_are_built(tmp_path: Path) -> None:
    with pytest.raises(InvalidInput, match="needs a user and a password"):
        load_settings(tmp_path, environ={"GRAPHMEM_STORE_URL": "falkordb://db.internal/p"})


def test_a_store_url_is_refused_rather_than_the_embedded_store_opened(tmp_path: Path) -> None:
    settings = load_settings(
        tmp_path / "store", environ={"GRAPHMEM_STORE_URL": "falkordb://127.0.0.1:7000/p"}
    )
    with pytest.raises(StorageError, match="cannot serve a whole store yet"):
        open_store_backend(settings)
    assert not (tmp_path / "store").exists()
