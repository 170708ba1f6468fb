"""The dashboard's tidy pages: propose a cleanup, review it like a pull request, apply it, revert it.

Each page is tool calls through the pipeline (`propose_cleanup`, `get_changesets`,
`amend_changeset`, `apply_changeset`, `revert_changeset`) as the signed-in principal, so the
dashboard can do nothing an agent with the same access could not, and every write is recorded as
the person's. A review is one form: accept or reject each entry, then save, or save and apply.
"""

from __future__ import annotations

from typing import Any

from starlette.responses import RedirectResponse, Response

from homeport.errors import InvalidArgumentError
from homeport.ui.forms import integer, required
from homeport.ui.page import Page
from homeport.ui.render import url

__all__ = ["KINDS", "changeset_page", "propose", "revert", "review", "tidy_page"]

KINDS = ("duplicate", "contradiction", "superseded", "stale")


async def tidy_page(page: Page) -> Response:
    """The workspace's changesets, newest first, and the form that proposes a new one."""
    ws = required(page.request, "ws")
    found = await page.tool("get_changesets", ws, limit=50)
    workspace = found["workspace"]
    return page.render(
        "tidy.html", ws=_where(workspace), workspace=workspace, changesets=found["changesets"], kinds=KINDS
    )


async def changeset_page(page: Page) -> Response:
    """One changeset as a reviewable diff: each entry's reason, evidence, items and operations."""
    ws = required(page.request, "ws")
    changeset_id = _changeset_id(page.request.query_params.get("id"))
    found = await page.tool("get_changesets", ws, changeset_id=changeset_id)
    workspace = found["workspace"]
    return page.render(
        "changeset.html",
        ws=_where(workspace),
        workspace=workspace,
        cs=found,
        entries=[_shown(e) for e in found["entries"]],
        done=page.request.query_params.get("done"),
    )


async def propose(page: Page) -> Response:
    form = await page.request.form()
    ws = _form_text(form, "ws")
    kinds = [k for k in form.getlist("kind") if k in KINDS]
    stale_days = max(1, min(3650, integer(form.get("stale_days"), 90)))
    made = await page.tool("propose_cleanup", ws, kinds=kinds or None, stale_days=stale_days)
    return RedirectResponse(url("/changeset", ws=ws, id=made["id"]), status_code=303)


async def review(page: Page) -> Response:
    """Save the accept/reject choices of a proposed changeset; with action=apply, apply it too."""
    form = await page.request.form()
    ws = _form_text(form, "ws")
    changeset_id = _changeset_id(form.get("id"))
    accept: list[int] = []
    reject: list[int] = []
    for key, value in form.multi_items():
        if key.startswith("entry-") and isinstance(value, str):
            number = integer(key.removeprefix("entry-"), 0)
            if number > 0:
                (accept if value == "accept" else reject).append(number)
    if accept or reject:
        await page.tool("amend_changeset", ws, changeset_id=changeset_id, accept=accept or None, reject=reject or None)
    done = "saved"
    if form.get("action") == "apply":
        await page.tool("apply_changeset", ws, changeset_id=changeset_id, force=form.get("force") == "1")
        done = "applied"
    return RedirectResponse(url("/changeset", ws=ws, id=changeset_id, done=done), status_code=303)


async def revert(page: Page) -> Response:
    form = await page.request.form()
    ws = _form_text(form, "ws")
    changeset_id = _changeset_id(form.get("id"))
    await page.tool("revert_changeset", ws, changeset_id=changeset_id, force=form.get("force") == "1")
    return RedirectResponse(url("/changeset", ws=ws, id=changeset_id, done="reverted"), status_code=303)


def _shown(entry: dict[str, Any]) -> dict[str, Any]:
    """An entry with its operations in words and its evidence without the texts (shown beside the items)."""
    evidence = {k: v for k, v in entry["evidence"].items() if k not in ("texts", "pairs")}
    return {
        **entry,
        "said": [_describe(op) for op in entry["operations"]],
        "facts": evidence,
        "pairs": entry["evidence"].get("pairs", []),
    }


def _describe(op: dict[str, Any]) -> str:
    def ref(x: Any) -> str:
        return f"{x['type'].replace('_', ' ')} {x['id']}"

    kind = op["op"]
    if kind == "merge":
        return f"merge {ref(op['item'])} into {ref(op['into'])} (archived; its links move, its text stays in history)"
    if kind == "supersede":
        return f"mark {ref(op['item'])} superseded by {ref(op['by'])}"
    if kind == "relink":
        return f"move link {op['link_id']} from {ref(op['from'])} to {ref(op['to'])}"
    if kind == "retag":
        return f"retag {ref(op['item'])} as {', '.join(op['tags'])}"
    return f"archive {ref(op['item'])}"


def _changeset_id(value: Any) -> int:
    number = integer(value, 0)
    if number < 1:
        raise InvalidArgumentError("a changeset is named by its id, a positive integer")
    return number


def _form_text(form: Any, name: str) -> str:
    value = form.get(name)
    if not isinstance(value, str) or not value:
        raise InvalidArgumentError(f"the form needs {name}")
    return value


def _where(workspace: dict[str, Any]) -> str:
    return str(workspace.get("root") or workspace["key"])
