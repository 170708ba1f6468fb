"""The dashboard's workspace page leaves out another branch's decisions and patterns and says how many."""

from __future__ import annotations

import html
import os
import subprocess
from pathlib import Path

import pytest

from homeport.store import branches, decisions, patterns

pytestmark = pytest.mark.anyio
GIT_ENV = {
    **{k: v for k, v in os.environ.items() if not k.startswith("GIT_")},
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
}


def git(root: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@e", *args],
        cwd=root,
        env=GIT_ENV,
        check=True,
        capture_output=True,
    )


async def test_the_workspace_page_counts_what_it_hid_and_names_the_branch(make_app, client_for, project: Path):
    git_dir = project / ".git"
    if git_dir.is_dir() and not any(git_dir.iterdir()):
        git_dir.rmdir()
    (project / "README").write_text("app\n")
    git(project, "init", "-q", "-b", "main")
    git(project, "add", "README")
    git(project, "commit", "-q", "-m", "first")
    app, runtime = make_app()
    store = runtime.stores.get(project, create=True)
    with branches.working_in(project):
        decisions.log_decision(store, "Shared decision on main")
    git(project, "checkout", "-q", "-b", "feat/ui")
    (project / "ui.txt").write_text("ui\n")
    git(project, "add", "ui.txt")
    git(project, "commit", "-q", "-m", "ui")
    with branches.working_in(project):
        decisions.log_decision(store, "Branch-only decision")
        patterns.log_system_pattern(store, "Branch pattern", "only on feat/ui")
    git(project, "checkout", "-q", "main")

    page = await client_for(app).get("/ui/w", params={"ws": str(project)})
    assert page.status_code == 200, page.text
    text = html.unescape(page.text)
    assert "Shared decision on main" in text and "Branch-only decision" not in text and "Branch pattern" not in text
    decisions_section = text.split('id="decisions"')[1].split("</section>")[0]
    assert "1 hidden: written on branch feat/ui (1)" in decisions_section.replace("<code>", "").replace("</code>", "")
    patterns_section = text.split('id="patterns"')[1].split("</section>")[0]
    assert "1 hidden" in patterns_section


async def test_the_search_page_says_how_many_matches_another_branch_hid(make_app, client_for, project: Path):
    git_dir = project / ".git"
    if git_dir.is_dir() and not any(git_dir.iterdir()):
        git_dir.rmdir()
    (project / "README").write_text("app\n")
    git(project, "init", "-q", "-b", "main")
    git(project, "add", "README")
    git(project, "commit", "-q", "-m", "first")
    app, runtime = make_app()
    store = runtime.stores.get(project, create=True)
    git(project, "checkout", "-q", "-b", "spike")
    (project / "s.txt").write_text("s\n")
    git(project, "add", "s.txt")
    git(project, "commit", "-q", "-m", "s")
    with branches.working_in(project):
        decisions.log_decision(store, "Ring buffer for the event log")
    git(project, "checkout", "-q", "main")
    page = await client_for(app).get("/ui/search", params={"ws": str(project), "q": "ring buffer"})
    assert page.status_code == 200, page.text
    text = html.unescape(page.text).replace("<code>", "").replace("</code>", "")
    assert "Ring buffer for the event log" not in text
    assert "1 hidden: written on branch spike (1)" in text
