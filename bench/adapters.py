"""One adapter per server: how to install it, start it over stdio, and map the abstract workload.

The abstract workload has five operations, each one MCP tool call:

    write   record a decision (summary, rationale, tags)
    read    the latest 10 decisions
    search  full-text search for a word every decision contains, 10 results
    set     set a small JSON value under (category, key)
    get     read that value back

Homeport and the echo floor run from this interpreter (the project's environment). Each peer is
installed from the package index by `ensure_installed()` into its own virtual environment under
bench/.venvs/<name>, with `python -m venv` and pip, using an interpreter that satisfies the
peer's Requires-Python (this one, else a python3.12+/3.13 found on PATH or under ~/.pyenv). If
that fails the adapter reports why and the harness skips it.

`check()` reads the server's own tool list (list_tools) and refuses to run when a mapped tool
or argument is missing, so a peer that renames its tools fails loudly instead of measuring
error replies.
"""

from __future__ import annotations

import glob
import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mcp import StdioServerParameters

BENCH = Path(__file__).resolve().parent
VENVS = BENCH / ".venvs"
OPS = ("write", "read", "search", "set", "get")
INSTALL_TIMEOUT_S = 1800

# ---------------------------------------------------------------------------------------------
# The workload's data: deterministic, the same for every server.

_RATIONALES = (
    "Readers never block the writer, and one file per project keeps backups and exports simple.",
    "A single writer queue avoids lock errors when two agents write the same project at once.",
    "Full-text search over every item type lets an agent find context without knowing the schema.",
)
QUERIES = ("sqlite", "writer", "project")  # every decision's summary or rationale holds each


def decision(i: int) -> dict[str, Any]:
    """The i-th decision: about 60 + 90 characters of text and two tags."""
    return {
        "summary": f"Decision {i}: use SQLite WAL for the project store",
        "rationale": _RATIONALES[i % len(_RATIONALES)],
        "tags": ["storage", f"bench-{i % 5}"],
    }


def query(i: int) -> str:
    return QUERIES[i % len(QUERIES)]


def custom_key(i: int) -> str:
    return f"key{i % 25}"


def custom_value(i: int) -> dict[str, Any]:
    return {"n": i, "owner": "bench", "note": "a small JSON value, replaced on every set"}


class OpError(RuntimeError):
    """A tool call that answered with an error (or an error written as text)."""


# ---------------------------------------------------------------------------------------------
# Installing peers into their own virtual environments.


def _python_version(python: str) -> tuple[int, int] | None:
    try:
        out = subprocess.run(
            [python, "-c", "import sys; print(sys.version_info[0], sys.version_info[1])"],
            capture_output=True,
            text=True,
            timeout=30,
            check=True,
        ).stdout.split()
        return int(out[0]), int(out[1])
    except (OSError, subprocess.SubprocessError, ValueError, IndexError):
        return None


def find_python(minimum: tuple[int, int]) -> str | None:
    """This interpreter if new enough, else the first python>=minimum on PATH or under ~/.pyenv."""
    candidates = [sys.executable]
    for minor in range(minimum[1], 16):
        which = shutil.which(f"python{minimum[0]}.{minor}")
        if which:
            candidates.append(which)
    pyenv = os.environ.get("PYENV_ROOT", os.path.expanduser("~/.pyenv"))
    candidates += sorted(glob.glob(f"{pyenv}/versions/{minimum[0]}.*/bin/python3"), reverse=True)
    candidates += sorted(glob.glob(f"/usr/bin/python{minimum[0]}.[0-9]*"), reverse=True)
    for python in candidates:
        if python.endswith("-config"):
            continue
        version = _python_version(python)
        if version is not None and version >= minimum:
            return python
    return None


def venv_python(name: str) -> Path:
    return VENVS / name / "bin" / "python"


