"""Long items are cut into overlapping chunks of words, each embedded on its own: nothing is truncated.

The model reads at most 256 tokens; 120 words stay below that even for code-heavy text, and an
overlap of 24 words keeps a sentence that straddles a cut whole in one of the two chunks.
"""

from __future__ import annotations

__all__ = ["CHUNK_WORDS", "OVERLAP_WORDS", "chunk_text", "item_text"]

CHUNK_WORDS = 120
OVERLAP_WORDS = 24


def item_text(title: str, body: str, tags: str = "") -> str:
    """The text of an item that is embedded: what full-text search indexes, in one string."""
    parts = [title.strip(), body.strip()]
    if tags.strip():
        parts.append(f"tags: {tags.strip()}")
    return "\n".join(p for p in parts if p)


def chunk_text(text: str, *, size: int = CHUNK_WORDS, overlap: int = OVERLAP_WORDS) -> list[str]:
    """`text` as chunks of at most `size` words, each starting `size - overlap` words after the last.

    Every word is in at least one chunk; an empty text is one empty chunk (so every item has a vector).
    """
    if not 0 <= overlap < size:
        raise ValueError(f"overlap must be between 0 and size - 1, got {overlap} for size {size}")
    words = text.split()
    if len(words) <= size:
        return [" ".join(words)]
    step = size - overlap
    chunks = []
    for start in range(0, len(words), step):
        chunks.append(" ".join(words[start : start + size]))
        if start + size >= len(words):
            break
    return chunks
