"""Who gets in: nobody without the token, no page from another site, no change (signing out
included) without the session's CSRF token, and wrong tokens slow their sender down."""

from __future__ import annotations

from urllib.parse import quote

import httpx
import pytest

from tests.console.conftest import TOKEN, Seeded

PAGES = ["/", "/feed?kind=note", "/search?q=deploy", "/memory/{id}", "/multihop?q=deploy", "/inbox", "/documents",
         "/document?path=docs/deploy.md", "/stats"]  # fmt: skip


def signed_in(console: str) -> httpx.Client:
    client = httpx.Client(base_url=console, follow_redirects=False, timeout=30)
    response = client.post("/login", data={"token": TOKEN, "next": "/console/search"})
    assert response.status_code == 303
    return client


def csrf(client: httpx.Client) -> str:
    page = client.get("/inbox").text
    return page.split('name="csrf" value="', 1)[1].split('"', 1)[0]


def test_without_a_session_every_page_redirects_to_login_or_is_401(
    console: str, seeded: Seeded
) -> None:
    with httpx.Client(base_url=console, follow_redirects=False, timeout=30) as client:
        for page in PAGES:
            url = page.format(id=seeded.new)
            browser = client.get(url, headers={"accept": "text/html"})
            assert browser.status_code == 303, url
            assert browser.headers["location"].startswith("/console/login")
            assert browser.headers["location"].endswith(quote(url, safe=""))  # back there after
            assert client.get(url, headers={"accept": "application/json"}).status_code == 401
        posted = client.post(f"/inbox/finding/{seeded.finding}", data={"decision": "accept"})
        assert posted.status_code == 401
        assert client.get("/static/console.css").status_code == 200  # no data in it


def test_a_wrong_token_is_refused_and_the_right_one_sets_a_strict_cookie(console: str) -> None:
    with httpx.Client(base_url=console, follow_redirects=False, timeout=30) as client:
        wrong = client.post("/login", data={"token": "guess", "next": "/console/stats"})
        assert wrong.status_code == 401 and "not right" in wrong.text
        assert "set-cookie" not in wrong.headers

        right = client.post("/login", data={"token": TOKEN, "next": "/console/stats"})
        assert (right.status_code, right.headers["location"]) == (303, "/console/stats")
        cookie = right.headers["set-cookie"].lower()
        assert "httponly" in cookie and "samesite=strict" in cookie and "path=/console" in cookie
        assert TOKEN not in right.headers["location"] and TOKEN not in cookie
        assert client.get("/stats").status_code == 200


def test_login_never_sends_the_browser_to_another_site(console: str) -> None:
    with httpx.Client(base_url=console, follow_redirects=False, timeout=30) as client:
        for target in ("https://evil.example/", "//evil.example/x", "/mcp"):
            response = client.post("/login", data={"token": TOKEN, "next": target})
            assert response.headers["location"] == "/console/feed", target


def test_a_cross_site_form_post_is_refused(console: str, seeded: Seeded) -> None:
    client = signed_in(console)
    token = csrf(client)
    for headers in ({"origin": "http://evil.example"}, {"sec-fetch-site": "cross-site"}):
        response = client.post(
            f"/inbox/finding/{seeded.finding}",
            data={"csrf": token, "decision": "accept"}, headers=headers,
        )  # fmt: skip
        assert response.status_code == 403
        login = client.post("/login", data={"token": TOKEN}, headers=headers)
        assert login.status_code == 403
    assert seeded.gm.steward_inbox().pending == 1  # nothing was applied


def test_a_change_needs_the_sessions_csrf_token(console: str, seeded: Seeded) -> None:
    client = signed_in(console)
    url = f"/inbox/finding/{seeded.finding}"
    assert client.post(url, data={"decision": "accept"}).status_code == 403
    assert client.post(url, data={"decision": "accept", "csrf": "forged"}).status_code == 403
    assert seeded.gm.steward_inbox().pending == 1

    done = client.post(url, data={"decision": "accept", "csrf": csrf(client)})
    assert done.status_code == 303
    assert seeded.gm.steward_inbox().pending == 0


def test_signing_out_ends_the_session(console: str) -> None:
    client = signed_in(console)
    done = client.post("/logout", data={"csrf": csrf(client)})
    assert done.status_code == 303 and "graphmem_console=" in done.headers["set-cookie"]
    assert client.get("/stats", headers={"accept": "text/html"}).status_code == 303


@pytest.mark.parametrize(
    ("headers", "with_csrf"),
    [
        ({"sec-fetch-site": "cross-site"}, True),
        ({"sec-fetch-site": "same-site"}, True),
        ({"origin": "http://evil.example"}, True),
        ({}, False),  # same origin, but no CSRF token
    ],
    ids=["cross-site", "same-site", "foreign-origin", "no-csrf"],
)
def test_a_sign_out_from_elsewhere_or_without_csrf_is_refused_and_changes_nothing(
    console: str, headers: dict[str, str], with_csrf: bool
) -> None:
    client = signed_in(console)
    data = {"csrf": csrf(client)} if with_csrf else {}
    refused = client.post("/logout", data=data, headers=headers)
    assert refused.status_code == 403
    assert "set-cookie" not in refused.headers  # the cookie is left alone
    assert client.get("/stats").status_code == 200  # and so is the session
    forged = client.post("/logout", data={"csrf": "forged"})
    assert forged.status_code == 403 and client.get("/stats").status_code == 200


