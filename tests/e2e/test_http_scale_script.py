"""bench/http_scale.py runs end to end in its quick mode: every setup, every call answered.

The benchmark itself takes minutes and is not part of the suite; this runs `--quick` (32 clients,
a few calls each, one round) so that a change that breaks the script, or a call that fails under
32 concurrent clients against one or two processes on either store, shows here.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from ._support import clean_env

pytestmark = [pytest.mark.slow, pytest.mark.postgres]

SCRIPT = Path(__file__).resolve().parents[2] / "bench" / "http_scale.py"


# A hang guard, not a deadline: the quick run takes about a minute alone and several times that beside
# the suite's other workers on 2 shared cores.
@pytest.mark.timeout(1000)
def test_the_quick_run_measures_every_setup_beside_the_floor(tmp_path: Path, store_postgres_url: str) -> None:
    runs_file = tmp_path / "runs.json"
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--quick", "--postgres", store_postgres_url, "--json", str(runs_file)],
        capture_output=True,
        text=True,
        timeout=960,
        env=clean_env(),
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    runs = json.loads(runs_file.read_text())
    measured = {(r["server"], r["store"], r["processes"], r["era"]) for r in runs}
    expected = {("floor", "-", n, era) for n in (1, 2) for era in ("2026", "2025")}
    expected |= {
        ("homeport", store, n, era) for store in ("sqlite", "postgresql") for n in (1, 2) for era in ("2026", "2025")
    }
    assert measured == expected
    assert all(r["calls"] == 32 * 4 and r["server_cpu_ms_per_call"] > 0 for r in runs)
    table = done.stdout
    assert "| 2026 | postgresql | 2 | homeport |" in table
    assert "| 2025 | - | 1 | floor |" in table
