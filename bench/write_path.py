"""Where a write's CPU goes: log_decision, log_custom_data, log_progress and update_decision, step by step.

Each size (`--items`, default 600 and 2,000) gets a fresh workspace filled with that many decisions
through the tools (the texts of bench/run.py's writes). Then, per tool, through the real pipeline and
an in-memory MCP client (client and server in this process, as bench/cpu_per_call.py does):

1. CPU per call (`time.process_time` over `--calls` calls, no profiler), the figure to compare;
2. the same calls under cProfile, and each step's share: the cumulative time of the functions that do
   it, divided by the whole call's. The profiler slows Python code more than SQLite's C, so the shares
   are a map of where to look, and the unprofiled CPU per call is the figure to compare.

    python3 bench/write_path.py                      # 600 and 2,000 items, 300 calls per tool
    python3 bench/write_path.py --items 2000 -n 500
    PYTHONPATH=OLD/src python3 bench/write_path.py   # another checkout's code, for a before/after

Prints Markdown; writes nothing. The steps nest as listed: the indented ones are inside the line above.
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
from mcp import Client

sys.path.insert(0, str(Path(__file__).resolve().parent))

from adapters import custom_key, custom_value, decision

import homeport
from homeport.core import ServeSettings, build_runtime
from homeport.server import build_server

WARMUP = 20
# (label, indent, [(file path suffix, function name), ...]): the functions whose cumulative time is the step.
STEPS: list[tuple[str, int, list[tuple[str, str]]]] = [
    (
        "pipeline (everything below; the rest is the MCP SDK: JSON-RPC, pydantic, output schema)",
        0,
        [("core/pipeline.py", "call")],
    ),
    ("argument validation (catalog)", 1, [("core/catalog.py", "validate")]),
    ("workspace resolution", 1, [("core/runtime.py", "resolve")]),
    ("secret scan", 1, [("core/secret_gate.py", "check")]),
    (
        "the tool (store write + notice)",
        1,
        [("core/tools/memory.py", n) for n in ("log_decision", "log_progress", "log_custom_data")]
        + [("core/tools/versions.py", "update_decision")],
    ),
    (
        "store write transaction",
        2,
        [
            ("store/decisions.py", "log_decision"),
            ("store/decisions.py", "update_decision"),
            ("store/custom_data.py", "log_custom_data"),
            ("store/progress.py", "log_progress"),
        ],
    ),
    ("row insert/update (Prepared statements)", 3, [("store/database.py", "insert"), ("store/database.py", "run")]),
    ("tags", 3, [("store/tags.py", "set_tags")]),
    ("uid", 3, [("store/uids.py", "assign_uid")]),
    ("versions record (the row names the writer: provenance)", 3, [("store/versions.py", "record")]),
    ("branch recording (finds the git repository, reads HEAD)", 3, [("store/branches.py", "scope_new_item")]),
    ("full-text index", 3, [("store/search.py", "index_item")]),
    ("commit (COMMIT, WAL)", 3, [("store/database.py", "_end")]),
    ("duplicate notice", 2, [("store/tidy_proposals.py", "near_duplicate")]),
    ("candidate query (FTS)", 3, [("store/search.py", "search"), ("store/search.py", "rarest_words")]),
    (
        "signals on the candidates",
        3,
        [("store/tidy_signals.py", "signals"), ("store/tidy_signals.py", "content_tokens")],
    ),
    ("lifecycle checks", 2, [("store/lifecycle.py", "hidden_keys"), ("store/lifecycle.py", "hidden_of")]),
    ("result shaping", 1, [("core/runtime.py", "tool_result"), ("core/pipeline.py", "_alias_shaped_dict")]),
]


def _args(tool: str, i: int, items: int) -> dict[str, Any]:
    if tool == "log_decision":
        return decision(i)
    if tool == "log_custom_data":
        return {"category": "bench", "key": custom_key(i), "value": custom_value(i)}
    if tool == "log_progress":
        return {"status": "TODO", "description": f"Task {i}: move the nightly export to the new queue"}
    return {"decision_id": 1 + (i * 7) % items, "rationale": f"Revised rationale {i}: the WAL checkpoint runs on close"}


TOOLS = ("log_decision", "log_custom_data", "log_progress", "update_decision")


def _cumulative(stats: pstats.Stats, wanted: list[tuple[str, str]]) -> float:
    total = 0.0
    for (path, _line, name), row in stats.stats.items():  # type: ignore[attr-defined]
        if any(path.endswith(suffix) and name == fn for suffix, fn in wanted):
            total += row[3]
    return total


async def measure(items: int, calls: int) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory(prefix="homeport-writes-") as tmp:
        workspace = Path(tmp) / "ws"
        (workspace / ".homeport").mkdir(parents=True)
        runtime = build_runtime(ServeSettings(workspace=str(workspace), home=Path(tmp)))
        try:
            async with Client(build_server(runtime)) as client:
                for i in range(items):
                    await client.call_tool("log_decision", decision(100_000 + i))
                for tool in TOOLS:
                    for i in range(WARMUP):
                        await client.call_tool(tool, _args(tool, i, items))
                    cpu = time.process_time()
                    for i in range(calls):
                        result = await client.call_tool(tool, _args(tool, i, items))
                        if result.is_error:
                            raise SystemExit(f"{tool} failed: {result.content}")
                    per_call = (time.process_time() - cpu) / calls * 1e3
                    profile = cProfile.Profile(time.process_time)  # CPU, not wall: the machine may be busy
                    profile.enable()
                    for i in range(calls):
                        await client.call_tool(tool, _args(tool, calls + i, items))
                    profile.disable()
                    stats = pstats.Stats(profile)
                    whole = stats.total_tt  # type: ignore[attr-defined]
                    out[tool] = {"cpu_ms": per_call, "steps": [_cumulative(stats, w) / whole for _, _, w in STEPS]}
        finally:
            runtime.close()
    return out


def store_only(items: int, calls: int) -> dict[str, float]:
    """CPU µs per call of the store functions alone (no MCP, no pipeline): the write itself."""
    from homeport.store import Store, custom_data, decisions, progress

    out: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="homeport-writes-") as tmp:
        store = Store.open(Path(tmp) / "store.db", create=True)
        try:
            for i in range(items):
                d = decision(100_000 + i)
                decisions.log_decision(store, d["summary"], rationale=d["rationale"], tags=d["tags"])
            runs = {
                "log_decision": lambda i: decisions.log_decision(store, **_args("log_decision", i, items)),
                "log_custom_data": lambda i: custom_data.log_custom_data(store, **_args("log_custom_data", i, items)),
                "log_progress": lambda i: progress.log_progress(store, **_args("log_progress", i, items)),
                "update_decision": lambda i: decisions.update_decision(store, **_args("update_decision", i, items)),
            }
            for tool, run in runs.items():
                for i in range(WARMUP):
                    run(i)
                cpu = time.process_time()
                for i in range(calls):
                    run(i)
                out[tool] = (time.process_time() - cpu) / calls * 1e6
        finally:
            store.close()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--items", type=int, nargs="+", default=[600, 2000], help="store sizes (default 600 2000)")
    parser.add_argument("-n", "--calls", type=int, default=300, help="calls per tool (default 300)")
    parser.add_argument("--store-only", action="store_true", help="time the store functions alone, no profile")
    args = parser.parse_args()
    print(f"code: {Path(homeport.__file__).parent}\n")
    if args.store_only:
        for items in args.items:
            got = store_only(items, args.calls)
            print(
                f"{items:,} decisions, store functions alone, CPU µs per call: "
                + ", ".join(f"{t} {v:.0f}" for t, v in got.items())
            )
        return
    for items in args.items:
        got = anyio.run(measure, items, args.calls)
        print(f"### {items:,} decisions in the store, {args.calls} calls per tool\n")
        print("| step | " + " | ".join(TOOLS) + " |")
        print("| :--- |" + " ---: |" * len(TOOLS))
        print(
            "| **CPU per call, unprofiled (ms, client + server)** | "
            + " | ".join(f"**{got[t]['cpu_ms']:.2f}**" for t in TOOLS)
            + " |"
        )
        for k, (label, indent, _) in enumerate(STEPS):
            shares = " | ".join(f"{got[t]['steps'][k] * 100:.1f} %" for t in TOOLS)
            print(f"| {'&nbsp;&nbsp;' * indent * 2}{label} | {shares} |")
        print()


if __name__ == "__main__":
    main()
