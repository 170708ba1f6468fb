"""What a team server costs: one memory read served by a local stdio server, or sent to the team server.

    python3 bench/team_server.py            # 300 calls per path after 30 warm-up calls
    python3 bench/team_server.py --calls 100

Real processes in a temporary directory: a team server (`serve --http --logical-workspaces --auth`)
and two stdio servers, one in a project with `[team] url` in `.homeport/config.toml` (its memory
calls go to the team server) and one in a project without (served from its own store). Every path
makes the same read, `get_decisions(limit=10)` of a memory holding 10 decisions, one call at a time:

    local          stdio -> its own store
    team           stdio -> team server over Streamable HTTP (key in X-Workspace-Id, bearer token)
    direct         client -> team server over Streamable HTTP (the floor the team path is measured against)
"""

from __future__ import annotations

import argparse
import socket
import subprocess
import sys
import tempfile
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
from _common import environ_without_homeport, http_mcp_client, latency_table, percentile, timed_calls, wait_healthy
from mcp import Client, StdioServerParameters

BOOT = "from homeport.cli import main; main()"
KEY = "github.com/acme/api"
TEAM_FLAGS = ("--logical-workspaces", "--auth", "--data-dir")


def _project(path: Path, team_url: str | None) -> Path:
    path.mkdir(parents=True)
    subprocess.run(["git", "init", "-q"], cwd=path, check=True)
    subprocess.run(["git", "remote", "add", "origin", f"git@{KEY.replace('/', ':', 1)}.git"], cwd=path, check=True)
    if team_url is not None:
        (path / ".homeport").mkdir()
        (path / ".homeport" / "config.toml").write_text(
            f'[team]\nurl = "{team_url}"\ntoken_env = "HOMEPORT_TEAM_TOKEN"\n', encoding="utf-8"
        )
    return path.resolve()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def measure(calls: int, warmup: int) -> dict[str, list[float]]:
    from homeport.files.directory import DirectoryFile
    from homeport.files.tokens import TokenStore

    with tempfile.TemporaryDirectory(prefix="homeport-team-") as tmp:
        data = Path(tmp, "data")
        directory = DirectoryFile(data / "directory.toml")
        directory.add_organization("acme")
        directory.add_agent("acme", "ada")
        directory.add_workspace_root("acme", "/github.com/acme")
        token = TokenStore(data / "tokens.json").add("ada")
        # The run's own config directory: the trust record below is not the user's.
        env = {**environ_without_homeport(Path(tmp, "state")), "XDG_CONFIG_HOME": str(Path(tmp, "config"))}
        port = _free_port()
        url = f"http://127.0.0.1:{port}"
        log = Path(tmp, "team.log")
        with log.open("wb") as sink:
            team = subprocess.Popen(
                [sys.executable, "-c", BOOT, "serve", "--http", "--port", str(port), *TEAM_FLAGS, str(data)],
                cwd=tmp,
                env=env,
                stdout=sink,
                stderr=subprocess.STDOUT,
            )
        try:
            wait_healthy(url, team, log)
            shared, local = _project(Path(tmp, "shared"), url), _project(Path(tmp, "local"), None)
            # A repository's [team] is used once the user trusts it, with the token's source they choose.
            subprocess.run(
                [sys.executable, "-c", BOOT, "trust", "--project", str(shared), "--token-env", "HOMEPORT_TEAM_TOKEN"],
                env=env,
                check=True,
                capture_output=True,
            )

            def stdio(root: Path) -> StdioServerParameters:
                return StdioServerParameters(
                    command=sys.executable,
                    args=["-c", BOOT, "serve", "-q"],
                    cwd=str(root),
                    env={**env, "HOMEPORT_TEAM_TOKEN": token},
                )

            results: dict[str, list[float]] = {}
            headers = {"Authorization": f"Bearer {token}", "X-Workspace-Id": KEY}
            async with (
                Client(stdio(shared)) as front,
                Client(stdio(local)) as alone,
                http_mcp_client(url, headers) as direct,
            ):
                for client in (front, alone):
                    for i in range(10):
                        await client.call_tool("log_decision", {"summary": f"decision {i}"})
                written = (await front.call_tool("get_decisions", {"limit": 1})).structured_content
                assert written is not None and written["workspace"]["key"] == KEY, written

                def read(client: Client) -> Callable[[], Awaitable[Any]]:
                    return lambda: client.call_tool("get_decisions", {"limit": 10})

                results["stdio, local store"] = await timed_calls(read(alone), calls, warmup)
                results["stdio, sent to the team server"] = await timed_calls(read(front), calls, warmup)
                results["direct to the team server (HTTP)"] = await timed_calls(read(direct), calls, warmup)
            return results
        finally:
            team.terminate()
            team.wait(timeout=30)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=300, help="measured calls per path (default 300)")
    parser.add_argument("--warmup", type=int, default=30, help="unmeasured calls per path first (default 30)")
    options = parser.parse_args()
    results = anyio.run(measure, options.calls, options.warmup)
    print(latency_table(results, f"{options.calls} calls of get_decisions(limit=10)"))
    overhead = percentile(results["stdio, sent to the team server"], 50) - percentile(
        results["direct to the team server (HTTP)"], 50
    )
    print(f"\nthe stdio hop in front of the team server: {overhead:+.2f} ms p50 over direct")


if __name__ == "__main__":
    main()
