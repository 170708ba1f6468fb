"""`homeport ui` from a shell: the address it prints, and what it says when no browser can be opened."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from ._seed import make_project

pytestmark = pytest.mark.slow


def start(args: list[str], cwd: Path, home: Path) -> tuple[subprocess.Popen[str], list[str]]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HOMEPORT_") and k != "CLAUDE_PROJECT_DIR"}
    # No display and no BROWSER: webbrowser finds no graphical browser.
    for name in ("DISPLAY", "WAYLAND_DISPLAY", "BROWSER"):
        env.pop(name, None)
    env.update(HOME=str(home), HOMEPORT_STATE_DIR=str(home / "state"))
    process = subprocess.Popen(
        [sys.executable, "-m", "homeport", "ui", *args],
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    line: list[str] = []
    reader = threading.Thread(target=lambda: line.append(process.stdout.readline() if process.stdout else ""))
    reader.start()
    reader.join(timeout=30)
    return process, line


def test_ui_serves_the_project_it_is_started_in_and_says_when_no_browser_can_be_opened(tmp_path: Path):
    root = make_project(tmp_path / "src", "shop")
    (root / "pkg").mkdir()
    process, line = start([], root / "pkg", tmp_path)  # from a subdirectory: the project root is served
    try:
        assert line and line[0].startswith("homeport ui: http://127.0.0.1:"), line
        assert f"/ui/w?ws={root}" in line[0] and f"serving {root}" in line[0]
    finally:
        process.terminate()
        _, err = process.communicate(timeout=60)
    assert "browser" in err and "open the address above" in err, err


def test_ui_refuses_a_directory_the_resolver_refuses(tmp_path: Path):
    done = subprocess.run(
        [sys.executable, "-m", "homeport", "ui", "--no-browser", "-w", "/etc"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        env={**{k: v for k, v in os.environ.items() if not k.startswith("HOMEPORT_")}, "HOME": str(tmp_path)},
    )
    assert done.returncode == 1 and "/etc" in done.stderr and "Traceback" not in done.stderr, done.stderr
