"""One page being answered: who asks, their tool calls through the pipeline, and the rendered answer."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from jinja2 import Environment
from starlette.requests import Request
from starlette.responses import HTMLResponse

from homeport import __version__
from homeport.core.catalog import CATALOG
from homeport.core.pipeline import CallPipeline, LocalRequest, owners_answer
from homeport.ui.guard import DashboardGuard, Viewer

__all__ = ["DASHBOARD_CLIENT", "SECURITY_HEADERS", "Page"]

SECURITY_HEADERS = {
    "content-security-policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        "form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
    ),
    "x-content-type-options": "nosniff",
    "referrer-policy": "same-origin",
    "x-frame-options": "DENY",
    "cache-control": "no-store",
}
# Who wrote what a person changed in the dashboard (the item's provenance names it).
DASHBOARD_CLIENT = ("homeport-dashboard", __version__)


@dataclass
class Page:
    """One request being answered: who asks, and their tool calls."""

    request: Request
    viewer: Viewer
    pipeline: CallPipeline
    guard: DashboardGuard
    env: Environment
    read_only: bool
    agent: str | None

    async def tool(self, name: str, ws: str | None, /, **arguments: Any) -> dict[str, Any]:
        """Run tool `name` on workspace `ws` as this page's principal, through the pipeline."""
        spec = CATALOG[name]
        if ws:
            arguments["workspace"] = ws
        # A call from a browser: the principal its cookie (or the local user) names, with its token's
        # claims for the access rules; no roots, no session.
        request = LocalRequest(
            principal=self.viewer.principal, agent=self.agent, claims=self.viewer.claims, client=DASHBOARD_CLIENT
        )
        result = await self.pipeline.call(spec, arguments, request)
        # A call another instance owns (the daemon) comes back as the owner's MCP result: as a local one.
        return result if isinstance(result, dict) else owners_answer(result)

    def render(self, template: str, status: int = 200, **context: Any) -> HTMLResponse:
        """The page, its forms' token bound to this browser (a first visit gets its pre-session cookie)."""
        known = self.guard.browser_id(self.request)
        browser = known or self.guard.new_browser_id()
        body = self.env.get_template(template).render(
            viewer=self.viewer,
            auth=self.guard.auth,
            read_only=self.read_only,
            csrf=self.guard.form_token(browser, self.viewer.credential),
            **context,
        )
        response = HTMLResponse(body, status_code=status, headers=SECURITY_HEADERS)
        if known is None:
            self.guard.give_browser_id(response, self.request, browser)
        return response
