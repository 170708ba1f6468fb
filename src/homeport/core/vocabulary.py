"""The memory's words that the shell offers as choices and limits: item types, context kinds, statuses.

The memory commands (`homeport decisions`, `links`, `batch`...) are tool calls; what they need of
the store beyond the call is its vocabulary, to build their options (`click.Choice`, ranges, help
text) from the same tuples the tools validate against. They read it here, not from
`homeport.store`, so that the shell reaches the store only through the core.
"""

from __future__ import annotations

from homeport.store.batch import BATCH_FIELDS
from homeport.store.contexts import ContextKind
from homeport.store.custom_data import GLOSSARY_CATEGORY
from homeport.store.items import ITEM_TYPES
from homeport.store.links import MAX_DEPTH as MAX_LINK_DEPTH
from homeport.store.progress import COMMON_STATUSES
from homeport.store.search import SEARCHABLE_TYPES
from homeport.store.task_context import MAX_BUDGET as MAX_TASK_BUDGET
from homeport.store.task_context import MIN_BUDGET as MIN_TASK_BUDGET
from homeport.store.transfer import DEFAULT_EXPORT_DIR

__all__ = [
    "BATCH_TYPES",
    "COMMON_STATUSES",
    "DEFAULT_EXPORT_DIR",
    "GLOSSARY_CATEGORY",
    "ITEM_TYPES",
    "MAX_LINK_DEPTH",
    "MAX_TASK_BUDGET",
    "MIN_TASK_BUDGET",
    "SEARCHABLE_TYPES",
    "ContextKind",
]

# The item types `batch` writes many of at once.
BATCH_TYPES: tuple[str, ...] = tuple(BATCH_FIELDS)
