"""The operation registry: each operation is declared once, and reaches every transport it should
through that one line: the facade, the MemoryAPI protocol, the owner and its client, read
retries, background work, and the MCP tools in every mode."""

from __future__ import annotations

import ast
import inspect
import threading
import typing
from pathlib import Path
from typing import Any

import pytest

from graphmem import api
from graphmem.api import MemoryAPI
from graphmem.daemon.client import RemoteMemory
from graphmem.daemon.owner import BACKGROUND
from graphmem.daemon.paths import OwnerInfo
from graphmem.daemon.protocol import KEYED_STORES, METHODS, READS, is_read, resendable
from graphmem.mcp.grouped import GROUPS, GroupedTool
from graphmem.mcp.server import every_tool
from graphmem.mcp.tooling import hints, make_tool
from graphmem.registry import BY_NAME, BY_TOOL, OPERATIONS, McpTool, Operation, index
from graphmem.service import GraphMemory

ROOT = Path(__file__).resolve().parents[1]


def test_an_operation_a_tool_or_an_action_declared_twice_is_refused() -> None:
    recall = Operation("recall", "memories", True, (McpTool("recall_memory", "memory", "recall"),))
    again = Operation("recall", "memories", True)
    other_tool = Operation("get", "memories", True, (McpTool("recall_memory", "memory", "get"),))
    same_action = Operation("get", "memories", True, (McpTool("get_memory", "memory", "recall"),))
    with pytest.raises(ValueError, match="operation recall is declared twice"):
        index([recall, again])
    with pytest.raises(ValueError, match="MCP tool recall_memory is declared twice"):
        index([recall, other_tool])
    with pytest.raises(ValueError, match=r"grouped action memory\.recall is declared twice"):
        index([recall, same_action])
    with pytest.raises(ValueError, match="no service 'nowhere'"):
        index([Operation("get", "nowhere", True)])
    assert len(BY_NAME) == len(OPERATIONS)


def test_every_operation_is_a_facade_method_that_calls_its_service(gm: GraphMemory) -> None:
    for op in OPERATIONS:
        service = getattr(gm, op.service)
        implementation = getattr(type(service), op.name)
        facade = vars(GraphMemory)[op.name]
        assert facade.__wrapped__ is implementation, op.name
        assert facade.__doc__ == implementation.__doc__


def _parameters(function: Any, *, hints: dict[str, Any]) -> list[tuple[Any, ...]]:
    """Each parameter after `self`: name, kind (positional-only self aside), default, type."""
    found = []
    for param in list(inspect.signature(function).parameters.values())[1:]:
        found.append((param.name, param.kind, param.default, hints.get(param.name)))
    return [*found, hints.get("return")]


def _hints(function: Any) -> dict[str, Any]:
    """The annotations evaluated; names a module imports only for type checking are the
    protocol's (graphmem.api imports every model an operation takes or returns)."""
    names = {**vars(typing), **vars(api)}
    return typing.get_type_hints(function, localns=names)


def test_every_operation_is_in_the_memory_api_with_its_implementations_signature(
    gm: GraphMemory,
) -> None:
    """The protocol's stubs cannot drift from the methods: a parameter the protocol lacks is
    one no transport can pass (as the old mixins' recall stubs lacked `recipe` and `scope`)."""
    drifted = {}
    for op in OPERATIONS:
        implementation = getattr(type(getattr(gm, op.service)), op.name)
        stub = getattr(MemoryAPI, op.name)
        declared = _parameters(stub, hints=_hints(stub))
        actual = _parameters(implementation, hints=_hints(implementation))
        if declared != actual:
            drifted[op.name] = [(d, a) for d, a in zip(declared, actual, strict=False) if d != a]
    assert not drifted


