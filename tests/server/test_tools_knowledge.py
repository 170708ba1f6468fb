"""Memory at full depth through the SDK's in-memory Client, in both protocol eras: patterns, deletes, the
progress tree, links, search, history, activity, schema, batch, export and import."""

from __future__ import annotations

import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from homeport.store.search import mark

pytestmark = pytest.mark.anyio
MODES = pytest.mark.parametrize("mode", ["auto", "legacy"])


class Session:
    """A client bound to one workspace: `ok` expects success, `error` expects an isError result."""

    def __init__(self, client: Client, root: Path) -> None:
        self.client, self.root = client, root

    async def ok(self, tool: str, **args: Any) -> dict[str, Any]:
        r = await self.client.call_tool(tool, {**args, "workspace": str(self.root)})
        assert not r.is_error, r.content[0].text
        assert r.structured_content["workspace"]["root"] == str(self.root)
        return r.structured_content

    async def error(self, tool: str, **args: Any) -> str:
        r = await self.client.call_tool(tool, {**args, "workspace": str(self.root)})
        assert r.is_error, r.structured_content
        return r.content[0].text


# Over stdio a call runs inline; over HTTP a memory call runs on the event loop and leaves it for a worker
# thread when a step could wait (export and import touch the project's files): every test runs both ways.
@pytest.fixture(params=["stdio", "http"])
def connect(request, server_factory, tmp_path):
    extra = {"transport": "http", "allow_roots": (tmp_path,)} if request.param == "http" else {}
    server = server_factory(**extra)

    def open_session(mode: str) -> Client:
        return Client(server, mode=mode)

    return open_session


# --- system patterns and deletes -------------------------------------------------------------------------------


@MODES
async def test_logging_a_pattern_name_again_in_any_case_updates_it_and_tags_filter(connect, projects, mode):
    async with connect(mode) as c:
        ws = Session(c, projects["alpha"])
        first = await ws.ok(
            "log_system_pattern",
            name="Outbox",
            description="events in the transaction",
            tags=[" Events ", "events", "DB"],
        )
        assert first["tags"] == ["Events", "DB"] and first["updated"] is False
        again = await ws.ok("log_system_pattern", name="OUTBOX", description="events in the same transaction")
        assert again["id"] == first["id"] and again["updated"] is True
        await ws.ok("log_system_pattern", name="Repository", description="one module per type", tags=["db"])
        listed = (await ws.ok("get_system_patterns"))["system_patterns"]
        assert [(p["name"], p["description"]) for p in listed] == [
            ("OUTBOX", "events in the same transaction"),
            ("Repository", "one module per type"),
        ]
        assert [p["name"] for p in (await ws.ok("get_system_patterns", tags_any=["EVENTS"]))["system_patterns"]] == [
            "OUTBOX"
        ]
        assert [
            p["name"] for p in (await ws.ok("get_system_patterns", tags_all=["db", "events"]))["system_patterns"]
        ] == ["OUTBOX"]
        assert [p["name"] for p in (await ws.ok("get_system_patterns", tags_any=["db"]))["system_patterns"]] == [
            "OUTBOX",
            "Repository",
        ]


@MODES
async def test_deleting_a_pattern_says_what_went_and_removes_its_links_and_index_entry(connect, projects, mode):
    async with connect(mode) as c:
        ws = Session(c, projects["alpha"])
        p = await ws.ok("log_system_pattern", name="Outbox", description="events", tags=["events"])
        d = await ws.ok("log_decision", summary="Adopt the outbox")
        await ws.ok(
            "link_items",
            source_type="decision",
            source_id=d["id"],
            target_type="system_pattern",
            target_id=p["id"],
            relationship="implements",
        )
        out = await ws.ok("delete_system_pattern", pattern_id=p["id"])
        assert out["deleted"]["name"] == "Outbox" and out["deleted"]["tags"] == ["events"]
        assert out["deleted"]["type"] == "system_pattern" and out["links_removed"] == 1
        assert (await ws.ok("get_linked_items", item_type="decision", item_id=d["id"]))["items"] == []
        assert (await ws.ok("search", mode="words", query="events"))["results"] == []
        assert (await ws.ok("get_system_patterns", tags_any=["events"]))["system_patterns"] == []
        text = await ws.error("delete_system_pattern", pattern_id=p["id"])
        assert f"system pattern {p['id']} does not exist" in text and "[item_not_found]" in text


