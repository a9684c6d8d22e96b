"""`graphmem console` as a person runs it: a new process that prints where to go and the token
to sign in with, serves the console through the store's owner, and stops on SIGTERM."""

from __future__ import annotations

import json
import signal
import subprocess
import sys

import httpx


def test_graphmem_console_serves_the_store_until_stopped(cli_env: dict[str, str]) -> None:
    subprocess.run(
        [sys.executable, "-m", "graphmem", "store", "--content", "Deploys go through ArgoCD"],
        env=cli_env, check=True, capture_output=True, timeout=120,
    )  # fmt: skip
    child = subprocess.Popen(
        [sys.executable, "-m", "graphmem", "console", "--no-open", "--json"],
        env=cli_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert child.stdout is not None
        started = json.loads(child.stdout.readline())
        url, token = started["url"], started["token"]
        assert url.startswith("http://127.0.0.1:") and url.endswith("/console/")
        assert token and token not in url
        with httpx.Client(base_url=url.rstrip("/"), timeout=30) as client:
            assert client.post("/login", data={"token": token}).status_code == 303
            page = client.get("/search", params={"q": "how do we deploy"})
            assert "Deploys go through ArgoCD" in page.text
        child.send_signal(signal.SIGTERM)
        assert child.wait(timeout=30) == 0
    finally:
        if child.poll() is None:
            child.kill()
            child.wait(timeout=10)
        subprocess.run(
            [sys.executable, "-m", "graphmem", "daemon", "stop"], env=cli_env, timeout=60,
            capture_output=True,
        )  # fmt: skip
