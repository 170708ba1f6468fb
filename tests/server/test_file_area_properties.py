"""Any caller, folder, scope, action and path: allowed by the table and confined to the area, or refused.

The oracle is the policy table (`homeport.policy.file_areas.decide`) for who may act, and a plain
model of the disk (``realpath``/``lstat`` in the test, where nothing races) for what a path names.
Each example runs on a fresh world holding symlinks out of the area, to another area and inside it,
and checks the whole tree before and after: nothing outside the target area ever changes, and what
a call returns comes from inside it. It runs through the tool pipeline (the MCP tools' code path)
and through the executor alone.
"""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from homeport.core import ServeSettings, build_runtime
from homeport.core.catalog import CATALOG
from homeport.core.pipeline import CallPipeline, LocalRequest
from homeport.errors import FileAreaError, HomeportError, PermissionDeniedError
from homeport.files import areas
from homeport.files.directory import DirectoryFile
from homeport.policy import file_areas as policy

ORG = "acme"
ACTIONS = ("read", "list", "info", "write", "delete")
CALLERS = ("ada", "bob", "carl", "lee", "dan", "zed", "ghost", None)
FOLDERS = ("ada", "bob", "carl", "lee", "platform", "data", "zed", "nobody")
TOOL = {
    "read": "read_file_by_id",
    "list": "list_files",
    "info": "get_file_info_by_id",
    "write": "write_file_by_id",
    "delete": "delete_file_by_id",
}
EXECUTOR = {
    "read": areas.read_file,
    "list": areas.list_folder_entries,
    "info": areas.file_info,
    "write": areas.write_file,
    "delete": areas.delete_file,
}
CONTENT = "written by the test"


DIRECTORY = """
[organizations.acme]
teams = ["platform", "data"]
leadership = ["lee"]
[organizations.acme.agents.ada]
team = "platform"
[organizations.acme.agents.bob]
team = "platform"
[organizations.acme.agents.carl]
team = "data"
[organizations.acme.agents.lee]
[organizations.acme.agents.dan]
[organizations.other.agents.zed]
"""


def _area(data: Path, folder: str, scope: str, org: str = ORG) -> Path:
    return data / "organizations" / org / "workspaces" / folder / scope


def build_world(base: Path) -> Path:
    """The directory, a few areas with files, and symlinks of every kind inside ada's private area."""
    data = base / "data"
    data.mkdir()
    (data / "directory.toml").write_text(DIRECTORY, encoding="utf-8")
    for folder, scope, org in (
        ("ada", "private", ORG),
        ("ada", "shared", ORG),
        ("bob", "private", ORG),
        ("bob", "shared", ORG),
        ("platform", "shared", ORG),
        ("carl", "shared", ORG),
        ("zed", "private", "other"),
    ):
        area = _area(data, folder, scope, org)
        area.mkdir(parents=True)
        (area / "note.md").write_text(f"AREA {org}/{folder}/{scope}", encoding="utf-8")
    outside = base / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("OUTSIDE", encoding="utf-8")
    ada = _area(data, "ada", "private")
    (ada / "inside").mkdir()
    (ada / "inside" / "file.txt").write_text("AREA acme/ada/private inside", encoding="utf-8")
    (ada / "link_out").symlink_to(outside)
    (ada / "secret_link").symlink_to(outside / "secret.txt")
    (ada / "link_other").symlink_to(_area(data, "bob", "private"))
    (ada / "link_other_rel").symlink_to("../../bob/private")
    (ada / "link_in").symlink_to("inside")
    (ada / "link_in_abs").symlink_to(ada / "inside")
    (ada / "file_link").symlink_to("inside/file.txt")
    (ada / "loop").symlink_to("loop")
    return data


def snapshot(base: Path) -> dict[str, Any]:
    """Every entry under `base`: a symlink's target, a file's bytes, or 'dir'."""
    found: dict[str, Any] = {}
    for directory, dirs, files in os.walk(base):
        for name in dirs + files:
            path = Path(directory, name)
            rel = path.relative_to(base).as_posix()
            mode = os.lstat(path).st_mode
            if stat.S_ISLNK(mode):
                found[rel] = ("link", os.readlink(path))
            elif stat.S_ISDIR(mode):
                found[rel] = "dir"
            else:
                found[rel] = path.read_bytes()
    return found


_PIECES = [
    "..",
    ".",
    "",
    "inside",
    "file.txt",
    "note.md",
    "new.md",
    "link_out",
    "secret_link",
    "link_other",
    "link_other_rel",
    "link_in",
    "link_in_abs",
    "file_link",
    "loop",
    "%2e%2e",
    "..%2f",
    "%2F",
    "%00",
    "a\\b",
    "\\",
    "\x00",
    "C:",
    "é",
    "x" * 256,
    "y" * 255,
]
PATHS = st.one_of(
    st.lists(st.sampled_from(_PIECES), max_size=5).map("/".join),
    st.tuples(st.sampled_from(["/", "./", "//", ""]), st.lists(st.sampled_from(_PIECES), min_size=1, max_size=4)).map(
        lambda t: t[0] + "/".join(t[1])
    ),
    st.sampled_from(["/".join(["z" * 200] * 21), "/".join(["z" * 200] * 20) + "/f", "note.md", "inside/file.txt"]),
    st.text(max_size=12),
)


