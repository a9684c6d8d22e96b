"""Settings layers: defaults < config.toml < .env < GRAPHMEM_* < overrides; never os.environ here."""

from __future__ import annotations

from pathlib import Path

import pytest

from graphmem.errors import InvalidInput
from graphmem.settings import find_data_dir, load_settings


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    (root / ".git").mkdir(parents=True)
    return root


def test_defaults_apply_when_no_layer_sets_anything(tmp_path: Path) -> None:
    settings = load_settings(tmp_path / "store", environ={}, cwd=tmp_path)
    assert settings.home == (tmp_path / "store").resolve()
    assert settings.lock_timeout == 5.0
    assert settings.recall_recipe == "hybrid"
    assert settings.embedding.provider == "local"


def test_built_models_are_kept_in_the_users_cache_folder_unless_set(tmp_path: Path) -> None:
    def cache_dir(environ: dict[str, str]) -> Path | None:
        return load_settings(tmp_path, environ=environ, cwd=tmp_path).embedding.cache_dir

    assert cache_dir({}) == Path.home() / ".cache" / "graphmem"
    assert cache_dir({"XDG_CACHE_HOME": str(tmp_path / "xdg")}) == tmp_path / "xdg" / "graphmem"
    chosen = {"GRAPHMEM_EMBEDDING_CACHE_DIR": str(tmp_path / "models")}
    assert cache_dir(chosen) == tmp_path / "models"


def test_each_layer_overrides_the_one_below(project: Path) -> None:
    data_dir = project / ".graphmem"
    data_dir.mkdir()
    (data_dir / "config.toml").write_text(
        'recall_recipe = "bm25"\nlock_timeout = 1.0\nhttp_port = 1111\nlog_level = "info"\n'
        '[embedding]\nprovider = "hash"\n',
        encoding="utf-8",
    )
    (project / ".env").write_text(
        "# comment\nGRAPHMEM_HTTP_PORT=2222\nexport GRAPHMEM_LOCK_TIMEOUT='2'\n"
        'GRAPHMEM_LOG_LEVEL="error"\n',
        encoding="utf-8",
    )
    environ = {
        "GRAPHMEM_LOCK_TIMEOUT": "3",
        "GRAPHMEM_LOG_LEVEL": "debug",
        "GRAPHMEM_EMBEDDING_DIM": "128",
    }

    settings = load_settings(
        data_dir, environ=environ, cwd=project, overrides={"lock_timeout": 4.0, "http_host": None}
    )

    assert settings.recall_recipe == "bm25"  # config.toml only
    assert settings.http_port == 2222  # .env beats config.toml
    assert settings.log_level == "debug"  # environment beats .env
    assert settings.lock_timeout == 4.0  # override beats environment
    assert settings.http_host == "127.0.0.1"  # a None override changes nothing
    assert settings.embedding.provider == "hash"  # nested table kept ...
    assert settings.embedding.dim == 128  # ... and merged with the environment's key


def test_graphmem_home_in_environ_names_the_data_dir(tmp_path: Path) -> None:
    settings = load_settings(environ={"GRAPHMEM_HOME": str(tmp_path / "elsewhere")}, cwd=tmp_path)
    assert settings.home == (tmp_path / "elsewhere").resolve()


def test_data_dir_is_found_at_the_git_root_from_a_subdirectory(project: Path) -> None:
    nested = project / "src" / "pkg"
    nested.mkdir(parents=True)
    assert find_data_dir(nested) == (project / ".graphmem").resolve()
    assert load_settings(environ={}, cwd=nested).home == (project / ".graphmem").resolve()


def test_data_dir_search_stops_at_git_and_ignores_a_graphmem_above_it(tmp_path: Path) -> None:
    (tmp_path / ".graphmem").mkdir()
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "src").mkdir()
    assert find_data_dir(repo / "src") == (repo / ".graphmem").resolve()


def test_an_existing_graphmem_dir_below_the_git_root_wins(project: Path) -> None:
    service = project / "service"
    (service / ".graphmem").mkdir(parents=True)
    (service / "deep").mkdir()
    assert find_data_dir(service / "deep") == (service / ".graphmem").resolve()


def test_without_git_or_graphmem_the_start_dir_is_used(tmp_path: Path) -> None:
    start = tmp_path / "loose"
    start.mkdir()
    above = start.resolve().parents
    if any((p / ".git").exists() or (p / ".graphmem").is_dir() for p in above):
        pytest.skip("the temp dir lies inside a project")
    assert find_data_dir(start) == start.resolve() / ".graphmem"


@pytest.mark.parametrize(
    "environ",
    [
        {"GRAPHMEM_HTTP_PORT": "not-a-port"},
        {"GRAPHMEM_LOCK_TIMEOUT": "-1"},
        {"GRAPHMEM_LOG_LEVEL": "loud"},
        {"GRAPHMEM_EMBEDDING_PROVIDER": "bogus"},
    ],
)
def test_bad_setting_value_is_invalid_input(tmp_path: Path, environ: dict[str, str]) -> None:
    with pytest.raises(InvalidInput):
        load_settings(tmp_path / "store", environ=environ, cwd=tmp_path)


def test_broken_config_toml_is_invalid_input_naming_the_file(tmp_path: Path) -> None:
    data_dir = tmp_path / "store"
    data_dir.mkdir()
    (data_dir / "config.toml").write_text("lock_timeout = = 3\n", encoding="utf-8")
    with pytest.raises(InvalidInput, match=r"config\.toml"):
        load_settings(data_dir, environ={}, cwd=tmp_path)


def test_unknown_key_in_config_toml_is_invalid_input(tmp_path: Path) -> None:
    data_dir = tmp_path / "store"
    data_dir.mkdir()
    (data_dir / "config.toml").write_text("lock_timeuot = 3\n", encoding="utf-8")
    with pytest.raises(InvalidInput, match="lock_timeuot"):
        load_settings(data_dir, environ={}, cwd=tmp_path)
