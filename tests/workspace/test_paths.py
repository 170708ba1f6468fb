"""Decoding candidates and comparing paths: the parts every source shares."""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import quote

import pytest
from hypothesis import given
from hypothesis import strategies as st

from homeport.errors import InvalidWorkspaceError
from homeport.workspace import canonical_directory, decode_candidate, is_within, within_any

segment = st.text(
    alphabet=st.characters(blacklist_characters="/\x00", blacklist_categories=("Cs",)), min_size=1, max_size=12
).filter(lambda s: s not in (".", ".."))


def test_file_uri_is_percent_decoded():
    assert decode_candidate("file:///home/ada/my%20project/%C3%A9t%C3%A9") == Path("/home/ada/my project/été")


def test_file_uri_with_localhost_host_is_local():
    assert decode_candidate("file://localhost/srv/app") == Path("/srv/app")


@pytest.mark.parametrize("value", ["vscode-remote://ssh-remote+box/home/a", "http://example.com/x", "s3://b/k"])
def test_non_file_schemes_are_rejected_with_the_scheme_named(value):
    with pytest.raises(InvalidWorkspaceError, match=value.split(":")[0]):
        decode_candidate(value)


def test_file_uri_naming_another_host_is_rejected():
    with pytest.raises(InvalidWorkspaceError, match="host 'fileserver'"):
        decode_candidate("file://fileserver/share")


@pytest.mark.parametrize("value", ["/tmp/a\x00b", "file:///tmp/a%00b"])
def test_nul_bytes_are_rejected(value):
    with pytest.raises(InvalidWorkspaceError, match="NUL"):
        decode_candidate(value)


@pytest.mark.parametrize("value", ["project", "./project", "../project", "~/project", ""])
def test_relative_or_empty_workspace_is_rejected_with_hint(value):
    with pytest.raises(InvalidWorkspaceError, match="absolute path"):
        decode_candidate(value)


def test_missing_directory_is_named_in_the_error(tmp_path):
    with pytest.raises(InvalidWorkspaceError, match="does not exist") as info:
        canonical_directory(str(tmp_path / "nope"))
    assert str(tmp_path / "nope") in info.value.message


def test_a_file_is_not_a_workspace(tmp_path):
    (tmp_path / "f").write_text("x")
    with pytest.raises(InvalidWorkspaceError, match="not a directory"):
        canonical_directory(str(tmp_path / "f"))


def test_dot_dot_is_resolved_before_any_check(tmp_path):
    (tmp_path / "a" / "b").mkdir(parents=True)
    assert canonical_directory(f"{tmp_path}/a/b/../..") == tmp_path.resolve()


def test_symlinks_are_followed_to_the_real_directory(tmp_path):
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    assert canonical_directory(str(tmp_path / "link")) == (tmp_path / "real").resolve()


def test_sibling_with_shared_prefix_is_not_inside():
    assert not is_within(Path("/work/app-evil"), Path("/work/app"))
    assert not is_within(Path("/work/application"), Path("/work/app"))
    assert is_within(Path("/work/app/src"), Path("/work/app"))
    assert is_within(Path("/work/app"), Path("/work/app"))


def test_within_any_picks_the_deepest_root():
    roots = [Path("/a"), Path("/a/b"), Path("/c")]
    assert within_any(Path("/a/b/c"), roots) == Path("/a/b")
    assert within_any(Path("/ab"), roots) is None


@given(st.lists(segment, min_size=1, max_size=5))
def test_percent_encoded_file_uris_round_trip(parts):
    path = Path("/", *parts)
    uri = "file://" + quote(str(path))
    assert decode_candidate(uri) == path


@given(st.lists(segment, min_size=1, max_size=4), segment)
def test_prefix_collisions_are_never_inside(parts, suffix):
    root = Path("/", *parts)
    sibling = Path(str(root) + suffix)
    assert not is_within(sibling, root)
    assert is_within(root / suffix, root)


@given(st.lists(st.sampled_from(["a", "b", "..", ".", "c"]), max_size=8))
def test_dotted_paths_resolve_inside_the_filesystem_and_never_escape_by_string(parts):
    candidate = os.path.join("/base", *parts)
    resolved = Path(os.path.normpath(candidate))
    # What the guard sees is the normalised path; it is inside /base only if its components say so.
    assert is_within(resolved, Path("/base")) == (resolved.parts[:2] == ("/", "base"))
