"""The file-area executor: safe joins, symlinks, atomic writes, size caps, no policy inside."""

from __future__ import annotations

import base64
import hashlib
import os
import re
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from homeport.errors import FileAreaError
from homeport.files import areas
from homeport.files.areas import (
    area_exists,
    area_root,
    delete_file,
    file_info,
    list_folder_entries,
    read_file,
    resolve_path,
    write_file,
)

ORG, AGENT = "acme", "ada"


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    return tmp_path / "data"


def _root(data_dir: Path, scope: str = "private") -> Path:
    return area_root(data_dir, ORG, AGENT, scope)


def _files_under(path: Path) -> list[str]:
    return sorted(p.relative_to(path).as_posix() for p in path.rglob("*"))


# Reading and writing ----------------------------------------------------------------------


def test_a_written_file_reads_back_with_its_size_hash_and_time(data_dir: Path) -> None:
    written = write_file(data_dir, ORG, AGENT, "private", "notes/today.md", "héllo")
    assert written["created"] is True
    assert written["path"] == "notes/today.md"
    assert written["size"] == len("héllo".encode())
    assert (_root(data_dir) / "notes" / "today.md").read_text(encoding="utf-8") == "héllo"

    read = read_file(data_dir, ORG, AGENT, "private", "notes/today.md")
    assert read["content"] == "héllo"
    assert read["encoding"] == "utf-8"
    assert read["sha256"] == hashlib.sha256("héllo".encode()).hexdigest() == written["sha256"]
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", read["modified"])


def test_rewriting_a_file_replaces_it_and_says_it_was_not_created(data_dir: Path) -> None:
    write_file(data_dir, ORG, AGENT, "shared", "a.txt", "one")
    again = write_file(data_dir, ORG, AGENT, "shared", "./a.txt", "two")
    assert again["created"] is False
    assert read_file(data_dir, ORG, AGENT, "shared", "a.txt")["content"] == "two"


def test_binary_content_is_read_back_as_base64(data_dir: Path) -> None:
    blob = bytes(range(256))
    write_file(data_dir, ORG, AGENT, "private", "blob.bin", base64.b64encode(blob).decode(), encoding="base64")
    read = read_file(data_dir, ORG, AGENT, "private", "blob.bin")
    assert read["encoding"] == "base64"
    assert base64.b64decode(read["content"]) == blob
    assert write_file(data_dir, ORG, AGENT, "private", "raw.bin", blob)["size"] == 256


def test_invalid_base64_content_is_refused_naming_the_path(data_dir: Path) -> None:
    with pytest.raises(FileAreaError, match=r"'x.bin'.*not valid base64"):
        write_file(data_dir, ORG, AGENT, "private", "x.bin", "***", encoding="base64")


def test_a_missing_file_is_reported_as_not_existing(data_dir: Path) -> None:
    write_file(data_dir, ORG, AGENT, "private", "here.txt", "x")
    for operation in (read_file, file_info, delete_file):
        with pytest.raises(FileAreaError, match=r"'gone.txt' does not exist"):
            operation(data_dir, ORG, AGENT, "private", "gone.txt")


def test_file_info_describes_files_and_folders(data_dir: Path) -> None:
    write_file(data_dir, ORG, AGENT, "private", "docs/a.txt", "abc")
    info = file_info(data_dir, ORG, AGENT, "private", "docs/a.txt")
    assert info["size"] == 3
    assert info["is_dir"] is False
    assert info["sha256"] == hashlib.sha256(b"abc").hexdigest()
    folder = file_info(data_dir, ORG, AGENT, "private", "docs")
    assert (folder["is_dir"], folder["sha256"]) == (True, None)
    assert file_info(data_dir, ORG, AGENT, "private", "")["is_dir"] is True


def test_deleting_removes_files_and_empty_folders_only(data_dir: Path) -> None:
    write_file(data_dir, ORG, AGENT, "private", "d/a.txt", "x")
    with pytest.raises(FileAreaError, match=r"'d' .* not empty"):
        delete_file(data_dir, ORG, AGENT, "private", "d")
    assert delete_file(data_dir, ORG, AGENT, "private", "d/a.txt") == {
        "path": "d/a.txt",
        "deleted": True,
        "was_dir": False,
    }
    assert delete_file(data_dir, ORG, AGENT, "private", "d")["was_dir"] is True
    assert _files_under(_root(data_dir)) == []