@MODES
async def test_deleting_decisions_and_custom_data_returns_what_was_removed(connect, projects, mode):
    async with connect(mode) as c:
        ws = Session(c, projects["alpha"])
        d = await ws.ok("log_decision", summary="Use WAL", rationale="readers", tags=["db"])
        await ws.ok("log_custom_data", category="ProjectGlossary", key="WAL", value={"meaning": "write-ahead log"})
        out = await ws.ok("delete_decision", decision_id=d["id"])
        assert out["deleted"]["summary"] == "Use WAL" and out["deleted"]["id"] == d["id"] and out["links_removed"] == 0
        assert (await ws.ok("get_decisions"))["decisions"] == []
        out = await ws.ok("delete_custom_data", category="ProjectGlossary", key="WAL")
        assert out["deleted"]["value"] == {"meaning": "write-ahead log"} and out["deleted"]["key"] == "WAL"
        assert (await ws.ok("get_custom_data"))["items"] == []
        assert (await ws.ok("search", mode="words", query="WAL"))["results"] == []
        assert "decision 4242 does not exist" in await ws.error("delete_decision", decision_id=4242)
        text = await ws.error("delete_custom_data", category="ProjectGlossary", key="nope")
        assert "'ProjectGlossary'" in text and "'nope'" in text


@MODES
async def test_delete_tools_are_annotated_destructive(connect, mode):
    async with connect(mode) as c:
        tools = {t.name: t for t in (await c.list_tools()).tools}
    for name in ("delete_decision", "delete_progress", "delete_custom_data", "delete_system_pattern"):
        assert tools[name].annotations.destructive_hint is True, name
        assert "removed" in tools[name].description, name


# --- progress tree ---------------------------------------------------------------------------------------------


async def make_tree(ws: Session) -> dict[str, int]:
    ids: dict[str, int] = {}
    ids["root"] = (await ws.ok("log_progress", status="TODO", description="ship resolver"))["id"]
    ids["a"] = (await ws.ok("log_progress", status="DONE", description="write guards", parent_id=ids["root"]))["id"]
    ids["a1"] = (await ws.ok("log_progress", status="BLOCKED", description="symlinks", parent_id=ids["a"]))["id"]
    ids["b"] = (await ws.ok("log_progress", status="TODO", description="docs", parent_id=ids["root"]))["id"]
    ids["other"] = (await ws.ok("log_progress", status="DONE", description="ship store"))["id"]
    return ids


def shape(nodes: list[dict]) -> list:
    return [(n["description"], shape(n["children"])) for n in nodes]


@MODES
async def test_progress_tree_nests_children_and_filters_keep_ancestors(connect, projects, mode):
    async with connect(mode) as c:
        ws = Session(c, projects["alpha"])
        ids = await make_tree(ws)
        tree = (await ws.ok("get_progress", tree=True))["progress"]
        assert shape(tree) == [
            ("ship resolver", [("write guards", [("symlinks", [])]), ("docs", [])]),
            ("ship store", []),
        ]
        sub = (await ws.ok("get_progress", tree=True, parent_id=ids["a"]))["progress"]
        assert shape(sub) == [("write guards", [("symlinks", [])])] and sub[0]["id"] == ids["a"]
        blocked = (await ws.ok("get_progress", tree=True, status="BLOCKED"))["progress"]
        assert shape(blocked) == [("ship resolver", [("write guards", [("symlinks", [])])])]
        flat = (await ws.ok("get_progress", parent_id=ids["root"]))["progress"]
        assert [p["id"] for p in flat] == [ids["b"], ids["a"]]
        assert "root_id 999" in await ws.error("get_progress", tree=True, parent_id=999)


