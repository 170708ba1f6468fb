"""`homeport models fetch`: download the embedding model once, into the user's data directory.

The only place Homeport downloads anything, and only when asked. Files are written beside their
final name and renamed into place once complete and loadable, so an interrupted download never
leaves a half file that looks like a model.
"""

from __future__ import annotations

import os
import shutil
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path

from homeport.embedding.model import ModelFiles, OnnxEmbedder, model_dir
from homeport.errors import SemanticSearchUnavailableError

__all__ = ["DEFAULT_SOURCE", "MODEL_FILES", "fetch_model", "remove_model"]

# sentence-transformers' own ONNX export of the model (fp32, about 90 MB) and its tokenizer.
DEFAULT_SOURCE = "https://huggingface.co/sentence-transformers/all-MiniLM-L6-v2/resolve/main"
MODEL_FILES = {"model.onnx": "onnx/model.onnx", "tokenizer.json": "tokenizer.json"}
_CHUNK = 1 << 16

# (file name, bytes so far, total bytes or None when the server does not say)
Progress = Callable[[str, int, int | None], None]


def fetch_model(data_dir: Path, *, source: str = DEFAULT_SOURCE, force: bool = False, progress: Progress) -> Path:
    """Download the model's files from `source` (a URL prefix) into `model_dir(data_dir)`; that directory.

    Raises:
        SemanticSearchUnavailableError: a download failed (offline, a proxy, a missing file) or the files
            downloaded do not load as a model.
    """
    target = model_dir(data_dir)
    if not force and all((target / name).is_file() for name in MODEL_FILES):
        return target
    try:
        target.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise SemanticSearchUnavailableError(f"cannot create {target}: {exc.strerror}") from exc
    partial = {name: target / f".{name}.part" for name in MODEL_FILES}
    try:
        for name, remote in MODEL_FILES.items():
            _download(f"{source.rstrip('/')}/{remote}", partial[name], name, progress)
        try:
            OnnxEmbedder(ModelFiles("check", partial["model.onnx"], partial["tokenizer.json"])).embed(["check"])
        except Exception as exc:  # onnxruntime and tokenizers raise their own types for a damaged file
            raise SemanticSearchUnavailableError(
                f"the files downloaded from {source} are not a usable model ({exc}); nothing was installed"
            ) from exc
        for name, part in partial.items():
            os.replace(part, target / name)
    finally:
        for part in partial.values():
            part.unlink(missing_ok=True)
    return target


def _download(url: str, dest: Path, name: str, progress: Progress) -> None:
    try:
        with urllib.request.urlopen(url, timeout=30) as response, dest.open("wb") as out:
            length = response.headers.get("Content-Length")
            total = int(length) if length and length.isdigit() else None
            done = 0
            progress(name, 0, total)
            while chunk := response.read(_CHUNK):
                out.write(chunk)
                done += len(chunk)
                progress(name, done, total)
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", None) or getattr(exc, "strerror", None) or exc
        raise SemanticSearchUnavailableError(
            f"cannot download {url}: {reason}; check the network (or a proxy: HTTPS_PROXY), or put "
            f"model.onnx and tokenizer.json of all-MiniLM-L6-v2 into {dest.parent} yourself"
        ) from exc


def remove_model(data_dir: Path) -> bool:
    """Delete the downloaded model; False if there was none."""
    target = model_dir(data_dir)
    if not target.exists():
        return False
    shutil.rmtree(target)
    return True
