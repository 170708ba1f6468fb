"""The documentation site builds with `mkdocs build --strict`: a broken link, a missing anchor or a page
left out of the navigation fails the suite, not a reader."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("mkdocs") is None or importlib.util.find_spec("material") is None,
    reason="mkdocs-material is not installed (pip install -e '.[test]' installs it)",
)


def _build(tmp_path: Path, config: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "mkdocs",
            "build",
            "--strict",
            "--config-file",
            str(config),
            "--site-dir",
            str(tmp_path),
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_the_documentation_site_builds_strictly(tmp_path):
    done = _build(tmp_path / "site", ROOT / "mkdocs.yml")
    assert done.returncode == 0, done.stderr[-4000:]
    assert (tmp_path / "site" / "reference" / "tools" / "index.html").is_file()
    security = (tmp_path / "site" / "explanation" / "security" / "index.html").read_text(encoding="utf-8")
    assert "What Homeport does not protect against" in security  # SECURITY.md is included, not copied


def test_a_broken_link_fails_the_build(tmp_path):
    docs = tmp_path / "docs"
    (docs / "_hooks").mkdir(parents=True)
    hook = "_hooks/include_repo_files.py"
    (docs / hook).write_text((ROOT / "docs" / hook).read_text(encoding="utf-8"), encoding="utf-8")
    (docs / "index.md").write_text("# Home\n\n[gone](gone.md)\n", encoding="utf-8")
    config = tmp_path / "mkdocs.yml"
    config.write_text(
        (ROOT / "mkdocs.yml")
        .read_text(encoding="utf-8")
        .split("\nnav:", 1)[0]
        .replace("docs_dir: docs", f"docs_dir: {docs}")
        + "\nnav:\n  - Home: index.md\n",
        encoding="utf-8",
    )
    done = _build(tmp_path / "site", config)
    assert done.returncode != 0 and "gone.md" in done.stderr


def test_every_markdown_page_under_docs_is_in_the_navigation():
    nav = (ROOT / "mkdocs.yml").read_text(encoding="utf-8").split("\nnav:", 1)[1]
    pages = {p.relative_to(ROOT / "docs").as_posix() for p in (ROOT / "docs").rglob("*.md")}
    assert {p for p in pages if p not in nav} == set()