def test_login_backs_off_after_five_wrong_tokens_without_checking_the_token(
    seeded: Seeded,
) -> None:
    from graphmem.console.auth import LoginThrottle
    from graphmem.mcp.http import make_http_server
    from tests.http_serving import running

    now = [50.0]
    throttle = LoginThrottle(clock=lambda: now[0])
    server = make_http_server(
        seeded.gm, "127.0.0.1", 0, token=TOKEN, log_level="warning", login_throttle=throttle
    )
    with running(server) as base, httpx.Client(base_url=f"{base}/console") as client:
        for attempt in range(5):
            wrong = client.post("/login", data={"token": f"guess-{attempt}"})
            assert wrong.status_code == 401, attempt
        waits = []
        for step in range(10):  # 1 s, 2 s, 4 s, ... up to five minutes
            locked = client.post("/login", data={"token": TOKEN})  # right, but not even read
            assert locked.status_code == 429 and "set-cookie" not in locked.headers
            waits.append(int(locked.headers["retry-after"]))
            now[0] += waits[-1]
            assert client.post("/login", data={"token": f"again-{step}"}).status_code == 401
        assert waits == [1, 2, 4, 8, 16, 32, 64, 128, 256, 300]
        now[0] += 299
        assert client.post("/login", data={"token": TOKEN}).status_code == 429
        now[0] += 1
        assert client.post("/login", data={"token": TOKEN}).status_code == 303  # resets
        assert client.post("/login", data={"token": "typo"}).status_code == 401
        assert client.post("/login", data={"token": TOKEN}).status_code == 303


def test_the_failed_login_table_stays_bounded() -> None:
    from graphmem.console.auth import LoginThrottle

    throttle = LoginThrottle(max_addresses=100, clock=lambda: 0.0)
    for n in range(1000):
        for _ in range(5):
            throttle.failed(f"10.0.{n // 256}.{n % 256}")
    assert len(throttle._failures) == 100
    assert throttle.retry_after("10.0.3.231") == 1.0  # the latest is remembered
    assert throttle.retry_after("10.0.0.0") == 0.0  # the oldest was forgotten


def test_every_response_forbids_script_and_framing(console: str, seeded: Seeded) -> None:
    client = signed_in(console)
    for page in [*PAGES, "/login", "/static/console.css", "/memory/no-such-id"]:
        response = client.get(page.format(id=seeded.new))
        csp = response.headers["content-security-policy"]
        assert "script-src 'none'" in csp and "frame-ancestors 'none'" in csp, page
        assert response.headers["x-content-type-options"] == "nosniff"


def test_the_console_shares_the_http_token_and_mcp_still_needs_the_header(
    tmp_path: object,
) -> None:
    from pathlib import Path

    from starlette.testclient import TestClient

    from graphmem.embeddings.hashing import HashEmbedder
    from graphmem.mcp.http import build_http_app
    from graphmem.service import GraphMemory
    from graphmem.settings import load_settings

    settings = load_settings(Path(str(tmp_path)) / ".graphmem", environ={},
                             overrides={"http_token": "shared-secret-token"})  # fmt: skip
    gm = GraphMemory(settings, embedder=HashEmbedder())
    try:
        with TestClient(build_http_app(gm), base_url="http://127.0.0.1") as client:
            assert client.post("/mcp", json={}).status_code == 401
            login = client.post("/console/login", data={"token": "shared-secret-token"},
                                follow_redirects=False)  # fmt: skip
            assert login.status_code == 303
            assert client.get("/console/stats").status_code == 200
    finally:
        gm.close()


@pytest.mark.parametrize("host", ["0.0.0.0", "192.0.2.1"])
def test_a_console_for_a_network_address_needs_the_token_like_one_on_loopback(
    tmp_path: object, host: str
) -> None:
    from pathlib import Path

    from starlette.testclient import TestClient

    from graphmem.embeddings.hashing import HashEmbedder
    from graphmem.mcp.http import build_http_app
    from graphmem.service import GraphMemory
    from graphmem.settings import load_settings

    settings = load_settings(Path(str(tmp_path)) / ".graphmem", environ={}, overrides={})
    gm = GraphMemory(settings, embedder=HashEmbedder())
    try:
        base = f"http://{host}"  # the Host a client of that address sends
        with TestClient(build_http_app(gm, host=host), base_url=base) as client:
            assert client.post("/mcp", json={}).status_code == 401
            page = client.get("/console/stats", headers={"accept": "text/html"},
                              follow_redirects=False)  # fmt: skip
            assert page.status_code == 303
            token = (Path(str(tmp_path)) / ".graphmem" / "http_token").read_text().strip()
            login = client.post("/console/login", data={"token": token}, follow_redirects=False)
            assert login.status_code == 303
    finally:
        gm.close()
