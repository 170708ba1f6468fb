"""Search by meaning: the embedding model behind one small interface, text chunks, the background indexer.

Everything heavy (numpy, onnxruntime, tokenizers) is imported on first use, never at start-up, and
only when the optional extra is installed: `pip install 'homeport[semantic]'`.
"""

from __future__ import annotations

__all__: list[str] = []
