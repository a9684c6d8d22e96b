"""Who may use the console: one token (the HTTP bearer token) exchanged at a login form for a
server-side session, carried by an HttpOnly, SameSite=Strict cookie scoped to the console. Every
state-changing request (signing out included) also needs the session's CSRF token and, when the
browser says where it came from, this very origin: a page on another site can neither read nor
post. Wrong tokens from one address slow that address down (`LoginThrottle`).
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
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


class LoginThrottle:
    """Failed sign-ins per client address: after `free` failures an address must wait `base`
    seconds (1 s), then twice as long after each further failure, up to `cap` seconds (5 min);
    a success clears its count. While it waits, its sign-ins are refused (429) without
    the token even being compared, so guessing a token costs time, not only requests.

    At most `max_addresses` are remembered (the one that failed longest ago is forgotten first),
    so many addresses cannot grow memory without end. `clock` is injectable for tests."""

    def __init__(
        self,
        *,
        free: int = 5,
        base: float = 1.0,
        cap: float = 300.0,
        max_addresses: int = 4096,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.free, self.base, self.cap = free, base, cap
        self.max_addresses = max_addresses
        self.clock = clock
        self._failures: OrderedDict[str, tuple[int, float]] = OrderedDict()  # count, until
        self._lock = threading.Lock()

    def retry_after(self, address: str) -> float:
        """Seconds `address` must still wait before its next sign-in; 0 when it may try now."""
        with self._lock:
            _, until = self._failures.get(address, (0, 0.0))
        return max(0.0, until - self.clock())

    def failed(self, address: str) -> None:
        with self._lock:
            count = self._failures.pop(address, (0, 0.0))[0] + 1
            over = count - self.free  # 0 at the last free failure: 1 s, then 2 s, 4 s, ...
            wait = min(self.cap, self.base * 2.0 ** min(over, 40)) if over >= 0 else 0.0
            until = self.clock() + wait if wait else 0.0
            self._failures[address] = (count, until)  # now the most recent
            while len(self._failures) > self.max_addresses:
                self._failures.popitem(last=False)

    def succeeded(self, address: str) -> None:
        with self._lock:
            self._failures.pop(address, None)