def test_listing_shows_entries_sorted_and_an_uncreated_area_is_empty(data_dir: Path) -> None:
    assert list_folder_entries(data_dir, ORG, AGENT, "shared") == []
    assert not area_exists(data_dir, ORG, AGENT, "shared")
    write_file(data_dir, ORG, AGENT, "shared", "b.txt", "b")
    write_file(data_dir, ORG, AGENT, "shared", "a/c.txt", "c")
    assert area_exists(data_dir, ORG, AGENT, "shared")
    top = list_folder_entries(data_dir, ORG, AGENT, "shared")
    assert [(e["path"], e["is_dir"]) for e in top] == [("a", True), ("b.txt", False)]
    deep = list_folder_entries(data_dir, ORG, AGENT, "shared", recursive=True)
    assert [e["path"] for e in deep] == ["a", "a/c.txt", "b.txt"]
    assert [e["name"] for e in list_folder_entries(data_dir, ORG, AGENT, "shared", "a")] == ["c.txt"]
    with pytest.raises(FileAreaError, match=r"'b.txt' .* is a file"):
        list_folder_entries(data_dir, ORG, AGENT, "shared", "b.txt")


# Size cap and atomic writes ---------------------------------------------------------------


def test_content_over_the_cap_is_refused_with_its_size_and_the_cap(data_dir: Path) -> None:
    with pytest.raises(FileAreaError, match=r"'big.txt' is 11 bytes, over the 10-byte cap"):
        write_file(data_dir, ORG, AGENT, "private", "big.txt", "x" * 11, max_bytes=10)
    assert not (_root(data_dir) / "big.txt").exists()
    assert write_file(data_dir, ORG, AGENT, "private", "ok.txt", "x" * 10, max_bytes=10)["size"] == 10


def test_the_default_cap_is_ten_mebibytes_and_applies_to_reads_too(data_dir: Path) -> None:
    assert areas.DEFAULT_MAX_BYTES == 10 * 1024 * 1024
    write_file(data_dir, ORG, AGENT, "private", "f.txt", "x" * 100)
    with pytest.raises(FileAreaError, match="100 bytes, over the 50-byte cap"):
        read_file(data_dir, ORG, AGENT, "private", "f.txt", max_bytes=50)


def test_writes_leave_no_temp_files_behind(data_dir: Path) -> None:
    for i in range(5):
        write_file(data_dir, ORG, AGENT, "private", "dir/f.txt", f"version {i}")
    assert _files_under(_root(data_dir)) == ["dir", "dir/f.txt"]


def test_a_failed_write_keeps_the_old_content_and_leaves_no_temp_file(data_dir: Path, monkeypatch) -> None:
    write_file(data_dir, ORG, AGENT, "private", "f.txt", "old")

    def full_disk(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", full_disk)
    with pytest.raises(FileAreaError, match=r"cannot write 'f.txt'.*No space left on device"):
        write_file(data_dir, ORG, AGENT, "private", "f.txt", "new")
    monkeypatch.undo()
    assert read_file(data_dir, ORG, AGENT, "private", "f.txt")["content"] == "old"
    assert _files_under(_root(data_dir)) == ["f.txt"]


# Path safety ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("../escape.txt", "'..' component"),
        ("a/../../b", "'..' component"),
        ("a/..", "'..' component"),
        ("/etc/passwd", "is absolute"),
        ("C:/windows", "Windows drive"),
        ("a\\..\\b", "backslash"),
        ("nul\x00byte", "NUL or control"),
        ("line\nbreak", "NUL or control"),
        ("", "names no file"),
        ("./", "names no file"),
        ("\udcff", "not valid Unicode"),
        ("x" * 256, "longer than 255 bytes"),
    ],
)
def test_unsafe_paths_are_refused_naming_the_path(data_dir: Path, path: str, message: str) -> None:
    with pytest.raises(FileAreaError, match=re.escape(message)) as info:
        write_file(data_dir, ORG, AGENT, "private", path, "x")
    assert repr(path) in info.value.message
    assert not data_dir.exists() or _files_under(_root(data_dir)) == []


@pytest.mark.parametrize(
    ("org", "folder_id", "scope"),
    [("..", AGENT, "private"), (ORG, "a/b", "private"), (ORG, "", "shared"), (ORG, AGENT, "public")],
)
def test_ids_and_scopes_that_are_not_one_folder_name_are_refused(org: str, folder_id: str, scope: str) -> None:
    with pytest.raises(FileAreaError):
        area_root("/data", org, folder_id, scope)


@pytest.fixture(scope="module")
def area_with_links() -> Iterator[tuple[Path, Path]]:
    """An area holding a symlink out of it, a symlink to a sibling area, and one inside it."""
    with tempfile.TemporaryDirectory() as tmp:
        data_dir = Path(tmp) / "data"
        root = area_root(data_dir, ORG, AGENT, "private")
        (root / "inside").mkdir(parents=True)
        (root / "inside" / "file.txt").write_text("in", encoding="utf-8")
        outside = Path(tmp) / "outside"
        outside.mkdir()
        (outside / "secret.txt").write_text("secret", encoding="utf-8")
        (root / "link_out").symlink_to(outside)
        (root / "secret_link").symlink_to(outside / "secret.txt")
        (root / "link_in").symlink_to(root / "inside")
        (root / "file_link").symlink_to(root / "inside" / "file.txt")
        # 'private-evil' shares the string prefix of 'private' but is another directory.
        evil = root.parent / "private-evil"
        evil.mkdir()
        (root / "prefix_trick").symlink_to(evil)
        yield data_dir, root


