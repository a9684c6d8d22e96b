"""The console: server-rendered pages over the MemoryAPI, mounted at /console of the HTTP app.

Every page is a plain GET rendered by Jinja2 with autoescape on; every change is a POST form
carrying the session's CSRF token. No script is served at all, and the Content-Security-Policy
the HTTP app puts on every response says so: whatever text an agent stored is shown as text,
never run.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from datetime import timedelta
from importlib.resources import files
from typing import TYPE_CHECKING, Any, get_args
from urllib.parse import quote, urlencode

from jinja2 import Environment, PackageLoader, select_autoescape
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from graphmem.console import drawing, entity_edits, views
from graphmem.console.auth import (
    COOKIE,
    SESSION_SECONDS,
    ConsoleAuth,
    LoginThrottle,
    Session,
    csrf_matches,
    same_origin,
)
from graphmem.documents.models import DocumentSummary
from graphmem.errors import Conflict, GraphmemError, InvalidInput, NotFound
from graphmem.models import Lifecycle, MemoryKind, MemoryType
from graphmem.recall.config import RECIPES
from graphmem.recall.warnings import dead_end_label
from graphmem.steward.models import LAYERS

if TYPE_CHECKING:
    from graphmem.api import MemoryAPI

PREFIX = "/console"
DEFERRED_LIMIT = 100
AUDIT_LIMIT = 100
BULK_LIMIT = 200
FEED_PAGE = 30
FEED_FILTERS = ("context", "type", "kind", "agent", "session", "since", "until")
EXPAND_LIMIT = 6
VERIFY_STATUSES = ("verified", "failed", "needs_update")
FILTERS = ("type", "kind", "context", "service", "tags", "lifecycle", "layer", "as_of")
Page = Callable[[Request, Session], Response]


def href(kind: str, /, *values: str, **query: Any) -> str:
    """A console URL, `values` its path's segments after `kind`; ids and paths are quoted
    whole, so no stored text can become a scheme."""
    path = f"{PREFIX}/{kind}" + "".join(f"/{quote(v, safe='')}" for v in values if v)
    args = {k: v for k, v in query.items() if v not in (None, "", [])}
    return path + ("?" + urlencode(args, doseq=True) if args else "")


def _environment() -> Environment:
    env = Environment(
        loader=PackageLoader("graphmem.console", "templates"),
        autoescape=select_autoescape(["html"], default=True),
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.globals["href"] = href
    env.globals["dead_end_label"] = dead_end_label
    env.globals["metadata_rows"] = views.metadata_rows
    env.filters["when"] = views.when
    env.filters["short"] = drawing.short
    return env


class Console:
    """The pages of one store's console, behind one token."""

    def __init__(self, gm: MemoryAPI, token: str, throttle: LoginThrottle | None = None) -> None:
        self.gm = gm
        self.auth = ConsoleAuth(token)
        self.throttle = throttle or LoginThrottle()
        self.env = _environment()
        self.outcomes = entity_edits.Outcomes()

    # -- plumbing ------------------------------------------------------------------------------

    def render(
        self,
        request: Request,
        template: str,
        session: Session | None,
        status: int = 200,
        **values: Any,
    ) -> HTMLResponse:
        html = self.env.get_template(template).render(
            session=session, here=request.url.path, **values
        )
        return HTMLResponse(html, status_code=status)

    def page(self, handler: Page) -> Callable[[Request], Response]:
        """A page for a signed-in browser; anyone else is sent to the login form (401 for a
        request that is not a page load)."""

        def endpoint(request: Request) -> Response:
            session = self.auth.session_of(request)
            if session is None:
                if request.method == "GET" and "text/html" in request.headers.get("accept", ""):
                    asked = request.url.path + (
                        f"?{request.url.query}" if request.url.query else ""
                    )
                    target = href("login", next=asked)
                    return RedirectResponse(target, 303)
                return Response("sign in first", 401)
            if request.method == "POST" and not same_origin(request):
                return Response("cross-site request refused", 403)
            try:
                return handler(request, session)
            except NotFound as exc:
                return self.render(request, "error.html", session, 404, message=str(exc))
            except GraphmemError as exc:
                return self.render(request, "error.html", session, 400, message=str(exc))

        return endpoint

    async def _form(self, request: Request) -> dict[str, str]:
        form = await request.form()
        return {k: v for k, v in form.items() if isinstance(v, str)}

    # -- login ---------------------------------------------------------------------------------

    def login_form(self, request: Request) -> Response:
        return self.render(
            request, "login.html", None, next=_local(request.query_params.get("next"))
        )

    async def login(self, request: Request) -> Response:
        if not same_origin(request):
            return Response("cross-site request refused", 403)
        address = request.client.host if request.client else ""
        wait = self.throttle.retry_after(address)
        if wait > 0:  # refused before the token is even read
            seconds = math.ceil(wait)
            response = self.render(
                request, "login.html", None, 429, next=href("feed"),
                error=f"Too many wrong tokens: try again in {seconds} s.",
            )  # fmt: skip
            response.headers["Retry-After"] = str(seconds)
            return response
        form = await self._form(request)
        target = _local(form.get("next"))
        if not self.auth.token_matches(form.get("token", "")):
            self.throttle.failed(address)
            return self.render(
                request, "login.html", None, 401, next=target, error="That token is not right."
            )
        self.throttle.succeeded(address)
        session = self.auth.open_session()
        signed_in = RedirectResponse(target, 303)
        signed_in.set_cookie(
            COOKIE, session.id, max_age=SESSION_SECONDS, path=PREFIX, httponly=True,
            samesite="strict", secure=request.url.scheme == "https",
        )  # fmt: skip
        return signed_in

    async def logout(self, request: Request) -> Response:
        """Only the session's own page signs it out: a same-origin POST with its CSRF token.
        Anything else gets 403 and leaves the session and its cookie as they were."""
        session = self.auth.session_of(request)
        if session is None:
            return RedirectResponse(href("login"), 303)  # nobody to sign out
        form = await self._form(request)
        if not same_origin(request) or not csrf_matches(session, form.get("csrf")):
            return Response("cross-site or forged sign-out refused", 403)
        self.auth.close(session)
        response = RedirectResponse(href("login"), 303)
        response.delete_cookie(COOKIE, path=PREFIX)
        return response

    # -- pages ---------------------------------------------------------------------------------

    def search(self, request: Request, session: Session) -> Response:
        args = request.query_params
        query = args.get("q", "").strip()
        chosen = {name: args.get(name, "").strip() for name in FILTERS}
        scope = args.get("scope", "memories")
        recipe = args.get("recipe", "") or None
        compare = args.get("compare", "") or None
        columns: list[dict[str, Any]] = []
        if query:
            for name in [recipe, compare] if compare else [recipe]:
                columns.append(self._recall(query, chosen, scope, name))
        # one scale for every column, so a bar is as long for the same number side by side
        scale = 220 / drawing.largest_contribution(
            [h.explain for column in columns for h in column["hits"]]
        )
        for column in columns:
            column["hits"] = [(h, drawing.bars(h.explain, scale)) for h in column["hits"]]
        landing = {} if query else self._landing()
        return self.render(
            request, "search.html", session, query=query, chosen=chosen, scope=scope,
            recipe=recipe or "", compare=compare or "", columns=columns,
            recipes=sorted(RECIPES), choices=_choices(), **landing,
            done=views.curated_message(args.get("done", ""), args.get("item", "")),
        )  # fmt: skip

    def _landing(self) -> dict[str, Any]:
        """What the search page shows before a query: the newest memories and what waits."""
        waiting = self.gm.review_session_changes(limit=1).pending
        waiting += self.gm.steward_inbox(limit=1).pending
        return {"recent": self.gm.list(limit=10).memories, "waiting": waiting}

    def _recall(
        self, query: str, chosen: Mapping[str, str], scope: str, recipe: str | None
    ) -> dict[str, Any]:
        filters: dict[str, Any] = {k: v for k, v in chosen.items() if v and k != "tags"}
        if chosen.get("tags"):
            filters["tags"] = [t.strip() for t in chosen["tags"].split(",") if t.strip()]
        result = self.gm.recall(
            query, limit=10, filters=filters, explain=True, recipe=recipe,
            scope=scope,  # type: ignore[arg-type]
        )  # fmt: skip
        return {
            "recipe": recipe or "default",
            "hits": result.hits,
            "sections": result.sections,
            "warnings": result.warnings,
        }

    def memory(self, request: Request, session: Session) -> Response:
        memory_id = request.path_params["memory_id"]
        memory = self.gm.get(memory_id)
        graph = self.gm.memory_graph(memory_id)
        timeline = self.gm.knowledge_timeline(memory_id=memory_id)
        label = memory.title or memory.content
        args = request.query_params
        return self.render(
            request, "memory.html", session, memory=memory, graph=graph, timeline=timeline,
            done=views.curated_message(args.get("done", ""), args.get("item", "")),
            verify_statuses=VERIFY_STATUSES,
            drawn_neighbourhood=drawing.neighbourhood(
                graph, label, href("memory", memory.id), _memory_link, _entity_link
            ),
            versions=drawing.versions(timeline.entries, memory.id, _memory_link)
            if len(timeline.entries) > 1 else None,
        )  # fmt: skip

    async def curate(self, request: Request) -> Response:
        form = await self._form(request)  # read here: the page itself runs in a worker thread
        endpoint = self.page(lambda request, session: self._curate(request, session, form))
        return await run_in_threadpool(endpoint, request)

    def _curate(self, request: Request, session: Session, form: Mapping[str, str]) -> Response:
        """One change to a memory from its page, through the operation the CLI and MCP call;
        back on the memory's page (the search page after a delete) saying what was done."""
        if not csrf_matches(session, form.get("csrf")):
            return Response("missing or wrong CSRF token", 403)
        memory_id, action = request.path_params["memory_id"], request.path_params["action"]
        if action not in views.CURATED:
            raise NotFound(f"no action {action!r} on a memory")
        memory, item = self.gm.get(memory_id), ""
        if action == "edit":
            changes = views.edited(memory, form)
            if not changes:
                raise InvalidInput("nothing changed: edit the content, the title or the tags")
            self.gm.update(memory_id, **changes)
        elif action == "outdated":
            successor = self._other(form.get("superseded_by", ""), required=False)
            self.gm.mark_outdated(
                memory_id, reason=form.get("reason", ""), superseded_by=successor or None
            )
            item = successor
        elif action == "verify":
            self.gm.verify_entry(
                memory_id, method=form.get("method", ""), status=form.get("status", ""),
                note=form.get("note", "").strip() or None,
            )  # fmt: skip
        elif action == "canonical":
            self.gm.promote_to_canonical(memory_id, owner=form.get("owner", ""))
        elif action == "merge":
            item = self._other(form.get("duplicate", ""), required=True)
            self.gm.merge_duplicates(
                memory_id, [item], reason=form.get("reason", "").strip() or None
            )
        else:  # delete: for good, so only when the box saying so is ticked
            if form.get("confirm") != "yes":
                raise InvalidInput("tick the box to confirm: a deleted memory cannot come back")
            self.gm.delete(memory_id)
            return RedirectResponse(href("search", done="delete", item=memory_id), 303)
        return RedirectResponse(href("memory", memory_id, done=action, item=item), 303)

    def _other(self, given: str, *, required: bool) -> str:
        """The id of the other memory an action names, refused (400) when there is none."""
        other = given.strip()
        if not other:
            if required:
                raise InvalidInput("give the id of the other memory")
            return ""
        try:
            return self.gm.get(other).id
        except NotFound:
            raise InvalidInput(f"no memory with id {other!r}", id=other) from None

    def audit(self, request: Request, session: Session) -> Response:
        """The newest audited changes, by hand and by the steward, each undoable one with its
        Undo button."""
        args = request.query_params
        return self.render(
            request, "audit.html", session, entries=self.gm.audit_log(limit=AUDIT_LIMIT).entries,
            done=views.done_message(args.get("done", ""), args.get("item", "")),
        )  # fmt: skip

    async def undo(self, request: Request) -> Response:
        form = await self._form(request)  # read here: the page itself runs in a worker thread
        endpoint = self.page(lambda request, session: self._undo(request, session, form))
        return await run_in_threadpool(endpoint, request)

    def _undo(self, request: Request, session: Session, form: Mapping[str, str]) -> Response:
        if not csrf_matches(session, form.get("csrf")):
            return Response("missing or wrong CSRF token", 403)
        audit_id = request.path_params["audit_id"]
        report = self.gm.steward_undo(audit_id, actor="console")
        if not report.undone:
            why = "; ".join(str(s["why"]) for s in report.skipped) or "nothing to undo"
            raise Conflict(f"{audit_id} was not undone: {why}", id=audit_id)
        return RedirectResponse(href("audit", done="audit-undo", item=audit_id), 303)

    def entity(self, request: Request, session: Session) -> Response:
        """An entity, its neighbours drawn, and the forms that correct it; says once what the
        session's last correction of it did (`entity_edits`)."""
        entity_id = request.path_params["entity_id"]
        values = self._entity(entity_id, request.query_params)
        outcome = self.outcomes.take(session.id, values["entity"].id)
        return self.render(request, "entity.html", session, outcome=outcome, **values)

    def _entity(self, entity_id: str, args: Any) -> dict[str, Any]:
        """An entity's page: a node's link expands it (the set expanded rides in `expand`,
        once per entity: an id may hold a comma; at most EXPAND_LIMIT), `edge` keeps one
        predicate."""
        entity = self.gm.entity_page(entity_id)
        expanded = list(dict.fromkeys(e for e in args.getlist("expand") if e))
        expanded = [e for e in expanded if e != entity.id]
        if len(expanded) > EXPAND_LIMIT:
            raise InvalidInput(f"expand at most {EXPAND_LIMIT} entities at once")
        edge = args.get("edge", "")
        if edge and not views.is_id(edge):
            raise InvalidInput("edge is a predicate: letters, digits, - and _", edge=edge)
        facts = {f.id: f for f in entity.facts}
        for other in expanded:
            try:
                facts.update((f.id, f) for f in self.gm.entity_page(other).facts)
            except NotFound:
                raise InvalidInput(f"no entity {other!r} to expand", expand=other) from None
        predicates = sorted({f.predicate for f in facts.values()})
        shown = [f for f in facts.values() if not edge or f.predicate == edge]

        def toggle(node: str) -> str:
            now = [e for e in expanded if e != node] if node in expanded else [*expanded, node]
            return href("entity", entity.id, expand=now, edge=edge)

        picture, left_out = drawing.entity_graph(
            (entity.id, entity.name), shown, expanded,
            lambda n: href("entity", entity.id, edge=edge) if n == entity.id else toggle(n),
        )  # fmt: skip
        return dict(
            entity=entity, picture=picture, expanded=expanded, edge=edge, predicates=predicates,
            toggle=toggle, left_out=left_out, expandable=len(expanded) < EXPAND_LIMIT,
        )  # fmt: skip

    async def correct_entity(self, request: Request) -> Response:
        form = await request.form()  # read here: the page itself runs in a worker thread
        picked = [v for v in form.getlist("memory") if isinstance(v, str)]
        fields = {k: v for k, v in form.items() if isinstance(v, str)}
        endpoint = self.page(lambda r, session: self._correct_entity(r, session, fields, picked))
        return await run_in_threadpool(endpoint, request)

    def _correct_entity(
        self, request: Request, session: Session, form: Mapping[str, str], picked: list[str]
    ) -> Response:
        """One correction from the entity's page, then that page (the new entity's after a
        split) saying what was done; a refusal shows on the page, nothing changed."""
        if not csrf_matches(session, form.get("csrf")):
            return Response("missing or wrong CSRF token", 403)
        entity_id, action = request.path_params["entity_id"], request.path_params["action"]
        if action not in entity_edits.ACTIONS:
            raise NotFound(f"no correction {action!r} of an entity")
        try:
            outcome = entity_edits.correct(self.gm, entity_id, action, form, picked)
        except GraphmemError as exc:  # the entity's page, saying why (404 if it is gone)
            values = self._entity(entity_id, request.query_params)
            return self.render(
                request, "entity.html", session, entity_edits.status_of(exc), error=str(exc),
                failed=action, typed=form, picked=picked, **values,
            )  # fmt: skip
        self.outcomes.put(session.id, outcome)
        return RedirectResponse(href("entity", outcome.entity_id), 303)

    def multihop(self, request: Request, session: Session) -> Response:
        query = request.query_params.get("q", "").strip()
        result = self.gm.recall_multihop(query) if query else None
        hits = [
            (h, drawing.path(h.path, h.nodes, _memory_link, _entity_link))
            for h in (result.hits if result else [])
        ]
        return self.render(request, "multihop.html", session, query=query, result=result, hits=hits)

    def inbox(self, request: Request, session: Session) -> Response:
        """What waits for a decision, or (`show=deferred`) the review items put off for later;
        a finding is never deferred: it stays with what waits."""
        args = request.query_params
        show = args.get("show", "pending")
        if show not in ("pending", "deferred"):
            raise InvalidInput("show must be pending or deferred", show=show)
        deferred = self.gm.review_session_changes(status="deferred", limit=DEFERRED_LIMIT)
        return self.render(
            request, "inbox.html", session, show=show, deferred=deferred.items,
            review=deferred if show == "deferred"
            else self.gm.review_session_changes(status="pending", limit=50),
            findings=self.gm.steward_inbox(status="pending", limit=50),
            done=views.done_message(args.get("done", ""), args.get("item", ""))
            or views.bulk_message(args.get("done", ""), args.get("n", ""), args.get("failed", "")),
        )  # fmt: skip

    async def resolve(self, request: Request) -> Response:
        form = await self._form(request)  # read here: the page itself runs in a worker thread
        endpoint = self.page(lambda request, session: self._resolve(request, session, form))
        return await run_in_threadpool(endpoint, request)

    def _resolve(self, request: Request, session: Session, form: Mapping[str, str]) -> Response:
        if not csrf_matches(session, form.get("csrf")):
            return Response("missing or wrong CSRF token", 403)
        kind, item = request.path_params["kind"], request.path_params["item"]
        decision, note = _decision(form), form.get("note") or None
        self._decide(kind, item, decision, note)
        show = "deferred" if form.get("show") == "deferred" else None
        return RedirectResponse(href("inbox", show=show, done=f"{kind}-{decision}", item=item), 303)

    def _decide(self, kind: str, item: str, decision: str, note: str | None) -> None:
        if kind == "review":
            self.gm.resolve_review_item(item, decision, note, actor="console")
        elif kind == "finding":
            if decision != "defer":  # a deferred finding simply stays in the inbox
                action = "apply" if decision == "accept" else "dismiss"
                self.gm.steward_inbox_resolve(item, action, note, actor="console")
        else:
            raise NotFound(f"no inbox of {kind!r}")

    async def resolve_many(self, request: Request) -> Response:
        form = await request.form()  # read here: the page itself runs in a worker thread
        picked = [v for v in form.getlist("pick") if isinstance(v, str)]
        fields = {k: v for k, v in form.items() if isinstance(v, str)}
        endpoint = self.page(lambda r, session: self._resolve_many(session, fields, picked))
        return await run_in_threadpool(endpoint, request)

    def _resolve_many(
        self, session: Session, form: Mapping[str, str], picked: list[str]
    ) -> Response:
        """One decision for every item ticked (`pick` = `review:ID` or `finding:ID`); an item
        the decision fails on (decided already, gone, its action refused) is counted, not
        fatal, and the page names it."""
        if not csrf_matches(session, form.get("csrf")):
            return Response("missing or wrong CSRF token", 403)
        decision, note = _decision(form), form.get("note") or None
        if not picked:
            raise InvalidInput("tick at least one item")
        if len(picked) > BULK_LIMIT:
            raise InvalidInput(f"at most {BULK_LIMIT} items at once", picked=len(picked))
        done, failed = 0, []
        for pick in dict.fromkeys(picked):
            kind, _, item = pick.partition(":")
            if kind not in ("review", "finding") or not views.is_id(item):
                raise InvalidInput("each ticked item is review:ID or finding:ID", pick=pick)
            try:
                self._decide(kind, item, decision, note)
                done += 1
            except GraphmemError:
                failed.append(item)
        show = "deferred" if form.get("show") == "deferred" else None
        return RedirectResponse(
            href("inbox", show=show, done=f"bulk-{decision}", n=done, failed=",".join(failed)),
            303,
        )

    def documents(self, request: Request, session: Session) -> Response:
        documents = self.gm.documents_overview().documents
        tree: dict[str, list[DocumentSummary]] = {}
        for doc in documents:
            folder = doc.path.rsplit("/", 1)[0] if "/" in doc.path else "."
            tree.setdefault(folder, []).append(doc)
        return self.render(request, "documents.html", session, tree=tree, count=len(documents))

    def document(self, request: Request, session: Session) -> Response:
        page = self.gm.document_page(request.query_params.get("path", ""))
        return self.render(request, "document.html", session, doc=page)

    def stats(self, request: Request, session: Session) -> Response:
        stats = self.gm.stats()
        recent = self.gm.list(limit=10).memories
        steward = self.gm.steward_status()
        return self.render(
            request, "stats.html", session, stats=stats, recent=recent, steward=steward
        )

    def feed(self, request: Request, session: Session) -> Response:
        """The landing page: what arrived, newest first, filtered and paged (`feed`)."""
        args = request.query_params
        chosen = {name: args.get(name, "").strip() for name in FEED_FILTERS}
        since, until = views.day(chosen["since"], "since"), views.day(chosen["until"], "until")
        page = self.gm.feed(
            context=chosen["context"] or None, type=chosen["type"] or None,
            kind=chosen["kind"] or None, session=chosen["session"] or None,
            agent=chosen["agent"] or None, since=since,
            until=until + timedelta(days=1) if until else None,  # the whole last day
            limit=FEED_PAGE, cursor=args.get("cursor") or None,
        )  # fmt: skip
        waiting = self.gm.review_session_changes(limit=1).pending
        waiting += self.gm.steward_inbox(limit=1).pending
        return self.render(
            request, "feed.html", session, page=page, chosen=chosen, choices=_choices(),
            waiting=waiting, first=not args.get("cursor"),
            next_href=href("feed", cursor=page.next_cursor, **chosen) if page.next_cursor
            else None,
        )  # fmt: skip

    def home(self, request: Request, session: Session) -> Response:
        return RedirectResponse(href("feed"), 303)


