"""The wheel as built is what `uvx homeport serve`, `pipx run homeport serve` and `pip install` get.

It is built from this checkout with the project's own build backend (no network: hatchling must
be installed, which the `test` extra does), then checked for what an installed Homeport needs
beside the Python modules: every Alembic migration, the `homeport` command and the metadata a
package index shows. The unpacked wheel, alone on sys.path ahead of this checkout, then creates
a project's store, which runs those migrations.
"""

from __future__ import annotations

import email.parser
import importlib.util
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "src" / "homeport"

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("hatchling") is None,
    reason="the build backend (hatchling) is not installed and cannot be fetched offline: pip install hatchling",
)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    built = subprocess.run(
        [sys.executable, "-c", "import sys, hatchling.build as b; print(b.build_wheel(sys.argv[1]))", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert built.returncode == 0, built.stderr
    return out / built.stdout.strip().splitlines()[-1]


def _package_data_files() -> set[str]:
    """Every file of the package in the checkout that is not compiled Python."""
    return {
        p.relative_to(PACKAGE.parent).as_posix()
        for p in PACKAGE.rglob("*")
        if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc"
    }


def test_the_wheel_holds_every_file_of_the_package_with_every_migration(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    assert _package_data_files() <= names
    migrations = {n for n in names if n.startswith("homeport/store/migrations/versions/") and n.endswith(".py")}
    assert len(migrations - {"homeport/store/migrations/versions/__init__.py"}) >= 2
    assert {"homeport/store/migrations/env.py", "homeport/store/migrations/script.py.mako"} <= names


def test_the_wheel_installs_the_homeport_command_and_says_what_it_needs(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as zf:
        info = next(n.rsplit("/", 1)[0] for n in zf.namelist() if n.endswith(".dist-info/METADATA"))
        entry_points = zf.read(f"{info}/entry_points.txt").decode()
        metadata = email.parser.Parser().parsestr(zf.read(f"{info}/METADATA").decode())
        licenses = [n for n in zf.namelist() if n.startswith(f"{info}/licenses/")]
    assert "[console_scripts]\nhomeport = homeport.cli:main" in entry_points
    assert metadata["Requires-Python"] == ">=3.11"
    assert metadata["License-Expression"] == "MIT"
    assert licenses == [f"{info}/licenses/LICENSE"]
    classifiers = metadata.get_all("Classifier") or []
    assert "Programming Language :: Python :: 3.11" in classifiers
    assert metadata["Description-Content-Type"] == "text/markdown"
    assert metadata.get_payload().startswith("# Homeport")


def test_the_unpacked_wheel_alone_creates_a_projects_store_through_its_migrations(wheel: Path, tmp_path: Path) -> None:
    site = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(site)
    project = tmp_path / "shop"
    (project / ".git").mkdir(parents=True)
    boot = (
        "import sys; sys.path.insert(0, sys.argv.pop(1)); import homeport; "
        "assert homeport.__file__.startswith(sys.path[0]), homeport.__file__; "
        "from homeport.cli import main; main()"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("HOMEPORT_")}
    env["HOME"] = str(tmp_path / "home")
    added = subprocess.run(
        [sys.executable, "-c", boot, str(site), "decisions", "add", "Ship wheels", "--json", "-w", str(project)],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert added.returncode == 0, added.stderr
    assert json.loads(added.stdout)["summary"] == "Ship wheels"
    assert (project / ".homeport" / "homeport.db").is_file()