_PIECES = [
    "..",
    ".",
    "",
    "a",
    "b",
    "link_out",
    "link_in",
    "prefix_trick",
    "inside",
    "/",
    "\x00",
    "é",
    "\\",
    "C:",
]


@settings(max_examples=300, deadline=None)
@given(
    path=st.one_of(
        st.text(max_size=40),
        st.lists(st.sampled_from(_PIECES), max_size=6).map("/".join),
        st.sampled_from(["a/../../b", "/abs", "..", "link_out/secret.txt", "prefix_trick/x", "\udc80"]),
    )
)
def test_any_path_either_is_refused_or_stays_inside_the_area(area_with_links: tuple[Path, Path], path: str) -> None:
    data_dir, root = area_with_links
    try:
        resolved = resolve_path(data_dir, ORG, AGENT, "private", path, allow_empty=True)
    except FileAreaError:
        return
    assert Path(os.path.realpath(resolved)).is_relative_to(os.path.realpath(root))


@pytest.mark.parametrize("path", ["link_out/secret.txt", "secret_link", "prefix_trick/x.txt"])
def test_a_symlink_out_of_the_area_is_refused_for_reading(area_with_links: tuple[Path, Path], path: str) -> None:
    data_dir, _ = area_with_links
    with pytest.raises(FileAreaError, match=f"{re.escape(repr(path))}.*outside the folder"):
        read_file(data_dir, ORG, AGENT, "private", path)


@pytest.mark.parametrize("path", ["link_out/new.txt", "secret_link", "prefix_trick/x.txt"])
def test_a_symlink_out_of_the_area_is_refused_for_writing(area_with_links: tuple[Path, Path], path: str) -> None:
    data_dir, root = area_with_links
    with pytest.raises(FileAreaError, match="symlink"):
        write_file(data_dir, ORG, AGENT, "private", path, "pwned")
    outside = root.parents[5] / "outside"
    assert sorted(p.name for p in outside.iterdir()) == ["secret.txt"]
    assert (outside / "secret.txt").read_text(encoding="utf-8") == "secret"


def test_a_symlink_inside_the_area_may_be_read_but_never_written_through(
    area_with_links: tuple[Path, Path],
) -> None:
    data_dir, root = area_with_links
    assert read_file(data_dir, ORG, AGENT, "private", "file_link")["content"] == "in"
    assert read_file(data_dir, ORG, AGENT, "private", "link_in/file.txt")["content"] == "in"
    with pytest.raises(FileAreaError, match=r"'file_link' .* is a symlink"):
        write_file(data_dir, ORG, AGENT, "private", "file_link", "changed")
    with pytest.raises(FileAreaError, match="goes through 'link_in', which is a symlink"):
        write_file(data_dir, ORG, AGENT, "private", "link_in/file.txt", "changed")
    with pytest.raises(FileAreaError, match="goes through 'link_in', which is a symlink"):
        delete_file(data_dir, ORG, AGENT, "private", "link_in/file.txt")
    with pytest.raises(FileAreaError, match="is a symlink"):
        delete_file(data_dir, ORG, AGENT, "private", "file_link")
    assert (root / "inside" / "file.txt").read_text(encoding="utf-8") == "in"
    assert (root / "file_link").is_symlink()


def test_an_area_whose_own_directory_is_a_symlink_is_refused(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    agent_dir = area_root(data_dir, ORG, AGENT, "private").parent
    agent_dir.parent.mkdir(parents=True)
    agent_dir.symlink_to(elsewhere)
    with pytest.raises(FileAreaError, match="reached through a symlink"):
        write_file(data_dir, ORG, AGENT, "private", "a.txt", "x")
    assert list(elsewhere.iterdir()) == []


# Other rules ------------------------------------------------------------------------------


def test_the_executor_runs_without_any_policy_for_other_callers(data_dir: Path) -> None:
    """A maintenance job (no agent, no policy) copies an agent's private note to a team area."""
    write_file(data_dir, ORG, "ada", "private", "report.md", "# Q3")
    note = read_file(data_dir, ORG, "ada", "private", "report.md")
    write_file(data_dir, ORG, "platform", "shared", "archive/ada-report.md", note["content"])
    copied = read_file(data_dir, ORG, "platform", "shared", "archive/ada-report.md")
    assert copied["sha256"] == note["sha256"]
    assert (data_dir / "organizations/acme/workspaces/platform/shared/archive/ada-report.md").is_file()


def test_exports_are_pinned() -> None:
    assert sorted(areas.__all__) == [
        "DEFAULT_MAX_BYTES",
        "MAX_NAME_BYTES",
        "MAX_PATH_BYTES",
        "area_exists",
        "area_root",
        "delete_file",
        "file_info",
        "list_folder_entries",
        "read_file",
        "resolve_path",
        "write_file",
    ]
