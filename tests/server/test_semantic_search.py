"""The `search` tool's three modes through the SDK's in-memory Client, with the real model.

Needs the semantic extra and a model package (the test extra installs both); skips with the reason
otherwise. Writes return before anything is embedded; `runtime.semantic.drain` waits for the
background thread where a test needs the vectors.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from homeport.embedding.model import unavailable_reason
from homeport.server import build_server

pytestmark = pytest.mark.anyio

NO_MODEL = unavailable_reason(None)
needs_model = pytest.mark.skipif(NO_MODEL is not None, reason=f"{NO_MODEL}")


class Session:
    def __init__(self, client: Client, root: Path) -> None:
        self.client, self.root = client, root

    async def ok(self, tool: str, **args: Any) -> dict[str, Any]:
        r = await self.client.call_tool(tool, {**args, "workspace": str(self.root)})
        assert not r.is_error, r.content[0].text
        return r.structured_content

    async def error(self, tool: str, **args: Any) -> str:
        r = await self.client.call_tool(tool, {**args, "workspace": str(self.root)})
        assert r.is_error, r.structured_content
        return r.content[0].text


def found(result: dict[str, Any]) -> list[tuple[str, int]]:
    return [(h["type"], h["id"]) for h in result["results"]]


@pytest.fixture
def served(runtime_factory):
    runtime = runtime_factory()
    return runtime, build_server(runtime)


async def fill(ws: Session) -> dict[str, int]:
    ids = {}
    ids["deploy"] = (
        await ws.ok("log_decision", summary="Blue-green rollout behind the load balancer", rationale="no outage")
    )["id"]
    ids["wal"] = (
        await ws.ok("log_decision", summary="SQLite in WAL mode", rationale="readers never block the writer")
    )["id"]
    ids["avatars"] = (await ws.ok("log_decision", summary="Avatars are served from the CDN"))["id"]
    ids["task"] = (await ws.ok("log_progress", status="TODO", description="Translate the onboarding emails"))["id"]
    return ids


@needs_model
async def test_search_by_meaning_finds_an_item_that_shares_no_word_with_the_query(served, projects):
    runtime, server = served
    async with Client(server) as c:
        ws = Session(c, projects["alpha"])
        ids = await fill(ws)
        assert runtime.semantic.drain(timeout=120)
        words = await ws.ok("search", query="where are user profile pictures hosted", mode="words")
        assert words["results"] == [] and words["mode_used"] == "words"
        meaning = await ws.ok("search", query="where are user profile pictures hosted", mode="semantic")
        assert meaning["mode_used"] == "semantic" and meaning["not_yet_embedded"] == 0
        # Only the related item: the others are less similar than the floor (store.vectors.MIN_SIMILARITY).
        assert found(meaning) == [("decision", ids["avatars"])]
        assert meaning["results"][0]["snippet"] == "Avatars are served from the CDN"


@needs_model
async def test_auto_fuses_both_rankings_and_keeps_the_filters_of_word_search(served, projects):
    runtime, server = served
    async with Client(server) as c:
        ws = Session(c, projects["alpha"])
        ids = await fill(ws)
        assert runtime.semantic.drain(timeout=120)
        auto = await ws.ok("search", query="readers writer", limit=3)
        assert auto["mode_used"] == "auto"
        assert found(auto)[0] == ("decision", ids["wal"]) and auto["results"][0]["found_by"] == ["words", "semantic"]
        only_tasks = await ws.ok("search", query="localize the welcome messages", types=["progress"], mode="semantic")
        assert found(only_tasks) == [("progress", ids["task"])]
        only_decisions = await ws.ok(
            "search", query="localize the welcome messages", types=["decision"], mode="semantic"
        )
        assert only_decisions["results"] == []
        since_later = await ws.ok("search", query="database writer", since="2999-01-01T00:00:00Z", mode="auto")
        assert since_later["results"] == []


@needs_model
async def test_an_update_or_delete_is_never_found_in_its_old_version(served, projects):
    runtime, server = served
    async with Client(server) as c:
        ws = Session(c, projects["alpha"])
        ids = await fill(ws)
        assert runtime.semantic.drain(timeout=120)
        await ws.ok("update_progress", progress_id=ids["task"], description="Rotate the database passwords")
        await ws.ok("delete_decision", decision_id=ids["deploy"])
        # Whatever the background thread has done by now, no hit is of an old text or a deleted item.
        right_after = await ws.ok("search", query="translate onboarding emails", mode="semantic", limit=10)
        for h in right_after["results"]:
            assert (h["type"], h["id"]) != ("decision", ids["deploy"])
            assert "Translate" not in h["snippet"]
        assert runtime.semantic.drain(timeout=120)
        later = await ws.ok("search", query="credentials rotation", mode="semantic", limit=1)
        assert found(later) == [("progress", ids["task"])] and later["not_yet_embedded"] == 0


@needs_model
async def test_a_write_returns_before_its_item_is_embedded_and_search_says_how_many_wait(served, projects, tmp_path):
    runtime, server = served
    async with Client(server) as c:
        ws = Session(c, projects["beta"])
        await ws.ok("log_decision", summary="warm the model up")
        assert runtime.semantic.drain(timeout=120)
        # Many items written in one go: more than the thread can embed before the search below.
        items = [{"summary": f"decision number {n}", "rationale": "word " * 400} for n in range(40)]
        await ws.ok("batch_log_items", item_type="decision", items=items)
        waiting = await ws.ok("search", query="decision number", mode="auto")
        assert waiting["not_yet_embedded"] > 0
        assert runtime.semantic.drain(timeout=300)
        assert (await ws.ok("search", query="decision number", mode="auto"))["not_yet_embedded"] == 0


async def test_without_the_extra_semantic_is_an_error_naming_the_fix_and_auto_searches_by_words(
    runtime_factory, projects, monkeypatch
):
    monkeypatch.setitem(sys.modules, "onnxruntime", None)  # as if not installed: find_spec gives None
    server = build_server(runtime_factory())
    async with Client(server) as c:
        ws = Session(c, projects["alpha"])
        await ws.ok("log_decision", summary="SQLite in WAL mode")
        message = await ws.error("search", query="database", mode="semantic")
        assert "onnxruntime" in message and "pip install 'homeport[semantic]'" in message
        auto = await ws.ok("search", query="WAL")
        assert auto["mode_used"] == "words" and len(auto["results"]) == 1
        assert "pip install 'homeport[semantic]'" in auto["note"]
        assert "not_yet_embedded" not in auto


async def test_an_unknown_mode_is_refused(runtime_factory, projects):
    async with Client(build_server(runtime_factory())) as c:
        ws = Session(c, projects["alpha"])
        message = await ws.error("search", query="x", mode="fuzzy")
        assert "mode" in message


async def test_a_damaged_model_is_an_error_by_meaning_and_auto_answers_by_words(runtime_factory, projects, tmp_path):
    from homeport.embedding.model import model_dir

    data = tmp_path / "data"
    broken = model_dir(data)
    broken.mkdir(parents=True)
    (broken / "model.onnx").write_bytes(b"not a model")
    (broken / "tokenizer.json").write_text("{}")
    pytest.importorskip("onnxruntime", reason="the extra is needed to reach the model at all")
    async with Client(build_server(runtime_factory(data_dir=data))) as c:
        ws = Session(c, projects["alpha"])
        await ws.ok("log_decision", summary="SQLite in WAL mode")
        message = await ws.error("search", query="WAL", mode="semantic")
        assert "cannot load the embedding model" in message and "homeport models fetch --force" in message
        auto = await ws.ok("search", query="WAL")
        assert auto["mode_used"] == "words" and found(auto) == [("decision", 1)]
        assert "cannot load the embedding model" in auto["note"]
