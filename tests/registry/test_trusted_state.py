"""State files are trusted only when they are the user's own (`homeport._trusted_files`, used by the registry).

Tests run as root here: a directory of another user is made with `os.chown` to a uid nobody has.
"""

from __future__ import annotations

import json
import logging
import os
import stat
import threading
import time
from pathlib import Path

import pytest

from homeport._trusted_files import UntrustedPathError, check_directory, read_trusted_bytes
from homeport.errors import UntrustedStateError
from homeport.registry import InstanceRegistry

pytestmark = pytest.mark.timeout(60)

STRANGER = 54321  # a uid no one on this machine has
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="chown to another uid needs root")


def private_dir(path: Path) -> Path:
    path.mkdir(mode=0o700, parents=True)
    path.chmod(0o700)
    return path


# -- directories


def test_a_private_directory_of_the_user_under_a_sticky_tmp_is_trusted(tmp_path):
    assert stat.S_IMODE(os.stat("/tmp").st_mode) & stat.S_ISVTX  # tmp_path lives under /tmp
    check_directory(private_dir(tmp_path / "state"))
    check_directory(tmp_path / "state", private=True)


@pytest.mark.parametrize("mode", [0o777, 0o775, 0o757, 0o1777])
def test_a_directory_others_can_write_is_refused_with_the_chmod_that_fixes_it(tmp_path, mode):
    state = private_dir(tmp_path / "state")
    state.chmod(mode)
    with pytest.raises(UntrustedPathError) as caught:
        check_directory(state)
    assert str(state) in str(caught.value) and f"chmod go-w {state}" in str(caught.value)


def test_a_private_directory_readable_by_others_is_refused_for_secrets_only(tmp_path):
    state = private_dir(tmp_path / "secrets")
    state.chmod(0o755)
    check_directory(state)
    with pytest.raises(UntrustedPathError, match=f"chmod 700 {state}"):
        check_directory(state, private=True)


@needs_root
def test_a_directory_of_another_user_is_refused_with_the_chown_that_fixes_it(tmp_path):
    state = private_dir(tmp_path / "state")
    os.chown(state, STRANGER, STRANGER)
    with pytest.raises(UntrustedPathError, match=f"uid {STRANGER}.*chown {os.geteuid()} {state}"):
        check_directory(state)


@pytest.mark.parametrize("mode", [0o777, 0o770])
def test_a_directory_above_that_others_can_write_is_refused(tmp_path, mode):
    shared = private_dir(tmp_path / "shared")
    shared.chmod(mode)
    state = private_dir(shared / "state")
    with pytest.raises(UntrustedPathError, match=f"{shared} .*above"):
        check_directory(state)


@needs_root
def test_a_sticky_directory_above_is_trusted_only_when_root_owns_it(tmp_path):
    shared = private_dir(tmp_path / "shared")
    shared.chmod(0o1777)
    state = private_dir(shared / "state")
    check_directory(state)  # like /tmp
    os.chown(shared, STRANGER, STRANGER)
    with pytest.raises(UntrustedPathError, match=f"{shared} .*uid {STRANGER}"):
        check_directory(state)


def test_a_symlink_is_judged_by_where_it_leads_and_where_it_lies(tmp_path):
    shared = private_dir(tmp_path / "shared")
    shared.chmod(0o777)
    target = private_dir(shared / "real")
    safe = private_dir(tmp_path / "safe")
    (safe / "link").symlink_to(target)  # a safe path that leads into a directory others can change
    with pytest.raises(UntrustedPathError, match=str(shared)):
        check_directory(safe / "link")
    mine = private_dir(tmp_path / "mine")
    (shared / "link").symlink_to(mine)  # a safe target reached through a link others can swap
    with pytest.raises(UntrustedPathError, match=str(shared)):
        check_directory(shared / "link")


# -- files


def test_a_file_of_the_user_is_read_and_a_missing_one_is_none(tmp_path):
    path = tmp_path / "f"
    path.write_bytes(b"content")
    path.chmod(0o600)
    assert read_trusted_bytes(path, private=True) == b"content"
    assert read_trusted_bytes(tmp_path / "missing") is None


def test_a_fifo_is_refused_at_once_instead_of_hanging_the_reader(tmp_path):
    os.mkfifo(tmp_path / "fifo")
    started = time.monotonic()
    with pytest.raises(UntrustedPathError, match="not a regular file"):
        read_trusted_bytes(tmp_path / "fifo")
    assert time.monotonic() - started < 10


