"""What search by meaning costs: start-up and writes with the semantic extra and without (must not
differ), embedding throughput, semantic and auto search latency at 10,000 and 100,000 items, peak RSS.

Every phase runs in its own process (peak RSS is per process; "without" blocks the extra's modules
in that process, as if it were not installed). The 10k and 100k stores get real item texts for
word search and synthetic vectors for the items, each its topic's real embedding plus noise
(embedding 100,000 items takes about 25 minutes on 2 cores; the search cost depends on the number
of vectors and how many are near the query, not on where they came from).
The query is embedded by the real model in every search.

Run: python3 bench/semantic.py [--quick] [--scales 10000,100000]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import percentile, proc_status_kb

BLOCK = "import sys\nfor m in ('numpy', 'onnxruntime', 'tokenizers'):\n    sys.modules[m] = None\n"
TOPICS = [
    "database migrations and schema changes",
    "deploying releases with zero downtime",
    "caching user avatars on the CDN",
    "rotating credentials and secrets",
    "translating the onboarding emails",
    "flaky tests in continuous integration",
    "rate limiting the public API",
    "search ranking and relevance",
]
QUERIES = [
    "how do we ship without an outage",
    "password rotation",
    "slow images for users",
    "tests that fail at random",
    "too many requests from one client",
]


def run_phase(phase: str, *args: str, without: bool = False) -> dict[str, Any]:
    code = (BLOCK if without else "") + (
        f"import sys; sys.path.insert(0, {str(Path(__file__).parent)!r}); sys.argv = ['semantic.py', '--phase', "
        f"{phase!r}, *{list(args)!r}]\nimport runpy; runpy.run_path({__file__!r}, run_name='__main__')"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=7200)
    if done.returncode != 0:
        raise SystemExit(f"phase {phase} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.splitlines()[-1])


def peak_rss_mb() -> float:
    return (proc_status_kb(os.getpid(), "VmHWM") or 0) / 1024


# -- phases (each in its own process) ---------------------------------------------------------------


def phase_startup() -> dict[str, Any]:
    """Import, build the runtime and server, list the tools over the in-memory client."""
    import anyio

    start = time.perf_counter()
    from mcp import Client

    from homeport.core import ServeSettings, build_runtime
    from homeport.server import build_server

    async def main() -> None:
        runtime = build_runtime(ServeSettings(cwd=Path("/")))
        async with Client(build_server(runtime)) as c:
            await c.list_tools()
        runtime.close()

    anyio.run(main)
    loaded = sorted(m for m in ("numpy", "onnxruntime", "tokenizers") if sys.modules.get(m) is not None)
    return {"seconds": time.perf_counter() - start, "loaded": loaded, "rss_mb": peak_rss_mb()}


def phase_writes(count: str, warm: str = "") -> dict[str, Any]:
    """`count` log_decision calls through the MCP client; with the extra, the thread embeds meanwhile.

    `warm`: the model is loaded first (a few writes, then waiting for the thread), so the figures are
    those of a server that has been running; otherwise the model loads during the burst.
    """
    import anyio
    import anyio.to_thread
    from mcp import Client

    from homeport.core import ServeSettings, build_runtime
    from homeport.server import build_server

    n = int(count)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "app"
        (root / ".git").mkdir(parents=True)
        runtime = build_runtime(ServeSettings(cwd=Path("/"), home=Path(tmp)))
        times: list[float] = []

        async def main() -> None:
            async with Client(build_server(runtime)) as c:
                if warm:
                    for i in range(5):
                        await c.call_tool("log_decision", {"summary": f"warm-up {i}", "workspace": str(root)})
                    await anyio.to_thread.run_sync(runtime.semantic.drain, 120)
                for i in range(n):
                    args = {"summary": f"{TOPICS[i % len(TOPICS)]} #{i}", "rationale": TOPICS[(i * 3) % len(TOPICS)]}
                    t = time.perf_counter()
                    r = await c.call_tool("log_decision", {**args, "workspace": str(root)})
                    times.append(time.perf_counter() - t)
                    assert not r.is_error, r.content

        anyio.run(main)
        drained_at = time.perf_counter()
        runtime.semantic.drain(timeout=600)
        drain_s = time.perf_counter() - drained_at
        runtime.close()
    return {
        "p50_ms": percentile(times, 50) * 1000,
        "p95_ms": percentile(times, 95) * 1000,
        "drain_after_s": drain_s,
        "rss_mb": peak_rss_mb(),
    }


def phase_throughput(count: str) -> dict[str, Any]:
    """Items per second through the indexer (chunk, embed, save), from a store of `count` pending items."""
    from homeport.embedding.indexer import VectorIndexer
    from homeport.embedding.model import load_embedder
    from homeport.store import Store
    from homeport.store.batch import batch_log_items

    n = int(count)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / ".git").mkdir()
        store = Store.open(root, create=True)
        assert store is not None
        items = [
            {"summary": f"{TOPICS[i % 8]} #{i}", "rationale": " ".join([TOPICS[(i * 3) % 8]] * 4)} for i in range(n)
        ]
        for start in range(0, n, 500):  # the batch tool's limit
            batch_log_items(store, "decision", items[start : start + 500])
        t = time.perf_counter()
        embedder = load_embedder(None)
        load_s = time.perf_counter() - t
        indexer = VectorIndexer(lambda: embedder)
        t = time.perf_counter()
        indexer.notice(store)
        assert indexer.drain(timeout=3600)
        seconds = time.perf_counter() - t
        indexer.close()
        q = []
        for query in QUERIES * 4:
            t = time.perf_counter()
            embedder.embed([query])
            q.append(time.perf_counter() - t)
        store.close()
    return {
        "items_per_s": n / seconds,
        "load_s": load_s,
        "query_embed_ms": percentile(q, 50) * 1000,
        "model": embedder.name,
        "rss_mb": peak_rss_mb(),
    }


def phase_search(count: str) -> dict[str, Any]:
    """semantic and auto search p50/p95 over `count` items with synthetic vectors; first (cold) query apart."""
    import numpy as np

    from homeport.core.semantic import SemanticSearch
    from homeport.embedding.model import load_embedder
    from homeport.store import Store
    from homeport.store.database import driver
    from homeport.store.decisions import insert_decision

    n = int(count)
    embedder = load_embedder(None)
    rng = np.random.default_rng(7)
    # Each synthetic vector is its item's topic, embedded by the model, plus noise (cosine about 0.85 to the
    # topic): queries then find items above the similarity floor, as they would in a real store.
    topics = embedder.embed(TOPICS)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / ".git").mkdir()
        store = Store.open(root, create=True)
        assert store is not None
        built = time.perf_counter()
        for start in range(0, n, 5000):
            with store.write() as conn:
                rows = []
                for i in range(start, min(n, start + 5000)):
                    d = insert_decision(conn, f"{TOPICS[i % 8]} #{i}", rationale=TOPICS[(i * 5) % 8])
                    v = topics[i % 8] + 0.03 * rng.standard_normal(embedder.dim).astype(np.float32)
                    rows.append(
                        ("decision", d["id"], 0, embedder.name, (v / np.linalg.norm(v)).astype("<f4").tobytes())
                    )
                driver(conn).executemany(
                    "INSERT INTO item_vectors (item_type, item_id, chunk, model, vector) VALUES (?, ?, ?, ?, ?)", rows
                )
        build_s = time.perf_counter() - built
        semantic = SemanticSearch(None, background=False)
        out: dict[str, Any] = {"build_s": build_s}
        t = time.perf_counter()
        semantic.search(store, QUERIES[0], mode="semantic")
        out["cold_ms"] = (time.perf_counter() - t) * 1000
        for mode in ("words", "semantic", "auto"):
            times = []
            for query in QUERIES * 8:
                t = time.perf_counter()
                r = semantic.search(store, query, mode=mode)  # type: ignore[arg-type]
                times.append(time.perf_counter() - t)
                assert mode == "words" or r["not_yet_embedded"] == 0
            out[f"{mode}_p50_ms"] = percentile(times, 50) * 1000
            out[f"{mode}_p95_ms"] = percentile(times, 95) * 1000
        semantic.close()
        store.close()
    out["rss_mb"] = peak_rss_mb()
    return out


PHASES = {"startup": phase_startup, "writes": phase_writes, "throughput": phase_throughput, "search": phase_search}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--phase", choices=sorted(PHASES))
    parser.add_argument("--quick", action="store_true", help="fewer repetitions and items (a smoke run)")
    parser.add_argument("--scales", default="10000,100000", help="item counts of the search phase")
    parser.add_argument("rest", nargs="*")
    args = parser.parse_args()
    if args.phase:
        print(json.dumps(PHASES[args.phase](*args.rest)))
        return
    runs = 2 if args.quick else 5
    writes = "100" if args.quick else "400"
    rows: list[tuple[str, str, str]] = []
    labels = {True: "without the extra", False: "with the extra"}
    starts: dict[bool, list[dict[str, Any]]] = {True: [], False: []}
    for _ in range(runs):  # alternated, so that a change in the machine's load hits both alike
        for without in (True, False):
            starts[without].append(run_phase("startup", without=without))
    for without, label in labels.items():
        assert all(s["loaded"] == [] for s in starts[without]), starts[without]
        start_s = sorted(s["seconds"] for s in starts[without])[runs // 2]
        rss = f"{starts[without][0]['rss_mb']:.0f} MB"
        rows.append((f"start-up to tools/list, median of {runs} ({label})", f"{start_s * 1000:.0f} ms", rss))
    for without, label in labels.items():
        for warm in ("", "warm") if not without else ("",):
            w = run_phase("writes", writes, warm, without=without)
            when = {"": "", "warm": ", model loaded before"}[warm] if not without else ""
            rows.append(
                (
                    f"log_decision p50 / p95, {writes} calls ({label}{when})",
                    f"{w['p50_ms']:.2f} / {w['p95_ms']:.2f} ms",
                    f"{w['rss_mb']:.0f} MB",
                )
            )
            if not without:
                rows.append((f"embedding left after the last write{when}", f"{w['drain_after_s']:.1f} s", ""))
    t = run_phase("throughput", "300" if args.quick else "2000")
    rows.append(
        (f"embedding throughput ({t['model']}, 1 thread)", f"{t['items_per_s']:.0f} items/s", f"{t['rss_mb']:.0f} MB")
    )
    rows.append(("model load / one query embedded", f"{t['load_s'] * 1000:.0f} ms / {t['query_embed_ms']:.1f} ms", ""))
    for scale in args.scales.split(","):
        s = run_phase("search", scale)
        n = f"{int(scale):,}"
        rows.append((f"{n} items: build store + vectors", f"{s['build_s']:.0f} s", ""))
        rows.append((f"{n} items: first semantic search (loads vectors)", f"{s['cold_ms']:.0f} ms", ""))
        for mode in ("words", "semantic", "auto"):
            rows.append(
                (f"{n} items: {mode} search p50 / p95", f"{s[f'{mode}_p50_ms']:.1f} / {s[f'{mode}_p95_ms']:.1f} ms", "")
            )
        rows.append((f"{n} items: peak RSS of the search process", "", f"{s['rss_mb']:.0f} MB"))
    print("| measure | value | peak RSS |")
    print("|---|---:|---:|")
    for name, value, rss in rows:
        print(f"| {name} | {value} | {rss} |")


if __name__ == "__main__":
    main()
