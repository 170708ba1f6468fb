"""The dashboard at /ui: pages for people to see and audit a project's memory, and correct it.

Every read and write is a tool call through `CallPipeline`, the one path MCP calls take
(resolution, guards, the caller's access, forwarding to an owner), made as the principal the
request authenticates as; nothing here opens a store. Pages are server-rendered (Jinja2,
autoescaped), the only script is a small file of the package, and every response forbids
inline scripts and framing.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Awaitable, Callable, Mapping
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import anyio.to_thread
from mcp.server.auth.middleware.bearer_auth import BearerAuthBackend
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from homeport.core.pipeline import CallPipeline
from homeport.core.runtime import Runtime
from homeport.errors import (
    HomeportError,
    InvalidArgumentError,
    InvalidItemError,
    ItemNotFoundError,
    PermissionDeniedError,
    SecretDetectedError,
    WorkspaceError,
)
from homeport.ui import tidy
from homeport.ui.forms import CONTEXTS, correction, integer, item_address, required
from homeport.ui.guard import COOKIE, DashboardGuard, Viewer
from homeport.ui.page import SECURITY_HEADERS, Page
from homeport.ui.render import diff_lines, environment, graph_view, title_of, url

__all__ = ["build_dashboard"]

STATIC = Path(__file__).parent / "static"
PAGE_SIZE = 25
GLOSSARY = "ProjectGlossary"
WRITE_GAP = timedelta(milliseconds=100)  # at most between an item's stamp and its write's record


Handler = Callable[[Page], Awaitable[Response]]
_FOREIGN = (
    "this page is only served to this server's own address: the Host must be one it answers to, and a "
    "browser's Origin must be this very origin (another port of this machine is another site); open the "
    "dashboard at the address `homeport ui` or `homeport serve` printed"
)


class Dashboard:
    def __init__(self, runtime: Runtime, bearer: BearerAuthBackend | None = None) -> None:
        self.runtime = runtime
        self.pipeline = CallPipeline(runtime)
        self.guard = DashboardGuard(runtime.settings, bearer)
        self.env = environment()
        self.visited: deque[str] = deque(maxlen=20)

    def _page(self, request: Request, viewer: Viewer) -> Page:
        return Page(
            request,
            viewer,
            self.pipeline,
            self.guard,
            self.env,
            read_only=self.runtime.settings.read_only,
            # Under auth the token's agent, as for its MCP calls; else the agent the server acts for.
            agent=viewer.agent if self.guard.auth else self.runtime.settings.agent,
        )

    def page(self, handler: Handler, *, write: bool = False) -> Callable[[Request], Awaitable[Response]]:
        async def endpoint(request: Request) -> Response:
            if not self.guard.host_allowed(request) or not self.guard.origin_allowed(request):
                return _plain(403, _FOREIGN)
            viewer = await self.guard.viewer(request)
            if viewer is None:
                return RedirectResponse(url("/login", next=_local_path(request)), status_code=303)
            page = self._page(request, viewer)
            if write:
                form = await request.form()
                token = form.get("csrf")
                browser = self.guard.browser_id(request)
                if not self.guard.form_token_valid(
                    browser, viewer.credential, token if isinstance(token, str) else None
                ):
                    return page.render("error.html", 403, message="the form is stale or from another site; reload it")
                if self.runtime.settings.read_only:
                    return page.render("error.html", 403, message="this dashboard was started with --read-only")
            try:
                return await handler(page)
            except SecretDetectedError as exc:
                # The scan refused the write before anything ran: say so, and lead back to the item.
                sent: Mapping[str, Any] = await request.form() if write else request.query_params
                back = url("/item", ws=sent.get("ws"), type=sent.get("type"), id=sent.get("id"))
                return page.render(
                    "error.html",
                    _status(exc),
                    heading="Nothing was saved: this looks like a secret",
                    message=exc.message,
                    code=exc.code,
                    hint="The dashboard never saves a secret: take it out of the text, or keep only its name, "
                    "and save again.",
                    back=back if sent.get("ws") and sent.get("type") else None,
                )
            except HomeportError as exc:
                return page.render("error.html", _status(exc), message=exc.message, code=exc.code)

        return endpoint

    # -- pages ------------------------------------------------------------------------------

    async def workspaces(self, page: Page) -> Response:
        known = await anyio.to_thread.run_sync(self.runtime.known_workspaces)
        candidates: dict[str, str] = {}
        if self.runtime.settings.workspace:
            candidates[self.runtime.settings.workspace] = "configured"
        for root in self.visited:
            candidates.setdefault(root, "recent")
        for path, why in known.items():
            candidates.setdefault(str(path), why)
        rows = []
        for root, why in candidates.items():
            try:
                overview = await page.tool("memory_overview", root)
            except (WorkspaceError, PermissionDeniedError):
                continue  # not this principal's to see: not listed at all
            rows.append({"root": _where(overview["workspace"]), "why": why, **overview})
        return page.render("workspaces.html", workspaces=_unique(rows))

    async def workspace(self, page: Page) -> Response:
        ws = required(page.request, "ws")
        tag = page.request.query_params.get("tag") or None
        number = max(1, integer(page.request.query_params.get("page"), 1))
        started = time.perf_counter()
        decisions = await page.tool("decision_page", ws, offset=(number - 1) * PAGE_SIZE, limit=PAGE_SIZE, tag=tag)
        root = _where(decisions["workspace"])
        product = await page.tool("get_product_context", root)
        active = await page.tool("get_active_context", root)
        progress = await page.tool("get_progress", root, tree=True)
        patterns = await page.tool("get_system_patterns", root, limit=1000)
        custom = await page.tool("get_custom_data", root)
        conflicts = await page.tool("sync_conflicts", root, limit=20)  # concurrent edits a git sync settled
        self.visited.appendleft(root)
        categories: dict[str, list[dict[str, Any]]] = {}
        for entry in custom["items"]:
            categories.setdefault(entry["category"], []).append(entry)
        glossary = categories.pop(GLOSSARY, [])
        pages = max(1, -(-decisions["total"] // PAGE_SIZE))
        return page.render(
            "workspace.html",
            ws=root,
            workspace=decisions["workspace"],
            product=product,
            active=active,
            decisions=decisions,
            tag=tag,
            page_number=min(number, pages),
            pages=pages,
            progress=progress["progress"],
            patterns=patterns["system_patterns"],
            patterns_result=patterns,
            categories=sorted(categories.items()),
            glossary=glossary,
            took_ms=round((time.perf_counter() - started) * 1000, 1),
            deleted=page.request.query_params.get("deleted"),
            conflicts=conflicts,
        )

    async def item(self, page: Page) -> Response:
        ws, kind, item_id = item_address(page.request)
        try:
            item = await self._item(page, ws, kind, item_id)
        except ItemNotFoundError:
            if kind in CONTEXTS:
                raise
            return await self._deleted_item(page, ws, kind, item_id)  # still 404 once purged
        root = _where(item["workspace"])
        history = await self._history(page, root, kind, item)
        linked = (await page.tool("get_linked_items", root, item_type=kind, item_id=item_id, depth=2))["items"]
        labels: dict[str, str] = {}
        for entry in linked[:40]:
            labels[f"{entry['type']}:{entry['id']}"] = await self._label(page, root, entry["type"], entry["id"])
        for entry in linked:
            entry["label"] = labels.get(f"{entry['type']}:{entry['id']}", f"{entry['type']} {entry['id']}")
        graph = graph_view(root, (kind, item_id), title_of(item), linked, labels) if linked else None
        return page.render(
            "item.html",
            ws=root,
            workspace=item["workspace"],
            item=item,
            kind=kind,
            item_id=item_id,
            title=title_of(item),
            history=history,
            linked=[x for x in linked if x["depth"] == 1],
            graph=graph,
            saved=page.request.query_params.get("saved") == "1",
        )

    async def _deleted_item(self, page: Page, ws: str, kind: str, item_id: int) -> Response:
        """A deleted item keeps its history until it is purged: when and by whom it was deleted, every
        version as a diff, and the version a restore brings back.

        Raises:
            ItemNotFoundError: the item never existed, or its history was purged.
        """
        versions = (await page.tool("get_item_history", ws, item_type=kind, item_id=item_id, limit=1))["versions"]
        if not versions or not versions[0]["deleted"]:  # not deleted: it is gone for another reason (raced)
            raise ItemNotFoundError(f"{kind} {item_id} does not exist; find ids with search or the lists")
        deletion = versions[0]
        history = await self._history(page, ws, kind, {"id": item_id})
        last = deletion["version"] - 1  # the deletion recorded the fields as they were: that version comes back
        return page.render(
            "deleted_item.html",
            ws=ws,
            kind=kind,
            item_id=item_id,
            title=title_of({"type": kind, **deletion["fields"]}),
            fields=deletion["fields"],
            deletion=deletion,
            history=history,
            restore_version=last if last >= 1 else None,
        )

    async def restore(self, page: Page) -> Response:
        """Bring a version back (restore_version): a deleted item returns, as its newest version."""
        form = await page.request.form()
        ws, kind, item_id = item_address(form)
        version = integer(form.get("version"), 0)  # 0: refused by the tool, named
        await page.tool("restore_version", ws, item_type=kind, item_id=item_id, version=version)
        return RedirectResponse(url("/item", ws=ws, type=kind, id=item_id, saved=1), status_code=303)

    async def search(self, page: Page) -> Response:
        ws = required(page.request, "ws")
        query = (page.request.query_params.get("q") or "").strip()
        results: list[dict[str, Any]] = []
        workspace: dict[str, Any] | None = None
        found: dict[str, Any] | None = None
        if query:
            found = await page.tool("search", ws, query=query, limit=50)
            results, workspace = found["results"], found["workspace"]
        else:
            workspace = (await page.tool("memory_overview", ws))["workspace"]
        return page.render(
            "search.html", ws=_where(workspace), workspace=workspace, query=query, results=results, found=found
        )

    async def activity(self, page: Page) -> Response:
        ws = required(page.request, "ws")
        hours = min(87_600, max(1, integer(page.request.query_params.get("hours"), 24 * 7)))
        found = await page.tool("get_recent_activity", ws, hours_ago=hours, limit_per_type=50)
        events: list[dict[str, Any]] = []
        for key, kind in (
            ("decisions", "decision"),
            ("progress", "progress"),
            ("system_patterns", "system_pattern"),
            ("custom_data", "custom_data"),
        ):
            for entry in found[key]:
                created = entry.get("created_at") == entry.get("updated_at")
                events.append(
                    {**entry, "type": kind, "when": entry["updated_at"], "verb": "added" if created else "changed"}
                )
        for change in found["context_changes"]:
            label = f"version {change['version']}"
            events.append(
                {
                    "type": change["item_type"],
                    "id": 1,
                    "when": change["changed_at"],
                    "verb": label,
                    "version": change["version"],
                }
            )
        await self._add_authors(page, _where(found["workspace"]), events, found["since"])
        events.sort(key=lambda e: e["when"] or "", reverse=True)
        return page.render(
            "activity.html", ws=_where(found["workspace"]), workspace=found["workspace"], events=events, hours=hours
        )

    async def edit(self, page: Page) -> Response:
        """A correction: first a page showing what would change, then (confirm=1) the tool call."""
        form = await page.request.form()
        ws, kind, item_id = item_address(form)
        text = {k: v for k, v in form.items() if isinstance(v, str)}
        current = await self._item(page, ws, kind, item_id)
        tool, arguments, before, after = correction(kind, item_id, current, text)
        if text.get("confirm") != "1":
            return page.render(
                "confirm_edit.html",
                ws=_where(current["workspace"]),
                workspace=current["workspace"],
                kind=kind,
                item_id=item_id,
                title=title_of(current),
                diff=diff_lines(before, after),
                unchanged=before == after,
                fields=[(k, v) for k, v in text.items() if k not in ("csrf", "confirm")],
            )
        await page.tool(tool, ws, **arguments)
        return RedirectResponse(url("/item", ws=ws, type=kind, id=item_id, saved=1), status_code=303)

    async def confirm_delete(self, page: Page) -> Response:
        ws, kind, item_id = item_address(page.request)
        if kind in CONTEXTS:
            raise InvalidItemError("the contexts cannot be deleted; edit them instead")
        item = await self._item(page, ws, kind, item_id)
        linked = (await page.tool("get_linked_items", ws, item_type=kind, item_id=item_id))["items"]
        children: list[Any] = []
        if kind == "progress":
            children = (await page.tool("get_progress", ws, parent_id=item_id, limit=1000))["progress"]
        return page.render(
            "delete.html",
            ws=_where(item["workspace"]),
            workspace=item["workspace"],
            item=item,
            kind=kind,
            item_id=item_id,
            title=title_of(item),
            links=len(linked),
            children=len(children),
        )

    async def delete(self, page: Page) -> Response:
        form = await page.request.form()
        ws, kind, item_id = item_address(form)
        if kind == "decision":
            await page.tool("delete_decision", ws, decision_id=item_id)
        elif kind == "progress":
            await page.tool("delete_progress", ws, progress_id=item_id, cascade=form.get("cascade") == "1")
        elif kind == "system_pattern":
            await page.tool("delete_system_pattern", ws, pattern_id=item_id)
        elif kind == "custom_data":
            current = (await page.tool("get_item", ws, item_type=kind, item_id=item_id))["item"]
            await page.tool("delete_custom_data", ws, category=current["category"], key=current["key"])
        else:
            raise InvalidItemError("the contexts cannot be deleted; edit them instead")
        return RedirectResponse(url("/w", ws=ws, deleted=f"{kind} {item_id}"), status_code=303)

    # -- login ------------------------------------------------------------------------------

    async def login(self, request: Request) -> Response:
        if not self.guard.host_allowed(request) or not self.guard.origin_allowed(request):
            return _plain(403, _FOREIGN)
        after = _local_path_value(request.query_params.get("next"))
        if not self.guard.auth:
            return RedirectResponse(after, status_code=303)
        anonymous = self._page(request, Viewer("", "login"))
        jwt = self.runtime.settings.auth_method == "jwt"
        if request.method == "GET":
            return anonymous.render("login.html", jwt=jwt, after=after)
        form = await request.form()
        after = _local_path_value(str(form.get("next") or ""))
        csrf = form.get("csrf")
        browser = self.guard.browser_id(request)
        if not self.guard.form_token_valid(browser, "login", csrf if isinstance(csrf, str) else None):
            # Not this browser's form: another browser's (or a page's that fetched one), or a cookie gone.
            failed = "the form is stale or was not given to this browser; try again"
            return anonymous.render("login.html", 403, jwt=jwt, after=after, failed=failed)
        token = str(form.get("token") or "").strip()
        if (await self.guard.verify(token) if token else None) is None:
            failed = "that token is not valid here (unknown, revoked, expired, or for another server)"
            return anonymous.render("login.html", 401, jwt=jwt, after=after, failed=failed)
        response = RedirectResponse(after, status_code=303)
        response.set_cookie(
            COOKIE, token, httponly=True, samesite="strict", path="/ui", secure=request.url.scheme == "https"
        )
        # A new pre-session id with the session: a form token made before the login is worth nothing after it.
        self.guard.give_browser_id(response, request, self.guard.new_browser_id())
        return response

    async def logout(self, page: Page) -> Response:
        response = RedirectResponse(url("/login"), status_code=303)
        response.delete_cookie(COOKIE, path="/ui", httponly=True, samesite="strict")
        return response

    # -- helpers ----------------------------------------------------------------------------

    async def _item(self, page: Page, ws: str, kind: str, item_id: int) -> dict[str, Any]:
        if kind in CONTEXTS:
            found = await page.tool(f"get_{kind}", ws)
            return {"type": kind, "id": 1, **found}
        found = await page.tool("get_item", ws, item_type=kind, item_id=item_id)
        return {**found["item"], "workspace": found["workspace"]}

    async def _label(self, page: Page, ws: str, kind: str, item_id: int) -> str:
        if kind in CONTEXTS:
            return title_of({"type": kind})
        try:
            return title_of((await page.tool("get_item", ws, item_type=kind, item_id=item_id))["item"])
        except ItemNotFoundError:
            return f"{kind} {item_id} (gone)"

    async def _history(self, page: Page, ws: str, kind: str, item: dict[str, Any]) -> list[dict[str, Any]]:
        """Each kept version, newest first, with who wrote it and its diff against the one before.

        Every item keeps every version (a context its `content`, another item its `fields`); versions
        from before writers were recorded show no author.
        """
        context = kind in CONTEXTS
        ids = {} if context else {"item_id": item["id"]}
        versions = (await page.tool("get_item_history", ws, item_type=kind, limit=100, **ids))["versions"]
        text = "content" if context else "fields"
        out = []
        for i, version in enumerate(versions):
            before = versions[i + 1][text] if i + 1 < len(versions) else None
            if context:
                label = f"version {version['version']}"
            else:
                what = "deleted" if version["deleted"] else "created" if version["version"] == 1 else "changed"
                label = f"{what} (version {version['version']})"
            out.append(
                {
                    "label": label,
                    "when": version["changed_at"],
                    "written_by": version.get("written_by"),
                    "diff": diff_lines(before, version[text]),
                }
            )
        if out:
            out[0]["current"] = True
        return out

    async def _add_authors(self, page: Page, ws: str, events: list[dict[str, Any]], since: str) -> None:
        """Who made each event: the item's recorded write at the event's time (None: not recorded)."""
        by_type: dict[str, set[int]] = {}
        for e in events:
            if e["type"] not in CONTEXTS:
                by_type.setdefault(e["type"], set()).add(e["id"])
        writes: dict[tuple[str, int], list[dict[str, Any]]] = {}
        for kind, ids in by_type.items():
            found = await page.tool("get_item_writes", ws, item_type=kind, item_ids=sorted(ids))
            for key, listed in found["writes"].items():
                writes[(kind, int(key))] = listed
        versions: dict[tuple[str, int], Any] = {}
        for kind in {e["type"] for e in events if e["type"] in CONTEXTS}:
            history = await page.tool("get_item_history", ws, item_type=kind, limit=1000, after=since)
            versions.update({(kind, v["version"]): v.get("written_by") for v in history["versions"]})
        for e in events:
            if e["type"] in CONTEXTS:
                e["written_by"] = versions.get((e["type"], e["version"]))
                continue
            matching = [w for w in writes.get((e["type"], e["id"]), []) if _same_write(w["written_at"], e["when"])]
            e["written_by"] = matching[-1] if matching else None


def build_dashboard(runtime: Runtime, bearer: BearerAuthBackend | None = None) -> Starlette:
    """The dashboard's ASGI app, to mount at /ui; `bearer` is the check `/mcp` makes of a token."""
    d = Dashboard(runtime, bearer)
    app = Starlette(
        routes=[
            Route("/", d.page(d.workspaces)),
            Route("/w", d.page(d.workspace)),
            Route("/item", d.page(d.item)),
            Route("/search", d.page(d.search)),
            Route("/activity", d.page(d.activity)),
            Route("/tidy", d.page(tidy.tidy_page)),
            Route("/tidy/propose", d.page(tidy.propose, write=True), methods=["POST"]),
            Route("/changeset", d.page(tidy.changeset_page)),
            Route("/changeset/review", d.page(tidy.review, write=True), methods=["POST"]),
            Route("/changeset/revert", d.page(tidy.revert, write=True), methods=["POST"]),
            Route("/edit", d.page(d.edit, write=True), methods=["POST"]),
            Route("/delete", d.page(d.confirm_delete)),
            Route("/delete", d.page(d.delete, write=True), methods=["POST"]),
            Route("/restore", d.page(d.restore, write=True), methods=["POST"]),
            Route("/login", d.login, methods=["GET", "POST"]),
            Route("/logout", d.page(d.logout, write=True), methods=["POST"]),
            Mount("/static", StaticFiles(directory=STATIC), name="static"),
        ]
    )
    app.state.dashboard = d
    return app


