"""Which commands the console script offers the daemon's command runner, and where it looks for it
(`homeport.cli._thin`); the runner itself is tested end to end in tests/e2e/test_daemon_thin_client.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from homeport.cli._compose import default_state_dir
from homeport.cli._thin import FORWARDED, forwardable, run_through_daemon, state_dir
from homeport.cli.main import COMMANDS


def test_every_forwarded_command_is_a_command_of_the_cli() -> None:
    assert set(COMMANDS) >= FORWARDED


@pytest.mark.parametrize(
    ("argv", "env", "expected"),
    [
        (["decisions", "list"], {}, True),
        (["search", "wal", "--json"], {}, True),
        (["decisions", "list", "--no-daemon"], {}, False),
        (["decisions", "add", "--", "--no-daemon"], {}, True),  # an argument, after `--`
        (["decisions", "list"], {"HOMEPORT_NO_DAEMON": "1"}, False),
        (["decisions", "list"], {"HOMEPORT_NO_DAEMON": "true"}, False),
        (["decisions", "list"], {"HOMEPORT_NO_DAEMON": "0"}, True),
        (["decisions", "list"], {"HOMEPORT_NO_DAEMON": ""}, True),
        (["decisions"], {"_HOMEPORT_COMPLETE": "bash_complete"}, False),
        (["serve"], {}, False),
        (["daemon", "stop"], {}, False),
        (["--version"], {}, False),
        ([], {}, False),
    ],
)
def test_what_is_offered_to_the_runner(argv: list[str], env: dict[str, str], expected: bool) -> None:
    assert forwardable(argv, env) is expected


def test_the_runner_is_looked_for_where_the_daemon_lives(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HOMEPORT_STATE_DIR", str(tmp_path / "st"))
    assert state_dir({"HOMEPORT_STATE_DIR": str(tmp_path / "st")}) == str(default_state_dir().absolute())
    monkeypatch.delenv("HOMEPORT_STATE_DIR")
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xdg"))
    assert state_dir({"XDG_STATE_HOME": str(tmp_path / "xdg")}) == str(default_state_dir().absolute())


def test_without_a_runner_nothing_is_sent_and_the_command_runs_here(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("HOMEPORT_STATE_DIR", str(tmp_path / "st"))
    assert run_through_daemon(["decisions", "list"]) is None
