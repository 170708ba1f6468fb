"""bench/soak.py runs end to end: a few seconds of load, one restart, every acknowledged write verified.

The soak itself is a benchmark (ten minutes by default, not part of the suite); this runs it for
three seconds so a change that breaks the script, or a write lost across a restart, shows here.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from ._support import clean_env

pytestmark = pytest.mark.slow

SOAK = Path(__file__).resolve().parents[2] / "bench" / "soak.py"


def test_a_short_soak_with_one_restart_loses_no_acknowledged_write(tmp_path: Path) -> None:
    done = subprocess.run(
        [
            sys.executable,
            str(SOAK),
            "--minutes",
            "0.05",
            "--clients",
            "1",
            "--restarts",
            "1",
            "--no-plot",
            "--out",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        timeout=540,  # a hang guard under pytest's 600: seconds alone, minutes beside other jobs on 2 cores
        env=clean_env(),
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    (summary_file,) = tmp_path.glob("*-soak.json")
    summary = json.loads(summary_file.read_text())
    verification = summary["verification"]
    assert summary["calls_ok"] > 0
    assert verification["writes_acknowledged"] > 0
    assert verification["lost_writes"] == 0
    assert verification["misplaced_writes"] == 0
    assert verification["integrity_ok"]
    assert [r["signal"] for r in summary["restarts"]] in (["SIGTERM"], ["SIGKILL"])
    assert "misrouted" not in summary["errors"]
