"""Long items are cut into overlapping chunks of words, each embedded on its own: nothing is truncated.

The model reads at most 256 tokens; 120 words stay below that even for code-heavy text, and an
overlap of 24 words keeps a sentence that straddles a cut whole in one of the two chunks.

An item with a body also gets its title embedded alone, as one more chunk after the text's
(`item_chunks`): an item is as near to a query as its nearest chunk, and a short question is
often nearest to the title, which the rest of a long text dilutes. On the labelled sets
(bench/retrieval_quality.py) this raised hit@10 by search by meaning by 2 to 3 points on each;
embedding each sentence apart instead cost points (a sentence alone lacks its item's subject).
"""

from __future__ import annotations

__all__ = ["CHUNK_WORDS", "OVERLAP_WORDS", "chunk_text", "item_chunks", "item_text", "text_chunks"]

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


def item_chunks(title: str, body: str, tags: str = "") -> list[str]:
    """The texts embedded for an item: the chunks of `item_text`, then the title alone when there is more
    than the title (the last chunk; a hit on it shows the title as its snippet)."""
    return text_chunks(item_text(title, body, tags), title)


def text_chunks(text: str, title: str) -> list[str]:
    """`item_chunks` of an item whose `item_text` is `text`."""
    chunks = chunk_text(text)
    if title.strip() and text != title.strip():
        chunks.append(title.strip())
    return chunks
