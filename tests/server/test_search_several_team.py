"""search(workspaces=[...]) in a project whose memory is on its team server is refused, not answered from
the local store (which holds none of that project's memory): the result would name the project and
read the wrong place."""

from __future__ import annotations

from pathlib import Path

import pytest

from homeport.core import tools as _tools  # noqa: F401  (declares every tool)
from homeport.core.catalog import CATALOG
from homeport.core.pipeline import CallPipeline, LocalRequest
from homeport.errors import InvalidArgumentError
from homeport.mesh.team import TeamRoute


def test_a_search_across_workspaces_from_a_team_project_is_refused_with_what_to_do(
    runtime_factory, projects, monkeypatch
) -> None:
    alpha, beta = projects["alpha"], projects["beta"]
    runtime = runtime_factory(allow_roots=(alpha.parent,))
    assert runtime.team is not None  # stdio: memory calls of a trusted [team] project go to its server
    route = TeamRoute(url="http://team.example", key="acme/alpha", token=None, token_from="none")
    monkeypatch.setattr(runtime.team, "route", lambda root: route if Path(root) == alpha else None)
    pipeline = CallPipeline(runtime)
    arguments = {"query": "wal", "workspace": str(alpha), "workspaces": [str(beta)]}
    with pytest.raises(InvalidArgumentError, match=r"team server http://team\.example"):
        pipeline.call_blocking(CATALOG["search"], arguments, LocalRequest())
    # Without workspaces the call goes to the team server, as every memory call of the project does.
    decided = pipeline.decide(CATALOG["search"], {"query": "wal", "workspace": str(alpha)}, LocalRequest())
    assert decided.to == "team"
