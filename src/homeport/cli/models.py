"""`homeport models`: the embedding model of search by meaning (the `semantic` extra)."""

from __future__ import annotations

from pathlib import Path

import click

from homeport.cli._compose import default_data_dir, domain_errors
from homeport.cli._lazy import HelpfulGroup

__all__ = ["models"]

_DATA_DIR = click.option(
    "--data-dir",
    envvar="HOMEPORT_DATA_DIR",
    metavar="DIR",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help=f"Homeport's data directory; the model goes to DIR/models (env: HOMEPORT_DATA_DIR). "
    f"Default: {default_data_dir()}.",
)


@click.group(cls=HelpfulGroup)
def models() -> None:
    """The embedding model of search by meaning: `pip install 'homeport[semantic]'`, then `homeport models fetch`.

    Nothing is downloaded unless you run `fetch`; a server without a model searches by words.
    """


@models.command()
@_DATA_DIR
@click.option("--force", is_flag=True, help="Download again even if the model is there.")
@click.option(
    "--source",
    metavar="URL",
    default=None,
    help="Where to download from: a URL prefix holding onnx/model.onnx and tokenizer.json "
    "(a mirror, or file:///path). Default: the model's Hugging Face repository.",
)
@domain_errors
def fetch(data_dir: Path | None, force: bool, source: str | None) -> None:
    """Download all-MiniLM-L6-v2 (ONNX, about 90 MB) into the data directory, once.

    \b
    Example: homeport models fetch
    """
    from rich.progress import BarColumn, DownloadColumn, Progress, TaskID, TextColumn, TransferSpeedColumn

    from homeport.embedding.fetch import DEFAULT_SOURCE, fetch_model
    from homeport.embedding.model import missing_modules

    missing = missing_modules()
    if missing:
        raise click.ClickException(
            f"search by meaning needs {', '.join(missing)}: pip install 'homeport[semantic]' first"
        )
    tasks: dict[str, TaskID] = {}
    columns = (TextColumn("{task.description}"), BarColumn(), DownloadColumn(), TransferSpeedColumn())
    with Progress(*columns, transient=True) as bar:

        def report(name: str, done: int, total: int | None) -> None:
            if name not in tasks:
                tasks[name] = bar.add_task(name, total=total)
            bar.update(tasks[name], completed=done, total=total)

        target = fetch_model(
            (data_dir or default_data_dir()).absolute(), source=source or DEFAULT_SOURCE, force=force, progress=report
        )
    click.echo(f"model ready in {target}")


@models.command()
@_DATA_DIR
def status(data_dir: Path | None) -> None:
    """Say whether search by meaning can run here, and which model it uses."""
    from homeport.embedding.model import find_model, unavailable_reason

    directory = (data_dir or default_data_dir()).absolute()
    reason = unavailable_reason(directory)
    if reason is not None:
        click.echo(reason)
        return
    files = find_model(directory)
    assert files is not None
    click.echo(f"search by meaning is available: {files.name} ({files.onnx})")
