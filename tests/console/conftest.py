"""A real console over a real store: the HTTP server on 127.0.0.1 and a free port, a store
holding versions, citations, documents, entities, review items and a steward finding, and text
that would run script if a page ever stopped escaping it."""

from __future__ import annotations

import shutil
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path

import pytest

from graphmem.embeddings.hashing import HashEmbedder
from graphmem.mcp.http import make_http_server
from graphmem.models import utcnow
from graphmem.service import GraphMemory
from graphmem.settings import load_settings
from graphmem.storage.protocols import EntityRow, Mention
from tests.http_serving import running

TOKEN = "console-test-token-0123456789"
# each would set window.pwned, show a dialog or fetch from the beacon if it ever ran or loaded
HOSTILE = [
    "<script>window.pwned = 1</script>",
    '<img src=x onerror="window.pwned = 2">',
    '<a href="javascript:window.pwned = 3">click me</a>',
    '<svg onload="window.pwned = 4"><script>window.pwned = 5</script></svg>',
    "<style>body { display: none }</style>",
    '<div style="background: url({beacon}/css)">styled</div>',
    '<img src="{beacon}/img">',
    "<iframe src=\"javascript:alert('framed')\"></iframe>",
]


@dataclass
class Seeded:
    gm: GraphMemory
    old: str  # the first version of the deploy runbook
    new: str  # the version that superseded it
    hostile: list[str] = field(default_factory=list)
    finding: str = ""
    review_items: list[str] = field(default_factory=list)


class Beacon:
    """A loopback HTTP server counting every request: anything a payload loads lands here."""

    def __init__(self) -> None:
        import http.server

        hits = self.hits = []

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                hits.append(self.path)
                self.send_response(204)
                self.end_headers()

            def log_message(self, *args: object) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture(scope="module")
def beacon() -> Iterator[Beacon]:
    server = Beacon()
    yield server
    server.close()


def seed(gm: GraphMemory, beacon_url: str) -> Seeded:
    root = gm.settings.home.parent
    (root / "docs").mkdir(exist_ok=True)
    (root / "docs" / "deploy.md").write_text(
        "---\ntitle: '<script>window.pwned = 6</script> Deploy runbook'\n---\n"
        "# Deploy runbook\n\nArgoCD syncs main.\n\n"
        "## Rollback\n\nRevert the commit; ArgoCD rolls back.\n",
        encoding="utf-8",
    )
    gm.index_documents()
    old = gm.remember(
        "Deploys go through ArgoCD; sync by hand from the UI", kind="runbook", type="procedural",
        context="infra", tags=["deploy"],
    )  # fmt: skip
    new = gm.remember(
        "Deploys go through ArgoCD; main syncs on its own every three minutes",
        kind="runbook", type="procedural", context="infra", tags=["deploy"],
    )  # fmt: skip
    gm.mark_outdated(old.id, reason="auto-sync replaced syncing by hand", superseded_by=new.id)
    gm.cite_source(new.id, "docs/deploy.md")
    payloads = [text.replace("{beacon}", beacon_url) for text in HOSTILE]
    hostile = [
        gm.remember(
            f"Payload {n}: {text}", context="infra", title=text, tags=[text[:60]],
            metadata={"note": text},
        ).id
        for n, text in enumerate(payloads)
    ]  # fmt: skip
    gm.wait_for_extraction()  # then this extraction by hand is the one that stays
    gm.store.entities.write_extraction(
        [hostile[0]], extractor="test",
        entities=[EntityRow("svg-entity", '<svg onload="window.pwned = 7">', "svg-entity", "svgentity", "concept")],
        aliases={}, mentions=[Mention(hostile[0], "svg-entity", "<svg onload>")], facts=[],
        provenance=[], at=utcnow(),
    )  # fmt: skip
    gm.steward_policy({"auto_apply": []})
    copy = gm.remember("deploys go through ArgoCD -- main syncs on its own every three minutes!",
                       kind="runbook", type="procedural", context="infra")  # fmt: skip
    run = gm.steward_run("duplicates", dry_run=False)
    finding = next(f.id for f in run.findings if copy.id in f.targets)
    plan = gm.close_session(
        "Worked on deploys.\n- We decided to keep the staging cluster on ArgoCD 2.9\n"
        "- TODO: alert when a sync fails twice",
        dry_run=False,
        client="claude-code",
    )
    items = [i.id for i in gm.review_session_changes(session=plan.session_id).items]
    return Seeded(gm, old.id, new.id, hostile, finding, items)


def _open(project: Path) -> GraphMemory:
    settings = load_settings(project / ".graphmem", environ={}, overrides={})
    return GraphMemory(settings, embedder=HashEmbedder())


@pytest.fixture(scope="module")
def seeded_project(tmp_path_factory: pytest.TempPathFactory, beacon: Beacon) -> Seeded:
    """The seeded project, made once per module and closed: each test gets a copy of it, a
    tenth of what seeding costs (extraction loads spaCy)."""
    project = tmp_path_factory.mktemp("seeded") / "project"
    project.mkdir()
    gm = _open(project)
    try:
        seeded = seed(gm, beacon.url)
        gm.wait_for_extraction()  # a copy starts with nothing left to extract
        return seeded
    finally:
        gm.close()


@pytest.fixture
def seeded(tmp_path: Path, seeded_project: Seeded) -> Iterator[Seeded]:
    project = tmp_path / "project"
    shutil.copytree(seeded_project.gm.settings.home.parent, project)
    gm = _open(project)
    try:
        yield replace(seeded_project, gm=gm)
    finally:
        gm.close()


@pytest.fixture
def console(seeded: Seeded) -> Iterator[str]:
    """The console's base URL (http://127.0.0.1:PORT/console), signed in with TOKEN."""
    server = make_http_server(seeded.gm, "127.0.0.1", 0, token=TOKEN, log_level="warning")
    with running(server) as base:
        yield f"{base}/console"