def _plain(status: int, text: str) -> Response:
    return Response(text + "\n", status_code=status, media_type="text/plain", headers=SECURITY_HEADERS)


def _where(workspace: dict[str, Any]) -> str:
    """What names a tool result's workspace in a link: its root, or its key (`--logical-workspaces`)."""
    return str(workspace.get("root") or workspace["key"])


def _status(exc: HomeportError) -> int:
    if isinstance(exc, ItemNotFoundError):
        return 404
    if isinstance(exc, WorkspaceError | PermissionDeniedError):
        return 403
    if isinstance(exc, InvalidArgumentError | InvalidItemError):
        return 400
    if isinstance(exc, SecretDetectedError):
        return 422  # understood, and refused for what it holds
    return 500


def _unique(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    seen: set[str] = set()
    return [r for r in rows if not (r["root"] in seen or seen.add(r["root"]))]  # type: ignore[func-returns-value]


def _local_path(request: Request) -> str:
    return request.url.path + (f"?{request.url.query}" if request.url.query else "")


def _local_path_value(value: str | None) -> str:
    # Only a path of this dashboard: never an absolute URL or //host an attacker could send a person to.
    if value and value.startswith("/ui") and not value.startswith("//"):
        return value
    return "/ui/"


def _same_write(written_at: str | None, stamp: str | None) -> bool:
    """Whether a recorded write is the one that set an item's `stamp`: both are taken in the same
    transaction, the stamp first and microseconds apart (an import that keeps an item's own times
    matches neither, and a later write of an item written before writers were recorded is not
    mistaken for its creation)."""
    if not written_at or not stamp:
        return False
    try:
        gap = datetime.fromisoformat(written_at) - datetime.fromisoformat(stamp)
    except ValueError:
        return False
    return timedelta(0) <= gap < WRITE_GAP
