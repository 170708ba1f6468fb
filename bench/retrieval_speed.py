"""What search by meaning costs next to word search: auto against words at 10,000 and 100,000 items, in
process and over stdio; the two-step ranking's recall against the exact one; background embedding
throughput; and a server's first call with the semantic extra against without it.

    python3 bench/retrieval_speed.py                        # everything (about 10 minutes on 2 cores)
    python3 bench/retrieval_speed.py --scales 10000 --skip first-call,throughput

Stores. Each scale's store holds real texts: the records of both labelled sets (bench/retrieval/),
cycled, each copy numbered, as decisions; so a word query matches as many items as it would in a
memory of that size. Their vectors are synthetic (embedding 100,000 items takes longer than the
rest of the run): each item gets its record's real vectors (its text and its title, the chunks the
indexer embeds) plus noise, cosine about 0.93 to the original. Every query is embedded by the model.

Queries: the labelled queries of both sets (317), each asked once per mode, words and auto
alternating query by query so that a change in the machine's load hits both alike.

- in process: `SemanticSearch.search` (what a tool call runs), p50 and p95;
- stdio: `homeport serve` as a subprocess, JSON-RPC lines on its pipes, after warm-up calls (the model
  and the vectors loaded), p50 and p95 of each call's round trip;
- recall: of the semantic mode's first 10 with the two-step ranking (sign bits, then the exact
  cosine of the nearest 4,096 chunks; used above 50,000 chunks), the share that the exact ranking's
  first 10 also holds;
- throughput: the 477 records written through the store, then the background indexer (the one a
  server runs) until nothing is pending: items per second;
- first call: `homeport serve` started with and without the extra (its modules blocked in that
  process), alternated, 5 times each: wall time from spawn to the answer of `initialize` and of the
  first `tools/call` (get_product_context), and whether onnxruntime is mapped after them.

Prints Markdown tables, with the machine's load average. A before/after run: the same script with
PYTHONPATH naming another version's src (its own chunking is used to build the stores).
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
from _common import percentile

HERE = Path(__file__).resolve().parent
RECORDS = [HERE / "retrieval" / "memory.json", HERE / "retrieval" / "trailmate" / "memory.json"]
QUERIES = [HERE / "retrieval" / "queries.json", HERE / "retrieval" / "trailmate" / "queries.json"]
BLOCK = "import sys\nfor m in ('numpy', 'onnxruntime', 'tokenizers'):\n    sys.modules[m] = None\n"
NOISE = 0.02  # per dimension, before normalising: cosine about 0.93 to the record's own vector


def load_average() -> str:
    try:
        return " / ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "?"


def records() -> list[tuple[str, str]]:
    """(title, body) of every record of both labelled sets, as the index holds them."""
    sys.path.insert(0, str(HERE / "retrieval"))
    from make_memory import item_text

    out = []
    for path in RECORDS:
        for item in json.loads(path.read_text(encoding="utf-8"))["items"]:
            lines = item_text(item).split("\n")
            out.append((lines[0], " ".join(lines[1:])))
    return out


def queries() -> list[str]:
    return [q["text"] for path in QUERIES for q in json.loads(path.read_text(encoding="utf-8"))["queries"]]


def run_phase(phase: str, *args: str, without: bool = False) -> dict[str, Any]:
    code = (BLOCK if without else "") + (
        f"import sys; sys.path.insert(0, {str(HERE)!r}); sys.argv = ['retrieval_speed.py', '--phase', "
        f"{phase!r}, *{list(args)!r}]\nimport runpy; runpy.run_path({__file__!r}, run_name='__main__')"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=7200)
    if done.returncode != 0:
        raise SystemExit(f"phase {phase} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.splitlines()[-1])


# -- a stdio server, spoken to in JSON-RPC lines ----------------------------------------------------


class StdioServer:
    def __init__(self, root: Path, state: Path, *, without: bool = False) -> None:
        env = {k: v for k, v in os.environ.items() if not k.startswith("HOMEPORT_")}
        env.update(HOMEPORT_STATE_DIR=str(state))
        env.pop("CLAUDE_PROJECT_DIR", None)
        serve = "import runpy, sys\nsys.argv = ['homeport', 'serve', '--workspace', sys.argv[1]]\n"
        code = (BLOCK if without else "") + serve + "runpy.run_module('homeport', run_name='__main__')"
        self.started = time.perf_counter()
        self.process = subprocess.Popen(
            [sys.executable, "-c", code, str(root)],
            cwd=root,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        self.next_id = 0

    def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        assert self.process.stdout is not None
        while line := self.process.stdout.readline():
            message = json.loads(line)
            if message.get("id") == self.next_id:
                if "error" in message:
                    raise SystemExit(f"{method} failed: {message['error']}")
                return message["result"]
        raise SystemExit("the server closed its output")

    def send(self, message: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(message) + "\n")
        self.process.stdin.flush()

    def initialize(self) -> None:
        info = {"name": "retrieval_speed", "version": "1"}
        self.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": info})
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def call(self, tool: str, **arguments: Any) -> dict[str, Any]:
        result = self.request("tools/call", {"name": tool, "arguments": arguments})
        if result.get("isError"):
            raise SystemExit(f"{tool} failed: {result['content'][0]['text']}")
        return result.get("structuredContent") or {}

    def model_loaded(self) -> bool:
        return "onnxruntime" in Path(f"/proc/{self.process.pid}/maps").read_text()

    def close(self) -> None:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.close()
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.process.stdout.close()


# -- phases (each in its own process) -----------------------------------------------------------------


def build_store(root: Path, n: int) -> None:
    """`n` decisions of the labelled sets' texts, numbered, with synthetic vectors of their two chunks."""
    import numpy as np

    from homeport.embedding.model import load_embedder
    from homeport.store import Store
    from homeport.store.database import driver
    from homeport.store.decisions import insert_decision

    try:
        from homeport.store.chunking import item_chunks
    except ImportError:  # a version from before title chunks (a before/after run with PYTHONPATH): its chunks

        def item_chunks(title: str, body: str, tags: str = "") -> list[str]:
            from homeport.store.chunking import chunk_text, item_text

            return chunk_text(item_text(title, body, tags))

    embedder = load_embedder(None)
    base = records()
    vectors = [embedder.embed(item_chunks(title, body)) for title, body in base]
    rng = np.random.default_rng(7)
    (root / ".git").mkdir(parents=True)
    store = Store.open(root, create=True)
    assert store is not None
    for start in range(0, n, 5000):
        with store.write() as conn:
            rows = []
            for i in range(start, min(n, start + 5000)):
                title, body = base[i % len(base)]
                decision = insert_decision(conn, f"{title} ({i})", rationale=body)
                for chunk, v in enumerate(vectors[i % len(base)]):
                    noisy = v + NOISE * rng.standard_normal(embedder.dim).astype(np.float32)
                    blob = (noisy / np.linalg.norm(noisy)).astype("<f4").tobytes()
                    rows.append(("decision", decision["id"], chunk, embedder.name, blob))
            driver(conn).executemany(
                "INSERT INTO item_vectors (item_type, item_id, chunk, model, vector) VALUES (?, ?, ?, ?, ?)", rows
            )
    store.close()


