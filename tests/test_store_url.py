"""The `store_url` setting: a FalkorDB address parsed into a StoreUrl when the settings are built,
anything else refused by name, a server off loopback refused without a user and password; and
the store it names opened in place of the data dir's embedded one."""

from __future__ import annotations

from pathlib import Path

import pytest

from graphmem.errors import InvalidInput, StorageError, StoreLocked
from graphmem.settings import load_settings
from graphmem.storage import engines, open_store_backend
from graphmem.store_url import StoreUrl, parse_store_url
from tests.servers.falkordb_servers import Server, free_port

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


def test_a_store_url_that_answers_nothing_fails_rather_than_the_embedded_store_open(
    tmp_path: Path,
) -> None:
    settings = load_settings(
        tmp_path / "store",
        environ={"GRAPHMEM_STORE_URL": f"falkordb://127.0.0.1:{free_port()}/p"},
        overrides={"lock_timeout": 0.5},
    )
    with pytest.raises(StorageError, match="cannot reach"):
        open_store_backend(settings)
    assert not engines.has_store(tmp_path / "store")


def test_a_store_url_opens_that_graph_and_the_data_dir_is_this_process_s(
    tmp_path: Path, falkordb_server: Server
) -> None:
    environ = {"GRAPHMEM_STORE_URL": falkordb_server.store_url("team")}
    settings = load_settings(tmp_path / "node", environ=environ, overrides={"lock_timeout": 0.2})
    store = open_store_backend(settings)
    try:
        assert store.engine_name == "falkordb" and store.home == tmp_path / "node"
        store.migrate()
        store.meta_set("probe", "seen")
        with pytest.raises(StoreLocked):  # its search cache has one writer
            open_store_backend(settings)
    finally:
        store.close()
    again = open_store_backend(settings)  # free once closed; the graph kept what was written
    try:
        assert again.meta_get("probe") == "seen"
        assert not engines.has_store(tmp_path / "node")
    finally:
        again.close()