@MODES
async def test_deleting_progress_with_children_needs_cascade_which_removes_the_subtree(connect, projects, mode):
    async with connect(mode) as c:
        ws = Session(c, projects["alpha"])
        ids = await make_tree(ws)
        text = await ws.error("delete_progress", progress_id=ids["root"])
        assert f"progress {ids['root']} has 3 descendant(s)" in text and "cascade=true" in text
        assert len((await ws.ok("get_progress"))["progress"]) == 5
        out = await ws.ok("delete_progress", progress_id=ids["root"], cascade=True)
        assert sorted(p["id"] for p in out["deleted"]) == sorted([ids["root"], ids["a"], ids["a1"], ids["b"]])
        assert [p["id"] for p in (await ws.ok("get_progress"))["progress"]] == [ids["other"]]
        assert (await ws.ok("search", mode="words", query="symlinks"))["results"] == []
        assert f"progress_id {ids['root']}" in await ws.error("delete_progress", progress_id=ids["root"])


@MODES
async def test_decision_tags_are_normalised_and_matched_case_insensitively(connect, projects, mode):
    async with connect(mode) as c:
        ws = Session(c, projects["alpha"])
        d = await ws.ok("log_decision", summary="Use WAL", tags=["  DB ", "db", "Perf", ""])
        assert d["tags"] == ["DB", "Perf"]
        await ws.ok("log_decision", summary="Other", tags=["perf"])
        got = await ws.ok("get_decisions", tags_all=["db", "PERF"])
        assert [(x["summary"], x["tags"]) for x in got["decisions"]] == [("Use WAL", ["DB", "Perf"])]
        assert [x["summary"] for x in (await ws.ok("get_decisions", tags_any=[" perf "]))["decisions"]] == [
            "Other",
            "Use WAL",
        ]


# --- links -----------------------------------------------------------------------------------------------------


@MODES
async def test_links_need_both_ends_are_unique_and_never_point_to_themselves(connect, projects, mode):
    async with connect(mode) as c:
        ws = Session(c, projects["alpha"])
        d = await ws.ok("log_decision", summary="d")
        p = await ws.ok("log_progress", status="TODO", description="p")
        text = await ws.error(
            "link_items",
            source_type="decision",
            source_id=d["id"],
            target_type="progress",
            target_id=77,
            relationship="implements",
        )
        assert "progress 77 does not exist" in text
        text = await ws.error(
            "link_items",
            source_type="custom_data",
            source_id=5,
            target_type="decision",
            target_id=d["id"],
            relationship="explains",
        )
        assert "custom_data 5 does not exist" in text
        args = {
            "source_type": "progress",
            "source_id": p["id"],
            "target_type": "decision",
            "target_id": d["id"],
            "relationship": "implements",
        }
        first, again = await ws.ok("link_items", **args), await ws.ok("link_items", **args)
        assert first["created"] is True and again["created"] is False and again["id"] == first["id"]
        assert len((await ws.ok("get_linked_items", item_type="decision", item_id=d["id"]))["items"]) == 1
        text = await ws.error(
            "link_items",
            source_type="decision",
            source_id=d["id"],
            target_type="decision",
            target_id=d["id"],
            relationship="x",
        )
        assert "cannot be linked to itself" in text


@MODES
async def test_contexts_are_linked_with_id_1_once_written(connect, projects, mode):
    async with connect(mode) as c:
        ws = Session(c, projects["alpha"])
        d = await ws.ok("log_decision", summary="d")
        args = {
            "source_type": "decision",
            "source_id": d["id"],
            "target_type": "product_context",
            "relationship": "serves",
        }
        assert "update_product_context" in await ws.error("link_items", **args, target_id=1)
        await ws.ok("update_product_context", content={"goal": "g"})
        assert "single id 1" in await ws.error("link_items", **args, target_id=2)
        assert (await ws.ok("link_items", **args, target_id=1))["created"] is True
        items = (await ws.ok("get_linked_items", item_type="product_context", item_id=1))["items"]
        assert [(i["type"], i["id"], i["direction"]) for i in items] == [("decision", d["id"], "incoming")]


