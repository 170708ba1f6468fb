"""The routing driver speaks SSE as real clients do (issue 22 #13): `project_path` on the GET /sse URL,
never on the messages' URL, which the server announces and a client cannot change."""

from __future__ import annotations

from pathlib import Path

import pytest

from homeport.core import ServeSettings

from ._drivers import connect

pytestmark = pytest.mark.anyio


def _make(path: Path) -> Path:
    (path / ".git").mkdir(parents=True)
    return path.resolve()


def _where(result: object) -> tuple[str, str]:
    content = getattr(result, "structured_content", None)
    assert content is not None and not getattr(result, "is_error", True), result
    return content["workspace"]["root"], content["workspace"]["source"]


@pytest.mark.parametrize("era", ["legacy", "auto"])
async def test_an_sse_client_routes_by_the_project_path_of_its_stream_url(tmp_path: Path, era: str) -> None:
    alpha, beta = _make(tmp_path / "alpha"), _make(tmp_path / "beta")
    settings = ServeSettings(transport="http", allow_roots=(tmp_path,), cwd=tmp_path, home=tmp_path / "home")
    write = {"category": "probe", "value": 1}
    async with connect(settings, era=era, roots=None, wire="sse") as driver:
        assert _where(await driver.call("log_custom_data", {**write, "key": "a"}, query=str(alpha))) == (
            str(alpha),
            "query",
        )
        assert _where(await driver.call("log_custom_data", {**write, "key": "b"}, query=beta.as_uri())) == (
            str(beta),
            "query",
        )
        used = await driver.call("use_workspace", {"workspace": str(alpha)}, query=beta.as_uri())
        assert _where(used)[0] == str(alpha)
        # Another stream URL is another connection; the session default the model expects carries over.
        after = await driver.call("get_custom_data", {"category": "probe"})
        if era == "legacy":
            assert _where(after) == (str(alpha), "session")
        else:
            assert getattr(after, "is_error", False)
