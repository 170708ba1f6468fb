"""A team server for the end-to-end tests (`serve --http --logical-workspaces --auth`), git clones
of a project whose config sends its memory calls there, and `homeport trust`, without which nothing
is sent there (a repository's config is a suggestion until the user trusts it)."""

from __future__ import annotations

import contextlib
import subprocess
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from homeport.files.directory import DirectoryFile
from homeport.files.tokens import TokenStore

from ._serving import Served, serving
from ._support import CLI_BOOT

KEY = "github.com/acme/api"


@dataclass
class Team:
    server: Served
    data: Path
    token: str  # agent ada of organization acme (keys github.com/acme/*)
    tmp: Path  # also holds other-token: agent zed of organization other (keys github.com/other/*)

    @property
    def url(self) -> str:
        return self.server.base


@contextlib.contextmanager
def team_server(tmp: Path, *extra_args: str) -> Iterator[Team]:
    """The server, in `tmp`, with two organizations and an agent's token for each."""
    data = tmp / "data"
    directory = DirectoryFile(data / "directory.toml")
    directory.add_organization("acme")
    directory.add_agent("acme", "ada")
    # On a server of logical workspaces an organization's roots name keys: this one holds github.com/acme/*.
    directory.add_workspace_root("acme", "/github.com/acme")
    directory.add_organization("other")
    directory.add_agent("other", "zed")
    directory.add_workspace_root("other", "/github.com/other")
    tokens = TokenStore(data / "tokens.json")
    token = tokens.add("ada")
    (tmp / "other-token").write_text(tokens.add("zed"), encoding="utf-8")
    cwd = tmp / "server"
    cwd.mkdir()
    args = ["--logical-workspaces", "--auth", "--data-dir", str(data), *extra_args]
    with serving(args, cwd=cwd, log=tmp / "server.log") as server:
        yield Team(server, data, token, tmp)


def team_clone(path: Path, team_url: str, origin: str = "git@github.com:acme/api.git") -> Path:
    """A git repository with `origin` whose .homeport/config.toml sends memory calls to `team_url`,
    the token read from HOMEPORT_TEAM_TOKEN."""
    path.mkdir(parents=True)
    subprocess.run(["git", "init", "-q"], cwd=path, check=True)
    subprocess.run(["git", "remote", "add", "origin", origin], cwd=path, check=True)
    (path / ".homeport").mkdir()
    (path / ".homeport" / "config.toml").write_text(
        f'[team]\nurl = "{team_url}"\ntoken_env = "HOMEPORT_TEAM_TOKEN"\n', encoding="utf-8"
    )
    return path.resolve()


def trust(root: Path, env: Mapping[str, str], *token_source: str) -> str:
    """`homeport trust --project ROOT *token_source` as the user runs it (e.g. `--token-env
    HOMEPORT_TEAM_TOKEN`; none: the keyring); its output. The trust file is under `env`'s config directory."""
    done = subprocess.run(
        [sys.executable, "-c", CLI_BOOT, "trust", "--project", str(root), *token_source],
        env=dict(env),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout
