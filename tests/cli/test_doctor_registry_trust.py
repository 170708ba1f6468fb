"""`homeport doctor` reads the registry as every other reader does now (issue 22, findings 2 and 21): an entry
whose endpoint cannot prove it is the registered owner is not reported live, and a FIFO in place of
`registry.json` never hangs it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from homeport.cli import cli
from homeport.registry import Owner, RegistryState, encode_state


@pytest.fixture
def project(shell_home, monkeypatch, tmp_path) -> Path:
    monkeypatch.delenv("DATABASE_URL", raising=False)
    monkeypatch.setenv("HOMEPORT_STATE_DIR", str(tmp_path / "state"))
    root = tmp_path / "shop"
    (root / ".git").mkdir(parents=True)
    monkeypatch.chdir(root)
    return root


def registry_check() -> dict:
    result = CliRunner().invoke(cli, ["doctor", "--json"], catch_exceptions=False)
    (check,) = [c for c in json.loads(result.output)["checks"] if c["name"] == "registry"]
    return check


def test_an_endpoint_that_answers_healthz_with_a_live_pid_but_cannot_prove_it_is_not_live(project, tmp_path, healthz):
    # `healthz` answers /healthz with this process's pid, which is public: liveness, not identity.
    impostor = Owner(healthz.url, os.getpid(), time.time() - 3600, "0.1.0")
    state = RegistryState({"/src/a": impostor}, {"/src/a": impostor.port})
    (tmp_path / "state").mkdir(mode=0o700)
    (tmp_path / "state" / "registry.json").write_text(encode_state(state))
    check = registry_check()
    assert check["status"] == "warn", check
    assert "0 live" in check["detail"] and str(os.getpid()) in check["detail"], check


def test_a_fifo_in_place_of_the_registry_does_not_hang_doctor(project, tmp_path) -> None:
    (tmp_path / "state").mkdir(mode=0o700)
    os.mkfifo(tmp_path / "state" / "registry.json")
    env = {**os.environ, "HOME": str(os.environ["HOME"]), "HOMEPORT_STATE_DIR": str(tmp_path / "state")}
    done = subprocess.run(
        [sys.executable, "-c", "from homeport.cli import main; main()", "doctor", "--json"],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    (check,) = [c for c in json.loads(done.stdout)["checks"] if c["name"] == "registry"]
    assert check["status"] in ("warn", "fail") and "registry.json" in check["detail"], check
