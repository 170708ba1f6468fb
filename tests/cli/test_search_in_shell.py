"""A shell search served in its own process does not load the embedding model for auto mode (issue 30):
it searches by words and says so on stderr; `--mode semantic` still loads it, for that command only."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from homeport.embedding.model import unavailable_reason

pytestmark = pytest.mark.skipif(
    unavailable_reason(None) is not None, reason="needs the semantic extra and its model, as installed for the tests"
)

# Prints, after the command's own output, whether the model's runtime was imported.
_BOOT = (
    "import atexit, sys\n"
    "atexit.register(lambda: print('onnxruntime' in sys.modules, file=sys.stderr))\n"
    "from homeport.cli import main; main()"
)


def search(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HOMEPORT_") and k != "CLAUDE_PROJECT_DIR"}
    env.update(HOME=str(project.parent), HOMEPORT_STATE_DIR=str(project.parent / "state"))
    return subprocess.run(
        [sys.executable, "-c", _BOOT, *args], cwd=project, env=env, capture_output=True, text=True, timeout=120
    )


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "shop" / ".git").mkdir(parents=True)
    added = search(tmp_path / "shop", "decisions", "add", "Use SQLite WAL", "--rationale", "readers never block")
    assert added.returncode == 0, added.stderr
    return tmp_path / "shop"


def test_auto_search_in_its_own_process_is_by_words_and_says_so(project: Path) -> None:
    done = search(project, "search", "wal", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["mode_used"] == "words"
    *note, loaded_model = done.stderr.strip().splitlines()
    assert "searched by words only" in "\n".join(note) and "homeport daemon start" in "\n".join(note)
    assert loaded_model == "False"


def test_semantic_search_asked_for_loads_the_model_in_that_command(project: Path) -> None:
    done = search(project, "search", "readers", "--mode", "semantic", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["mode_used"] == "semantic"
    assert "searched by words only" not in done.stderr and done.stderr.strip().splitlines()[-1] == "True"


def test_words_search_says_nothing_more(project: Path) -> None:
    done = search(project, "search", "wal", "--mode", "words")
    assert done.returncode == 0 and done.stderr.strip() == "False"
    assert "Use SQLite WAL" in done.stdout


def test_a_semantic_search_in_its_own_process_embeds_what_waits_and_finds_by_meaning(project: Path) -> None:
    """Only servers embedded, so a shell user's items stayed "not embedded yet" forever and a search by meaning
    found nothing; now the command embeds them first, once."""
    added = search(project, "decisions", "add", "Payments retry with exponential backoff")
    assert added.returncode == 0, added.stderr
    first = search(project, "search", "how do failed charges get attempted again", "--mode", "semantic", "--json")
    assert first.returncode == 0, first.stderr
    found = json.loads(first.stdout)
    assert found["embedded_now"] == 2 and found["not_yet_embedded"] == 0
    assert found["results"][0]["id"] == 2  # shares no word with the query
    again = json.loads(search(project, "search", "charges attempted again", "--mode", "semantic", "--json").stdout)
    assert "embedded_now" not in again and again["results"][0]["id"] == 2
    shown = search(project, "search", "write-ahead logging", "--mode", "semantic")
    assert "not embedded yet" not in shown.stdout + shown.stderr