def test_a_symlink_is_refused_even_to_a_file_of_the_user(tmp_path):
    (tmp_path / "real").write_text("x")
    (tmp_path / "link").symlink_to(tmp_path / "real")
    with pytest.raises(UntrustedPathError, match="symlink"):
        read_trusted_bytes(tmp_path / "link")


@pytest.mark.parametrize(("mode", "private", "fix"), [(0o666, False, "chmod go-w"), (0o644, True, "chmod 600")])
def test_a_file_others_may_change_or_a_secret_others_may_read_is_refused(tmp_path, mode, private, fix):
    path = tmp_path / "f"
    path.write_text("x")
    path.chmod(mode)
    with pytest.raises(UntrustedPathError, match=f"{fix} {path}"):
        read_trusted_bytes(path, private=private)


@needs_root
def test_a_file_of_another_user_is_refused(tmp_path):
    path = tmp_path / "f"
    path.write_text("x")
    os.chown(path, STRANGER, STRANGER)
    with pytest.raises(UntrustedPathError, match=f"uid {STRANGER}"):
        read_trusted_bytes(path)


# -- the registry


def test_the_registry_refuses_a_state_directory_others_can_write_and_reads_nothing_in_it(tmp_path):
    state = private_dir(tmp_path / "state")
    planted = {"version": 1, "owners": {}, "ports": {}}
    (state / "registry.json").write_text(json.dumps(planted))
    state.chmod(0o777)
    reg = InstanceRegistry(state, is_live=lambda o: True)
    for attempt in (reg.read, lambda: reg.own(["/src"], host="127.0.0.1", requested_port=None, version="0")):
        with pytest.raises(UntrustedStateError) as caught:
            attempt()
        assert str(state) in caught.value.message and "chmod go-w" in caught.value.message
        assert caught.value.code == "untrusted_state"


def test_a_fifo_in_place_of_the_registry_is_replaced_with_a_warning_not_waited_on(tmp_path, caplog):
    state = private_dir(tmp_path / "state")
    os.mkfifo(state / "registry.json")
    reg = InstanceRegistry(state, is_live=lambda o: True)
    done = threading.Event()
    found: list[object] = []

    def read() -> None:
        found.append(reg.read())
        done.set()

    with caplog.at_level(logging.WARNING, logger="homeport.registry"):
        threading.Thread(target=read, daemon=True).start()
        assert done.wait(30), "reading the registry hangs on the FIFO"
    assert found[0].owners == {}
    assert str(state / "registry.json") in caplog.text and "not a regular file" in caplog.text
    assert stat.S_ISREG(os.lstat(state / "registry.json").st_mode)


def test_a_symlink_in_place_of_the_registry_is_not_followed(tmp_path, caplog):
    state = private_dir(tmp_path / "state")
    elsewhere = tmp_path / "elsewhere.json"
    elsewhere.write_text(json.dumps({"version": 1, "owners": {}, "ports": {"/x": 50009}}))
    (state / "registry.json").symlink_to(elsewhere)
    reg = InstanceRegistry(state, is_live=lambda o: True)
    with caplog.at_level(logging.WARNING, logger="homeport.registry"):
        assert reg.read().ports == {}
    assert "symlink" in caplog.text and not (state / "registry.json").is_symlink()


def test_an_owner_secret_others_can_read_is_ignored_with_a_warning(tmp_path, caplog):
    reg = InstanceRegistry(tmp_path / "state", is_live=lambda o: True)
    path = reg.mint_owner_secret(4242)
    assert reg.owner_secret(4242) is not None
    path.chmod(0o644)
    with caplog.at_level(logging.WARNING, logger="homeport.registry"):
        assert reg.owner_secret(4242) is None
    assert f"chmod 600 {path}" in caplog.text


def test_peeking_at_the_registry_for_a_report_never_waits_on_a_fifo_or_trusts_a_foreign_directory(tmp_path):
    state = private_dir(tmp_path / "state")
    reg = InstanceRegistry(state, is_live=lambda o: True)
    assert reg.peek().owners == {}
    os.mkfifo(state / "registry.json")
    with pytest.raises(UntrustedStateError, match="not a regular file"):
        reg.peek()
    assert stat.S_ISFIFO(os.lstat(state / "registry.json").st_mode)  # a report changes nothing
    (state / "registry.json").unlink()
    (state / "registry.json").write_text(json.dumps({"version": 1, "owners": {}, "ports": {"/x": 50009}}))
    assert reg.peek().ports == {"/x": 50009}
    state.chmod(0o777)
    with pytest.raises(UntrustedStateError, match="chmod go-w"):
        reg.peek()