def ensure_venv(
    name: str,
    requirements: list[str],
    *,
    min_python: tuple[int, int] = (3, 10),
    probe: str | None = None,
    reinstall: bool = False,
) -> tuple[Path | None, str]:
    """Create bench/.venvs/<name> and pip-install `requirements` there (once).

    `probe` is a file under the venv's bin/ whose presence means the install is complete.
    Returns (venv path or None, message).
    """
    venv = VENVS / name
    marker = venv / ".bench-installed"
    if reinstall and venv.exists():
        shutil.rmtree(venv)
    if (venv / "bin" / (probe or "python")).exists() and (marker.exists() or _installed(venv, requirements)):
        marker.write_text(time.strftime("%Y-%m-%d %H:%M:%S"))
        return venv, f"{name}: using {venv}"
    python = find_python(min_python)
    if python is None:
        return None, (
            f"{name}: needs Python >= {min_python[0]}.{min_python[1]} and none was found "
            f"(looked at {sys.executable}, python3.N on PATH, ~/.pyenv/versions)"
        )
    VENVS.mkdir(parents=True, exist_ok=True)
    log_path = VENVS / f"{name}.install.log"
    print(
        f"[install] {name}: {' '.join(requirements)} into {venv} with {python} (log: {log_path}); "
        "this can take minutes",
        flush=True,
    )
    started = time.monotonic()
    with open(log_path, "w") as log:
        steps = [
            [python, "-m", "venv", "--clear", str(venv)],
            [str(venv / "bin" / "python"), "-m", "pip", "install", "--upgrade", "pip"],
            [str(venv / "bin" / "python"), "-m", "pip", "install", *requirements],
        ]
        for step in steps:
            log.write(f"$ {' '.join(step)}\n")
            log.flush()
            try:
                done = subprocess.run(step, stdout=log, stderr=subprocess.STDOUT, timeout=INSTALL_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                return None, f"{name}: install timed out after {INSTALL_TIMEOUT_S} s (see {log_path})"
            if done.returncode != 0:
                tail = _tail(log_path, 3)
                return None, f"{name}: `{' '.join(step[-3:])}` failed (exit {done.returncode}): {tail} (see {log_path})"
    if probe is not None and not (venv / "bin" / probe).exists():
        return None, f"{name}: installed, but {venv / 'bin' / probe} is missing (see {log_path})"
    marker.write_text(time.strftime("%Y-%m-%d %H:%M:%S"))
    return venv, f"{name}: installed in {time.monotonic() - started:.0f} s"


def _installed(venv: Path, requirements: list[str]) -> bool:
    """True when every requirement (a bare distribution name) is installed in `venv`."""
    return all(package_version(venv / "bin" / "python", r) != "?" for r in requirements)


def _tail(path: Path, lines: int) -> str:
    try:
        text = [
            ln
            for ln in path.read_text(errors="replace").splitlines()
            if ln.strip() and not ln.startswith("WARNING: Location")
        ]
    except OSError:
        return ""
    return " | ".join(text[-lines:])[-400:]


def package_version(python: Path | str, dist: str) -> str:
    try:
        return subprocess.run(
            [str(python), "-c", f"import importlib.metadata as m; print(m.version({dist!r}))"],
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "?"


# ---------------------------------------------------------------------------------------------
# Adapters.


@dataclass
class Adapter:
    """How one server is installed, started and driven. Subclasses map the five operations."""

    name: str
    label: str
    role: str  # "floor" | "subject" | "peer"
    notes: list[str] = field(default_factory=list)
    version: str = "?"

    # -- lifecycle --------------------------------------------------------------------------
    def ensure_installed(self, *, reinstall: bool = False) -> str | None:
        """None when ready, else why this server must be skipped."""
        return None

    def params(self, work: Path) -> StdioServerParameters:
        raise NotImplementedError

    async def check(self, client: Any) -> None:
        """Verify the tools and arguments this adapter uses exist on the running server."""
        tools = {t.name: t for t in (await client.list_tools()).tools}
        for tool, args in self.uses().items():
            if tool not in tools:
                raise OpError(f"{self.name}: the server has no tool {tool!r} (it has {', '.join(sorted(tools))})")
            props = set((tools[tool].input_schema or {}).get("properties", {}))
            missing = [a for a in args if a not in props]
            if missing:
                raise OpError(
                    f"{self.name}: tool {tool!r} takes no {', '.join(missing)} (it takes {', '.join(sorted(props))})"
                )

    def uses(self) -> dict[str, list[str]]:
        """tool name -> the argument names the adapter passes."""
        raise NotImplementedError

    # -- the workload -------------------------------------------------------------------------
    async def call(self, client: Any, tool: str, args: dict[str, Any]) -> Any:
        result = await client.call_tool(tool, args)
        if result.is_error:
            text = result.content[0].text if result.content else ""
            raise OpError(f"{self.name}.{tool} failed: {text[:300]}")
        return result

    async def op(self, client: Any, op: str, i: int) -> Any:
        return await getattr(self, f"op_{op}")(client, i)

    async def first_call(self, client: Any) -> Any:
        """The call that ends the start-up measurement."""
        return await self.op_read(client, 0)

    def hits(self, result: Any) -> int | None:
        """How many search hits a search result holds (None: cannot tell)."""
        return None


def _structured(result: Any) -> Any:
    if result.structured_content is not None:
        return result.structured_content
    try:
        return json.loads(result.content[0].text)
    except (IndexError, AttributeError, ValueError):
        return None


class HomeportLike(Adapter):
    """Homeport's tool names and arguments (the echo floor copies them)."""

    def uses(self) -> dict[str, list[str]]:
        return {
            "log_decision": ["summary", "rationale", "tags"],
            "get_decisions": ["limit"],
            "search": ["query", "limit"],
            "log_custom_data": ["category", "key", "value"],
            "get_custom_data": ["category", "key"],
        }

    async def op_write(self, c: Any, i: int) -> Any:
        return await self.call(c, "log_decision", decision(i))

    async def op_read(self, c: Any, i: int) -> Any:
        return await self.call(c, "get_decisions", {"limit": 10})

    async def op_search(self, c: Any, i: int) -> Any:
        return await self.call(c, "search", {"query": query(i), "limit": 10})

    async def op_set(self, c: Any, i: int) -> Any:
        return await self.call(
            c, "log_custom_data", {"category": "bench", "key": custom_key(i), "value": custom_value(i)}
        )

    async def op_get(self, c: Any, i: int) -> Any:
        return await self.call(c, "get_custom_data", {"category": "bench", "key": custom_key(i)})

    def hits(self, result: Any) -> int | None:
        data = _structured(result)
        return len(data.get("results", [])) if isinstance(data, dict) else None


class HomeportAdapter(HomeportLike):
    def __init__(self) -> None:
        super().__init__("homeport", "Homeport", "subject")
        self.version = package_version(sys.executable, "homeport")

    def params(self, work: Path) -> StdioServerParameters:
        return StdioServerParameters(
            command=sys.executable,
            args=["-c", "from homeport.cli import main; main()", "serve", "--workspace", str(work)],
            env={"HOMEPORT_DATA_DIR": str(work / "homeport-data")},
            cwd=str(work),
        )


class EchoAdapter(HomeportLike):
    def __init__(self) -> None:
        super().__init__("echo", "echo floor", "floor")
        self.version = "mcp " + package_version(sys.executable, "mcp")

    def params(self, work: Path) -> StdioServerParameters:
        return StdioServerParameters(
            command=sys.executable,
            args=[str(BENCH / "servers" / "echo_server.py"), "--workspace", str(work)],
            cwd=str(work),
        )


# Hugging Face and telemetry look-ups fail at once instead of waiting on the network.
_OFFLINE = {
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "HF_HUB_DISABLE_TELEMETRY": "1",
    "DO_NOT_TRACK": "1",
    "ANONYMIZED_TELEMETRY": "False",
    "FASTMCP_SHOW_SERVER_BANNER": "false",
    "FASTMCP_CHECK_FOR_UPDATES": "off",
}


class ConPortAdapter(Adapter):
    """context-portal-mcp: SQLite + FTS5, ChromaDB and sentence-transformers for semantic search.

    Every tool takes `workspace_id`. Its full-text search over decisions is search_decisions_fts.
    """

    dist = "context-portal-mcp"

    def __init__(self) -> None:
        super().__init__("conport", "ConPort", "peer")
        self.venv: Path | None = None
        self.workspace_id = ""

    def ensure_installed(self, *, reinstall: bool = False) -> str | None:
        venv, message = ensure_venv("conport", [self.dist], probe="conport-mcp", reinstall=reinstall)
        print(f"[install] {message}", flush=True)
        if venv is None:
            return message
        self.venv = venv
        self.version = package_version(venv / "bin" / "python", self.dist)
        self.notes = [
            "as installed. Its embedding model (all-MiniLM-L6-v2) is fetched from a model hub on first use; "
            "this machine cannot reach the hub (HF_HUB_OFFLINE=1 makes that fail at once), so every write "
            "tries to load the model, fails in about 1-5 ms, and the write succeeds without an embedding: "
            "the 'with embeddings' figure of issue 6 cannot be reproduced here"
        ]
        return None

    def params(self, work: Path) -> StdioServerParameters:
        assert self.venv is not None
        self.workspace_id = str(work)
        return StdioServerParameters(
            command=str(self.venv / "bin" / "conport-mcp"),
            args=["--mode", "stdio", "--workspace_id", str(work), "--log-level", "WARNING"],
            env={**_OFFLINE, "HOME": str(work / "home")},
            cwd=str(work),
        )

    def uses(self) -> dict[str, list[str]]:
        return {
            "log_decision": ["workspace_id", "summary", "rationale", "tags"],
            "get_decisions": ["workspace_id", "limit"],
            "search_decisions_fts": ["workspace_id", "query_term", "limit"],
            "log_custom_data": ["workspace_id", "category", "key", "value"],
            "get_custom_data": ["workspace_id", "category", "key"],
        }

    def _ws(self, c: Any) -> str:
        return self.workspace_id

    async def op_write(self, c: Any, i: int) -> Any:
        return await self.call(c, "log_decision", {"workspace_id": self._ws(c), **decision(i)})

    async def op_read(self, c: Any, i: int) -> Any:
        return await self.call(c, "get_decisions", {"workspace_id": self._ws(c), "limit": 10})

    async def op_search(self, c: Any, i: int) -> Any:
        return await self.call(
            c, "search_decisions_fts", {"workspace_id": self._ws(c), "query_term": query(i), "limit": 10}
        )

    async def op_set(self, c: Any, i: int) -> Any:
        return await self.call(
            c,
            "log_custom_data",
            {"workspace_id": self._ws(c), "category": "bench", "key": custom_key(i), "value": custom_value(i)},
        )

    async def op_get(self, c: Any, i: int) -> Any:
        return await self.call(
            c, "get_custom_data", {"workspace_id": self._ws(c), "category": "bench", "key": custom_key(i)}
        )

    def hits(self, result: Any) -> int | None:
        data = _structured(result)
        if isinstance(data, dict) and isinstance(data.get("result"), list):
            return len(data["result"])
        return len(data) if isinstance(data, list) else None


class ConPortNoEmbeddingsAdapter(ConPortAdapter):
    """ConPort with its embedding and vector-store steps replaced by no-ops (bench/servers/conport_noemb.py)."""

    def __init__(self) -> None:
        super().__init__()
        self.name, self.label = "conport-noemb", "ConPort (no embeddings)"

    def ensure_installed(self, *, reinstall: bool = False) -> str | None:
        why = super().ensure_installed(reinstall=reinstall)
        self.notes = [
            "the same ConPort install, started through bench/servers/conport_noemb.py, which turns "
            "its embedding and vector-store steps into no-ops: only its SQLite work remains"
        ]
        return why

    def params(self, work: Path) -> StdioServerParameters:
        base = super().params(work)
        assert self.venv is not None
        return base.model_copy(
            update={
                "command": str(self.venv / "bin" / "python"),
                "args": [str(BENCH / "servers" / "conport_noemb.py"), *base.args],
            }
        )


class BasicMemoryAdapter(Adapter):
    """basic-memory: Markdown notes on disk indexed in SQLite.

    write = write_note into decisions/, read = recent_activity (10 newest), search = search_notes
    (10 per page), set = write_note into custom/ with overwrite, get = read_note of that note.
    Its config, database and notes live under the run's work directory (BASIC_MEMORY_CONFIG_DIR,
    BASIC_MEMORY_HOME, HOME), never in the user's ~/.basic-memory.
    """

    dist = "basic-memory"

    def __init__(self) -> None:
        super().__init__("basic-memory", "basic-memory", "peer")
        self.venv: Path | None = None

    def ensure_installed(self, *, reinstall: bool = False) -> str | None:
        # basic-memory requires Python >= 3.12.
        venv, message = ensure_venv(
            "basic-memory", [self.dist], min_python=(3, 12), probe="basic-memory", reinstall=reinstall
        )
        print(f"[install] {message}", flush=True)
        if venv is None:
            return message
        self.venv = venv
        self.version = package_version(venv / "bin" / "python", self.dist)
        self.notes = [
            "read = recent_activity, which lists the 10 newest notes' titles and ids, not their bodies; "
            "semantic (vector) search is switched off (BASIC_MEMORY_SEMANTIC_SEARCH_ENABLED=false): its "
            "embedding model comes from a model hub, and the interpreter's sqlite3 cannot load the vector "
            "extension; search is basic-memory's keyword (FTS) search"
        ]
        return None

    def params(self, work: Path) -> StdioServerParameters:
        assert self.venv is not None
        env = {
            **_OFFLINE,
            "HOME": str(work / "home"),
            "BASIC_MEMORY_CONFIG_DIR": str(work / "bm-config"),
            "BASIC_MEMORY_HOME": str(work / "notes"),
            "BASIC_MEMORY_AUTO_UPDATE": "false",
            "BASIC_MEMORY_SEMANTIC_SEARCH_ENABLED": "false",
            "BASIC_MEMORY_LOG_LEVEL": "WARNING",
        }
        return StdioServerParameters(
            command=str(self.venv / "bin" / "basic-memory"),
            args=["mcp", "--transport", "stdio"],
            env=env,
            cwd=str(work),
        )

    def uses(self) -> dict[str, list[str]]:
        return {
            "write_note": ["title", "content", "directory", "tags", "overwrite"],
            "recent_activity": ["page_size"],
            "search_notes": ["query", "page_size"],
            "read_note": ["identifier"],
        }

    async def call(self, client: Any, tool: str, args: dict[str, Any]) -> Any:
        result = await super().call(client, tool, args)
        text = result.content[0].text if result.content else ""
        if text.startswith(("# Search Failed", "# Error", "Error")):  # errors come back as text
            raise OpError(f"{self.name}.{tool} failed: {text[:300]}")
        return result

    async def op_write(self, c: Any, i: int) -> Any:
        d = decision(i)
        return await self.call(
            c,
            "write_note",
            {
                "title": d["summary"].replace(":", " -"),
                "content": d["rationale"],
                "directory": "decisions",
                "tags": d["tags"],
            },
        )

    async def op_read(self, c: Any, i: int) -> Any:
        return await self.call(c, "recent_activity", {"page_size": 10})

    async def op_search(self, c: Any, i: int) -> Any:
        return await self.call(c, "search_notes", {"query": query(i), "page_size": 10})

    async def op_set(self, c: Any, i: int) -> Any:
        return await self.call(
            c,
            "write_note",
            {"title": custom_key(i), "content": json.dumps(custom_value(i)), "directory": "custom", "overwrite": True},
        )

    async def op_get(self, c: Any, i: int) -> Any:
        return await self.call(c, "read_note", {"identifier": f"custom/{custom_key(i)}"})

    def hits(self, result: Any) -> int | None:
        text = result.content[0].text if result.content else ""
        return sum(1 for line in text.splitlines() if line.startswith("### "))


def all_adapters() -> dict[str, Adapter]:
    adapters: list[Adapter] = [
        EchoAdapter(),
        HomeportAdapter(),
        ConPortAdapter(),
        ConPortNoEmbeddingsAdapter(),
        BasicMemoryAdapter(),
    ]
    return {a.name: a for a in adapters}