def phase_search(count: str, with_stdio: str) -> dict[str, Any]:
    from homeport.core.semantic import SemanticSearch
    from homeport.store import Store
    from homeport.store import vectors as vector_store

    n = int(count)
    out: dict[str, Any] = {"items": n, "load_before": load_average()}
    texts = queries()
    with tempfile.TemporaryDirectory(prefix="homeport-speed-") as tmp:
        root = Path(tmp) / "app"
        started = time.perf_counter()
        build_store(root, n)
        out["build_s"] = time.perf_counter() - started
        store = Store.open(root, create=False)
        assert store is not None
        semantic = SemanticSearch(None, background=False)
        started = time.perf_counter()
        semantic.search(store, texts[0], mode="auto")
        out["first_auto_ms"] = (time.perf_counter() - started) * 1000
        # Semantic mode on an instance of its own: the same query's vector kept by auto's search would
        # spare it the embedding.
        by_meaning = SemanticSearch(None, background=False)
        by_meaning.search(store, texts[0], mode="semantic")
        times: dict[str, list[float]] = {"words": [], "auto": [], "semantic": []}
        for text in texts:
            for mode, searcher in (("words", semantic), ("auto", semantic), ("semantic", by_meaning)):
                started = time.perf_counter()
                searcher.search(store, text, mode=mode)  # type: ignore[arg-type]
                times[mode].append((time.perf_counter() - started) * 1000)
        by_meaning.close()
        for mode, values in times.items():
            out[f"inproc_{mode}_p50"] = percentile(values, 50)
            out[f"inproc_{mode}_p95"] = percentile(values, 95)
        # Recall of the two-step ranking against the exact one (only above the threshold is it used).
        chunks = len(next(iter(semantic._cache._matrices.values())).ids)
        out["chunks"] = chunks
        if chunks > getattr(vector_store, "_EXACT_CHUNKS", chunks):  # the two-step ranking exists and was used
            two_step = [
                [h["id"] for h in semantic.search(store, t, mode="semantic", limit=10)["results"]] for t in texts
            ]
            vector_store._EXACT_CHUNKS = 10**12
            exact_cache = SemanticSearch(None, background=False)
            exact = [
                [h["id"] for h in exact_cache.search(store, t, mode="semantic", limit=10)["results"]] for t in texts
            ]
            overlap = [len(set(a) & set(b)) / len(b) for a, b in zip(two_step, exact, strict=True) if b]
            out["recall_at_10"] = sum(overlap) / len(overlap)
            out["same_first"] = sum(a[:1] == b[:1] for a, b in zip(two_step, exact, strict=True) if b) / len(overlap)
            exact_cache.close()
        semantic.close()
        store.close()
        if with_stdio == "yes":
            out.update(stdio_search(root, Path(tmp) / "state", texts))
    out["load_after"] = load_average()
    return out


