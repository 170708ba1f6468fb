"""Several OS processes writing one workspace's store at the same time.

Each writer is a separate Python process that opens the store itself (`Store.open(create=True)`,
so the first ones race to create and migrate it), reports "ready", waits for "go" on stdin and
then logs its decisions through `homeport.store.decisions.log_decision`. The parent releases all
writers at once, so the writes really overlap.
"""

from __future__ import annotations

import contextlib
import sqlite3
import subprocess
import sys
import uuid
from pathlib import Path

import anyio
import pytest
from anyio.abc import Process

from homeport.store import Store
from homeport.store.search import search

from ._support import clean_env, make_project, store_file

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

PROCESSES = 4
DECISIONS_EACH = 100

WRITER = r"""
import sys
from pathlib import Path

from homeport.store import Store
from homeport.store.decisions import log_decision

root, marker, count = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])
store = Store.open(root, create=True)
print("ready", flush=True)
if sys.stdin.readline().strip() != "go":
    sys.exit("no go")
try:
    for n in range(count):
        log_decision(store, f"{marker} decision {n}", rationale=f"written by the process {marker}",
                     tags=[marker])
finally:
    store.close()
print("done", flush=True)
"""


async def _read_line(process: Process) -> str:
    assert process.stdout is not None
    data = b""
    while not data.endswith(b"\n"):
        chunk = await process.stdout.receive(1)
        data += chunk
    return data.decode().strip()


async def test_four_processes_writing_one_workspace_at_once_lose_nothing_and_never_see_database_is_locked(
    tmp_path: Path,
) -> None:
    root = make_project(tmp_path / "shared")
    run = uuid.uuid4().hex[:6]
    markers = [f"proc{run}n{i}x" for i in range(PROCESSES)]
    logs = [tmp_path / f"writer{i}.stderr" for i in range(PROCESSES)]
    processes: list[Process] = []
    try:
        for marker, log in zip(markers, logs, strict=True):
            with log.open("wb") as sink:
                processes.append(
                    await anyio.open_process(
                        [sys.executable, "-c", WRITER, str(root), marker, str(DECISIONS_EACH)],
                        stdin=subprocess.PIPE,
                        stdout=subprocess.PIPE,
                        stderr=sink,
                        cwd=tmp_path,
                        env=clean_env(),
                    )
                )

        with anyio.fail_after(60):  # every writer has opened (and, for the first, migrated) the store
            for i, process in enumerate(processes):
                line = await _read_line(process)
                assert line == "ready", f"writer {i}: {line!r}\n{logs[i].read_text()}"
        for process in processes:  # release them together
            assert process.stdin is not None
            await process.stdin.send(b"go\n")
            await process.stdin.aclose()
        with anyio.fail_after(90):
            codes = [await process.wait() for process in processes]
        outputs = [(await _read_line(p)) if code == 0 else "" for p, code in zip(processes, codes, strict=True)]
    finally:
        for process in processes:
            if process.returncode is None:
                process.kill()
                with anyio.move_on_after(10):
                    await process.wait()
            await process.aclose()

    stderr = [log.read_text(errors="replace") for log in logs]
    assert all("database is locked" not in text for text in stderr), stderr
    assert codes == [0] * PROCESSES, stderr
    assert outputs == ["done"] * PROCESSES

    with contextlib.closing(sqlite3.connect(store_file(root))) as db:
        total, distinct_ids = db.execute("SELECT COUNT(*), COUNT(DISTINCT id) FROM decisions").fetchone()
        per_marker = {
            m: db.execute("SELECT COUNT(*) FROM decisions WHERE summary LIKE ?", (f"{m} %",)).fetchone()[0]
            for m in markers
        }
    assert (total, distinct_ids) == (PROCESSES * DECISIONS_EACH, PROCESSES * DECISIONS_EACH)
    assert per_marker == dict.fromkeys(markers, DECISIONS_EACH)

    store = Store.open(root, create=False)
    assert store is not None
    try:
        for marker in markers:
            hits = search(store, marker, types=["decision"], limit=200)
            assert len(hits) == DECISIONS_EACH, (marker, hits[:3])
            assert all(hit["title"].startswith(marker + " ") for hit in hits)
    finally:
        store.close()


THREADS = 8

THREADED_OPENER = r"""
import json
import sys
import threading
from pathlib import Path

from homeport.store import Store
from homeport.store.decisions import log_decision

roots = [Path(p) for p in sys.argv[1:]]
barrier = threading.Barrier(len(roots))
errors = {}


def first_write(root):
    barrier.wait(timeout=30)
    try:
        store = Store.open(root, create=True)
        try:
            log_decision(store, f"first decision of {root.name}")
        finally:
            store.close()
    except Exception as exc:
        errors[root.name] = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"


threads = [threading.Thread(target=first_write, args=(root,)) for root in roots]
for thread in threads:
    thread.start()
for thread in threads:
    thread.join(timeout=60)
print(json.dumps(errors), flush=True)
sys.exit(1 if errors else 0)
"""


def test_one_process_creating_several_fresh_stores_from_several_threads_at_once_migrates_each_correctly(
    tmp_path: Path,
) -> None:
    """What a server does when the first writes of several new projects arrive together (StoreCache
    opens each store on its own worker thread). Regression: in 52bb8a8 concurrent Alembic migrations
    ran inside each other. Run in a child process, because that race could segfault."""
    roots = [make_project(tmp_path / f"fresh{i}") for i in range(THREADS)]
    done = subprocess.run(
        [sys.executable, "-c", THREADED_OPENER, *map(str, roots)],
        cwd=tmp_path,
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=90,
        check=False,
    )
    assert done.returncode == 0, f"exit {done.returncode}: {done.stdout.strip()}\n{done.stderr[-3000:]}"
    for root in roots:
        with contextlib.closing(sqlite3.connect(store_file(root))) as db:
            rows = db.execute("SELECT summary FROM decisions").fetchall()
        assert rows == [(f"first decision of {root.name}",)], root
