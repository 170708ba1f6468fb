"""The dashboard's tidy pages: propose, review entry by entry, apply with who applied it, revert."""

from __future__ import annotations

import html
import random
import re
from pathlib import Path

import pytest

from homeport.store import decisions

pytestmark = pytest.mark.anyio
SYLLABLES = ("bar", "cen", "dol", "fis", "gum", "hap", "jot", "kel", "lun", "mox", "nib", "pod", "qua", "rux")


def csrf_of(page: str) -> str:
    found = re.search(r'name="csrf" value="([0-9a-f]+)"', page)
    assert found, page[:500]
    return found.group(1)


def seed(store) -> tuple[dict, dict, dict, dict]:
    rng = random.Random(5)
    vocab = [a + b for a in ("ka", "lo", "mi", "nu", "pe", "ri", "so", "tu", "va", "ze") for b in SYLLABLES]
    for _ in range(60):
        decisions.log_decision(store, " ".join(rng.sample(vocab, 6)))
    a = decisions.log_decision(store, "Use SQLite in WAL mode for the local store")
    b = decisions.log_decision(store, "Use SQLite with WAL mode for the local store")
    c = decisions.log_decision(store, "Payments go through Stripe Checkout")
    d = decisions.log_decision(store, "All payments go through Stripe Checkout")
    return a, b, c, d


async def test_a_proposal_is_reviewed_entry_by_entry_applied_by_its_reviewer_and_reverted(
    make_app, client_for, project: Path
):
    app, runtime = make_app()
    store = runtime.stores.get(project, create=True)
    a, _b, c, _d = seed(store)
    client = client_for(app)
    ws = str(project)
    page = await client.get("/ui/tidy", params={"ws": ws})
    assert page.status_code == 200 and "No changeset yet" in page.text
    made = await client.post(
        "/ui/tidy/propose", data={"csrf": csrf_of(page.text), "ws": ws, "kind": "duplicate", "stale_days": "90"}
    )
    assert made.status_code == 303
    review = await client.get(made.headers["location"])
    text = html.unescape(review.text)
    assert f"merge decision {a['id']} into decision" in text and f"merge decision {c['id']} into decision" in text
    assert "word overlap" in text and 'name="entry-1"' in text and 'name="entry-2"' in text
    # reject the Stripe entry, accept the SQLite one, apply (past the guard: 4 of 64 items is over 5 %)
    stripe = 1 if f"merge decision {c['id']}" in text.split('id="entry-2"')[0] else 2
    choices = {f"entry-{stripe}": "reject", f"entry-{3 - stripe}": "accept"}
    applied = await client.post(
        "/ui/changeset/review",
        data={"csrf": csrf_of(review.text), "ws": ws, "id": "1", "action": "apply", "force": "1", **choices},
    )
    assert applied.status_code == 303, applied.text
    shown = html.unescape((await client.get(applied.headers["location"])).text)
    assert "Changeset applied." in shown and "applied" in shown and 'id="revert"' in shown
    listing = html.unescape((await client.get("/ui/tidy", params={"ws": ws})).text)
    assert re.search(r"applied</span>.*1 of 2 accepted.*by \w+", listing, re.S)
    from homeport.store.lifecycle import hidden_of

    assert hidden_of(store) == {("decision", a["id"])}
    item = html.unescape((await client.get("/ui/item", params={"ws": ws, "type": "decision", "id": a["id"]})).text)
    assert re.search(rf"Merged into <a [^>]*>decision #{a['id'] + 1}</a>, by <a [^>]*>changeset #1</a>", item)
    assert "stays readable here" in item
    listing = (await client.get("/ui/w", params={"ws": ws})).text
    row = next(r for r in listing.split("<tr>") if f"#{a['id']}<" in r)
    assert 'class="badge"' in row and ">hidden<" in row
    reverted = await client.post("/ui/changeset/revert", data={"csrf": csrf_of(shown), "ws": ws, "id": "1"})
    assert reverted.status_code == 303
    assert "Changeset reverted." in (await client.get(reverted.headers["location"])).text
    assert hidden_of(store) == set()


async def test_a_stale_form_is_refused_and_nothing_is_applied(make_app, client_for, project: Path):
    app, runtime = make_app()
    store = runtime.stores.get(project, create=True)
    seed(store)
    client = client_for(app)
    ws = str(project)
    page = await client.get("/ui/tidy", params={"ws": ws})
    await client.post("/ui/tidy/propose", data={"csrf": csrf_of(page.text), "ws": ws, "kind": "duplicate"})
    refused = await client.post(
        "/ui/changeset/review", data={"csrf": "0" * 32, "ws": ws, "id": "1", "action": "apply", "force": "1"}
    )
    assert refused.status_code == 403
    from homeport.store.lifecycle import hidden_of

    assert hidden_of(store) == set()
