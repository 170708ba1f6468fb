"""`homeport copy`: one workspace's memory from one store to another (SQLite <-> PostgreSQL)."""

from __future__ import annotations

import signal
import threading
from typing import TYPE_CHECKING, Any

import click

from homeport.cli._compose import domain_errors
from homeport.errors import ConfigError

if TYPE_CHECKING:
    from homeport.core.stores import CopyProgress, Store

__all__ = ["copy"]


@click.command()
@click.option("--from", "source", required=True, metavar="STORE", help="sqlite:PATH (a workspace) or postgresql://...")
@click.option("--to", "target", required=True, metavar="STORE", help="sqlite:PATH (a workspace) or postgresql://...")
@click.option(
    "--key",
    metavar="KEY",
    help="The workspace's key in the PostgreSQL store (a canonical path or a logical key such as acme/api); "
    "default: the absolute path of the SQLite workspace.",
)
@click.option(
    "--replace",
    is_flag=True,
    help="Overwrite memory the target workspace already holds (or an unfinished copy of another source there).",
)
@domain_errors
def copy(source: str, target: str, key: str | None, replace: bool) -> None:
    """Copy one workspace's memory between stores, e.g. onto a team's PostgreSQL store.

    \b
      homeport copy --from sqlite:~/src/shop --to postgresql://homeport@db/homeport
      homeport copy --from postgresql://homeport@db/homeport --key /srv/src/shop --to sqlite:.

    Ids, uids, tags, links and context history are kept. Items are written in batches of a few hundred,
    each committed with a checkpoint in the target; if the copy stops (Ctrl-C, which lets the batch being
    written commit first, or a lost connection), run the same command again and it resumes after the last
    committed batch. If the source changed in
    between, the partial copy is discarded and the copy starts over (it says so). At the end the target
    is read back: the counts and a SHA-256 of the whole memory must match the source. Until then the
    target workspace is refused to servers and commands ("holds an unfinished copy").
    """
    from rich.console import Console

    from homeport.core.stores import AdminStores, copy_key, copy_memory, shown_spec

    workspace_key = copy_key(source, target, key)
    if workspace_key is None:
        raise click.UsageError("copying between two PostgreSQL stores needs --key")
    stores = AdminStores()
    shown = _ProgressDisplay(Console(stderr=True))
    dst: Store | None = None
    try:
        src = stores.open(source, workspace_key, create=False)
        if src is None:
            raise ConfigError(f"{source} holds no memory for {workspace_key}; nothing to copy")
        dst = stores.open(target, workspace_key, create=True)
        assert dst is not None
        with shown, _StopBetweenBatches() as stop:

            def progress(state: CopyProgress) -> None:
                shown.update(state)
                stop.check()

            result = copy_memory(src, dst, replace=replace, progress=progress)
    except KeyboardInterrupt:
        where = _kept(dst, shown)
        again = " ".join(
            ["homeport copy --from", shown_spec(source), "--to", shown_spec(target), *(["--key", key] if key else [])]
        )
        click.echo(f"interrupted: {where} copied and kept; to resume, run the same command again: {again}", err=True)
        raise click.exceptions.Exit(130) from None
    finally:
        stores.close()
    sections = ", ".join(f"{n} {section}" for section, n in result["counts"].items() if n)
    resumed = f"; resumed after {result['resumed_from']} items a previous run copied" if result["resumed_from"] else ""
    click.echo(
        f"copied {result['items']} items ({sections or 'none'}); sha256 {result['checksum'][:16]} matches{resumed}"
    )


class _StopBetweenBatches:
    """Ctrl-C stops the copy after the batch being written has committed, not inside a statement: cut
    there, the database driver can be left unable to run the next one (psycopg: "cannot exit pipeline
    mode while busy"), and the copy would end in a store error instead of its resume message. A second
    Ctrl-C stops at once."""

    def __init__(self) -> None:
        self.requested = False
        self._previous: Any = None

    def __enter__(self) -> _StopBetweenBatches:
        if threading.current_thread() is threading.main_thread():
            self._previous = signal.signal(signal.SIGINT, self._interrupted)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._previous is not None:
            signal.signal(signal.SIGINT, self._previous)

    def _interrupted(self, signum: int, frame: Any) -> None:
        if self.requested:
            raise KeyboardInterrupt
        self.requested = True

    def check(self) -> None:
        """Raises: KeyboardInterrupt: Ctrl-C was pressed since the copy began."""
        if self.requested:
            raise KeyboardInterrupt


def _kept(target: Store | None, shown: _ProgressDisplay) -> str:
    """What an interrupted copy kept, as its target's checkpoint says: Ctrl-C can land between a batch's
    commit and the count shown, and the message must name what the next run resumes from."""
    from homeport.core.stores import copied_so_far

    # None too when the interrupt broke the connection: then the count shown.
    found = copied_so_far(target) if target is not None else None
    if found is not None:
        return f"{found[0]} of {found[1]} items are"
    return f"{shown.state.committed} of {shown.state.total} items are" if shown.state else "what was committed is"


class _ProgressDisplay:
    """A rich progress bar per section (items committed / items in the source); silent when not a terminal."""

    def __init__(self, console: Any) -> None:
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        self.console = console
        self.state: CopyProgress | None = None
        self._bar = Progress(
            TextColumn("{task.description:<16}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=console,
            disable=not console.is_terminal,
        )
        self._tasks: dict[str, Any] = {}

    def __enter__(self) -> _ProgressDisplay:
        self._bar.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._bar.stop()

    def update(self, state: CopyProgress) -> None:
        if self.state is None:  # the first call: the start is settled
            if state.restarted:
                self.console.print(f"note: {state.restarted}", highlight=False)
            elif state.resumed_from:
                self.console.print(
                    f"resuming an unfinished copy: {state.resumed_from} of {state.total} items are already copied",
                    highlight=False,
                )
            for section, n in state.counts.items():
                if n:
                    self._tasks[section] = self._bar.add_task(section, total=n)
        self.state = state
        for section, task in self._tasks.items():
            self._bar.update(task, completed=state.done.get(section, 0))
        if state.stage == "verifying":
            self._tasks["verify"] = self._bar.add_task("verifying", total=None)
        elif state.stage == "verified" and "verify" in self._tasks:
            self._bar.update(self._tasks["verify"], total=1, completed=1)
