"""The tools, one module per group; importing this package declares them all in `CATALOG`, in order."""

from homeport.core.tools import (  # noqa: F401  (declarations)
    branches,
    citations,
    compat_conport,
    compat_devdb,
    dashboard,
    database,
    files,
    importers,
    knowledge,
    memory,
    sync,
    task_context,
    tidy,
    versions,
    workspace,
)

__all__: list[str] = []
