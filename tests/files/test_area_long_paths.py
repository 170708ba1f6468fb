"""Paths near the OS limits and odd things on disk: refused on write past 4,096 bytes (or a 255-byte name),
listing never breaks, and nothing on disk makes a call hang."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from homeport.errors import FileAreaError
from homeport.files.areas import (
    MAX_NAME_BYTES,
    MAX_PATH_BYTES,
    area_root,
    file_info,
    list_folder_entries,
    read_file,
    write_file,
)

ORG, AGENT = "acme", "ada"


def _long_path(total: int, name_len: int = 250) -> str:
    parts, size = [], 0
    while size < total:
        parts.append(f"d{len(parts):03d}".ljust(name_len, "x"))
        size += name_len + 1
    return "/".join(parts)


def test_the_limits_are_the_posix_ones() -> None:
    assert (MAX_PATH_BYTES, MAX_NAME_BYTES) == (4096, 255)


def test_a_path_over_4096_bytes_is_refused_on_write_naming_the_limit(tmp_path: Path) -> None:
    path = _long_path(5000)
    with pytest.raises(FileAreaError) as info:
        write_file(tmp_path, ORG, AGENT, "private", path, "x")
    assert "4,096" in info.value.message and info.value.code == "file_area_error"
    assert not area_root(tmp_path, ORG, AGENT, "private").exists()


def test_multibyte_names_count_in_bytes(tmp_path: Path) -> None:
    name = "é" * 128  # 128 characters, 256 bytes
    with pytest.raises(FileAreaError, match="longer than 255 bytes"):
        write_file(tmp_path, ORG, AGENT, "private", name, "x")


def test_a_path_just_under_the_limit_is_written_read_and_listed(tmp_path: Path) -> None:
    path = _long_path(3900)
    assert len(path.encode()) <= MAX_PATH_BYTES
    write_file(tmp_path, ORG, AGENT, "private", path, "deep")
    assert read_file(tmp_path, ORG, AGENT, "private", path)["content"] == "deep"
    assert file_info(tmp_path, ORG, AGENT, "private", path)["size"] == 4
    entries = list_folder_entries(tmp_path, ORG, AGENT, "private", "", recursive=True)
    assert entries[-1]["path"] == path


def test_listing_never_breaks_on_a_tree_deeper_than_the_os_path_limit(tmp_path: Path) -> None:
    """Made on disk by someone else, past what the tools would write."""
    root = area_root(tmp_path, ORG, AGENT, "private")
    root.mkdir(parents=True)
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    names = []
    for i in range(40):  # 40 x 251 bytes: past PATH_MAX for absolute and relative paths
        name = f"n{i:02d}".ljust(250, "y")
        os.mkdir(name, dir_fd=fd)
        child = os.open(name, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
        os.close(fd)
        fd = child
        names.append(name)
    os.close(os.open("leaf.txt", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd))
    os.close(fd)
    entries = list_folder_entries(tmp_path, ORG, AGENT, "private", "", recursive=True)
    assert [e["path"] for e in entries][-1] == "/".join([*names, "leaf.txt"])
    assert len(entries) == 41


def test_a_fifo_in_an_area_is_refused_at_once_instead_of_blocking_the_server(tmp_path: Path) -> None:
    root = area_root(tmp_path, ORG, AGENT, "private")
    root.mkdir(parents=True)
    os.mkfifo(root / "pipe")
    with pytest.raises(FileAreaError, match="not a regular file"):
        read_file(tmp_path, ORG, AGENT, "private", "pipe")  # opened without O_NONBLOCK, this waited forever
    assert file_info(tmp_path, ORG, AGENT, "private", "pipe")["sha256"] is None
    assert [e["name"] for e in list_folder_entries(tmp_path, ORG, AGENT, "private")] == ["pipe"]