def _parts(path: str) -> tuple[str, ...] | None:
    """The model of `parts_of`: the names, or None for a path that must be refused as malformed."""
    if any(c < " " or c == "\x7f" for c in path) or "\\" in path or path.startswith("/"):
        return None
    if len(path) >= 2 and path[1] == ":" and path[0].isascii() and path[0].isalpha():
        return None
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        return None
    parts = tuple(p for p in path.split("/") if p not in ("", "."))
    if ".." in parts or any(len(p.encode("utf-8")) > 255 for p in parts):
        return None
    return parts


def expected_outcome(
    data: Path, folder: str, scope: str, action: str, path: str, org: str = ORG
) -> tuple[str, Path | None]:
    """('ok', the real path the call names) or ('refused', None), from the disk as it is now."""
    parts = _parts(path)
    if parts is None or (not parts and action in ("read", "write", "delete")):
        return "refused", None
    area = _area(data, folder, scope, org)
    real_area = Path(os.path.realpath(area))
    if action == "write":
        if len("/".join(parts).encode()) > areas.MAX_PATH_BYTES:
            return "refused", None
        here = area
        for i, name in enumerate(parts):
            here = here / name
            if not os.path.lexists(here):
                return "ok", area.joinpath(*parts)
            mode = os.lstat(here).st_mode
            last = i == len(parts) - 1
            if stat.S_ISLNK(mode) or (not last and not stat.S_ISDIR(mode)) or (last and stat.S_ISDIR(mode)):
                return "refused", None
        return "ok", area.joinpath(*parts)
    if action == "delete":
        target = area.joinpath(*parts)
        if any(os.path.islink(area.joinpath(*parts[:i])) for i in range(1, len(parts))):
            return "refused", None
        if not os.path.lexists(target) or os.path.islink(target):
            return "refused", None
        if target.is_dir() and any(target.iterdir()):
            return "refused", None
        return "ok", target
    if action == "list" and not parts and not os.path.lexists(area):
        return "ok", area
    real = Path(os.path.realpath(area.joinpath(*parts)))
    if not real.is_relative_to(real_area) or not os.path.exists(real):
        return "refused", None
    if action == "read" and not real.is_file():
        return "refused", None
    if action == "list" and not real.is_dir():
        return "refused", None
    return "ok", real


def allowed_by_table(data: Path, caller: str | None, folder: str, scope: str, action: str) -> tuple[str, str]:
    """('ok' or the code the policy step refuses with, the caller's organization)."""
    directory = DirectoryFile(data / "directory.toml").load()
    if caller is None:
        return "permission_denied", ""
    try:
        ref = directory.agent(caller)
    except HomeportError:
        return "permission_denied", ""
    try:
        owner = directory.folder_owner(ref.org, folder)
    except FileAreaError:
        return "file_area_error", ref.org
    exists = os.path.isdir(_area(data, folder, scope, ref.org))
    table_action = {"list": "read", "info": "read"}.get(action, action)
    if table_action == "write" and not exists:
        table_action = "create"
    decision = policy.decide(
        policy.Caller(ref.agent_id, ref.org, ref.team, ref.is_leadership),
        policy.Folder(owner.kind, folder, ref.org, owner.team if owner.kind == "agent" else None, exists),
        scope,
        table_action,
    )
    return ("ok" if decision.allowed else "permission_denied"), ref.org


def run_tool(data: Path, caller: str | None, folder: str, scope: str, action: str, path: str) -> dict[str, Any]:
    settings = ServeSettings(data_dir=data, directory_file=data / "directory.toml", cwd=Path("/"), home=data.parent)
    runtime = build_runtime(settings)
    try:
        spec = CATALOG[TOOL[action]]
        arguments: dict[str, Any] = {"folder_id": folder, "scope": scope, "path": path}
        if action == "write":
            arguments["content"] = CONTENT
        if action == "list":
            arguments["recursive"] = True
        return CallPipeline(runtime).call_blocking(spec, arguments, LocalRequest(agent=caller))
    finally:
        runtime.close()


def run_executor(data: Path, folder: str, scope: str, action: str, path: str) -> Any:
    extra: dict[str, Any] = {"content": CONTENT} if action == "write" else {}
    if action == "list":
        extra["recursive"] = True
    return EXECUTOR[action](data, ORG, folder, scope, path, **extra)


