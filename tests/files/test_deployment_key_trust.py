"""The deployment key is trusted only when it and its directory are the user's own (issue 22: "every state,
data and secret directory and file is checked as OpenSSH checks its files").

Whoever can write the data directory can swap `deployment.key` for a key they know (a rename within
the directory needs no write access to the file) and forge `use_workspace` handles.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from homeport.errors import ConfigError
from homeport.files.deployment_secret import read_or_create_secret

NOBODY = 65534


@pytest.fixture
def data(tmp_path: Path) -> Path:
    directory = tmp_path / "data"
    directory.mkdir(mode=0o700)
    return directory


def test_a_data_directory_others_may_write_is_refused_with_the_fix(data: Path) -> None:
    read_or_create_secret(data / "deployment.key")
    os.chmod(data, 0o777)
    with pytest.raises(ConfigError) as caught:
        read_or_create_secret(data / "deployment.key")
    assert str(data) in caught.value.message and "chmod" in caught.value.message


def test_a_directory_above_it_that_others_may_write_is_refused(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o777)  # not sticky: anyone may rename what is inside
    (shared / "data").mkdir(mode=0o700)
    with pytest.raises(ConfigError) as caught:
        read_or_create_secret(shared / "data" / "deployment.key")
    assert str(shared) in caught.value.message


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to give a file to another user")
def test_a_key_file_of_another_user_is_refused_even_when_this_user_could_read_it(data: Path) -> None:
    key = data / "deployment.key"
    key.write_text("a" * 64 + "\n")
    os.chmod(key, 0o600)
    os.chown(key, NOBODY, NOBODY)
    with pytest.raises(ConfigError) as caught:
        read_or_create_secret(key)
    assert "chown" in caught.value.message


def test_the_users_own_key_is_read_and_created_private(data: Path) -> None:
    first = read_or_create_secret(data / "deployment.key")
    assert read_or_create_secret(data / "deployment.key") == first
    assert os.stat(data / "deployment.key").st_mode & 0o777 == 0o600
