"""Who may use the console: one token (the HTTP bearer token) exchanged at a login form for a
server-side session, carried by an HttpOnly, SameSite=Strict cookie scoped to the console. Every
state-changing request also needs the session's CSRF token and, when the browser says where it
came from, this very origin: a page on another site can neither read nor post.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import threading
import time
from dataclasses import dataclass
from urllib.parse import urlsplit

from starlette.requests import Request

COOKIE = "graphmem_console"
SESSION_SECONDS = 12 * 3600
MAX_SESSIONS = 1000  # the oldest is dropped beyond this: logins cannot grow memory without end


@dataclass(frozen=True)
class Session:
    id: str
    csrf: str
    expires: float


def _digest(value: str) -> bytes:
    return hashlib.sha256(value.encode("utf-8")).digest()


class ConsoleAuth:
    """Sessions of one console, kept in memory: a restart logs everyone out."""

    def __init__(self, token: str) -> None:
        if not token.strip():
            raise ValueError("an empty console token would let anyone in")
        self._token = _digest(token)
        self._sessions: dict[str, Session] = {}
        self._lock = threading.Lock()

    def token_matches(self, presented: str) -> bool:
        """Constant time whatever was presented, its length included."""
        return hmac.compare_digest(_digest(presented), self._token) and bool(presented)

    def open_session(self) -> Session:
        session = Session(
            secrets.token_urlsafe(32), secrets.token_urlsafe(32), time.time() + SESSION_SECONDS
        )
        with self._lock:
            if len(self._sessions) >= MAX_SESSIONS:
                oldest = min(self._sessions.values(), key=lambda s: s.expires)
                del self._sessions[oldest.id]
            self._sessions[session.id] = session
        return session

    def session_of(self, request: Request) -> Session | None:
        sid = request.cookies.get(COOKIE)
        if not sid:
            return None
        with self._lock:
            session = self._sessions.get(sid)
            if session is not None and session.expires < time.time():
                del self._sessions[sid]
                return None
        return session

    def close(self, session: Session) -> None:
        with self._lock:
            self._sessions.pop(session.id, None)


def same_origin(request: Request) -> bool:
    """False when the browser says the request comes from another site: Sec-Fetch-Site when it
    sends one (every current browser), else an Origin whose host is not the one asked. A
    request saying neither (curl) passes here; the session and CSRF checks still apply."""
    site = request.headers.get("sec-fetch-site")
    if site is not None:
        return site in ("same-origin", "none")
    origin = request.headers.get("origin")
    return origin is None or urlsplit(origin).netloc == request.headers.get("host", "")


def csrf_matches(session: Session, presented: str | None) -> bool:
    return bool(presented) and hmac.compare_digest(_digest(presented or ""), _digest(session.csrf))
