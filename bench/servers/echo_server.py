"""The floor: an MCP server on the same SDK as Homeport that does no storage work.

Its tools have the SHAPE of Homeport's workload tools: the same names, the same arguments and
results of the same size and structure (a decision is the same dict with the same keys, a read
returns 10 of them, a search returns hits of the same shape, every result carries the same
`workspace` block), but everything lives in a Python list/dict in memory. Whatever Homeport
costs above this server is Homeport's own work: routing, SQLite, serialisation of its results.

Run over stdio:  python bench/servers/echo_server.py [--workspace DIR]
Run over HTTP:   python bench/servers/echo_server.py --http PORT   (Streamable HTTP at 127.0.0.1:PORT/mcp)
"""

from __future__ import annotations

import argparse
import os
from datetime import UTC, datetime
from typing import Annotated, Any

from mcp.server import MCPServer
from mcp.types import ToolAnnotations
from pydantic import Field

Json = dict[str, Any]

READ = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False)
WRITE = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False)
WorkspaceArg = Annotated[str | None, Field(description="Project directory or handle (ignored by the floor).")]
TagsArg = Annotated[list[str] | None, Field(description="Tags.")]


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def build_echo_server(root: str) -> MCPServer:
    mcp = MCPServer(
        "echo-floor", version="1.0", instructions="Benchmark floor: same tool shapes, no storage.", log_level="WARNING"
    )
    where = {"root": root, "source": "config"}
    decisions: list[Json] = []
    custom: dict[tuple[str, str], Json] = {}

    @mcp.tool(annotations=WRITE, description="Record a decision (in memory).")
    async def log_decision(
        summary: str,
        rationale: str | None = None,
        implementation_details: str | None = None,
        tags: TagsArg = None,
        workspace: WorkspaceArg = None,
    ) -> Json:
        stamp = _now()
        item = {
            "id": len(decisions) + 1,
            "summary": summary.strip(),
            "rationale": rationale,
            "implementation_details": implementation_details,
            "tags": list(tags or []),
            "created_at": stamp,
            "updated_at": stamp,
        }
        decisions.append(item)
        return {**item, "workspace": where}

    @mcp.tool(annotations=READ, description="Latest decisions, newest first (in memory).")
    async def get_decisions(
        limit: Annotated[int, Field(ge=1, le=1000)] = 20,
        tags_any: TagsArg = None,
        tags_all: TagsArg = None,
        workspace: WorkspaceArg = None,
    ) -> Json:
        return {"decisions": decisions[: -limit - 1 : -1], "workspace": where}

    @mcp.tool(name="search", annotations=READ, description="Substring search over the latest decisions (in memory).")
    async def search_items(
        query: str,
        types: list[str] | None = None,
        limit: Annotated[int, Field(ge=1, le=200)] = 20,
        workspace: WorkspaceArg = None,
    ) -> Json:
        word = query.strip().lower()
        hits: list[Json] = []
        for item in reversed(decisions):  # stops after `limit` hits: no scan of the whole list
            if word in item["summary"].lower():
                title = item["summary"]
                hits.append(
                    {
                        "type": "decision",
                        "id": item["id"],
                        "title": title,
                        "snippet": title.replace(word, f"[{word}]"),
                        "score": 1.0,
                    }
                )
                if len(hits) >= limit:
                    break
        return {"results": hits, "workspace": where}

    @mcp.tool(annotations=READ, description="Decisions whose summary shares a word with the task (in memory).")
    async def get_context(
        task: Annotated[str, Field(min_length=1)],
        budget_tokens: Annotated[int, Field(ge=100, le=32000)] = 2000,
        workspace: WorkspaceArg = None,
    ) -> Json:
        words = {w for w in task.lower().split() if len(w) > 2}
        left, items = budget_tokens, []
        for item in reversed(decisions[-60:]):  # Homeport ranks at most 60 candidates
            if not words & set(item["summary"].lower().split()):
                continue
            text = f"{item['summary']}\n{item['rationale'] or ''}"[:800]
            tokens = -(-len(text.encode()) // 4)
            if tokens > left:
                break
            left -= tokens
            items.append({"type": "decision", "id": item["id"], "why": "match", "text": text, "tokens": tokens})
        return {
            "task": task,
            "budget_tokens": budget_tokens,
            "used_tokens": budget_tokens - left,
            "token_estimate": "ceil(utf8_bytes / 4)",
            "product_context": None,
            "active_context": None,
            "items": items,
            "omitted": 0,
            "workspace": where,
        }

    @mcp.tool(annotations=WRITE, description="Set a value under (category, key) (in memory).")
    async def log_custom_data(category: str, key: str, value: Any, workspace: WorkspaceArg = None) -> Json:
        stamp = _now()
        old = custom.get((category, key))
        item = {
            "id": old["id"] if old else len(custom) + 1,
            "category": category,
            "key": key,
            "value": value,
            "created_at": old["created_at"] if old else stamp,
            "updated_at": stamp,
        }
        custom[(category, key)] = item
        return {**item, "workspace": where}

    @mcp.tool(annotations=READ, description="Read values, optionally one category or one (category, key).")
    async def get_custom_data(
        category: str | None = None, key: str | None = None, workspace: WorkspaceArg = None
    ) -> Json:
        if category is not None and key is not None:
            one = custom.get((category, key))
            items = [one] if one else []
        else:
            items = [
                v
                for (c, k), v in sorted(custom.items())
                if (category is None or c == category) and (key is None or k == key)
            ]
        return {"items": items, "workspace": where}

    return mcp


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workspace", default=os.getcwd(), help="reported in results like Homeport's config source")
    parser.add_argument("--http", type=int, metavar="PORT", help="serve Streamable HTTP on 127.0.0.1:PORT/mcp")
    args = parser.parse_args()
    mcp = build_echo_server(os.path.realpath(args.workspace))
    if args.http is None:
        mcp.run("stdio")
        return

    import uvicorn
    from starlette.requests import Request
    from starlette.responses import JSONResponse

    @mcp.custom_route("/healthz", methods=["GET"])
    async def healthz(_request: Request) -> JSONResponse:
        return JSONResponse({"status": "ok"})

    app = mcp.streamable_http_app(streamable_http_path="/mcp", host="127.0.0.1")
    uvicorn.run(app, host="127.0.0.1", port=args.http, log_level="warning", lifespan="on")


if __name__ == "__main__":
    main()