def check_confined(
    base: Path,
    before: dict[str, Any],
    data: Path,
    folder: str,
    scope: str,
    action: str,
    target: Path | None,
    org: str = ORG,
) -> None:
    after = snapshot(base)
    changed = {k for k in before.keys() | after.keys() if before.get(k) != after.get(k)}
    if action not in ("write", "delete") or target is None:
        assert changed == set(), f"{action} changed {sorted(changed)}"
        return
    area = _area(data, folder, scope, org).relative_to(base).as_posix()
    rel = target.relative_to(base).as_posix()
    for key in changed:
        # Only the target, the folders a write creates on its way, and the area's own folders.
        assert key == rel or rel.startswith(key + "/"), f"{action} of {rel} changed {key}"
        assert key.startswith(area + "/") or area.startswith(key), key
    if action == "write":
        assert after[rel] == CONTENT.encode()
    else:
        assert rel not in after


def check_result(base: Path, action: str, target: Path, result: Any) -> None:
    """What a successful call returns comes from inside its area."""
    text = repr(result)
    assert "OUTSIDE" not in text
    if action == "read":
        assert result["content"] == target.read_text(encoding="utf-8")
    if action == "list":
        area = Path(os.path.realpath(_area_of(base, target)))
        for entry in result["entries"]:
            # Entry paths are relative to the area's own directory, and name what is there.
            assert os.path.lexists(area / entry["path"]), entry


def _area_of(base: Path, target: Path) -> Path:
    rel = target.relative_to(base).parts
    return base.joinpath(*rel[: rel.index("workspaces") + 3])


CASES = {
    "caller": st.sampled_from(CALLERS),
    "folder": st.sampled_from(FOLDERS),
    "scope": st.sampled_from(policy.SCOPES),
    "action": st.sampled_from(ACTIONS),
    "path": PATHS,
}


@settings(deadline=None)
@given(**CASES)
def test_every_tool_call_is_allowed_by_the_table_and_confined_to_its_area_or_refused(
    caller: str | None, folder: str, scope: str, action: str, path: str
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        data = build_world(base)
        before = snapshot(base)
        verdict, org = allowed_by_table(data, caller, folder, scope, action)
        outcome, target = ("", None)
        if verdict == "ok":
            outcome, target = expected_outcome(data, folder, scope, action, path, org)
        try:
            result = run_tool(data, caller, folder, scope, action, path)
        except HomeportError as exc:
            if verdict != "ok":
                assert exc.code == verdict, (exc.code, exc.message)
            else:
                assert outcome == "refused", f"expected success on {target}, got {exc.code}: {exc.message}"
                assert exc.code == "file_area_error", exc.message
            check_confined(base, before, data, folder, scope, action, None)
            return
        assert verdict == "ok" and outcome == "ok", (verdict, outcome, result)
        assert result["area"]["folder_id"] == folder and result["area"]["scope"] == scope
        assert target is not None
        check_confined(base, before, data, folder, scope, action, target, org)
        check_result(base, action, target, result)


@settings(deadline=None)
@given(
    folder=st.sampled_from(("ada", "bob", "platform", "lee")), scope=CASES["scope"], action=CASES["action"], path=PATHS
)
def test_every_executor_call_is_confined_to_its_area_or_refused(
    folder: str, scope: str, action: str, path: str
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        data = build_world(base)
        before = snapshot(base)
        outcome, target = expected_outcome(data, folder, scope, action, path)
        try:
            result = run_executor(data, folder, scope, action, path)
        except FileAreaError:
            assert outcome == "refused", f"expected success on {target}"
            check_confined(base, before, data, folder, scope, action, None)
            return
        assert outcome == "ok", (path, result)
        assert target is not None
        check_confined(base, before, data, folder, scope, action, target)
        check_result(base, action, target, {"entries": result} if isinstance(result, list) else result)


@pytest.mark.parametrize(
    ("path", "content"),
    [
        ("link_other/note.md", None),
        ("link_other_rel/note.md", None),
        ("link_in/file.txt", "AREA acme/ada/private inside"),
        ("link_in_abs/file.txt", "AREA acme/ada/private inside"),
        ("file_link", "AREA acme/ada/private inside"),
        ("%2e%2e/x", None),
    ],
)
def test_links_to_another_area_are_refused_and_links_inside_are_read(tmp_path: Path, path: str, content) -> None:
    data = build_world(tmp_path)
    if content is None:
        with pytest.raises(FileAreaError):
            areas.read_file(data, ORG, "ada", "private", path)
    else:
        assert areas.read_file(data, ORG, "ada", "private", path)["content"] == content


def test_percent_encoded_names_are_literal_names_inside_the_area(tmp_path: Path) -> None:
    data = build_world(tmp_path)
    areas.write_file(data, ORG, "ada", "private", "%2e%2e/%2F", "x")
    assert (_area(data, "ada", "private") / "%2e%2e" / "%2F").read_text(encoding="utf-8") == "x"


def test_a_caller_without_an_agent_is_refused_before_anything(tmp_path: Path) -> None:
    data = build_world(tmp_path)
    with pytest.raises(PermissionDeniedError):
        run_tool(data, None, "ada", "private", "read", "note.md")
