"""Fixtures shared by the end-to-end tests (helpers live in `_support.py`)."""

from __future__ import annotations

import pytest


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"
