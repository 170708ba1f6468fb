"""The layers of docs/architecture.md, enforced on the imports of every module."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

import homeport

SRC = Path(homeport.__file__).parent
LOWER = ("workspace", "policy", "store", "files", "projectdb", "registry", "embedding", "sync", "git")
IO_MODULES = ("os", "io", "shutil", "sqlite3", "socket", "subprocess", "sqlalchemy", "filelock", "tempfile")


def imports_of(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def modules_in(package: str) -> list[Path]:
    return sorted((SRC / package).rglob("*.py"))


def hits(names: set[str], forbidden: tuple[str, ...]) -> list[str]:
    return sorted(n for n in names if any(n == f or n.startswith(f + ".") for f in forbidden))


@pytest.mark.parametrize("package", LOWER)
def test_lower_layers_never_import_server_or_cli(package):
    for module in modules_in(package):
        assert hits(imports_of(module), ("homeport.server", "homeport.cli")) == [], module


def test_server_never_imports_cli():
    for module in modules_in("server"):
        assert hits(imports_of(module), ("homeport.cli",)) == [], module


def test_workspace_resolution_has_no_mcp_imports():
    for module in modules_in("workspace"):
        assert hits(imports_of(module), ("mcp", "starlette", "homeport.store")) == [], module


def test_git_knows_commits_not_the_store_or_the_workspace():
    # homeport.git is below the store: it reads a repository and answers about commits, nothing more.
    forbidden = ("homeport.store", "homeport.core", "homeport.workspace", "homeport.files", "mcp", "sqlalchemy")
    for module in modules_in("git"):
        assert hits(imports_of(module), forbidden) == [], module


def test_policy_is_pure():
    forbidden = (*IO_MODULES, "homeport.files", "homeport.store", "homeport.projectdb", "homeport.registry", "mcp")
    for module in modules_in("policy"):
        assert hits(imports_of(module), forbidden) == [], module


def test_executors_contain_no_permission_logic():
    for package in ("files", "projectdb", "store"):
        for module in modules_in(package):
            assert hits(imports_of(module), ("homeport.policy",)) == [], module


def test_only_the_cli_reads_the_environment():
    for module in SRC.rglob("*.py"):
        if module.parent.name == "cli":
            continue
        source = module.read_text(encoding="utf-8")
        assert "os.environ" not in source and "getenv" not in source, module


def test_starting_the_server_loads_no_database_driver_or_sql_parser():
    # They load on the first project-database call (the secret detectors on the first write); start-up
    # time is one of the figures people feel.
    code = (
        "import sys, homeport.cli.main, homeport.server.app; print(sorted(m for m in "
        "('psycopg', 'pymysql', 'sqlglot', 'alembic', 'yaml', 'detect_secrets', 'requests') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_the_registry_knows_owners_and_ports_not_stores_files_policy_or_mcp():
    forbidden = ("homeport.workspace", "homeport.store", "homeport.files", "homeport.projectdb", "homeport.policy")
    for module in modules_in("registry"):
        assert hits(imports_of(module), (*forbidden, "mcp", "starlette", "httpx", "httpx2")) == [], module


SERVER_STACK = ("mcp", "mcp_types", "starlette", "uvicorn", "sqlalchemy", "pydantic", "homeport.core.catalog")


def modules_loaded_by(args: list[str], cwd: Path, env: dict[str, str]) -> list[str]:
    code = (
        "import sys\nfrom homeport.cli import main\nsys.argv = ['homeport', *sys.argv[1:]]\n"
        "try:\n    main()\nexcept SystemExit as exc:\n    assert not exc.code, exc.code\n"
        "print('\\n' + ' '.join(sorted(sys.modules)))"
    )
    done = subprocess.run([sys.executable, "-c", code, *args], cwd=cwd, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()[-1].split()


@pytest.fixture
def cli_env(tmp_path):
    (tmp_path / "app" / ".git").mkdir(parents=True)
    env = {k: v for k, v in os.environ.items() if k not in ("HOMEPORT_WORKSPACE", "CLAUDE_PROJECT_DIR")}
    return tmp_path / "app", {**env, "HOME": str(tmp_path), "HOMEPORT_STATE_DIR": str(tmp_path / "state")}


@pytest.mark.parametrize("args", [["--version"], ["--help"]])
def test_version_and_help_load_click_and_nothing_of_the_server(cli_env, args):
    # Each command imports its module when it runs; these two run none.
    loaded = set(modules_loaded_by(args, *cli_env))
    assert hits(loaded, (*SERVER_STACK, "rich", "anyio", "homeport.server", "homeport.store")) == []


def test_where_loads_the_resolver_and_registry_but_no_store_or_mcp(cli_env):
    loaded = set(modules_loaded_by(["where"], *cli_env))
    assert hits(loaded, (*SERVER_STACK, "homeport.store.database", "homeport.projectdb")) == []


def test_memory_commands_load_the_store_but_not_the_mcp_transport(cli_env):
    loaded = set(modules_loaded_by(["decisions", "list"], *cli_env))
    assert hits(loaded, ("mcp", "starlette", "uvicorn", "httpx", "alembic")) == []


def test_serve_help_loads_nothing_of_the_server(cli_env):
    loaded = set(modules_loaded_by(["serve", "--help"], *cli_env))
    assert hits(loaded, (*SERVER_STACK, "homeport.server.app", "homeport.core.runtime")) == []


def test_the_dashboard_reads_and_writes_memory_only_through_the_tool_pipeline():
    # No store, registry, file area or project database of its own: what a browser sees is what its
    # principal's tool calls return, through the same resolution, guards and access as MCP calls.
    forbidden = ("homeport.store", "homeport.registry", "homeport.files.area", "homeport.projectdb", "sqlite3")
    for module in modules_in("ui"):
        assert hits(imports_of(module), (*forbidden, "sqlalchemy")) == [], module


def names_imported_by(path: Path) -> set[str]:
    """Every module `path` names in an import, `from homeport import store` as `homeport.store` too."""
    names = imports_of(path)
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def test_the_shell_and_the_dashboard_reach_stores_and_file_areas_only_through_the_core():
    # Opening a store, choosing its backend (a SQLite file or a PostgreSQL URL) and reading its location are
    # written once: core/runtime.py for the tools, core/stores.py for the admin commands (where, doctor, migrate,
    # copy); the token store and the directory file in core/credentials.py; the memory's vocabulary in
    # core/vocabulary.py. A command that opened a store itself would be a second door beside them.
    for package in ("cli", "ui"):
        for module in modules_in(package):
            assert hits(names_imported_by(module), ("homeport.store", "homeport.files")) == [], module


TRANSPORTS = ("mcp", "mcp_types", "starlette", "uvicorn", "sse_starlette")
ADAPTERS = ("homeport.server", "homeport.cli", "homeport.ui")


def test_the_core_imports_no_transport_and_no_adapter():
    # The one call path is the same for MCP, the shell and the dashboard because it knows none of them.
    for module in modules_in("core"):
        assert hits(imports_of(module), (*TRANSPORTS, *ADAPTERS)) == [], module


def test_the_mesh_never_imports_the_core_nor_an_adapter():
    # It is handed a tool name, a route and arguments; whether a call leaves is decided in the core.
    for module in modules_in("mesh"):
        assert hits(imports_of(module), ("homeport.core", *ADAPTERS)) == [], module


def test_the_mcp_binding_never_imports_the_dashboard():
    for module in modules_in("server"):
        assert hits(imports_of(module), ("homeport.ui",)) == [], module


def package_of(name: str) -> str | None:
    parts = name.split(".")
    return parts[1] if parts[0] == "homeport" and len(parts) > 1 else None


def package_graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for module in SRC.rglob("*.py"):
        rel = module.relative_to(SRC).parts
        here = rel[0].removesuffix(".py") if len(rel) == 1 else rel[0]
        for name in imports_of(module):
            there = package_of(name)
            if there is not None and there != here and not there.startswith("_") and there != "errors":
                graph.setdefault(here, set()).add(there)
    return graph


def test_the_package_graph_has_no_circles():
    # Lazy imports inside functions count too: a circle hidden in a function body is still a circle.
    graph = package_graph()
    state: dict[str, int] = {}
    path: list[str] = []

    def visit(node: str) -> None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            assert state.get(nxt) != 1, " -> ".join([*path[path.index(nxt) :], nxt])
            if nxt not in state:
                visit(nxt)
        path.pop()
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node)


def test_the_folder_tree_shows_the_layers():
    packages = {p.name for p in SRC.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    assert {"core", "mesh", "server", "cli", "ui", *LOWER} <= packages


def runtime_imports(path: Path) -> set[str]:
    """Every module `path` imports when it runs (in function bodies too), not those only a type checker reads."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    typing_only = {
        id(n)
        for node in ast.walk(tree)
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
        for n in ast.walk(node)
    }
    names: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.update([node.module, *(f"{node.module}.{alias.name}" for alias in node.names)])
    return names


def test_no_module_imports_itself_through_others():
    # Two modules that import each other (even lazily, inside a function) are one concept split in two
    # or a layer pointing the wrong way (the old server/deployment <-> server/resolution).
    modules = {}
    for path in SRC.rglob("*.py"):
        parts = list(path.relative_to(SRC.parent).with_suffix("").parts)
        modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    graph = {
        name: {n for n in runtime_imports(path) if n in modules and n != name and not name.startswith(n + ".")}
        for name, path in modules.items()
    }
    state: dict[str, int] = {}
    path: list[str] = []

    def visit(node: str) -> None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph[node]):
            assert state.get(nxt) != 1, " -> ".join([*path[path.index(nxt) :], nxt])
            if nxt not in state:
                visit(nxt)
        path.pop()
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node)
