"""Settings, built once by an entry point and passed down; the core never reads the environment.

Precedence, lowest first: defaults < `<data dir>/config.toml` < `<project>/.env` < `GRAPHMEM_*`
environment variables < explicit overrides (command-line flags, keyword arguments).
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError, field_validator

from graphmem.embeddings.config import EmbeddingConfig
from graphmem.errors import InvalidInput, validation_message
from graphmem.store_url import StoreUrl, parse_store_url

DATA_DIR_NAME = ".graphmem"
CONFIG_FILE = "config.toml"
# what `graphmem index` reads by default: gitignore-style globs relative to the project root
DOCS_INCLUDE = (
    "docs/**", "/*.md", "/*.mdx", "/*.markdown", "/*.rst",
    ".github/workflows/*.yml", ".github/workflows/*.yaml", "/.gitlab-ci.yml",
)  # fmt: skip


class Settings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    home: Path
    engine: Literal["kuzu", "ladybug"] | None = Field(
        default=None,
        description="the embedded engine: unset, the store's own (kuzu for a new store); a "
        "store made by another engine is refused",
    )
    store_url: StoreUrl | None = Field(
        default=None,
        description="a store on a FalkorDB server: falkordb://[user:password@]host:port/GRAPH "
        "(falkordbs:// for TLS); unset, the embedded store in the data dir",
    )
    durability: Literal["primary", "replicated"] = Field(
        default="primary",
        description="with a store_url: a write is acknowledged once the server has it "
        "(primary), or once a replica has it too (replicated, WAIT)",
    )
    embedding: EmbeddingConfig = Field(default_factory=EmbeddingConfig)
    lock_timeout: float = Field(default=5.0, ge=0.0, description="seconds to retry a locked store")
    recall_recipe: str = "hybrid"
    http_host: str = "127.0.0.1"
    http_port: int = Field(default=8765, ge=0, le=65535)
    http_token: SecretStr | None = Field(default=None, description="bearer token for HTTP clients")
    http_allowed_hosts: list[str] = Field(
        default_factory=list,
        description="Host names the HTTP server answers besides its bound address (the name a "
        "reverse proxy forwards); any other Host gets 421",
    )
    http_max_body_bytes: int = Field(default=4 * 1024 * 1024, ge=1024)
    http_request_timeout: float = Field(default=60.0, gt=0)
    daemon_idle_timeout: float = Field(
        default=900.0,
        ge=0,
        description="seconds without requests before the owner exits; 0 = never",
    )
    duplicate_window_seconds: float = Field(
        default=600.0,
        ge=0,
        description="an exact duplicate stored by the same client session within this many "
        "seconds is not stored again; 0 = never skip",
    )
    checkpoint_min_cosine: float = Field(
        default=0.95,
        ge=0.0,
        le=1.01,
        description="a session checkpoint this close to the session's last one is not stored "
        "(above 1: only the same text counts)",
    )
    docs_include: list[str] = Field(
        default_factory=lambda: list(DOCS_INCLUDE),
        description="gitignore-style globs of the files `graphmem index` reads by default",
    )
    docs_exclude: list[str] = Field(
        default_factory=list, description="gitignore-style globs of files never to index"
    )
    docs_max_file_bytes: int = Field(
        default=2_000_000, ge=1, description="larger files are skipped, and reported"
    )
    docs_watch: bool = Field(
        default=True,
        description="the owner re-indexes the indexed documents' folders when files change",
    )
    docs_index_noise: bool = Field(
        default=False,
        description="index tables of contents, references, see-also and changelog-list sections",
    )
    repo_roots: list[str] = Field(
        default_factory=list,
        description="folders the file tools may read besides the project root",
    )
    log_level: Literal["debug", "info", "warning", "error"] = "warning"
    mcp_tools: Literal["full", "grouped", "core"] = Field(
        default="full",
        description="what the MCP server lists: every tool, a few grouped ones with an action "
        "argument, or only store, recall and the project context (all stay callable by name)",
    )
    extractor: Literal["spacy", "rules", "llm"] = Field(
        default="spacy", description="how entities and facts are extracted from memories"
    )
    extractor_model: str | None = Field(default=None, description="the LLM extractor's model")
    extractor_url: str | None = Field(
        default=None, description="OpenAI-compatible or Ollama base URL for the LLM extractor"
    )
    extractor_api_key: SecretStr | None = None
    extractor_timeout: float = Field(default=30.0, gt=0)
    extract_on_write: bool = Field(
        default=True,
        description="extract entities and facts in the background after each write",
    )
    glossary: Path | None = Field(
        default=None,
        description="the project's glossary of entity names (relative to the project root); "
        "unset, graphmem.aliases.yaml there",
    )

    @field_validator("store_url", mode="before")
    @classmethod
    def _store_url(cls, value: object) -> object:
        """Parsed here, so a bad address fails when the settings are built, naming what is
        wrong (InvalidInput, never the password)."""
        if isinstance(value, str):
            return parse_store_url(value) if value.strip() else None
        return value

    @field_validator(
        "docs_include", "docs_exclude", "repo_roots", "http_allowed_hosts", mode="before"
    )
    @classmethod
    def _globs(cls, value: object) -> object:
        """An environment variable gives them comma-separated."""
        if isinstance(value, str):
            return [glob.strip() for glob in value.split(",") if glob.strip()]
        return value


# GRAPHMEM_<NAME> -> dotted settings key
ENV_KEYS: dict[str, str] = {
    "EMBEDDING_PROVIDER": "embedding.provider",
    "EMBEDDING_MODEL": "embedding.model",
    "EMBEDDING_URL": "embedding.url",
    "EMBEDDING_API_KEY": "embedding.api_key",
    "EMBEDDING_DIM": "embedding.dim",
    "EMBEDDING_MODE": "embedding.mode",
    "EMBEDDING_TIMEOUT": "embedding.timeout",
    "EMBEDDING_CACHE_DIR": "embedding.cache_dir",
    "ENGINE": "engine",
    "STORE_URL": "store_url",
    "DURABILITY": "durability",
    "LOCK_TIMEOUT": "lock_timeout",
    "RECALL_RECIPE": "recall_recipe",
    "HTTP_HOST": "http_host",
    "HTTP_PORT": "http_port",
    "HTTP_TOKEN": "http_token",
    "HTTP_ALLOWED_HOSTS": "http_allowed_hosts",
    "HTTP_MAX_BODY_BYTES": "http_max_body_bytes",
    "HTTP_REQUEST_TIMEOUT": "http_request_timeout",
    "DAEMON_IDLE_TIMEOUT": "daemon_idle_timeout",
    "EXTRACTOR": "extractor",
    "EXTRACTOR_MODEL": "extractor_model",
    "EXTRACTOR_URL": "extractor_url",
    "EXTRACTOR_API_KEY": "extractor_api_key",
    "EXTRACTOR_TIMEOUT": "extractor_timeout",
    "EXTRACT_ON_WRITE": "extract_on_write",
    "GLOSSARY": "glossary",
    "DUPLICATE_WINDOW_SECONDS": "duplicate_window_seconds",
    "CHECKPOINT_MIN_COSINE": "checkpoint_min_cosine",
    "DOCS_INCLUDE": "docs_include",
    "DOCS_EXCLUDE": "docs_exclude",
    "DOCS_MAX_FILE_BYTES": "docs_max_file_bytes",
    "DOCS_INDEX_NOISE": "docs_index_noise",
    "DOCS_WATCH": "docs_watch",
    "REPO_ROOTS": "repo_roots",
    "LOG_LEVEL": "log_level",
    "MCP_TOOLS": "mcp_tools",
}


def find_data_dir(start: Path) -> Path:
    """The project's data dir: walk up to an existing `.graphmem` or a `.git`, else use `start`."""
    start = start.resolve()
    for directory in (start, *start.parents):
        if (directory / DATA_DIR_NAME).is_dir():
            return directory / DATA_DIR_NAME
        if (directory / ".git").exists():
            return directory / DATA_DIR_NAME
    return start / DATA_DIR_NAME


