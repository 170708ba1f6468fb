"""The files that decide who may do what are trusted only when they are the user's own (issue 22: files
and directories are trusted only when they are the user's own, as OpenSSH checks its files).

A token file another user can write lets them add a token of their own and call as any agent; a
directory file or access-rules file they can write lets them grant themselves every workspace.
Each is refused with the `chmod`/`chown` that fixes it, and nothing is served on it.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from homeport.core.access import AccessRulesFile
from homeport.errors import ConfigError
from homeport.files.directory import DirectoryFile
from homeport.files.tokens import TokenStore

NOBODY = 65534


def _tokens(tmp_path: Path) -> Path:
    store = TokenStore(tmp_path / "data" / "tokens.json")
    store.add("ada")
    return store.path


def _directory(tmp_path: Path) -> Path:
    d = DirectoryFile(tmp_path / "data" / "directory.toml")
    d.add_organization("acme")
    return d.path


def _rules(tmp_path: Path) -> Path:
    path = tmp_path / "data" / "rules.toml"
    path.parent.mkdir(exist_ok=True)
    path.write_text("")
    return path


def _load(kind: str, path: Path) -> None:
    if kind == "tokens":
        TokenStore(path).check()
    elif kind == "directory":
        DirectoryFile(path).load()
    else:
        AccessRulesFile(path).get()


MAKERS = {"tokens": _tokens, "directory": _directory, "rules": _rules}


@pytest.mark.parametrize("kind", sorted(MAKERS))
def test_a_file_others_may_write_is_refused_with_the_fix(tmp_path, kind) -> None:
    path = MAKERS[kind](tmp_path)
    _load(kind, path)
    os.chmod(path, 0o666)
    with pytest.raises(ConfigError) as caught:
        _load(kind, path)
    assert str(path) in caught.value.message and "chmod" in caught.value.message


@pytest.mark.parametrize("kind", sorted(MAKERS))
def test_a_file_in_a_directory_others_may_write_is_refused(tmp_path, kind) -> None:
    path = MAKERS[kind](tmp_path)
    os.chmod(path.parent, 0o777)
    with pytest.raises(ConfigError) as caught:
        _load(kind, path)
    assert str(path.parent) in caught.value.message


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to give a file to another user")
@pytest.mark.parametrize("kind", sorted(MAKERS))
def test_a_file_of_another_user_is_refused(tmp_path, kind) -> None:
    path = MAKERS[kind](tmp_path)
    os.chown(path, NOBODY, NOBODY)
    with pytest.raises(ConfigError) as caught:
        _load(kind, path)
    assert "chown" in caught.value.message


@pytest.mark.parametrize("kind", sorted(MAKERS))
def test_a_symlink_in_place_of_the_file_is_refused(tmp_path, kind) -> None:
    path = MAKERS[kind](tmp_path)
    real = path.with_name("elsewhere")
    path.rename(real)
    path.symlink_to(real)
    with pytest.raises(ConfigError):
        _load(kind, path)
