"""Package names that load on first use (PEP 562), so that a command imports only what it runs."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, Sequence

TYPE_CHECKING = False  # not typing's: `homeport` run through the daemon imports no typing (homeport.cli._thin)
if TYPE_CHECKING:
    from typing import Any

__all__ = ["lazy_names"]


def lazy_names(
    package: str, homes: Mapping[str, str], exported: Sequence[str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """A package's `__getattr__` and `__dir__` that import each name from its module when first asked.

    `homes` maps each exported name to the module that defines it.
    """

    def __getattr__(name: str) -> Any:
        try:
            module = homes[name]
        except KeyError:
            raise AttributeError(f"module {package!r} has no attribute {name!r}") from None
        return getattr(importlib.import_module(module), name)

    def __dir__() -> list[str]:
        return sorted(exported)

    return __getattr__, __dir__