@MODES
async def test_linked_items_walk_up_to_three_hops_with_filters(connect, projects, mode):
    async with connect(mode) as c:
        ws = Session(c, projects["alpha"])
        d1 = (await ws.ok("log_decision", summary="d1"))["id"]
        d2 = (await ws.ok("log_decision", summary="d2"))["id"]
        p1 = (await ws.ok("log_progress", status="TODO", description="p1"))["id"]
        s1 = (await ws.ok("log_system_pattern", name="s1", description="s"))["id"]
        for src, dst, rel in (
            (("decision", d1), ("decision", d2), "depends_on"),
            (("decision", d2), ("progress", p1), "implements"),
            (("progress", p1), ("system_pattern", s1), "follows"),
        ):
            await ws.ok(
                "link_items",
                source_type=src[0],
                source_id=src[1],
                target_type=dst[0],
                target_id=dst[1],
                relationship=rel,
            )

        async def walk(**kw) -> list[tuple]:
            items = (await ws.ok("get_linked_items", **kw))["items"]
            return [(i["type"], i["id"], i["direction"], i["depth"], i["via"]["type"], i["via"]["id"]) for i in items]

        assert await walk(item_type="decision", item_id=d2) == [
            ("decision", d1, "incoming", 1, "decision", d2),
            ("progress", p1, "outgoing", 1, "decision", d2),
        ]
        assert await walk(item_type="decision", item_id=d1, depth=3) == [
            ("decision", d2, "outgoing", 1, "decision", d1),
            ("progress", p1, "outgoing", 2, "decision", d2),
            ("system_pattern", s1, "outgoing", 3, "progress", p1),
        ]
        assert (
            await walk(item_type="decision", item_id=d1, depth=2)
            == (await walk(item_type="decision", item_id=d1, depth=3))[:2]
        )
        assert await walk(item_type="system_pattern", item_id=s1, depth=3, linked_type="decision") == [
            ("decision", d2, "incoming", 2, "progress", p1),
            ("decision", d1, "incoming", 3, "decision", d2),
        ]
        assert await walk(item_type="decision", item_id=d2, depth=3, relationship="implements") == [
            ("progress", p1, "outgoing", 1, "decision", d2)
        ]
        r = await c.call_tool(
            "get_linked_items", {"item_type": "decision", "item_id": d1, "depth": 4, "workspace": str(ws.root)}
        )
        assert r.is_error and "depth" in r.content[0].text
        out = await ws.ok("delete_progress", progress_id=p1)
        assert out["links_removed"] == 2
        assert await walk(item_type="decision", item_id=d2, depth=3) == [
            ("decision", d1, "incoming", 1, "decision", d2)
        ]


# --- search ----------------------------------------------------------------------------------------------------


@MODES
async def test_search_ranks_titles_first_highlights_and_filters(connect, projects, mode):
    async with connect(mode) as c:
        ws = Session(c, projects["alpha"])
        body = await ws.ok(
            "log_decision", summary="Tune the database", rationale="the checkpoint runs often", tags=["db"]
        )
        title = await ws.ok("log_decision", summary="Checkpoint every minute")
        task = await ws.ok("log_progress", status="TODO", description="measure checkpoint time")
        term = await ws.ok("log_custom_data", category="ProjectGlossary", key="checkpoint", value="WAL to db file")
        await ws.ok("log_custom_data", category="notes", key="checkpoint", value="another note")
        results = (await ws.ok("search", mode="words", query="checkpoint"))["results"]
        order = [(r["type"], r["id"]) for r in results]
        assert order.index(("decision", title["id"])) < order.index(("decision", body["id"]))
        by_id = {(r["type"], r["id"]): r for r in results}
        assert mark(by_id[("decision", body["id"])], "[", "]") == "the [checkpoint] runs often"
        assert by_id[("decision", title["id"])]["title"] == "Checkpoint every minute"

        async def found(**kw) -> list[tuple[str, int]]:
            return [
                (r["type"], r["id"]) for r in (await ws.ok("search", mode="words", query="checkpoint", **kw))["results"]
            ]

        assert await found(types=["progress"]) == [("progress", task["id"])]
        assert await found(tags_any=["DB"]) == [("decision", body["id"])]
        assert await found(category="ProjectGlossary") == [("custom_data", term["id"])]
        assert len(await found(limit=2)) == 2
        assert await found(since="2999-01-01T00:00:00Z") == []
        since = (datetime.now(UTC) - timedelta(minutes=5)).strftime("%Y-%m-%dT%H:%M:%S+00:00")
        assert len(await found(since=since)) == 5