def first_ten(semantic: Any, store: Any, text: str) -> list[int]:
    return [h["id"] for h in semantic.search(store, text, mode="semantic", limit=10)["results"]]


def stdio_search(root: Path, state: Path, texts: list[str]) -> dict[str, Any]:
    server = StdioServer(root, state)
    try:
        server.initialize()
        for text in texts[:5]:  # warm-up: the model, the vectors in memory, the statement caches
            for mode in ("words", "auto"):
                server.call("search", query=text, mode=mode)
        times: dict[str, list[float]] = {"words": [], "auto": []}
        for text in texts:
            for mode in ("words", "auto"):
                started = time.perf_counter()
                server.call("search", query=text, mode=mode)
                times[mode].append((time.perf_counter() - started) * 1000)
    finally:
        server.close()
    return {f"stdio_{m}_{p}": percentile(v, int(p[1:])) for m, v in times.items() for p in ("p50", "p95")}


def phase_throughput() -> dict[str, Any]:
    """Items per second through the background indexer, from a store of the labelled sets' records."""
    from homeport.embedding.indexer import VectorIndexer
    from homeport.embedding.model import load_embedder
    from homeport.store import Store
    from homeport.store.batch import batch_log_items

    base = records()
    with tempfile.TemporaryDirectory(prefix="homeport-speed-") as tmp:
        root = Path(tmp)
        (root / ".git").mkdir()
        store = Store.open(root, create=True)
        assert store is not None
        rows = [{"summary": title, "rationale": body} for title, body in base]
        for start in range(0, len(rows), 500):
            batch_log_items(store, "decision", rows[start : start + 500])
        embedder = load_embedder(None)
        embedder.embed(["warm up"])
        indexer = VectorIndexer(lambda: embedder)
        load = load_average()
        started = time.perf_counter()
        indexer.notice(store)
        assert indexer.drain(timeout=3600)
        seconds = time.perf_counter() - started
        indexer.close()
        store.close()
    return {"items": len(base), "items_per_s": len(base) / seconds, "model": embedder.name, "load": load}


def phase_first_call(without: str) -> dict[str, Any]:
    """Spawn to `initialize` and to the first tools/call (then one more), on an existing empty store."""
    from homeport.store import Store

    with tempfile.TemporaryDirectory(prefix="homeport-speed-") as tmp:
        root = Path(tmp) / "app"
        (root / ".git").mkdir(parents=True)
        store = Store.open(root, create=True)  # empty: nothing pending, so nothing to embed
        assert store is not None
        store.close()
        server = StdioServer(root, Path(tmp) / "state", without=without == "yes")
        try:
            server.initialize()
            initialized = time.perf_counter() - server.started
            server.call("get_product_context")
            first = time.perf_counter() - server.started
            second_started = time.perf_counter()
            server.call("search", query="deploys", mode="words")
            second = time.perf_counter() - second_started
            loaded = server.model_loaded()
        finally:
            server.close()
    return {"initialize_s": initialized, "first_call_s": first, "second_call_s": second, "model_loaded": loaded}


