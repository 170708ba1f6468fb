"""The routing promise as invariants, over every source, both protocol eras, stdio and HTTP.

Hypothesis draws a tree of projects (nested git repositories, `.homeport/` above them, siblings
with shared prefixes, symlinks, the data directory), a server configuration, a client (era,
transport, declared roots or none) and a sequence of calls naming the workspace through any
source. After every call:

- an accepted workspace lies inside the server's allowlist and inside the client's declared
  roots, and never in the data directory;
- it is the workspace the rules give for the value that won (nearest project, bounded search);
- a write is found in that workspace's store and in no other (every store file is opened);
- a refusal carries the code of a rule that refuses it;
- over Streamable HTTP under --auth with access rules, a workspace outside the principal's grants
  is never served: a 403 before the MCP layer when the request's header or query chooses it, a
  `workspace_access_denied` tool error when the call names it.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import HealthCheck, Phase, event, example, given, settings
from hypothesis import strategies as st

from homeport.core import ServeSettings
from homeport.files.tokens import TokenStore

from ._drivers import HttpRefusal, connect
from ._universe import (
    LINKS,
    MARKABLE,
    SLOTS,
    VALUE_FORMS,
    WORKSPACE_ALIASES,
    Call,
    ClientSpec,
    Expect,
    Oracle,
    Server,
    State,
    Universe,
    tree_specs,
    within,
)

ANY_SLOT = st.sampled_from([*SLOTS, *LINKS])
# Mostly values that can be served (so acceptance is exercised as much as refusal), some of anything.
LIKELY_SLOT = st.sampled_from(["app", "app_sub", "app_deep", "app2", "mono", "mono_a", "mono_b", "plain_x", "link_app"])
VALUES = st.one_of(
    st.tuples(LIKELY_SLOT, st.sampled_from(["plain", "plain", "plain", "uri", "trailing_slash", "dot_segment"])),
    st.tuples(ANY_SLOT, st.sampled_from(VALUE_FORMS)),
)
CODE = re.compile(r"\[([a-z_]+)\]\s*$")
# Trees an access rule may give the principal (write access to `slot/**`).
GRANTS = st.lists(
    st.sampled_from(["allowed", "app", "app_sub", "app2", "mono", "mono_a", "plain", "outside_proj", "data"]),
    max_size=3,
    unique=True,
).map(tuple)
PRINCIPAL = "ada"


@st.composite
def calls(draw: st.DrawFn, transport: str) -> Call:
    op = draw(st.sampled_from(["write", "write", "read", "use"]))
    if op == "use":
        return Call("use", argument=draw(VALUES))
    how = draw(st.sampled_from(["argument", "handle", "alias", "none"]))
    call = Call(op)
    if how == "argument":
        call.argument = draw(VALUES)
    elif how == "handle":
        call.handle = draw(st.integers(0, 3))
    elif how == "alias":
        call.alias = (draw(st.sampled_from(WORKSPACE_ALIASES)), *draw(VALUES))
    if transport == "http":
        call.header = draw(st.none() | VALUES | VALUES)
        call.query = draw(st.none() | VALUES)
    return call


@st.composite
def scenarios(draw: st.DrawFn) -> tuple[dict[str, str | None], Server, ClientSpec, list[Call]]:
    markers = draw(tree_specs())
    transport = draw(st.sampled_from(["stdio", "http"]))
    allow_choices: list[tuple[str, ...]] = [("allowed",), ("app", "mono")]
    if transport == "stdio":
        allow_choices.append(())
    wire = draw(st.sampled_from(["streamable", "sse"])) if transport == "http" else "streamable"
    # The SDK's SSE client cannot go on after a refused POST, so access rules are drawn over Streamable
    # HTTP; tests/e2e/test_workspace_403.py has SSE's 403s.
    grants = draw(st.none() | GRANTS) if wire == "streamable" and transport == "http" else None
    server = Server(
        transport=transport,
        allow=draw(st.sampled_from([allow_choices[0], *allow_choices])),
        config=draw(st.none() | VALUES),
        require_explicit=draw(st.booleans()),
        cwd=draw(st.sampled_from(list(SLOTS))),
        env=draw(st.none() | LIKELY_SLOT | ANY_SLOT) if transport == "stdio" else None,
        grants=grants,
    )
    roots = draw(
        st.none()
        | st.just(())
        | st.lists(st.sampled_from([*SLOTS, "missing"]), min_size=1, max_size=2, unique=True).map(tuple)
        | st.lists(LIKELY_SLOT, min_size=1, max_size=2, unique=True).map(tuple)
    )
    client = ClientSpec(era=draw(st.sampled_from(["auto", "legacy"])), roots=roots, wire=wire)
    return markers, server, client, draw(st.lists(calls(transport), min_size=1, max_size=6))


def settings_for(u: Universe, server: Server) -> ServeSettings:
    return ServeSettings(
        transport=server.transport,  # type: ignore[arg-type]
        allow_roots=tuple(u.path(s) for s in server.allow),
        workspace=u.value(*server.config) if server.config else None,
        require_explicit_workspace=server.require_explicit,
        cwd=u.path(server.cwd),
        home=u.home,
        client_env={"CLAUDE_PROJECT_DIR": str(u.path(server.env))} if server.env else {},
        data_dir=u.data_dir,
        directory_file=u.base / "directory.toml",
        auth=server.grants is not None,
        access_rules_file=u.base / "rules.toml" if server.grants is not None else None,
    )


def grant(u: Universe, server: Server) -> str | None:
    """Write the access rules and a token for the principal (HTTP under --auth); the token."""
    if server.grants is None:
        return None
    rules = "".join(
        f'[[workspaces]]\nwho = "{PRINCIPAL}"\npaths = ["{u.path(slot)}/**"]\naccess = "write"\n\n'
        for slot in server.grants
    )
    (u.base / "rules.toml").write_text(rules)
    return TokenStore(u.data_dir / "tokens.json").add(PRINCIPAL)


def arguments_for(u: Universe, call: Call, state: State, key: str) -> dict[str, Any]:
    args: dict[str, Any] = {}
    if call.op == "write":
        args = {"category": "probe", "key": key, "value": key}
    elif call.op == "read":
        args = {"category": "probe"}
    if call.handle is not None:
        args["workspace"] = state.handles[call.handle][0]
    elif call.argument is not None:
        args["workspace"] = u.value(*call.argument)
    if call.alias is not None:
        name, slot, form = call.alias
        args[name] = u.value(slot, form)
    return args


TOOLS = {"write": "log_custom_data", "read": "get_custom_data", "use": "use_workspace"}


async def run_scenario(markers: dict[str, str | None], server: Server, client: ClientSpec, plan: list[Call]) -> None:
    event(f"{server.transport} {client.wire if server.transport == 'http' else ''} {client.era}".replace("  ", " "))
    u = Universe.build(markers)
    try:
        oracle = Oracle(u, server, client)
        roots = None if client.roots is None else [u.path(s) for s in client.roots]
        state = State()
        written: dict[Path, set[str]] = {}
        story: list[str] = [f"server={server} client={client} markers={markers}"]
        token = grant(u, server)
        settings = settings_for(u, server)
        async with connect(settings, era=client.era, roots=roots, wire=client.wire, token=token) as driver:
            for i, call in enumerate(plan):
                if call.handle is not None:
                    if not state.handles:
                        call.handle = None
                    else:
                        call.handle %= len(state.handles)
                key = f"k{i}"
                expect = oracle.expect(call, state)
                result = await driver.call(
                    TOOLS[call.op],
                    arguments_for(u, call, state, key),
                    header=u.value(*call.header) if call.header else None,
                    query=u.value(*call.query) if call.query else None,
                )
                story.append(f"#{i} {call} -> expected {expect}")
                via = "(handle)" if call.handle is not None else ""
                refused = "HTTP 403" if expect.forbidden else "refused " + "/".join(sorted(expect.codes))
                event(f"{call.op} {(expect.source or '') + via or refused}")
                check(u, oracle, call, expect, result, key, state, written, "\n".join(story))
    finally:
        u.remove()


def check(
    u: Universe,
    oracle: Oracle,
    call: Call,
    expect: Expect,
    result: Any,
    key: str,
    state: State,
    written: dict[Path, set[str]],
    story: str,
) -> None:
    if expect.forbidden or isinstance(result, HttpRefusal):
        assert isinstance(result, HttpRefusal), f"answered {result}, expected HTTP 403\n{story}"
        assert expect.forbidden, f"HTTP refusal {result.message!r}, expected {expect}\n{story}"
        assert f"{PRINCIPAL!r} may not use workspace" in result.message, f"{result.message}\n{story}"
        assert result.message.endswith("[workspace_access_denied]"), f"{result.message}\n{story}"
        if call.op == "write":
            assert u.stores_holding(key) == set(), f"refused write {key} landed in {u.stores_holding(key)}\n{story}"
        return
    text = "\n".join(getattr(part, "text", "") for part in result.content)
    if not result.is_error:
        ws = result.structured_content["workspace"]
        root = Path(ws["root"])
        # The security invariants first: they hold whatever the oracle says.
        if oracle.allow:
            assert any(within(root, a) for a in oracle.allow), f"accepted {root} outside the allowlist\n{story}"
        if oracle.declared is not None:
            assert any(within(root, r) for r in oracle.declared), f"accepted {root} outside the client's roots\n{story}"
        assert not within(root, u.data_dir), f"accepted the data directory {root}\n{story}"
        assert oracle.may_use(root), f"accepted {root} outside the principal's grants {oracle.server.grants}\n{story}"
        assert expect.root is not None, f"accepted {ws}, expected a refusal {expect.codes}\n{story}"
        assert (root, ws["source"]) == (expect.root, expect.source), f"landed in {ws}, expected {expect}\n{story}"
        if call.op == "write":
            written.setdefault(root, set()).add(key)
            assert u.stores_holding(key) == {root}, f"write {key} found in {u.stores_holding(key)}\n{story}"
        elif call.op == "read":
            got = {item["key"] for item in result.structured_content["items"]}
            assert got == written.get(root, set()), f"read {got} from {root}\n{story}"
        else:
            state.handles.append((result.structured_content["handle"], root))
            if oracle.client.era == "legacy":
                state.session = root
        return
    match = CODE.search(text)
    assert expect.root is None, f"refused ({text}), expected {expect}\n{story}"
    assert match is not None and match.group(1) in expect.codes, (
        f"refused with {text!r}, expected {expect.codes}\n{story}"
    )
    if call.op == "write":
        assert u.stores_holding(key) == set(), f"refused write {key} landed in {u.stores_holding(key)}\n{story}"


def _defect(markers: dict[str, str], server: Server, client: ClientSpec, *plan: Call) -> Any:
    """An explicit example: a way through the promise that was found from outside, always tried first."""
    tree = dict.fromkeys(MARKABLE)
    tree.update(markers)
    return example(scenario=(tree, server, client, list(plan)))


_STDIO = Server("stdio", allow=(), config=None, require_explicit=False, cwd="app2", env=None)
_HTTP = Server("http", allow=("allowed",), config=None, require_explicit=False, cwd="allowed", env=None)
_AUTH = Server(
    "http", allow=("allowed",), config=None, require_explicit=False, cwd="allowed", env=None, grants=("app",)
)


@pytest.mark.slow
# 1. Declared roots must bound explicit choices: argument, header, handle (both eras).
@_defect({"app": "git", "app2": "git"}, _STDIO, ClientSpec("auto", ("app",)), Call("write", argument=("app2", "plain")))
@_defect({"app": "git", "app2": "git"}, _STDIO, ClientSpec("legacy", ("app",)), Call("write", argument=("app2", "uri")))
@_defect({"app": "git", "app2": "git"}, _HTTP, ClientSpec("legacy", ("app",)), Call("write", header=("app2", "plain")))
@_defect(
    {"app": "git", "app2": "git"},
    _HTTP,
    ClientSpec("auto", ("app",)),
    Call("use", argument=("app2", "plain")),
    Call("write", handle=0),
)
# 2. A .homeport/ further up never captures a nested git repository.
@_defect(
    {"allowed": "homeport", "app": "git"}, _STDIO, ClientSpec("auto", None), Call("write", argument=("app", "plain"))
)
@_defect(
    {"allowed": "homeport", "mono_a": "git"},
    _HTTP,
    ClientSpec("legacy", None),
    Call("write", query=("mono_a", "plain")),
)
# 3. A misnamed workspace argument is refused, never served from the cwd's project.
@_defect(
    {"app": "git", "app2": "git"},
    _STDIO,
    ClientSpec("auto", None),
    Call("write", alias=("projectRoot", "app", "plain")),
)
@_defect(
    {"app": "git", "app2": "git"},
    _STDIO,
    ClientSpec("legacy", None),
    Call("read", alias=("workspace_id", "app", "plain")),
)
# 4. Under access rules: a workspace the request chooses and the principal may not use is a 403 (both
# eras, header and query, existing or not, before an argument is even looked at); one the call names
# is a tool error, whatever the request chose.
@_defect({"app": "git", "app2": "git"}, _AUTH, ClientSpec("legacy", None), Call("write", header=("app2", "plain")))
@_defect({"app": "git", "app2": "git"}, _AUTH, ClientSpec("auto", None), Call("read", query=("app2", "uri")))
@_defect({"app": "git"}, _AUTH, ClientSpec("auto", ("app",)), Call("read", header=("app2", "missing")))
@_defect(
    {"app": "git", "app2": "git"},
    _AUTH,
    ClientSpec("legacy", None),
    Call("write", alias=("projectRoot", "app", "plain"), header=("app2", "plain")),
)
@_defect(
    {"app": "git", "app2": "git"},
    _AUTH,
    ClientSpec("auto", None),
    Call("write", argument=("app2", "plain"), header=("app", "plain")),
    Call("use", argument=("app2", "plain")),
    Call("use", argument=("app", "plain")),
    Call("write", handle=0, query=("app", "plain")),
)
@settings(
    deadline=None,
    phases=[Phase.explicit, Phase.reuse, Phase.generate, Phase.target, Phase.shrink],
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(scenario=scenarios())
def test_every_call_lands_in_the_workspace_the_rules_give_or_is_refused(scenario: Any) -> None:
    anyio.run(run_scenario, *scenario)
