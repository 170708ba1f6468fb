"""The dashboard's pages, server-side: how long each takes to answer at 5,000 decisions.

    python3 bench/ui.py                       # 5,000 decisions, 30 requests per page
    python3 bench/ui.py --decisions 20000 --requests 50

Each page is requested through the whole HTTP app in this process (ASGI, no socket): Host/Origin
check, the tool calls through the pipeline (each on a worker thread, as over HTTP), Jinja2
rendering. The memory: N decisions with tags, 200 progress entries under 20 parents, 50 system
patterns, 100 custom data entries, 60 glossary terms, links between some of them. The target is
under 300 ms for a workspace page; pages are paginated (25 decisions).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import anyio
import httpx2 as httpx
from _common import RESULTS, machine_description, machine_markdown, md_table, median, percentile

from homeport.cli._compose import dashboard_app
from homeport.core.runtime import build_runtime
from homeport.core.settings import ServeSettings
from homeport.server.app import build_http_app, build_server
from homeport.store import Store
from homeport.store.batch import MAX_BATCH, batch_log_items
from homeport.store.contexts import update_context
from homeport.store.links import link_items

TAGS = ("storage", "api", "ui", "auth", "perf", "docs", "ci", "release")


def seed(store: Store, decisions: int) -> None:
    rows = [
        {
            "summary": f"Decision {n}: use approach {n % 17} for component {n % 41}",
            "rationale": f"Because measurement {n} showed it is simpler and faster for case {n % 13}.",
            "tags": [TAGS[n % len(TAGS)], TAGS[(n * 3) % len(TAGS)]],
        }
        for n in range(decisions)
    ]
    for i in range(0, len(rows), MAX_BATCH):
        batch_log_items(store, "decision", rows[i : i + MAX_BATCH])
    parents = batch_log_items(
        store, "progress", [{"status": "IN_PROGRESS", "description": f"Epic {n}"} for n in range(20)]
    )
    ids = [item["id"] for item in parents]
    children = [
        {"status": ("TODO", "DONE", "BLOCKED")[n % 3], "description": f"Task {n}", "parent_id": ids[n % 20]}
        for n in range(180)
    ]
    batch_log_items(store, "progress", children)
    batch_log_items(
        store, "system_pattern", [{"name": f"Pattern {n}", "description": f"How {n} works."} for n in range(50)]
    )
    data = [{"category": f"cat{n % 5}", "key": f"key{n}", "value": {"n": n}} for n in range(100)]
    data += [{"category": "ProjectGlossary", "key": f"Term {n}", "value": f"Meaning of term {n}."} for n in range(60)]
    batch_log_items(store, "custom_data", data)
    update_context(store, "product", content={"goal": "A **fictional** product", "architecture": "- one\n- two"})
    update_context(store, "active", content={"focus": "Benchmarks"})
    for n in range(1, 30):
        link_items(store, "decision", n, "progress", ids[n % 20], "implements")
        link_items(store, "decision", n, "decision", n + 1, "relates_to")


async def measure(app: object, paths: dict[str, str], requests: int) -> dict[str, list[float]]:
    times: dict[str, list[float]] = {name: [] for name in paths}
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1:8765") as client:
        for name, path in paths.items():
            response = await client.get(path)  # warm: the store opened, the templates compiled
            assert response.status_code == 200, (path, response.status_code, response.text[:500])
            for _ in range(requests):
                started = time.perf_counter()
                response = await client.get(path)
                times[name].append((time.perf_counter() - started) * 1000)
                assert response.status_code == 200
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--decisions", type=int, default=5000)
    parser.add_argument("--requests", type=int, default=30)
    parser.add_argument("--out", type=Path, default=RESULTS / "2026-11-25-ui.md")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "app"
        (root / ".git").mkdir(parents=True)
        runtime = build_runtime(ServeSettings(transport="http", allow_roots=(root,), cwd=root, state_dir=None))
        try:
            started = time.perf_counter()
            store = runtime.stores.get(root, create=True)
            assert store is not None
            seed(store, args.decisions)
            print(f"seeded {args.decisions} decisions in {time.perf_counter() - started:.1f} s", file=sys.stderr)
            app = build_http_app(build_server(runtime), runtime, dashboard=dashboard_app)
            last_page = -(-args.decisions // 25)
            paths = {
                "workspace page 1": f"/ui/w?ws={root}",
                f"workspace page {last_page} (oldest)": f"/ui/w?ws={root}&page={last_page}",
                "workspace, tag filter": f"/ui/w?ws={root}&tag=perf",
                "item (decision, links 2 deep)": f"/ui/item?ws={root}&type=decision&id=2",
                "item (active context, history)": f"/ui/item?ws={root}&type=active_context&id=1",
                "search": f"/ui/search?ws={root}&q=simpler",
                "activity (7 days)": f"/ui/activity?ws={root}",
                "workspaces list": "/ui/",
            }
            times = anyio.run(measure, app, paths, args.requests)
        finally:
            runtime.close()
    rows = [[name, f"{median(t):.1f}", f"{percentile(t, 95):.1f}", f"{max(t):.1f}"] for name, t in times.items()]
    table = md_table(["page", "median ms", "p95 ms", "max ms"], rows, align="lrrr")
    print(table)
    text = (
        f"# Dashboard pages, server-side, at {args.decisions:,} decisions\n\n"
        f"`python3 bench/ui.py --decisions {args.decisions} --requests {args.requests}`: each page requested "
        f"{args.requests} times (after one warm-up) through the whole HTTP app in process (ASGI, no socket): "
        "Host/Origin check, every tool call through the pipeline on a worker thread, Jinja2 rendering. "
        "Decisions are paginated, 25 a page. Target: a workspace page under 300 ms.\n\n"
        f"{table}\n\n{machine_markdown(machine_description())}\n"
    )
    args.out.write_text(text, encoding="utf-8")
    print(f"wrote {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
