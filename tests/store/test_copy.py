"""`homeport copy`: one workspace's memory from SQLite to PostgreSQL and back, identical, checked before
commit; in committed batches, so that an interrupted copy resumes after its last batch, in both directions;
a changed source starts it over; a partial copy is refused to anyone who would serve it."""

from __future__ import annotations

import contextlib
import math
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st
from mcp import Client

from homeport.cli import cli
from homeport.errors import CopyUnfinishedError, InvalidItemError
from homeport.server import build_server
from homeport.store import Store, contexts, custom_data, decisions, links, patterns, progress, store_path_for
from homeport.store import copying as copying_module
from homeport.store.copying import CopyProgress, copy_memory
from homeport.store.postgres import PostgresStores
from homeport.store.transfer import _collect, memory_checksum

BATCH = 4


class Interrupted(KeyboardInterrupt):
    """Ctrl-C, pressed right after a batch was committed."""


HOMEPORT = str(Path(sys.executable).parent / "homeport")


def _homeport(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([HOMEPORT, *args], capture_output=True, text=True, timeout=120)


def _fill(store: Store) -> None:
    """8 items in every section: ids with a gap, tags, a progress tree, links, two context versions."""
    d = decisions.log_decision(store, "Copy memory between stores", rationale="teams move to PostgreSQL", tags=["db"])
    decisions.delete_decision(store, decisions.log_decision(store, "gone")["id"])  # ids with a gap
    parent = progress.log_progress(store, "TODO", "copy")
    progress.log_progress(store, "DONE", "verify", parent_id=parent["id"])
    p = patterns.log_system_pattern(store, "Checksums", "compare before commit", tags=["integrity"])
    custom_data.log_custom_data(store, "ProjectGlossary", "café", {"meaning": "a place", "n": [1, 2.5, None]})
    contexts.update_context(store, "product", content={"goal": "team memory"})
    contexts.update_context(store, "product", patch={"stage": "beta"})
    links.link_items(store, "decision", d["id"], "system_pattern", p["id"], "implements")


def _fill_many(store: Store) -> None:
    """`_fill` and 19 more decisions: 27 items and their 26 versions, 53 rows of the plan, several batches."""
    _fill(store)
    for i in range(19):
        decisions.log_decision(store, f"decision {i}", tags=[f"t{i % 3}"])


def _interrupt_after(batches: int) -> Callable[[CopyProgress], None]:
    seen: list[int] = []

    def progress(state: CopyProgress) -> None:
        seen.append(state.committed)
        if len(seen) == batches + 1:  # the first call reports the start, each later one a committed batch
            raise Interrupted

    return progress


@contextlib.contextmanager
def _sqlite(root: Path, *, fill: bool) -> Iterator[Store]:
    root.mkdir(parents=True, exist_ok=True)
    store = Store.open(root, create=True, allow_unfinished_copy=True)
    assert store is not None
    if fill:
        _fill_many(store)
    try:
        yield store
    finally:
        store.close()


@pytest.fixture(params=["sqlite->postgres", "postgres->sqlite"])
def stores(request, tmp_path, store_postgres_url) -> Iterator[tuple[Store, Store, Callable[[], Store | None]]]:
    """(source, target, reopen): the source filled; `reopen()` opens the target as a server would."""
    pg = PostgresStores(store_postgres_url)
    key = f"acme/{request.node.name}"
    if request.param == "sqlite->postgres":
        with _sqlite(tmp_path / "src", fill=True) as source:
            target = pg.get(key, create=True, allow_unfinished_copy=True)
            assert target is not None
            servers: list[PostgresStores] = []

            def reopen() -> Store | None:
                servers.append(PostgresStores(store_postgres_url, pool_size=1))
                return servers[-1].get(key, create=False)

            yield source, target, reopen
            for server in servers:
                server.close()
    else:
        source = pg.get(key, create=True)
        assert source is not None
        _fill_many(source)
        with _sqlite(tmp_path / "dst", fill=False) as target:
            yield source, target, lambda: Store.open(tmp_path / "dst", create=False)
    pg.close()


@pytest.mark.postgres
def test_an_interrupted_copy_resumes_after_its_last_committed_batch(stores):
    source, target, reopen = stores
    total = sum(len(v) for v in _collect(source).values())
    with pytest.raises(Interrupted):
        copy_memory(source, target, progress=_interrupt_after(3), batch_rows=BATCH)
    committed = _collect(target)
    assert sum(len(v) for v in committed.values()) == 3 * BATCH
    first_uid = committed["decisions"][0]["uid"]

    with pytest.raises(CopyUnfinishedError, match=r"unfinished copy of .* \(12 of 53 items copied\).*homeport copy"):
        reopen()

    calls: list[int] = []
    result = copy_memory(source, target, progress=lambda s: calls.append(s.committed), batch_rows=BATCH)
    assert result["resumed_from"] == 3 * BATCH and result["restarted"] is None
    # The start, one call per remaining batch, and two for the verification: committed batches were not written again.
    assert calls[0] == 3 * BATCH and len(calls) == 1 + math.ceil((total - 3 * BATCH) / BATCH) + 2
    copied = _collect(target)
    assert copied == _collect(source) and memory_checksum(copied) == result["checksum"]  # no duplicates, uids kept
    assert copied["decisions"][0]["uid"] == first_uid
    reopened = reopen()
    assert reopened is not None
    reopened.close()


@pytest.mark.postgres
def test_a_source_changed_since_the_interruption_starts_the_copy_over(stores):
    source, target, _ = stores
    with pytest.raises(Interrupted):
        copy_memory(source, target, progress=_interrupt_after(2), batch_rows=BATCH)
    decisions.log_decision(source, "written after the copy began")

    result = copy_memory(source, target, batch_rows=BATCH)
    assert result["resumed_from"] == 0 and "the source changed since the unfinished copy began" in result["restarted"]
    assert _collect(target) == _collect(source)


@pytest.mark.postgres
def test_a_partial_copy_of_another_source_is_kept_unless_replace(stores, tmp_path):
    source, target, _ = stores
    with pytest.raises(Interrupted):
        copy_memory(source, target, progress=_interrupt_after(1), batch_rows=BATCH)
    with _sqlite(tmp_path / "other", fill=False) as other:
        decisions.log_decision(other, "another workspace")
        with pytest.raises(CopyUnfinishedError, match=r"holds an unfinished copy of .*pass --replace to discard it"):
            copy_memory(other, target, batch_rows=BATCH)
        result = copy_memory(other, target, replace=True, batch_rows=BATCH)
        assert "discarded (--replace)" in result["restarted"]
        assert _collect(target) == _collect(other)


@pytest.fixture(scope="module")
def filled_source(tmp_path_factory) -> Iterator[Store]:
    with _sqlite(tmp_path_factory.mktemp("source"), fill=True) as source:
        yield source


@settings(max_examples=20, deadline=None)
@given(batch=st.integers(1, 30), stops=st.lists(st.integers(0, 30), max_size=3))
def test_any_sequence_of_interruptions_ends_in_the_source_memory(filled_source, batch, stops):
    expected = _collect(filled_source)
    total = sum(len(v) for v in expected.values())
    with tempfile.TemporaryDirectory() as tmp, _sqlite(Path(tmp), fill=False) as target:
        committed: int | None = 0  # None: the copy finished (an interruption after its verification)
        for stop in stops:
            try:
                result = copy_memory(filled_source, target, progress=_interrupt_after(stop), batch_rows=batch)
            except Interrupted:
                checkpoint = _checkpoint(target)
                if checkpoint is None:
                    committed = None
                    break
                assert committed is not None
                committed = min(total, committed + stop * batch)
                assert checkpoint.done == committed == sum(len(v) for v in _collect(target).values())
            else:
                assert result["resumed_from"] == committed
                committed = None
                break
        if committed is not None:
            assert copy_memory(filled_source, target, batch_rows=batch)["resumed_from"] == committed
        assert _collect(target) == expected
        assert _checkpoint(target) is None


def _checkpoint(target: Store):
    from homeport.store.copy_state import read_checkpoint

    with target.read() as conn:
        return read_checkpoint(conn)


@pytest.mark.postgres
def test_ctrl_c_in_the_cli_says_how_to_resume_and_the_same_command_resumes(
    tmp_path, store_postgres_url, shell_home, monkeypatch
):
    (tmp_path / "shop" / ".git").mkdir(parents=True)
    with _sqlite(tmp_path / "shop", fill=True):
        pass
    command = ["copy", "--from", f"sqlite:{tmp_path / 'shop'}", "--to", store_postgres_url]
    monkeypatch.setattr(copying_module, "BATCH_ROWS", BATCH)
    write = copying_module._write
    calls: list[int] = []

    def pressed_ctrl_c_in_third_batch(conn, batch, *rest):
        calls.append(len(batch))
        if len(calls) == 3:
            raise KeyboardInterrupt
        write(conn, batch, *rest)

    monkeypatch.setattr(copying_module, "_write", pressed_ctrl_c_in_third_batch)
    stopped = CliRunner().invoke(cli, command)
    assert stopped.exit_code == 130, stopped.output
    assert "interrupted: 8 of 53 items are copied and kept; to resume, run the same command again: homeport copy" in (
        stopped.output
    )

    monkeypatch.setattr(copying_module, "_write", write)
    resumed = CliRunner().invoke(cli, command)
    assert resumed.exit_code == 0, resumed.output
    assert "resuming an unfinished copy: 8 of 53 items are already copied" in resumed.output
    assert "copied 53 items (" in resumed.output and "resumed after 8 items a previous run copied" in resumed.output


def test_a_command_in_a_workspace_holding_a_partial_copy_is_refused_with_the_fix(
    tmp_path, filled_source, shell_home, monkeypatch
):
    shop = tmp_path / "shop"
    (shop / ".git").mkdir(parents=True)
    with _sqlite(shop, fill=False) as target, pytest.raises(Interrupted):
        copy_memory(filled_source, target, progress=_interrupt_after(1), batch_rows=BATCH)
    monkeypatch.chdir(shop)
    refused = CliRunner().invoke(cli, ["decisions", "list"])
    assert refused.exit_code == 1
    assert f"holds an unfinished copy of sqlite:{filled_source.root}" in refused.output
    assert "run `homeport copy --from" in refused.output and "again" in refused.output


def test_a_finished_copy_leaves_no_checkpoint_and_opens_normally(tmp_path, filled_source):
    with _sqlite(tmp_path / "t", fill=False) as target:
        copy_memory(filled_source, target, batch_rows=BATCH)
    reopened = Store.open(tmp_path / "t", create=False)
    assert reopened is not None
    reopened.close()
    assert store_path_for(tmp_path / "t").exists()
    shutil.rmtree(tmp_path / "t")


def test_two_copies_into_one_target_at_once_do_not_mix(tmp_path, filled_source):
    """A second run started while the first is between batches: the first one stops rather than write twice."""
    with _sqlite(tmp_path / "t", fill=False) as target:
        second: list[dict] = []

        def start_another_copy_after_the_first_batch(state: CopyProgress) -> None:
            if state.committed == BATCH and not second:
                second.append(copy_memory(filled_source, target, batch_rows=BATCH))

        with pytest.raises(CopyUnfinishedError, match=r"another `homeport copy` into .* is running or ran meanwhile"):
            copy_memory(filled_source, target, progress=start_another_copy_after_the_first_batch, batch_rows=BATCH)
        assert second[0]["resumed_from"] == BATCH
        assert _collect(target) == _collect(filled_source) and _checkpoint(target) is None


def _pg_checkpoint_done(url: str, key: str) -> int:
    import psycopg

    from homeport.store.postgres import schema_for

    with psycopg.connect(url) as conn:
        try:
            row = conn.execute(f"SELECT done FROM {schema_for(key)}.copy_checkpoint").fetchone()
        except psycopg.errors.UndefinedTable:  # the workspace is not created yet
            return 0
    return row[0] if row else 0


@pytest.mark.postgres
@pytest.mark.slow
def test_sigint_to_a_real_copy_keeps_its_batches_and_the_same_command_resumes(tmp_path, store_postgres_url):
    from homeport.store.decisions import insert_decision

    with _sqlite(tmp_path / "big", fill=True) as source, source.write() as conn:
        for i in range(3000):
            insert_decision(conn, f"decision {i} of a workspace big enough to interrupt", tags=[f"t{i % 5}"])
    key = str((tmp_path / "big").absolute())
    command = [
        HOMEPORT,
        "copy",
        "--from",
        f"sqlite:{key}",
        "--to",
        store_postgres_url,
    ]
    # As a terminal delivers Ctrl-C: SIGINT with its default handler (a background job would ignore it).
    running = subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    deadline = time.monotonic() + 60
    while _pg_checkpoint_done(store_postgres_url, key) < copying_module.BATCH_ROWS:
        assert running.poll() is None and time.monotonic() < deadline, "the copy ended before its first batch"
        time.sleep(0.05)
    running.send_signal(signal.SIGINT)
    _, err = running.communicate(timeout=60)
    assert running.returncode == 130, err
    kept = _pg_checkpoint_done(store_postgres_url, key)
    assert copying_module.BATCH_ROWS <= kept < 6053 and kept % copying_module.BATCH_ROWS == 0
    assert f"interrupted: {kept} of 6053 items are copied and kept; to resume, run the same command again" in err

    again = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert again.returncode == 0, again.stderr
    assert f"resuming an unfinished copy: {kept} of 6053 items are already copied" in again.stderr
    assert "copied 6053 items (" in again.stdout and f"resumed after {kept} items" in again.stdout
    with _sqlite(tmp_path / "big", fill=False) as source:
        stores = PostgresStores(store_postgres_url, pool_size=1)
        assert _collect(stores.get(key, create=False)) == _collect(source)
        stores.close()


def test_a_copy_that_does_not_match_its_source_stays_unfinished_and_the_next_run_starts_over(tmp_path, filled_source):
    from sqlalchemy import text

    with _sqlite(tmp_path / "t", fill=False) as target:
        with pytest.raises(Interrupted):
            copy_memory(filled_source, target, progress=_interrupt_after(1), batch_rows=BATCH)
        with target.write() as conn:  # a write that bypassed the refusal, into an item already copied
            conn.execute(text("UPDATE decisions SET summary = 'changed in the target' WHERE id = 1"))

        with pytest.raises(InvalidItemError, match=r"differs from .* in decisions .*stays marked unfinished"):
            copy_memory(filled_source, target, batch_rows=BATCH)
        assert _checkpoint(target) is not None
        result = copy_memory(filled_source, target, batch_rows=BATCH)
        assert result["resumed_from"] == 0 and "the last run's copy did not match its source" in result["restarted"]
        assert _collect(target) == _collect(filled_source)


@pytest.mark.postgres
@pytest.mark.anyio
async def test_a_server_refuses_a_workspace_a_copy_is_still_filling(
    runtime_factory, projects, filled_source, store_postgres_url
):
    key = str(projects["alpha"].resolve())
    pg = PostgresStores(store_postgres_url, pool_size=1)
    target = pg.get(key, create=True, allow_unfinished_copy=True)
    with pytest.raises(Interrupted):
        copy_memory(filled_source, target, progress=_interrupt_after(2), batch_rows=BATCH)

    runtime = runtime_factory(store_url=store_postgres_url)
    async with Client(build_server(runtime)) as c:
        r = await c.call_tool("get_decisions", {"workspace": key})
        assert r.is_error
        assert f"holds an unfinished copy of sqlite:{filled_source.root} (8 of 53 items copied)" in r.content[0].text
        assert "run `homeport copy --from" in r.content[0].text

        copy_memory(filled_source, target, batch_rows=BATCH)
    pg.close()
    runtime = runtime_factory(store_url=store_postgres_url)  # a server started after the copy finished
    async with Client(build_server(runtime)) as c:
        r = await c.call_tool("get_decisions", {"workspace": key, "limit": 100})
        assert not r.is_error, r.content
        assert len(r.structured_content["decisions"]) == len(_collect(filled_source)["decisions"])


@pytest.mark.postgres
def test_a_workspace_goes_to_postgres_and_back_unchanged(tmp_path, store_postgres_url):
    (tmp_path / "shop").mkdir()
    original = Store.open(tmp_path / "shop", create=True)
    _fill(original)
    before = _collect(original)
    original.close()

    done = _homeport("copy", "--from", f"sqlite:{tmp_path / 'shop'}", "--to", store_postgres_url)
    assert done.returncode == 0, done.stderr
    assert (
        "copied 15 items (1 decisions, 2 progress, 1 system_patterns, 1 custom_data, 2 product_context, 1 links, "
        "7 item_versions)" in done.stdout
    )
    assert "matches" in done.stdout

    again = _homeport("copy", "--from", f"sqlite:{tmp_path / 'shop'}", "--to", store_postgres_url)
    assert again.returncode == 1 and "already holds memory; pass --replace" in again.stderr
    assert (
        _homeport("copy", "--from", f"sqlite:{tmp_path / 'shop'}", "--to", store_postgres_url, "--replace").returncode
        == 0
    )

    (tmp_path / "back").mkdir()
    back = _homeport(
        "copy", "--from", store_postgres_url, "--key", str(tmp_path / "shop"), "--to", f"sqlite:{tmp_path / 'back'}"
    )
    assert back.returncode == 0, back.stderr
    returned = Store.open(tmp_path / "back", create=False)
    assert returned is not None
    assert _collect(returned) == before  # ids, uids, tags, links, every context version
    returned.close()


@pytest.mark.postgres
def test_copying_a_workspace_that_has_no_memory_says_so(tmp_path, store_postgres_url):
    done = _homeport("copy", "--from", store_postgres_url, "--key", "acme/none", "--to", f"sqlite:{tmp_path}")
    assert done.returncode == 1 and "holds no memory for acme/none" in done.stderr