@MODES
async def test_search_queries_fts5_cannot_parse_are_answered_not_refused(connect, projects, mode):
    async with connect(mode) as c:
        ws = Session(c, projects["alpha"])
        d = await ws.ok("log_decision", summary="SQLite WAL mode", rationale="café 日本語 🚀")
        for query in [
            '"unbalanced',
            "AND",
            "OR",
            "NOT",
            "wal OR",
            "NEAR(",
            "*",
            "col:wal",
            "-wal",
            "^x",
            "()",
            "x" * 1000,
            " ".join(["wal"] * 250),
            "café",
            "日本語",
            "🚀",
            "'; DROP TABLE decisions; --",
        ]:
            results = (await ws.ok("search", mode="words", query=query))["results"]
            if query in ("wal OR", "col:wal", "-wal", "café", "日本語"):
                assert [(r["type"], r["id"]) for r in results] == [("decision", d["id"])], query
        text = await ws.error("search", query="   ")
        assert "search query is empty; pass words to look for" in text and "[invalid_item]" in text
        text = await ws.error("search", query="x" * 5000)
        assert "1000 characters" in text and "[invalid_argument]" in text
        assert "'yesterday'" in await ws.error("search", query="wal", since="yesterday")
        r = await c.call_tool("search", {"query": "wal", "types": ["ticket"], "workspace": str(ws.root)})
        assert r.is_error and "ticket" in r.content[0].text


# --- history, activity, schema ---------------------------------------------------------------------------------


@MODES
async def test_every_context_change_keeps_a_version_and_history_filters(connect, projects, mode):
    async with connect(mode) as c:
        ws = Session(c, projects["alpha"])
        changes = [await ws.ok("update_active_context", patch={"step": i}) for i in range(1, 5)]
        versions = (await ws.ok("get_item_history", item_type="active_context"))["versions"]
        assert [(v["version"], v["content"]) for v in versions] == [(i, {"step": i}) for i in (4, 3, 2, 1)]
        assert [
            v["version"] for v in (await ws.ok("get_item_history", item_type="active_context", limit=1))["versions"]
        ] == [4]
        one = (await ws.ok("get_item_history", item_type="active_context", version=2))["versions"]
        writer = {"principal": "local", "client": "mcp", "client_version": one[0]["written_by"]["client_version"]}
        assert one == [
            {
                "version": 2,
                "content": {"step": 2},
                "changed_at": changes[1]["updated_at"],
                "written_by": {**writer, "tool": "update_active_context"},
            }
        ]
        before = await ws.ok("get_item_history", item_type="active_context", before=changes[2]["updated_at"])
        assert [v["version"] for v in before["versions"]] == [2, 1]
        after = await ws.ok("get_item_history", item_type="active_context", after=changes[1]["updated_at"])
        assert [v["version"] for v in after["versions"]] == [4, 3]
        assert (await ws.ok("get_item_history", item_type="product_context"))["versions"] == []
        assert "no version 9" in await ws.error("get_item_history", item_type="active_context", version=9)


@MODES
async def test_recent_activity_lists_what_changed_with_counts(connect, projects, mode):
    async with connect(mode) as c:
        ws = Session(c, projects["alpha"])
        for i in range(3):
            await ws.ok("log_decision", summary=f"d{i}")
        await ws.ok("log_progress", status="TODO", description="t")
        await ws.ok("log_system_pattern", name="p", description="d")
        await ws.ok("log_custom_data", category="ProjectGlossary", key="k", value=[1])
        await ws.ok("update_product_context", content={"goal": "g"})
        out = await ws.ok("get_recent_activity", limit_per_type=2)
        assert [d["summary"] for d in out["decisions"]] == ["d2", "d1"]
        assert out["counts"] == {
            "decisions": 3,
            "progress": 1,
            "system_patterns": 1,
            "custom_data": 1,
            "context_changes": 1,
        }
        assert out["custom_data"][0]["value"] == [1]
        assert out["context_changes"][0]["item_type"] == "product_context"
        assert (await ws.ok("get_recent_activity", hours_ago=1))["counts"]["decisions"] == 3
        future = await ws.ok("get_recent_activity", since="2999-01-01T00:00:00Z")
        assert future["decisions"] == [] and set(future["counts"].values()) == {0}
        assert "not both" in await ws.error("get_recent_activity", hours_ago=1, since="2026-01-01T00:00:00Z")
        assert "'noon'" in await ws.error("get_recent_activity", since="noon")


