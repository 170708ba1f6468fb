"""Who the agents are and how they prove it: the directory file and the token store of a data directory.

The server reads them through its settings (`ServeSettings.directory_file`, `.tokens_file`); the
shell's `homeport directory` and `homeport tokens` change them through here, so both name the same
files in the same data directory: `<data dir>/directory.toml` (organizations, teams, agents and the
workspace roots they may use) and `<data dir>/tokens.json` (hashed bearer tokens, one agent each).
Both are small files read and written whole, locked and atomically replaced (`homeport.files`).
"""

from __future__ import annotations

from pathlib import Path

from homeport.files.directory import Directory, DirectoryFile
from homeport.files.tokens import TokenStore

__all__ = [
    "DIRECTORY_FILENAME",
    "TOKENS_FILENAME",
    "Directory",
    "DirectoryFile",
    "TokenStore",
    "directory_file",
    "has_tokens",
    "token_store",
]

DIRECTORY_FILENAME = "directory.toml"
TOKENS_FILENAME = "tokens.json"


def directory_file(data_dir: Path, path: Path | None = None) -> DirectoryFile:
    """The directory file `path`, else the one of `data_dir`."""
    return DirectoryFile(path or data_dir / DIRECTORY_FILENAME)


def token_store(data_dir: Path) -> TokenStore:
    """The bearer tokens of `data_dir`."""
    return TokenStore(data_dir / TOKENS_FILENAME)


def has_tokens(tokens_file: Path) -> bool:
    """Whether any token was minted in `tokens_file` (a server with --auth and none answers no one).

    Raises:
        ConfigError: the file cannot be read.
    """
    return bool(TokenStore(tokens_file).list())