PHASES = {"search": phase_search, "throughput": phase_throughput, "first-call": phase_first_call}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--phase", choices=sorted(PHASES))
    parser.add_argument("--scales", default="10000,100000", help="item counts of the search phase")
    parser.add_argument("--skip", default="", help="comma-separated: search, stdio, throughput, first-call")
    parser.add_argument("rest", nargs="*")
    args = parser.parse_args()
    if args.phase:
        print(json.dumps(PHASES[args.phase](*args.rest)))
        return
    skip = {s.strip() for s in args.skip.split(",") if s.strip()}
    print(
        f"`python3 {' '.join(['bench/retrieval_speed.py', *sys.argv[1:]])}`; load average at start {load_average()}\n"
    )
    if "search" not in skip:
        print("| items (chunks) | where | words p50 / p95 | auto p50 / p95 | auto / words p50 | semantic p50 / p95 |")
        print("| ---: | :--- | ---: | ---: | ---: | ---: |")
        notes = []
        for scale in args.scales.split(","):
            s = run_phase("search", scale, "no" if "stdio" in skip else "yes")
            size = f"{s['items']:,} ({s['chunks']:,})"
            w, a = (s["inproc_words_p50"], s["inproc_words_p95"]), (s["inproc_auto_p50"], s["inproc_auto_p95"])
            sem = f"{s['inproc_semantic_p50']:.1f} / {s['inproc_semantic_p95']:.1f} ms"
            row = f"{w[0]:.1f} / {w[1]:.1f} ms | {a[0]:.1f} / {a[1]:.1f} ms | {a[0] / w[0]:.1f}x | {sem}"
            print(f"| {size} | in process | {row} |")
            if "stdio_words_p50" in s:
                w, a = (s["stdio_words_p50"], s["stdio_words_p95"]), (s["stdio_auto_p50"], s["stdio_auto_p95"])
                row = f"{w[0]:.1f} / {w[1]:.1f} ms | {a[0]:.1f} / {a[1]:.1f} ms | {a[0] / w[0]:.1f}x | –"
                print(f"| {size} | stdio | {row} |")
            note = f"{s['items']:,} items: built in {s['build_s']:.0f} s; first auto search {s['first_auto_ms']:.0f} ms"
            if "recall_at_10" in s:
                note += (
                    f"; two-step ranking: recall@10 {100 * s['recall_at_10']:.1f} % of the exact first 10, "
                    f"same first hit {100 * s['same_first']:.1f} %"
                )
            notes.append(note + f"; load average {s['load_before']} before, {s['load_after']} after")
        print("\n" + "\n".join(f"- {n}" for n in notes) + "\n")
    if "throughput" not in skip:
        t = run_phase("throughput")
        print(
            f"Background embedding: {t['items_per_s']:.0f} items/s ({t['items']} records of the labelled sets, "
            f"{t['model']}; load average {t['load']})\n"
        )
    if "first-call" not in skip:
        runs: dict[str, list[dict[str, Any]]] = {"without the extra": [], "with the extra": []}
        for _ in range(5):
            for label, without in (("without the extra", "yes"), ("with the extra", "no")):
                runs[label].append(run_phase("first-call", without))
        print("| server | spawn to initialize (median of 5) | spawn to first call | next call | model loaded |")
        print("| :--- | ---: | ---: | ---: | :--- |")
        for label, rs in runs.items():
            med = {k: sorted(r[k] for r in rs)[len(rs) // 2] for k in ("initialize_s", "first_call_s", "second_call_s")}
            loaded = sum(r["model_loaded"] for r in rs)
            print(
                f"| {label} | {med['initialize_s'] * 1000:.0f} ms | {med['first_call_s'] * 1000:.0f} ms | "
                f"{med['second_call_s'] * 1000:.1f} ms | {loaded} of {len(rs)} runs |"
            )
        print(f"\nload average at the end {load_average()}")


if __name__ == "__main__":
    main()
