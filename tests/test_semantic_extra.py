"""The semantic extra costs nothing until it is used: no module of the embedding stack loads at start-up,
in the shell's commands, or in word search; and the model comes only from a package or `models fetch`."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from homeport.cli.main import cli
from homeport.embedding.model import MODEL_DIRNAME, find_model, unavailable_reason

STACK = ("numpy", "onnxruntime", "tokenizers", "homeport.embedding.indexer", "homeport.store.vectors")
NO_MODEL = unavailable_reason(None)


def stack_loaded(code: str, cwd: Path, env: dict[str, str]) -> list[str]:
    probe = f"\nimport sys\nprint(sorted(m for m in {STACK!r} if m in sys.modules))"
    done = subprocess.run([sys.executable, "-c", code + probe], cwd=cwd, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return eval(done.stdout.splitlines()[-1])  # a list literal printed above


@pytest.fixture
def shell(tmp_path):
    (tmp_path / "app" / ".git").mkdir(parents=True)
    env = {k: v for k, v in os.environ.items() if k not in ("HOMEPORT_WORKSPACE", "CLAUDE_PROJECT_DIR")}
    return tmp_path / "app", {**env, "HOME": str(tmp_path), "HOMEPORT_STATE_DIR": str(tmp_path / "state")}


def test_starting_the_server_and_listing_its_tools_loads_nothing_of_the_embedding_stack(shell):
    code = (
        "import anyio\nfrom pathlib import Path\nfrom mcp import Client\n"
        "from homeport.core import ServeSettings, build_runtime\nfrom homeport.server import build_server\n"
        "async def main():\n"
        "    runtime = build_runtime(ServeSettings(cwd=Path.cwd(), home=Path.home()))\n"
        "    async with Client(build_server(runtime)) as c:\n"
        "        assert any(t.name == 'search' for t in (await c.list_tools()).tools)\n"
        "    runtime.close()\n"
        "anyio.run(main)"
    )
    assert stack_loaded(code, *shell) == []


@pytest.mark.parametrize(
    "args",
    [
        ["--help"],
        ["decisions", "add", "Use WAL"],
        ["search", "WAL", "--mode", "words"],
        ["models", "--help"],
    ],
)
def test_shell_commands_that_do_not_search_by_meaning_load_nothing_of_it(shell, args):
    code = (
        "import sys\nfrom homeport.cli import main\n"
        f"sys.argv = ['homeport', *{args!r}]\n"
        "try:\n    main()\nexcept SystemExit as exc:\n    assert not exc.code, exc.code"
    )
    assert stack_loaded(code, *shell) == []


def test_search_by_meaning_in_the_shell_without_the_extra_is_one_line_naming_the_fix(shell_home, tmp_path, monkeypatch):
    (tmp_path / "app" / ".git").mkdir(parents=True)
    monkeypatch.chdir(tmp_path / "app")
    monkeypatch.setitem(sys.modules, "onnxruntime", None)  # as if not installed
    runner = CliRunner()
    assert runner.invoke(cli, ["decisions", "add", "Use WAL"]).exit_code == 0
    result = runner.invoke(cli, ["search", "journal", "--mode", "semantic"])
    assert result.exit_code == 1
    assert "pip install 'homeport[semantic]'" in result.output and "mode='words'" in result.output
    auto = runner.invoke(cli, ["search", "WAL"])
    assert auto.exit_code == 0 and "searched by words only" in auto.output and "Use WAL" in auto.output


def test_models_fetch_offline_fails_with_what_to_do_and_leaves_no_partial_model(tmp_path):
    result = CliRunner().invoke(
        cli, ["models", "fetch", "--data-dir", str(tmp_path), "--source", "http://127.0.0.1:9/nothing"]
    )
    assert result.exit_code == 1
    assert "cannot download http://127.0.0.1:9/nothing/onnx/model.onnx" in result.output
    assert "put model.onnx and tokenizer.json" in result.output
    target = tmp_path / "models" / MODEL_DIRNAME
    assert not target.exists() or list(target.iterdir()) == []
    assert find_model(tmp_path) is None or find_model(tmp_path).onnx.parent != target


@pytest.mark.skipif(NO_MODEL is not None, reason=f"{NO_MODEL}")
def test_models_fetch_downloads_into_the_data_dir_and_the_model_is_then_loaded_from_there(tmp_path):
    # A mirror laid out as the model's repository (file:// URLs go through the same download code).
    packaged = find_model(None)
    assert packaged is not None
    mirror = tmp_path / "mirror"
    (mirror / "onnx").mkdir(parents=True)
    shutil.copyfile(packaged.onnx, mirror / "onnx" / "model.onnx")
    shutil.copyfile(packaged.tokenizer, mirror / "tokenizer.json")
    data = tmp_path / "data"
    result = CliRunner().invoke(cli, ["models", "fetch", "--data-dir", str(data), "--source", mirror.as_uri()])
    assert result.exit_code == 0, result.output
    assert f"model ready in {data / 'models' / MODEL_DIRNAME}" in result.output
    files = find_model(data)
    assert files is not None and files.name == MODEL_DIRNAME and files.onnx.parent == data / "models" / MODEL_DIRNAME
    assert sorted(p.name for p in files.onnx.parent.iterdir()) == ["model.onnx", "tokenizer.json"]
    status = CliRunner().invoke(cli, ["models", "status", "--data-dir", str(data)])
    assert f"search by meaning is available: {MODEL_DIRNAME} ({files.onnx})" in status.output

    from homeport.embedding.model import load_embedder

    embedder = load_embedder(data)
    vectors = embedder.embed(["ship without downtime", "blue-green rollout", "translate emails"])
    assert vectors.shape == (3, embedder.dim) and vectors.dtype.name == "float32"
    assert float(vectors[0] @ vectors[1]) > float(vectors[0] @ vectors[2])


@pytest.mark.skipif(NO_MODEL is not None, reason=f"{NO_MODEL}")
def test_a_damaged_download_is_refused_and_nothing_is_installed(tmp_path):
    mirror = tmp_path / "mirror"
    (mirror / "onnx").mkdir(parents=True)
    (mirror / "onnx" / "model.onnx").write_bytes(b"not a model")
    (mirror / "tokenizer.json").write_text("{}")
    result = CliRunner().invoke(cli, ["models", "fetch", "--data-dir", str(tmp_path), "--source", mirror.as_uri()])
    assert result.exit_code == 1 and "not a usable model" in result.output
    assert list((tmp_path / "models" / MODEL_DIRNAME).iterdir()) == []