def _memory_link(memory_id: str) -> str:
    return href("memory", memory_id)


def _entity_link(entity_id: str) -> str:
    return href("entity", entity_id)


def _decision(form: Mapping[str, str]) -> str:
    decision = form.get("decision", "")
    if decision not in ("accept", "reject", "defer"):
        raise InvalidInput("decision must be accept, reject or defer", decision=decision)
    return decision


def _local(target: str | None) -> str:
    """Where to go after login: a console path only, never another site."""
    if target and target.startswith(PREFIX + "/") and not target.startswith("//"):
        return target
    return href("feed")


def _choices() -> dict[str, tuple[str, ...]]:
    return {
        "type": get_args(MemoryType),
        "kind": get_args(MemoryKind),
        "lifecycle": get_args(Lifecycle),
        "layer": LAYERS,
        "scope": ("memories", "docs", "all"),
    }


def build_console(gm: MemoryAPI, token: str, throttle: LoginThrottle | None = None) -> Starlette:
    """The console's ASGI app; mount it at PREFIX of the HTTP app, which adds the security
    headers, the Host check and the body limit (`graphmem.mcp.http.build_http_app`)."""
    console = Console(gm, token, throttle)
    page = console.page
    static = StaticFiles(directory=str(files("graphmem.console") / "static"))
    routes = [
        Route("/", page(console.home)),
        Route("/login", console.login_form, methods=["GET"]),
        Route("/login", console.login, methods=["POST"]),
        Route("/logout", console.logout, methods=["POST"]),
        Route("/feed", page(console.feed)),
        Route("/search", page(console.search)),
        Route("/memory/{memory_id}", page(console.memory)),
        Route("/memory/{memory_id}/{action}", console.curate, methods=["POST"]),
        Route("/audit", page(console.audit)),
        Route("/audit/{audit_id}/undo", console.undo, methods=["POST"]),
        Route("/entity/{entity_id}", page(console.entity)),
        Route("/entity/{entity_id}/{action}", console.correct_entity, methods=["POST"]),
        Route("/multihop", page(console.multihop)),
        Route("/inbox", page(console.inbox)),
        Route("/inbox/bulk", console.resolve_many, methods=["POST"]),
        Route("/inbox/{kind}/{item}", console.resolve, methods=["POST"]),
        Route("/documents", page(console.documents)),
        Route("/document", page(console.document)),
        Route("/stats", page(console.stats)),
        Mount("/static", static, name="static"),
    ]
    return Starlette(routes=routes)


def console_mount(gm: MemoryAPI, token: str, throttle: LoginThrottle | None = None) -> Mount:
    return Mount(PREFIX, app=build_console(gm, token, throttle))