def test_every_operation_is_forwarded_by_the_client_and_served_by_the_owner(
    tmp_path: Path,
) -> None:
    remote = RemoteMemory(gm_settings(tmp_path), OwnerInfo(pid=0, socket="", started=0.0))
    for op in OPERATIONS:
        assert op.name in METHODS
        assert callable(getattr(remote, op.name)), op.name
        own = vars(RemoteMemory).get(op.name)
        takes_options = own is not None and any(
            p.kind is p.VAR_KEYWORD for p in inspect.signature(own).parameters.values()
        )
        if own is not None and not takes_options:  # an adapted method keeps the API's shape
            stub = getattr(MemoryAPI, op.name)
            assert _shape(own) == _shape(stub), op.name
    with pytest.raises(AttributeError):
        remote.no_such_operation  # noqa: B018
    assert {"ping", *BY_NAME} == METHODS


def gm_settings(tmp_path: Path) -> Any:
    from graphmem.settings import load_settings

    return load_settings(tmp_path / "store", environ={})


def _shape(function: Any) -> list[tuple[str, Any, Any]]:
    params = list(inspect.signature(function).parameters.values())[1:]
    return [(p.name, p.kind, p.default) for p in params]


def test_read_retries_keys_and_background_work_follow_the_registry() -> None:
    assert {"ping", *(op.name for op in OPERATIONS if op.reads)} == READS
    assert {op.name for op in OPERATIONS if op.keyed} == KEYED_STORES
    assert {op.name for op in OPERATIONS if op.background} == BACKGROUND
    assert is_read("cypher", {}) and not is_read("cypher", {"write": True})
    assert resendable("update", {}) and resendable("store_decision", {})
    assert not resendable("delete", {}) and not resendable("cypher", {"write": True})
    assert is_read("memory_graph", {}) and is_read("ping", {})


def test_every_declared_tool_is_served_in_each_mode_with_the_operations_access(
    gm: GraphMemory,
) -> None:
    tools = {tool.name: tool for tool in every_tool(gm, threading.Lock())}
    full = {name: tool for name, tool in tools.items() if not isinstance(tool, GroupedTool)}
    assert set(full) == set(BY_TOOL)
    for name, tool in full.items():
        assert tool.annotations is not None
        assert tool.annotations.read_only_hint is BY_TOOL[name].reads, name
    grouped = {name: tool for name, tool in tools.items() if isinstance(tool, GroupedTool)}
    assert set(grouped) == {group.name for group in GROUPS}
    for op in OPERATIONS:
        for declared in op.tools:
            assert grouped[declared.group].actions[declared.action] is full[declared.name]


def test_a_tool_that_runs_no_declared_operation_is_refused() -> None:
    def forget_everything() -> None:
        """Not an operation of graphmem.registry."""

    with pytest.raises(ValueError, match="forget_everything runs no operation"):
        make_tool(threading.Lock(), forget_everything, "nothing", hints("Forget"))


def test_the_facade_is_imported_by_no_module_it_is_built_from() -> None:
    """The services are built by GraphMemory and handed what they need, so none of them (nor
    anything they import) imports it back: no import cycle through the facade."""
    seen: set[str] = set()
    waiting = [name for name in _graphmem_imports(ROOT / "graphmem" / "service.py")]
    while waiting:
        module = waiting.pop()
        if module in seen:
            continue
        seen.add(module)
        assert module != "graphmem.service", "a module GraphMemory imports imports it back"
        waiting += _graphmem_imports(_path_of(module))
    assert {"graphmem.steward.schedule", "graphmem.agents.context"} <= seen


def _path_of(module: str) -> Path:
    base = ROOT.joinpath(*module.split("."))
    return base / "__init__.py" if base.is_dir() else base.with_suffix(".py")


def _graphmem_imports(path: Path) -> list[str]:
    """The graphmem modules `path` imports, type checking's included."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("graphmem"):
            for alias in node.names:  # `from graphmem import registry` imports a module
                name = f"{node.module}.{alias.name}"
                found.append(name if _path_of(name).exists() else node.module)
        elif isinstance(node, ast.Import):
            found += [a.name for a in node.names if a.name.startswith("graphmem")]
    return [m for m in found if _path_of(m).exists()]
