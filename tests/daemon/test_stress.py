"""A small slice of the stress run: MCP clients and CLI processes on one store at once."""

from __future__ import annotations

from eval.stress import run_stress


def test_concurrent_mcp_clients_and_cli_processes_hit_no_lock_error_and_lose_nothing() -> None:
    report = run_stress(mcp_clients=3, cli_workers=1, ops=15, cli_ops=6, embedding="hash")
    assert report["errors"] == 0, report["error_samples"]
    assert report["lock_errors"] == 0
    assert report["lost_writes"] == 0
    assert report["acknowledged_writes"] > 0
    assert report["memories_in_store"] == report["acknowledged_writes"]
