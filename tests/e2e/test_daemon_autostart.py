"""`HOMEPORT_DAEMON_AUTOSTART=1`: the shell's memory commands start the daemon on first use, and only
when the user opted in with their own environment (never a repository's config)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from homeport.registry.liveness import healthz

from ._support import CLI_BOOT, clean_env, make_project

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]

DEADLINE_S = 30.0


def homeport(state: Path, *args: str, cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", CLI_BOOT, *args],
        cwd=cwd,
        env=clean_env(HOMEPORT_STATE_DIR=str(state), **env),
        capture_output=True,
        text=True,
        timeout=DEADLINE_S + 30,
        check=False,
    )


@pytest.fixture
def setup(tmp_path: Path) -> Iterator[tuple[Path, Path]]:
    """(state dir, a project); a daemon started by a test is killed afterwards, by its pid."""
    state = Path(os.path.realpath(tmp_path)) / "st"
    project = make_project(Path(os.path.realpath(tmp_path)) / "src" / "app")
    yield state, project
    answer = healthz(f"unix:{state / 'daemon' / 'homeport.sock'}")
    if answer is not None and isinstance(answer.get("pid"), int):
        os.kill(answer["pid"], signal.SIGKILL)


def _running(state: Path, cwd: Path) -> bool:
    done = homeport(state, "daemon", "status", "--json", cwd=cwd)
    return bool(json.loads(done.stdout)["running"])


def test_a_memory_command_starts_the_daemon_when_the_user_opted_in(setup) -> None:
    state, project = setup
    done = homeport(state, "decisions", "add", "Use WAL", "--json", cwd=project, HOMEPORT_DAEMON_AUTOSTART="1")
    assert done.returncode == 0, done.stderr
    assert _running(state, project)
    served_by = json.loads(done.stdout)["workspace"].get("served_by")
    assert served_by is not None and served_by["endpoint"].startswith("unix:")  # the call went to it
    listed = homeport(state, "decisions", "list", "--json", cwd=project, HOMEPORT_DAEMON_AUTOSTART="1")
    assert [d["summary"] for d in json.loads(listed.stdout)["decisions"]] == ["Use WAL"]


def test_without_the_opt_in_no_daemon_is_started_whatever_the_project_says(setup) -> None:
    state, project = setup
    (project / ".homeport").mkdir()
    (project / ".homeport" / "config.toml").write_text("[daemon]\nautostart = true\n")
    done = homeport(state, "decisions", "add", "Use WAL", cwd=project)
    assert not _running(state, project), done.stderr
    done = homeport(state, "decisions", "add", "Use WAL", "--no-daemon", cwd=project, HOMEPORT_DAEMON_AUTOSTART="1")
    assert done.returncode == 0, done.stderr
    assert not _running(state, project)  # --no-daemon: this command stays in its own process
