"""bench/vector_store.py runs end to end on 1,000 vectors in a few seconds.

The benchmark itself is not part of the suite; this runs its smallest size so a change that breaks
the script (Homeport's vector loader is reused by it) shows here. sqlite-vec is not a dependency:
where it cannot be loaded the script must say why and still measure the blob half.
"""

from __future__ import annotations

import re
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from ._support import clean_env

pytestmark = pytest.mark.slow

SCRIPT = Path(__file__).resolve().parents[2] / "bench" / "vector_store.py"


def _sqlite_vec_loads() -> bool:
    try:
        import sqlite_vec
    except ImportError:
        return False
    conn = sqlite3.connect(":memory:")
    try:
        conn.enable_load_extension(True)
        sqlite_vec.load(conn)
    except (AttributeError, sqlite3.Error):
        return False
    finally:
        conn.close()
    return True


def test_a_thousand_vectors_are_measured_in_both_stores_or_the_missing_one_is_explained() -> None:
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--sizes", "1000", "--queries", "20", "--quiet-wait", "0"],
        capture_output=True,
        text=True,
        timeout=60,
        env=clean_env(),
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    blob = re.search(r"^\| 1,000 \| blob \+ numpy \| ([\d,]+) \| ([\d.]+) \| .*\(20\) \|", done.stdout, re.M)
    assert blob is not None, done.stdout
    assert float(blob.group(2)) > 1.5  # 1,000 x 384 float32 = 1.5 MB of vectors
    if _sqlite_vec_loads():
        assert re.search(r"^\| 1,000 \| sqlite-vec vec0 \| [\d,]+ \| [\d.]+ \| .* \| 100\.0% \|", done.stdout, re.M), (
            done.stdout
        )
    else:
        assert re.search(r"^sqlite-vec: not measured, \S", done.stdout, re.M), done.stdout
        assert "| 1,000 | sqlite-vec vec0 | not measured |" in done.stdout
