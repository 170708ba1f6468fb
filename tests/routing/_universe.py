"""A generated tree of projects, the routing rules stated independently of the code, and a look into every store.

The tree has the shapes that broke routing in other servers and in ours: nested git repositories
under a parent that holds `.homeport/`, siblings whose names share a prefix (`app`, `app-evil`,
`app2`), symlinks into a project and out of the allowed root, a directory that only contains
projects, the data directory (file areas), the home directory. The oracle below restates the
rules of the README from scratch, so that a change to the resolver cannot change both sides.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from hypothesis import strategies as st

# name -> path under the base directory
SLOTS: dict[str, str] = {
    "allowed": "allowed",
    "app": "allowed/app",
    "app_sub": "allowed/app/sub",
    "app_deep": "allowed/app/sub/deep",
    "app_evil": "allowed/app-evil",
    "app2": "allowed/app2",
    "mono": "allowed/mono",
    "mono_a": "allowed/mono/pkg-a",
    "mono_b": "allowed/mono/pkg-b",
    "plain": "allowed/plain",
    "plain_x": "allowed/plain/x",
    "data": "allowed/data",
    "data_area": "allowed/data/organizations/acme/workspaces/ada/private",
    "outside": "outside",
    "outside_proj": "outside/proj",
    "home": "home",
}
# symlink name -> (path of the link, slot it points at)
LINKS: dict[str, tuple[str, str]] = {
    "link_app": ("allowed/link-app", "app"),
    "link_out": ("allowed/link-out", "outside_proj"),
}
MISSING = "allowed/does-not-exist"
# Slots that may carry a project marker in a generated tree.
MARKABLE = (
    "allowed",
    "app",
    "app_sub",
    "app_deep",
    "app_evil",
    "app2",
    "mono",
    "mono_a",
    "mono_b",
    "plain_x",
    "data_area",
    "outside_proj",
)
MARKERS = (None, "git", "git-file", "homeport", "both")
VALUE_FORMS = ("plain", "trailing_slash", "dot_segment", "uri", "relative", "missing", "remote")
WORKSPACE_ALIASES = ("workspace_id", "projectRoot", "project_root", "project_path", "workspace_root", "cwd")
IMPLICIT_SOURCES = {"roots", "client_env", "cwd"}
_DENIED_EXACT = {"/", "/tmp", "/var", "/usr", "/home", "/opt", "/srv", "/mnt", "/media"}


def tree_specs() -> st.SearchStrategy[dict[str, str | None]]:
    return st.fixed_dictionaries({slot: st.sampled_from(MARKERS) for slot in MARKABLE})


@dataclass
class Universe:
    base: Path
    markers: dict[str, str | None]

    @classmethod
    def build(cls, markers: dict[str, str | None]) -> Universe:
        base = Path(os.path.realpath(tempfile.mkdtemp(prefix="hp-routing-")))
        for rel in SLOTS.values():
            (base / rel).mkdir(parents=True, exist_ok=True)
        for link, target in LINKS.values():
            (base / link).symlink_to(base / SLOTS[target], target_is_directory=True)
        for slot, marker in markers.items():
            root = base / SLOTS[slot]
            if marker in ("git", "both"):
                (root / ".git").mkdir()
            if marker == "git-file":  # a git worktree or submodule: .git is a file
                (root / ".git").write_text("gitdir: /elsewhere/.git/worktrees/x\n")
            if marker in ("homeport", "both"):
                (root / ".homeport").mkdir()
        return cls(base=base, markers=markers)

    def remove(self) -> None:
        shutil.rmtree(self.base, ignore_errors=True)

    def path(self, slot: str) -> Path:
        if slot in LINKS:
            return self.base / LINKS[slot][0]
        if slot == "missing":
            return self.base / MISSING
        return self.base / SLOTS[slot]

    @property
    def home(self) -> Path:
        return self.path("home")

    @property
    def data_dir(self) -> Path:
        return self.path("data")

    def value(self, slot: str, form: str) -> str:
        """The text a client sends for `slot`, written in `form`."""
        p = self.path(slot)
        if form == "plain":
            return str(p)
        if form == "trailing_slash":
            return str(p) + "/"
        if form == "dot_segment":
            return str(p.parent / "." / p.name)
        if form == "uri":
            return p.as_uri()
        if form == "relative":
            return os.path.relpath(p, self.base)
        if form == "missing":
            return str(p / "nope")
        if form == "remote":
            return f"vscode-remote://ssh-remote+box{p}"
        raise AssertionError(form)

    # ------------------------------------------------------------------ what is on disk

    def store_files(self) -> Iterator[Path]:
        for dirpath, dirnames, filenames in os.walk(self.base):  # never follows symlinks
            if os.path.basename(dirpath) == ".homeport" and "homeport.db" in filenames:
                yield Path(dirpath) / "homeport.db"
            dirnames[:] = [d for d in dirnames if d != ".git"]

    def stores_holding(self, key: str) -> set[Path]:
        """Workspace roots whose store holds custom data `probe/key`, read straight from the files."""
        found: set[Path] = set()
        for db in self.store_files():
            conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
            try:
                row = conn.execute("SELECT 1 FROM custom_data WHERE category = 'probe' AND key = ?", (key,)).fetchone()
            except sqlite3.OperationalError:
                row = None  # a store created but without the table yet
            finally:
                conn.close()
            if row:
                found.add(db.parent.parent)
        return found


# ---------------------------------------------------------------------- the rules, restated


def is_project(path: Path) -> bool:
    marker = path / ".homeport"
    return (marker.is_dir() and not marker.is_symlink()) or os.path.lexists(path / ".git")


def is_denied(path: Path, home: Path) -> bool:
    return str(path) in _DENIED_EXACT or path == home


def within(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def nearest_project(directory: Path, ceilings: Sequence[Path], home: Path) -> Path:
    """The nearest ancestor-or-self that is a project, never above the deepest ceiling that contains it."""
    chain = [directory, *directory.parents]
    containing = [c for c in ceilings if within(directory, c)]
    if containing:
        deepest = max(containing, key=lambda c: len(c.parts))
        chain = chain[: chain.index(deepest) + 1]
    for candidate in chain:
        if not is_denied(candidate, home) and is_project(candidate):
            return candidate
    return directory


def projects_below(root: Path, depth: int = 3) -> list[Path]:
    found: list[Path] = []
    for dirpath, dirnames, _ in os.walk(root):
        here = Path(dirpath)
        if here != root and (os.path.lexists(here / ".homeport") or os.path.lexists(here / ".git")):
            found.append(here)
            dirnames[:] = []
            continue
        if len(here.relative_to(root).parts) >= depth:
            dirnames[:] = []
        dirnames[:] = [d for d in dirnames if d not in (".git", ".homeport", "node_modules")]
    return found


@dataclass
class Server:
    transport: str  # "stdio" | "http"
    allow: tuple[str, ...]  # slots
    config: tuple[str, str] | None  # (slot, form)
    require_explicit: bool
    cwd: str  # slot (stdio)
    env: str | None  # slot for CLAUDE_PROJECT_DIR (stdio)
    # HTTP under --auth with access rules: the slots whose trees (`slot/**`) the client's principal may
    # write; None: no auth. A workspace outside them is a 403 when the request's header or query
    # chooses it, and a `workspace_access_denied` tool error when the call names it.
    grants: tuple[str, ...] | None = None


@dataclass
class ClientSpec:
    era: str  # "auto" (2026-07-28) | "legacy" (2025-11-25)
    roots: tuple[str, ...] | None  # slots (or "missing"); None = capability not declared
    # Over HTTP, the transport the client speaks: Streamable HTTP at /mcp, or the legacy HTTP+SSE at
    # /sse. The rules are the same for both, so the model does not look at it; the driver does.
    wire: str = "streamable"  # "streamable" | "sse"


@dataclass
class Call:
    op: str  # "write" | "read" | "use"
    argument: tuple[str, str] | None = None  # (slot, form)
    handle: int | None = None  # index of an earlier use_workspace handle
    alias: tuple[str, str, str] | None = None  # (misnamed argument, slot, form)
    header: tuple[str, str] | None = None
    query: tuple[str, str] | None = None


@dataclass
class Expect:
    root: Path | None = None
    source: str | None = None
    codes: set[str] = field(default_factory=set)  # refused with one of these codes when root is None
    forbidden: bool = False  # answered HTTP 403 before the MCP layer (the request chose a forbidden workspace)


@dataclass
class State:
    """What the client built up so far: handles (root each) and the session default (2025 era)."""

    handles: list[tuple[str, Path]] = field(default_factory=list)
    session: Path | None = None


class Oracle:
    def __init__(self, universe: Universe, server: Server, client: ClientSpec) -> None:
        self.u, self.server, self.client = universe, server, client
        self.allow = [universe.path(s) for s in server.allow]
        self.declared = self._declared_roots()

    def _declared_roots(self) -> list[Path] | None:
        """The client's roots as a bound: None when not declared or declared empty (no bound)."""
        if self.client.roots is None or not self.client.roots:
            return None
        return [Path(os.path.realpath(self.u.path(s))) for s in self.client.roots if self.u.path(s).is_dir()]

    def expect(self, call: Call, state: State) -> Expect:
        if self._forbidden_by_request(call):
            return Expect(forbidden=True)
        expect = self._expect_guarded(call, state)
        if expect.root is not None and not self.may_use(expect.root):
            return Expect(codes={"workspace_access_denied"})
        return expect

    # ------------------------------------------------------------------ access (HTTP under --auth)

    def may_use(self, path: Path) -> bool:
        grants = self.server.grants
        return grants is None or any(within(path, self.u.path(g)) for g in grants)

    def _forbidden_by_request(self, call: Call) -> bool:
        """Whether the header or the query chooses a workspace the principal may not use: each is
        checked at the root the server would resolve it to without the client's roots (it does not
        know them yet), or, when that fails, at the canonical path it names, existing or not."""
        if self.server.grants is None or self.server.transport != "http":
            return False
        for selector in (call.header, call.query):
            if selector is None:
                continue
            path = _decoded(self.u.value(*selector))
            if path is None:
                continue  # not a path: the call says what is wrong
            real = Path(os.path.realpath(path))
            # A value outside the bounds (the data directory included) is refused before it is resolved.
            reachable = real.is_dir() and self._passes_guards(real)
            root = nearest_project(real, self.allow, self.u.home) if reachable else None
            if root is None or not self._passes_guards(root):
                root = real
            if not self.may_use(root):
                return True
        return False

    def _passes_guards(self, root: Path) -> bool:
        u = self.u
        if is_denied(root, u.home) or within(root, u.data_dir):
            return False
        return not self.allow or any(within(root, a) for a in self.allow)

    def _within_bounds(self, place: Path) -> bool:
        """Inside the allowed and the client's roots, not denied, not Homeport's data."""
        if self.allow and not any(within(place, a) for a in self.allow):
            return False
        if self.declared is not None and not any(within(place, r) for r in self.declared):
            return False
        return not (is_denied(place, self.u.home) or within(place, self.u.data_dir))

    def _expect_guarded(self, call: Call, state: State) -> Expect:
        if call.alias is not None:
            return Expect(codes={"unknown_argument"})
        write = call.op == "write"
        s, u = self.server, self.u
        picked = self._pick_source(call, state)
        if isinstance(picked, Expect):
            return picked
        source, value = picked
        codes: set[str] = set()
        if isinstance(value, Path):  # a handle's root, or a root chosen from the client's roots
            root = value
        else:
            # Outside the caller's bounds (Homeport's data directory included) a value is refused before
            # anything is told of what is (not) there (issue 22, finding 17), even a directory whose
            # project root lies above it.
            path = _decoded(value)
            if path is not None and not self._within_bounds(Path(os.path.realpath(path))):
                return Expect(codes={"workspace_denied"})
            directory = self._canonical(value)
            if directory is None:
                return Expect(codes={"invalid_workspace"})
            root = nearest_project(directory, [*self.allow, *(self.declared or [])], u.home)
        if is_denied(root, u.home):
            codes.add("workspace_denied")
        if within(root, u.data_dir):
            codes.add("workspace_denied")
        if self.allow and not any(within(root, a) for a in self.allow):
            codes.add("workspace_denied")
        if self.declared is not None and not any(within(root, r) for r in self.declared):
            codes.add("workspace_denied")
        if write:
            if s.require_explicit and source in IMPLICIT_SOURCES:
                codes.add("explicit_workspace_required")
            if not is_project(root) and projects_below(root):
                codes.add("workspace_contains_projects")
        if codes:
            return Expect(codes=codes)
        return Expect(root=root, source=source)

    def _pick_source(self, call: Call, state: State) -> tuple[str, str | Path] | Expect:
        s, u = self.server, self.u
        if call.handle is not None:
            return "argument", state.handles[call.handle][1]
        if call.argument is not None:
            return "argument", u.value(*call.argument)
        if call.op == "use":
            raise AssertionError("use_workspace always has an argument")
        if s.transport == "http" and call.header is not None:
            return "header", u.value(*call.header)
        if s.transport == "http" and call.query is not None:
            return "query", u.value(*call.query)
        if state.session is not None:
            return "session", state.session
        if s.config is not None:
            return "config", u.value(*s.config)
        if self.declared:
            if len(self.declared) == 1:
                return "roots", nearest_root(self.declared[0], self)
            cwd = Path(os.path.realpath(u.path(s.cwd)))
            containing = [r for r in self.declared if within(cwd, r)] if s.transport == "stdio" else []
            if containing:
                return "roots", nearest_root(max(containing, key=lambda r: len(r.parts)), self)
            return Expect(codes={"ambiguous_workspace"})
        if self.declared is not None:  # declared, but not one of them is a local directory
            return Expect(codes={"workspace_denied", "workspace_unresolved"})
        if s.transport == "stdio":
            if s.env is not None:
                return "client_env", str(u.path(s.env))
            cwd = Path(os.path.realpath(u.path(s.cwd)))
            if not is_denied(cwd, u.home):
                return "cwd", str(cwd)
        return Expect(codes={"workspace_unresolved"})

    def _canonical(self, value: str) -> Path | None:
        path = _decoded(value)
        if path is None:
            return None
        real = Path(os.path.realpath(path))
        return real if real.is_dir() else None


def _decoded(value: str) -> Path | None:
    """The absolute path a value names (a path or a file:// URI), or None when it names none."""
    if value.startswith("file://"):
        from urllib.parse import unquote, urlparse

        value = unquote(urlparse(value).path)
    return Path(value) if value.startswith("/") else None


def nearest_root(root: Path, oracle: Oracle) -> Path:
    """A root chosen from the client's roots goes through the same project search as any value."""
    return nearest_project(root, [*oracle.allow, *(oracle.declared or [])], oracle.u.home)
