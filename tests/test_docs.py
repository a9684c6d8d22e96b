"""The user docs cover what the code offers: every CLI command and option, every MCP tool and its
arguments, every GRAPHMEM_* setting. Commands, tools and settings are read from the code, so a new
one without documentation fails here."""

from __future__ import annotations

import re
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
import typer.main
from mcp import Client

from graphmem.cli.app import app
from graphmem.embeddings.hashing import HashEmbedder
from graphmem.mcp.server import build_server
from graphmem.service import open_store
from graphmem.settings import ENV_KEYS

DOCS = Path(__file__).resolve().parent.parent / "docs"


def read(name: str) -> str:
    return (DOCS / name).read_text(encoding="utf-8")


def sections(text: str) -> dict[str, str]:
    """`### heading` -> the text up to the next heading of any level."""
    out: dict[str, str] = {}
    for match in re.finditer(r"^### (.+?)\s*$(.*?)(?=^#{1,3} |\Z)", text, re.M | re.S):
        out[match[1].strip()] = match[2]
    return out


def walk(command: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[str, Any]]:
    """Every command and subcommand, as ("db status", command).

    Duck-typed: typer ships its own copy of click, so isinstance checks against `click` fail.
    """
    if path:
        yield " ".join(path), command
    for name, sub in (getattr(command, "commands", None) or {}).items():
        if not sub.hidden:
            yield from walk(sub, (*path, name))


CLI_COMMANDS = dict(walk(typer.main.get_command(app)))


def long_options(command: Any) -> list[str]:
    return [
        opt
        for param in command.params
        if param.param_type_name == "option"
        for opt in param.opts
        if opt.startswith("--") and opt != "--help"
    ]


def test_the_cli_has_the_commands_the_docs_are_checked_against() -> None:
    # guards the walk itself: if it found nothing, every test below would pass vacuously
    assert {"store", "recall", "db", "db status", "db migrate", "serve"} <= set(CLI_COMMANDS)


@pytest.mark.parametrize("name", sorted(CLI_COMMANDS))
def test_every_cli_command_has_a_section_in_cli_md(name: str) -> None:
    assert f"graphmem {name}" in sections(read("cli.md")), (
        f"docs/cli.md lacks '### graphmem {name}'"
    )


@pytest.mark.parametrize("name", sorted(CLI_COMMANDS))
def test_every_option_of_a_cli_command_is_documented_in_its_section(name: str) -> None:
    section = sections(read("cli.md")).get(f"graphmem {name}", "")
    common = {"--home", "--json"}  # described once, for every command
    missing = [opt for opt in long_options(CLI_COMMANDS[name]) if opt not in common]
    missing = [opt for opt in missing if not re.search(rf"{re.escape(opt)}\b", section)]
    assert not missing, f"'### graphmem {name}' in docs/cli.md does not mention {missing}"


def test_the_common_options_and_every_exit_code_are_documented() -> None:
    text = read("cli.md")
    for option in ("--home", "--json"):
        assert option in text
    exit_codes = sections(text)["Exit codes"]
    for code in (0, 1, 2, 3, 4, 5):
        assert re.search(rf"^\| {code} \|", exit_codes, re.M), f"exit code {code} not in the table"


def list_tools() -> dict[str, dict[str, Any]]:
    """Tool name -> input schema, from a server built on a temporary store."""

    async def fetch(path: Path) -> dict[str, dict[str, Any]]:
        with open_store(path, embedder=HashEmbedder()) as gm:
            async with Client(build_server(gm)) as client:
                tools = (await client.list_tools()).tools
        return {tool.name: tool.input_schema for tool in tools}

    with tempfile.TemporaryDirectory() as tmp:
        return anyio.run(fetch, Path(tmp) / "store")


MCP_TOOLS = list_tools()


def test_the_server_has_the_tools_the_docs_are_checked_against() -> None:
    assert {"store_memory", "recall_memory", "cypher_query"} <= set(MCP_TOOLS)


@pytest.mark.parametrize("tool", sorted(MCP_TOOLS))
def test_every_mcp_tool_has_a_section_in_mcp_tools_md(tool: str) -> None:
    assert tool in sections(read("mcp-tools.md")), f"docs/mcp-tools.md lacks '### {tool}'"


@pytest.mark.parametrize("tool", sorted(MCP_TOOLS))
def test_every_argument_of_an_mcp_tool_is_documented_in_its_section(tool: str) -> None:
    section = sections(read("mcp-tools.md")).get(tool, "")
    arguments = MCP_TOOLS[tool].get("properties", {})
    missing = [arg for arg in arguments if f"`{arg}`" not in section]
    assert not missing, f"'### {tool}' in docs/mcp-tools.md does not mention {missing}"


@pytest.mark.parametrize("name", sorted(ENV_KEYS))
def test_every_setting_has_its_variable_and_key_in_configuration_md(name: str) -> None:
    text = read("configuration.md")
    assert re.search(rf"\bGRAPHMEM_{name}\b", text), f"docs/configuration.md lacks GRAPHMEM_{name}"
    assert f"`{ENV_KEYS[name]}`" in text, f"docs/configuration.md lacks the key `{ENV_KEYS[name]}`"


def test_relative_links_between_docs_point_at_existing_files() -> None:
    broken = []
    for page in DOCS.rglob("*.md"):
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", page.read_text(encoding="utf-8")):
            if "://" not in target and not (page.parent / target).exists():
                broken.append(f"{page.relative_to(DOCS)} -> {target}")
    assert not broken, broken