@MODES
async def test_memory_schema_lists_every_item_type_and_only_real_tools(connect, mode):
    async with connect(mode) as c:
        schema = (await c.call_tool("get_memory_schema", {})).structured_content
        tools = {t.name for t in (await c.list_tools()).tools}
    assert set(schema["item_types"]) == {
        "decision",
        "progress",
        "system_pattern",
        "custom_data",
        "product_context",
        "active_context",
    }
    named = {t for item in [*schema["item_types"].values(), schema["links"]] for t in item["write"] + item["read"]}
    named |= set(schema["activity"]) | set(schema["transfer"])
    assert named <= tools


# --- batch -----------------------------------------------------------------------------------------------------


@MODES
async def test_batch_writes_500_items_and_refuses_501(connect, projects, mode):
    async with connect(mode) as c:
        ws = Session(c, projects["alpha"])
        out = await ws.ok(
            "batch_log_items",
            item_type="progress",
            items=[{"status": "TODO", "description": f"task {i}"} for i in range(500)],
        )
        assert out["count"] == 500 and len(out["items"]) == 500
        assert len((await ws.ok("get_progress", limit=1000))["progress"]) == 500
        text = await ws.error("batch_log_items", item_type="decision", items=[{"summary": "x"}] * 501)
        assert "501 items is more than 500" in text
        assert (await ws.ok("get_decisions"))["decisions"] == []


@MODES
@pytest.mark.parametrize(
    ("bad", "message"),
    [
        ({"rationale": "no summary"}, "item 2: missing summary"),
        ({"summary": "x", "colour": "red"}, "item 2: unknown field(s) colour"),
        ({"summary": "  "}, "item 2: decision summary is empty"),
        ({"summary": 12}, "item 2: field summary has the wrong type"),
    ],
)
async def test_an_invalid_batch_item_is_named_and_nothing_is_written(connect, projects, mode, bad, message):
    async with connect(mode) as c:
        ws = Session(c, projects["alpha"])
        await ws.ok("log_decision", summary="already there")
        before = (await ws.ok("get_decisions", limit=1000))["decisions"]
        text = await ws.error(
            "batch_log_items", item_type="decision", items=[{"summary": "a"}, {"summary": "b"}, bad, {"summary": "d"}]
        )
        assert message in text and "nothing was written" in text
        assert (await ws.ok("get_decisions", limit=1000))["decisions"] == before


# --- export and import -----------------------------------------------------------------------------------------


async def fill(ws: Session) -> None:
    d = await ws.ok("log_decision", summary="Use WAL", rationale="line one\n## not a heading\n<!-- x -->", tags=["db"])
    parent = await ws.ok("log_progress", status="TODO", description="ship")
    await ws.ok("log_progress", status="DONE", description="test", parent_id=parent["id"])
    p = await ws.ok("log_system_pattern", name="Outbox", description="events", tags=["events"])
    await ws.ok("log_custom_data", category="ProjectGlossary", key="WAL", value={"n": [1, 2.5, None, "é"]})
    await ws.ok("update_active_context", content={"focus": "export"})
    await ws.ok("update_active_context", patch={"next": "import"})
    await ws.ok(
        "link_items",
        source_type="decision",
        source_id=d["id"],
        target_type="system_pattern",
        target_id=p["id"],
        relationship="implements",
        description="how",
    )


