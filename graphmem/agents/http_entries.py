"""`graphmem setup CLIENT --http`: each client's own server entry for graphmem's HTTP server,
with the store's token in the `Authorization` header, in the shape that client parses.

A file in your home folder (user scope) gets the token itself, and is made private (0600). A file
in the project (project scope) is usually committed, so it never gets the token: it names it in
the client's own syntax (an environment variable, or VS Code's input prompt), and setup says how
to provide it. Claude Desktop's config file takes only stdio servers, so it cannot carry the
header at all. Every shape comes from the client's docs (docs/agents.md names the pages).
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable, MutableMapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from graphmem.errors import InvalidInput

TOKEN_VARIABLE = "GRAPHMEM_HTTP_TOKEN"  # the name the server reads the token from, too
VSCODE_INPUT = "graphmem-token"
STDIO_KEYS = ("command", "args", "env", "cwd", "envFile")
HTTP_KEYS = (
    "url",
    "httpUrl",
    "headers",
    "http_headers",
    "env_http_headers",
    "bearer_token_env_var",
)


@dataclass(frozen=True)
class HttpStyle:
    """How one client writes a streamable HTTP server: the key of the URL, whether the entry
    says `"type": "http"`, and how a shared file names the token instead of holding it."""

    reference: str  # the header value's token part in a project file
    url_key: str = "url"
    typed: bool = False


STYLES: dict[str, HttpStyle] = {
    "claude-code": HttpStyle(f"${{{TOKEN_VARIABLE}}}", typed=True),  # .mcp.json expands ${VAR}
    "cursor": HttpStyle(f"${{env:{TOKEN_VARIABLE}}}"),
    "gemini": HttpStyle(f"${{{TOKEN_VARIABLE}}}", url_key="httpUrl"),  # url would mean SSE
    "vscode": HttpStyle(f"${{input:{VSCODE_INPUT}}}", typed=True),
    "codex": HttpStyle(TOKEN_VARIABLE),  # TOML: bearer_token_env_var names the variable
}
NO_HEADER = {
    "claude-desktop": "Claude Desktop's claude_desktop_config.json takes only stdio servers "
    "(a command to start), so it cannot carry the token header; set it up without --http "
    "(graphmem serve over stdio)",
}


def check_http(client: str) -> None:
    if client in NO_HEADER:
        raise InvalidInput(f"{NO_HEADER[client]}", client=client)


def default_url(host: str, port: int) -> str:
    """Where clients reach `graphmem serve --http` with these settings: a wildcard bind is
    reached on loopback."""
    bare = host.strip().removeprefix("[").removesuffix("]")
    if bare in ("0.0.0.0", "::", ""):
        bare = "127.0.0.1"
    netloc = f"[{bare}]" if ":" in bare else bare
    return f"http://{netloc}:{port}/mcp"


def check_url(url: str) -> str:
    if not url.startswith(("http://", "https://")) or len(url.split("://", 1)[1]) < 1:
        raise InvalidInput(f"--url must be an http:// or https:// URL, not {url!r}", url=url)
    return url


def http_entry(client: str, url: str, token: str | None) -> dict[str, Any]:
    """The entry for `client`: the token itself when given, else the client's reference to it."""
    check_http(client)
    style = STYLES[client]
    if client == "codex":
        if token is None:
            return {"url": url, "bearer_token_env_var": TOKEN_VARIABLE}
        return {"url": url, "http_headers": {"Authorization": f"Bearer {token}"}}
    entry: dict[str, Any] = {"type": "http"} if style.typed else {}
    entry[style.url_key] = url
    entry["headers"] = {"Authorization": f"Bearer {token or style.reference}"}
    return entry


def switch_transport(current: MutableMapping[str, Any], entry: dict[str, Any]) -> None:
    """An entry of the other transport loses that transport's keys (a client refuses an entry
    with both a command and a URL); keys of the user's own (timeout, trust, ...) stay."""
    stale = HTTP_KEYS if "command" in entry else STDIO_KEYS
    if any(key in current for key in stale):
        for key in (*stale, "type"):
            if key in current and key not in entry:
                del current[key]


def vscode_inputs_op(wanted: bool) -> Callable[[dict[str, Any]], None]:
    """VS Code's `inputs`: the prompt that asks once for the token a project file names; taken
    out again when not wanted (stdio, user scope, --remove)."""
    ours = {
        "type": "promptString",
        "id": VSCODE_INPUT,
        "description": "graphmem HTTP token (the http_token file in the store's data directory)",
        "password": True,
    }

    def op(doc: dict[str, Any]) -> None:
        inputs = doc.get("inputs")
        if inputs is not None and not isinstance(inputs, list):
            raise InvalidInput("inputs in VS Code's mcp.json is not a list; fix it first")
        kept = [
            i for i in inputs or [] if not (isinstance(i, dict) and i.get("id") == VSCODE_INPUT)
        ]
        if wanted:
            mine = next(
                (i for i in inputs or [] if isinstance(i, dict) and i.get("id") == VSCODE_INPUT),
                None,
            )
            doc["inputs"] = [*kept, {**mine, **ours} if mine else ours]
        elif inputs is not None and len(kept) != len(inputs):
            if kept:
                doc["inputs"] = kept
            else:
                del doc["inputs"]

    return op


def reference_note(client: str, token_file: Path | None) -> str:
    """How to give a client the token its project file only names."""
    where = f"the one in {token_file}" if token_file else f"the value of {TOKEN_VARIABLE}"
    if client == "vscode":
        return f"VS Code asks once for the graphmem token: paste {where}."
    shown = f'"$(cat {token_file})"' if token_file else "<the token>"
    return (
        f"{client} reads the token from {TOKEN_VARIABLE}, so the project file holds none: set "
        f"it where the client starts, e.g. export {TOKEN_VARIABLE}={shown}"
    )


def server_note(url: str) -> str:
    return f"the client connects to {url}: keep `graphmem serve --http` running there."


def git_root(path: Path) -> Path | None:
    """The git work tree `path` would be committed from, or None: not in one, or ignored."""
    for folder in path.resolve().parents:
        if (folder / ".git").exists():
            git = shutil.which("git")
            if git is not None:
                ignored = subprocess.run(
                    [git, "-C", str(folder), "check-ignore", "-q", str(path)],
                    capture_output=True,
                    timeout=10,
                    check=False,
                )
                if ignored.returncode == 0:
                    return None
            return folder
    return None
