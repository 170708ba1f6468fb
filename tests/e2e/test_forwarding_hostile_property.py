"""The forwarding invariant against a hostile peer, as a property (issue 22): whatever an impostor on a
registered endpoint claims (a dead owner's pid, its own live pid, a pid whose owner died leaving its
secret), whatever the entry says (with or without --auth), and whichever edge calls (the async one of
MCP and the dashboard, the shell's blocking one), no call content reaches it and no write is
acknowledged that is not stored here.

In process, for speed: the front end is a `CallPipeline` over a runtime whose registry is a real state
directory; the impostor is a real listener run as another local user (`_hostile`).
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from homeport.core.catalog import CATALOG
from homeport.core.pipeline import CallPipeline, LocalRequest
from homeport.errors import HomeportError
from homeport.registry import InstanceRegistry

from ._hostile import HostileListener, OtherUser, hostile_listener, other_user
from ._support import free_port

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]


def _dead_pid() -> int:
    done = subprocess.Popen([sys.executable, "-c", "pass"])
    done.wait()
    return done.pid


@dataclass(frozen=True)
class Impostor:
    listener: HostileListener
    port: int
    claims: int  # the pid its /healthz answers


@pytest.fixture(scope="module")
def impostors() -> Iterator[dict[str, Impostor]]:
    """Two listeners run as another user: one claims its own (live) pid, one a dead owner's pid."""
    dead = _dead_pid()
    with other_user() as user, _listening(user, None) as own, _listening(user, dead) as posing:
        yield {"own": Impostor(own[0], own[1], own[0].pid), "posing": Impostor(posing[0], posing[1], dead)}


@contextlib.contextmanager
def _listening(user: OtherUser, claim: int | None) -> Iterator[tuple[HostileListener, int]]:
    port = free_port()
    with hostile_listener(port, claim, user) as listener:
        yield listener, port


# (which impostor, whether the dead owner's secret was left behind in the state directory)
CLAIMS = {
    "its own live pid": ("own", False),
    "a dead owner's pid": ("posing", False),
    "a dead owner's pid, its secret left behind": ("posing", True),
}
TOOLS = ("log_decision", "log_custom_data", "get_decisions")
TEXT = st.text(st.characters(categories=("L", "N")), min_size=6, max_size=12).map(lambda t: f"canary-{t}")


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    claim=st.sampled_from(sorted(CLAIMS)),
    auth=st.booleans(),
    blocking=st.booleans(),
    calls=st.lists(st.tuples(st.sampled_from(TOOLS), TEXT), min_size=1, max_size=4),
)
def test_no_call_content_reaches_an_impostor_and_every_acknowledged_write_is_stored(
    impostors, runtime_factory, tmp_path, claim, auth, blocking, calls
) -> None:
    which, secret_left = CLAIMS[claim]
    impostor = impostors[which]
    listener, port, pid = impostor.listener, impostor.port, impostor.claims
    base = Path(tempfile.mkdtemp(dir=tmp_path))
    state, project = base / "state", base / "src" / "app"
    (project / ".git").mkdir(parents=True)
    planting = InstanceRegistry(state, is_live=lambda _owner: True)  # as if the entry had been live
    if secret_left:
        planting.mint_owner_secret(pid)  # a real owner's secret, left behind: the impostor does not know it
    planting.own(
        [project], host="127.0.0.1", requested_port=None, version="0.1.0", pid=pid,
        endpoint=f"http://127.0.0.1:{port}", auth=auth,
    )  # fmt: skip
    before = len(listener.seen())
    runtime = runtime_factory(state_dir=state, allow_roots=(base,), agent="ada" if auth else None)
    pipeline = CallPipeline(runtime)
    acknowledged: list[str] = []
    for tool, text in calls:
        arguments = {"workspace": str(project)}
        if tool == "log_decision":
            arguments["summary"] = text
        elif tool == "log_custom_data":
            arguments.update(category="c", key=text, value=text)
        request = LocalRequest(agent="ada" if auth else None)
        try:
            if blocking:
                result = pipeline.call_blocking(CATALOG[tool], arguments, request)
            else:
                result = anyio.run(pipeline.call, CATALOG[tool], arguments, request)
        except HomeportError:
            continue
        assert isinstance(result, dict), result
        assert "served_by" not in result["workspace"], result
        if tool != "get_decisions":
            acknowledged.append(text)
    new = listener.seen()[before:]
    assert [r for r in new if r["method"] == "POST"] == [], new
    for _tool, text in calls:
        assert [r for r in new if text in str(r)] == []
    stored = _stored(project)
    for text in acknowledged:
        assert text in stored, f"acknowledged but not stored: {text}"


def _stored(project: Path) -> str:
    path = project / ".homeport" / "homeport.db"
    if not path.exists():
        return ""
    with contextlib.closing(sqlite3.connect(path)) as db:
        rows = [*db.execute("SELECT summary FROM decisions"), *db.execute("SELECT key, value FROM custom_data")]
    return os.linesep.join(str(row) for row in rows)