def _read_dotenv(path: Path) -> dict[str, str]:
    values: dict[str, str] = {}
    if not path.is_file():
        return values
    for line in path.read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        key, _, value = line.partition("=")
        values[key.strip().removeprefix("export ").strip()] = value.strip().strip("'\"")
    return values


def _set_dotted(target: dict[str, Any], key: str, value: Any) -> None:
    head, _, rest = key.partition(".")
    if rest:
        _set_dotted(target.setdefault(head, {}), rest, value)
    else:
        target[head] = value


def _merge(base: dict[str, Any], extra: Mapping[str, Any]) -> dict[str, Any]:
    for key, value in extra.items():
        if isinstance(value, Mapping) and isinstance(base.get(key), dict):
            _merge(base[key], value)
        else:
            base[key] = value
    return base


def load_settings(
    home: str | Path | None = None,
    *,
    environ: Mapping[str, str] | None = None,
    cwd: Path | None = None,
    overrides: Mapping[str, Any] | None = None,
) -> Settings:
    """Build Settings from every layer; `environ` is passed in so tests never touch os.environ."""
    environ = os.environ if environ is None else environ
    cwd = cwd or Path.cwd()
    if home is None:
        home = environ.get("GRAPHMEM_HOME") or find_data_dir(cwd)
    data_dir = Path(home).expanduser().resolve()

    values: dict[str, Any] = {}
    config_path = data_dir / CONFIG_FILE
    if config_path.is_file():
        try:
            _merge(values, tomllib.loads(config_path.read_text(encoding="utf-8")))
        except tomllib.TOMLDecodeError as exc:
            raise InvalidInput(f"{config_path}: {exc}", path=str(config_path)) from exc
    layered = {**_read_dotenv(data_dir.parent / ".env"), **environ}
    for name, key in ENV_KEYS.items():
        if f"GRAPHMEM_{name}" in layered:
            _set_dotted(values, key, layered[f"GRAPHMEM_{name}"])
    for key, value in (overrides or {}).items():
        if value is not None:
            _set_dotted(values, key, value)
    values["home"] = data_dir
    embedding = values.setdefault("embedding", {})
    if isinstance(embedding, dict) and not embedding.get("cache_dir"):
        cache_root = layered.get("XDG_CACHE_HOME") or Path.home() / ".cache"
        embedding["cache_dir"] = Path(cache_root).expanduser() / "graphmem"
    try:
        return Settings.model_validate(values)
    except ValidationError as exc:
        raise InvalidInput(f"invalid settings: {validation_message(exc)}") from exc
