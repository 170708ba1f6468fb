"""The resolver: every source in order, one normalisation, the guards."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from homeport.errors import (
    AmbiguousWorkspaceError,
    ExplicitWorkspaceRequired,
    InvalidWorkspaceError,
    WorkspaceDeniedError,
    WorkspaceUnresolvedError,
)
from homeport.workspace import (
    CallInputs,
    HandleSigner,
    ResolverSettings,
    Source,
    WorkspaceGuard,
    WorkspaceResolver,
    default_denied,
)


@pytest.fixture
def home(tmp_path: Path) -> Path:
    h = tmp_path / "home"
    h.mkdir()
    return h


def signer(**kw) -> HandleSigner:
    return HandleSigner(lambda: b"a deployment secret of thirty-two bytes or more", **kw)


def resolver(home: Path, *, allow=(), handles=None, **kw) -> WorkspaceResolver:
    guard = WorkspaceGuard(denied=default_denied(home.resolve()), allow_roots=tuple(p.resolve() for p in allow))
    return WorkspaceResolver(ResolverSettings(guard=guard, **kw), handles or signer())


def project(base: Path, name: str, marker: str = ".git") -> Path:
    root = base / name
    (root / marker).mkdir(parents=True)
    return root.resolve()


def test_argument_beats_every_other_source(tmp_path, home):
    a, b, c = (project(tmp_path, n) for n in "abc")
    r = resolver(home, transport="http", config_workspace=str(c), cwd=c)
    ws = r.resolve(CallInputs(argument=str(a), header=str(b), query=str(c), session=str(c))).workspace
    assert (ws.root, ws.source) == (a, Source.ARGUMENT)


def test_fetched_roots_bound_even_an_explicit_workspace(tmp_path, home):
    a, c = project(tmp_path, "a"), project(tmp_path, "c")
    with pytest.raises(WorkspaceDeniedError, match="outside the client's roots"):
        resolver(home).resolve(CallInputs(argument=str(a), roots=[c.as_uri()]))


@pytest.mark.parametrize(
    ("fields", "source"),
    [
        ({"header": "b", "query": "c", "session": "c"}, Source.HEADER),
        ({"query": "b", "session": "c"}, Source.QUERY),
        ({"session": "b"}, Source.SESSION),
    ],
)
def test_http_sources_apply_in_order(tmp_path, home, fields, source):
    paths = {n: project(tmp_path, n) for n in "bc"}
    r = resolver(home, transport="http", config_workspace=str(paths["c"]))
    ws = r.resolve(CallInputs(**{k: str(paths[v]) for k, v in fields.items()})).workspace
    assert (ws.root, ws.source) == (paths["b"], source)


def test_header_and_query_are_ignored_on_stdio(tmp_path, home):
    b, c = project(tmp_path, "b"), project(tmp_path, "c")
    ws = (
        resolver(home, transport="stdio", config_workspace=str(c))
        .resolve(CallInputs(header=str(b), query=str(b)))
        .workspace
    )
    assert ws.source is Source.CONFIG


def test_config_beats_roots_env_and_cwd(tmp_path, home):
    a, b = project(tmp_path, "a"), project(tmp_path, "b")
    r = resolver(home, config_workspace=str(a), client_env={"CLAUDE_PROJECT_DIR": str(b)}, cwd=b)
    assert r.resolve(CallInputs()).workspace.source is Source.CONFIG


def test_one_root_wins_over_env_and_cwd(tmp_path, home):
    a, b = project(tmp_path, "a"), project(tmp_path, "b")
    r = resolver(home, client_env={"CLAUDE_PROJECT_DIR": str(b)}, cwd=b)
    ws = r.resolve(CallInputs(roots=[a.as_uri()])).workspace
    assert (ws.root, ws.source) == (a, Source.ROOTS)


def test_several_roots_pick_the_one_containing_the_cwd(tmp_path, home):
    a, b = project(tmp_path, "a"), project(tmp_path, "b")
    (b / "sub").mkdir()
    ws = resolver(home, cwd=b / "sub").resolve(CallInputs(roots=[a.as_uri(), b.as_uri()])).workspace
    assert ws.root == b


def test_several_roots_without_the_cwd_are_ambiguous_and_listed(tmp_path, home):
    a, b = project(tmp_path, "a"), project(tmp_path, "b")
    with pytest.raises(AmbiguousWorkspaceError) as info:
        resolver(home, cwd=Path("/")).resolve(CallInputs(roots=[a.as_uri(), b.as_uri()]))
    assert str(a) in info.value.message and str(b) in info.value.message


def test_non_file_roots_are_skipped(tmp_path, home):
    a = project(tmp_path, "a")
    ws = resolver(home).resolve(CallInputs(roots=["vscode-remote://ssh/x", a.as_uri()])).workspace
    assert ws.root == a


def test_a_workspace_outside_declared_roots_is_refused(tmp_path, home):
    a, b = project(tmp_path, "a"), project(tmp_path, "b")
    r = resolver(home, client_env={"CLAUDE_PROJECT_DIR": str(b)})
    # Only vscode-remote roots: nothing usable, so the env hint is tried and must lie inside the roots.
    with pytest.raises(WorkspaceDeniedError, match="none of them is a directory on this machine"):
        r.resolve(CallInputs(roots=["vscode-remote://ssh/x"]))
    assert r.resolve(CallInputs(roots=None)).workspace.root == b
    assert a != b


def test_claude_project_dir_is_a_client_hint(tmp_path, home):
    a = project(tmp_path, "a")
    ws = resolver(home, client_env={"CLAUDE_PROJECT_DIR": str(a)}, cwd=Path("/")).resolve(CallInputs()).workspace
    assert (ws.root, ws.source) == (a, Source.CLIENT_ENV)


def test_workspace_folder_paths_counts_only_when_it_names_one_folder(tmp_path, home):
    a, b = project(tmp_path, "a"), project(tmp_path, "b")
    ws = resolver(home, client_env={"WORKSPACE_FOLDER_PATHS": str(a)}).resolve(CallInputs()).workspace
    assert ws.source is Source.CLIENT_ENV
    with pytest.raises(WorkspaceUnresolvedError):
        resolver(home, client_env={"WORKSPACE_FOLDER_PATHS": f"{a},{b}"}, cwd=Path("/")).resolve(CallInputs())


def test_cwd_is_used_on_stdio_and_climbs_to_the_git_root(tmp_path, home):
    a = project(tmp_path, "a")
    (a / "src" / "pkg").mkdir(parents=True)
    ws = resolver(home, cwd=a / "src" / "pkg").resolve(CallInputs()).workspace
    assert (ws.root, ws.source) == (a, Source.CWD)
    assert "git repository" in ws.reason


def test_cwd_is_never_used_over_http(tmp_path, home):
    a = project(tmp_path, "a")
    with pytest.raises(WorkspaceUnresolvedError, match="never used over HTTP"):
        resolver(home, transport="http", cwd=a).resolve(CallInputs())


@pytest.mark.parametrize("where", ["root", "home", "cache"])
def test_cwd_of_root_home_or_package_cache_is_refused_with_every_way_listed(tmp_path, home, where):
    cwd = {"root": Path("/"), "home": home, "cache": home / ".cache" / "uv" / "x"}[where]
    cwd.mkdir(parents=True, exist_ok=True)
    with pytest.raises(WorkspaceUnresolvedError) as info:
        resolver(home, cwd=cwd).resolve(CallInputs())
    message = info.value.message
    for way in (
        "workspace argument",
        "X-Workspace-Id",
        "project_path",
        "use_workspace",
        "--workspace",
        "HOMEPORT_WORKSPACE",
        "CLAUDE_PROJECT_DIR",
    ):
        assert way in message
    assert "refused" in message


def test_home_and_root_are_refused_even_when_named_explicitly(home):
    for value in ("/", str(home)):
        with pytest.raises(WorkspaceDeniedError, match="refused"):
            resolver(home).resolve(CallInputs(argument=value))


def test_system_directories_are_refused(home):
    with pytest.raises(WorkspaceDeniedError, match="system directory /etc"):
        resolver(home).resolve(CallInputs(argument="/etc/ssl"))


def test_a_dotfiles_repository_in_home_does_not_swallow_projects(home):
    (home / ".git").mkdir()
    (home / "notes").mkdir()
    ws = resolver(home).resolve(CallInputs(argument=str(home / "notes"))).workspace
    assert ws.root == (home / "notes").resolve()


def test_a_nearer_git_root_beats_a_homeport_marker_further_up(tmp_path, home):
    mono = project(tmp_path, "mono", ".homeport")
    sub = project(mono, "service")
    (sub / "src").mkdir()
    assert resolver(home).resolve(CallInputs(argument=str(sub / "src"))).workspace.root == sub
    (mono / "docs").mkdir()
    assert resolver(home).resolve(CallInputs(argument=str(mono / "docs"))).workspace.root == mono


def test_allowlist_is_compared_by_components_not_prefix(tmp_path, home):
    app = project(tmp_path, "app")
    evil = project(tmp_path, "app-evil")
    r = resolver(home, allow=[app], transport="http")
    assert r.resolve(CallInputs(header=str(app / ".git" / ".."))).workspace.root == app
    with pytest.raises(WorkspaceDeniedError, match="outside the allowed roots") as info:
        r.resolve(CallInputs(header=str(evil)))
    assert str(evil) in info.value.message and "--allow-root" in info.value.message


def test_a_symlink_inside_the_allowlist_pointing_outside_is_refused(tmp_path, home):
    allowed = tmp_path / "allowed"
    allowed.mkdir()
    outside = project(tmp_path, "outside")
    (allowed / "sneaky").symlink_to(outside)
    with pytest.raises(WorkspaceDeniedError, match="outside the allowed roots"):
        resolver(home, allow=[allowed]).resolve(CallInputs(argument=str(allowed / "sneaky")))


def test_dot_dot_cannot_climb_out_of_the_allowlist(tmp_path, home):
    allowed = tmp_path / "allowed"
    (allowed / "p").mkdir(parents=True)
    project(tmp_path, "secret")
    with pytest.raises(WorkspaceDeniedError):
        resolver(home, allow=[allowed]).resolve(CallInputs(argument=f"{allowed}/p/../../secret"))


def test_project_root_search_stops_at_the_allowed_root(tmp_path, home):
    outer = project(tmp_path, "outer")
    inner = outer / "team"
    (inner / "svc").mkdir(parents=True)
    ws = resolver(home, allow=[inner]).resolve(CallInputs(argument=str(inner / "svc"))).workspace
    # The git root above the allowed root is out of reach, so the directory is its own root.
    assert ws.root == (inner / "svc").resolve()


def test_invalid_explicit_candidate_is_an_error_not_a_fallthrough(tmp_path, home):
    a = project(tmp_path, "a")
    with pytest.raises(InvalidWorkspaceError, match="from the workspace argument"):
        resolver(home, cwd=a).resolve(CallInputs(argument=str(tmp_path / "missing")))


def test_require_explicit_refuses_implicit_writes_but_allows_reads(tmp_path, home):
    a = project(tmp_path, "a")
    r = resolver(home, cwd=a, require_explicit=True)
    assert r.resolve(CallInputs()).workspace.source is Source.CWD
    with pytest.raises(ExplicitWorkspaceRequired, match="came only from the current directory"):
        r.resolve(CallInputs(), write=True)
    assert r.resolve(CallInputs(argument=str(a)), write=True).workspace.source is Source.ARGUMENT


def test_handles_resolve_only_for_the_principal_that_minted_them(tmp_path, home):
    a = project(tmp_path, "a")
    handles = signer()
    r = resolver(home, handles=handles)
    handle = handles.mint("alice", a)
    assert r.resolve(CallInputs(principal="alice", argument=handle)).workspace.root == a
    with pytest.raises(InvalidWorkspaceError, match="unknown or expired"):
        r.resolve(CallInputs(principal="bob", argument=handle))


def test_handles_expire(tmp_path):
    now = [0.0]
    handles = signer(ttl_seconds=10, clock=lambda: now[0])
    h = handles.mint("p", tmp_path)
    now[0] = 9.9
    assert handles.lookup(h, "p").root == tmp_path
    now[0] = 10.0
    with pytest.raises(InvalidWorkspaceError):
        handles.lookup(h, "p")


def test_handles_are_rechecked_against_the_guards(tmp_path, home):
    inside, outside = (tmp_path / "in"), project(tmp_path, "out")
    inside.mkdir()
    handles = signer()
    h = handles.mint("local", outside)
    with pytest.raises(WorkspaceDeniedError):
        resolver(home, allow=[inside], handles=handles).resolve(CallInputs(argument=h))


def test_observe_reports_every_source(tmp_path, home):
    seen = resolver(home, transport="http").observe(CallInputs(header="/x"))
    assert [s.source for s in seen] == list(Source)
    assert seen[1].value == "/x"


names = st.sampled_from(["app", "app-evil", "app2", "ap", "application", "app.bak", "other"])


@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(allowed=names, asked=names, depth=st.integers(0, 2))
def test_property_a_resolved_workspace_always_lies_inside_the_allowlist(tmp_path, home, allowed, asked, depth):
    base = tmp_path / "prop"
    for name in ("app", "app-evil", "app2", "ap", "application", "app.bak", "other"):
        (base / name / "x" / "y").mkdir(parents=True, exist_ok=True)
    allow_root = (base / allowed).resolve()
    target = base / asked / "/".join(["x", "y"][:depth]) if depth else base / asked
    r = resolver(home, allow=[allow_root])
    try:
        ws = r.resolve(CallInputs(argument=str(target))).workspace
    except WorkspaceDeniedError:
        assert asked != allowed
    else:
        assert ws.root == allow_root or allow_root in ws.root.parents
        assert asked == allowed


def test_every_source_has_words_for_messages():
    # A source added without them would fail its first error message with a KeyError.
    for source in Source:
        assert source.said and source.said != source.value, source