def files(root: Path, name: str) -> dict[str, str]:
    return {p.name: p.read_text() for p in sorted((root / name).iterdir()) if p.name != "manifest.json"}


@MODES
@pytest.mark.parametrize("fmt", ["json", "markdown"])
async def test_export_then_import_into_an_empty_workspace_round_trips(connect, projects, mode, fmt):
    alpha, beta = projects["alpha"], projects["beta"]
    async with connect(mode) as c:
        a, b = Session(c, alpha), Session(c, beta)
        await fill(a)
        out = await a.ok("export", format=fmt)
        assert out["output_dir"] == str(alpha / ".homeport" / "export") and out["counts"]["links"] == 1
        shutil.copytree(alpha / ".homeport" / "export", beta / "incoming")
        result = await b.ok("import", input_dir="incoming")
        assert result["mode"] == "merge" and result["counts"] == out["counts"]
        await b.ok("export", format=fmt, output_dir="again")
        assert files(beta, "again") == files(alpha, ".homeport/export")
        for tool, key in (
            ("get_decisions", "decisions"),
            ("get_system_patterns", "system_patterns"),
            ("get_custom_data", "items"),
            ("get_progress", "progress"),
        ):
            assert (await b.ok(tool))[key] == (await a.ok(tool))[key]
        assert (await b.ok("get_active_context"))["content"] == {"focus": "export", "next": "import"}
        assert [i["type"] for i in (await b.ok("get_linked_items", item_type="decision", item_id=1))["items"]] == [
            "system_pattern"
        ]
        assert [r["type"] for r in (await b.ok("search", mode="words", query="heading"))["results"]] == ["decision"]


@MODES
async def test_import_merges_by_default_and_replace_empties_first(connect, projects, mode):
    alpha, beta = projects["alpha"], projects["beta"]
    async with connect(mode) as c:
        a, b = Session(c, alpha), Session(c, beta)
        await a.ok("log_decision", summary="exported")
        await a.ok("export")
        shutil.copytree(alpha / ".homeport" / "export", beta / "in")
        await b.ok("log_decision", summary="local one")
        await b.ok("log_decision", summary="local two")
        await b.ok("import", input_dir="in")
        assert [d["summary"] for d in (await b.ok("get_decisions"))["decisions"]] == ["local two", "exported"]
        out = await b.ok("import", input_dir="in", mode="replace")
        assert out["mode"] == "replace"
        assert [d["summary"] for d in (await b.ok("get_decisions"))["decisions"]] == ["exported"]
        assert (await b.ok("search", mode="words", query="local"))["results"] == []


@MODES
async def test_export_and_import_paths_must_stay_inside_the_workspace(connect, projects, tmp_path, mode):
    alpha = projects["alpha"]
    outside = tmp_path / "outside"
    outside.mkdir()
    (alpha / "escape").symlink_to(outside, target_is_directory=True)
    async with connect(mode) as c:
        ws = Session(c, alpha)
        await ws.ok("log_decision", summary="secret")
        for given in ("../outside", str(outside), "/tmp/x", "escape", "escape/deeper"):
            text = await ws.error("export", output_dir=given)
            assert "outside the workspace" in text and repr(given) in text
            text = await ws.error("import", input_dir=given)
            assert "outside the workspace" in text and repr(given) in text
        assert list(outside.iterdir()) == []
        assert (await ws.ok("export", output_dir=str(alpha / "inside")))["output_dir"] == str(alpha / "inside")


@MODES
async def test_exporting_onto_a_file_names_the_directory_and_the_cause(connect, projects, mode):
    (projects["alpha"] / "notes.txt").write_text("not a directory")
    async with connect(mode) as c:
        text = await Session(c, projects["alpha"]).error("export", output_dir="notes.txt")
    assert "notes.txt" in text


@MODES
async def test_importing_without_a_manifest_is_a_clear_error(connect, projects, mode):
    async with connect(mode) as c:
        ws = Session(c, projects["alpha"])
        (projects["alpha"] / "empty").mkdir()
        text = await ws.error("import", input_dir="empty")
        assert "holds no readable manifest.json; export there first" in text
        assert "no readable manifest.json" in await ws.error("import")
