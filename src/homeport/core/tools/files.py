"""File-area tools: private and shared folders of agents and teams.

The calling agent comes from the principal (a verified bearer token over HTTP, `--agent` on
stdio), never from an argument; the policy table decides in the pipeline's `open` step, for the
action the tool's declared effect names, before the executor touches a file.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field

from homeport.core.catalog import CATALOG, DELETE, READ, WRITE_IDEMPOTENT, Needs
from homeport.core.file_access import OpenArea
from homeport.core.pipeline import Call
from homeport.files import areas

__all__: list[str] = []

Json = dict[str, Any]
FolderArg = Annotated[str, Field(description="An agent id or team id of your organization (see list_folders).")]
ScopeArg = Annotated[Literal["private", "shared"], Field(description="The folder's private or shared area.")]
PathArg = Annotated[str, Field(description="A relative path inside the area, e.g. notes/plan.md.")]


@CATALOG.tool(
    "files",
    READ,
    "List the folders you may read: my_private, my_shared, team_private, team_shared, or org_shared (every "
    "shared folder of your organization you can read). Use folder_id and scope with the *_by_id tools.",
    needs=Needs.FILES,
)
def list_folders(
    call: Call, scope: Literal["my_private", "my_shared", "team_private", "team_shared", "org_shared"]
) -> Json:
    return {"folders": call.runtime.files.list_folders(call.request.agent, scope)}


@CATALOG.tool(
    "files", READ, "List the files in a folder's area (recursive=true for the whole tree).", needs=Needs.FILES
)
def list_files(call: Call, folder_id: FolderArg, scope: ScopeArg, path: str = "", recursive: bool = False) -> Json:
    return _area(call).run(areas.list_folder_entries, path, recursive=recursive)


@CATALOG.tool("files", READ, "Read a file from a folder's area; binary files come back base64.", needs=Needs.FILES)
def read_file_by_id(call: Call, folder_id: FolderArg, scope: ScopeArg, path: PathArg) -> Json:
    return _area(call).run(areas.read_file, path, max_bytes=call.runtime.files.max_bytes)


@CATALOG.tool(
    "files",
    WRITE_IDEMPOTENT,
    "Write a file (atomically, replacing it) in your own or your team's area; folders are created on first "
    "write. encoding=base64 for binary content.",
    needs=Needs.FILES,
)
def write_file_by_id(
    call: Call,
    folder_id: FolderArg,
    scope: ScopeArg,
    path: PathArg,
    content: str,
    encoding: Literal["utf-8", "base64"] = "utf-8",
) -> Json:
    return _area(call).run(
        areas.write_file, path, content=content, encoding=encoding, max_bytes=call.runtime.files.max_bytes
    )


@CATALOG.tool(
    "files", DELETE, "Delete a file (or an empty folder) from your own or your team's area.", needs=Needs.FILES
)
def delete_file_by_id(call: Call, folder_id: FolderArg, scope: ScopeArg, path: PathArg) -> Json:
    return _area(call).run(areas.delete_file, path)


@CATALOG.tool(
    "files", READ, 'Size, modification time and sha256 of a file; path "" is the area itself.', needs=Needs.FILES
)
def get_file_info_by_id(call: Call, folder_id: FolderArg, scope: ScopeArg, path: str) -> Json:
    return _area(call).run(areas.file_info, path)


def _area(call: Call) -> OpenArea:
    # Opened by the pipeline's `open` step for the tool's declared effect, after the policy allowed it.
    assert call.area is not None, "a file tool was declared without folder_id"
    return call.area
