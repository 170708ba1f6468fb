"""Turning a candidate string into a canonical directory, and comparing paths safely.

One function, `canonical_directory`, serves every source: tool arguments, headers, query
parameters, configuration, client roots, environment hints and the cwd. Containment is always
decided by path components after `realpath`, never by string prefix (CVE-2025-53110).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from urllib.parse import unquote, urlparse

from homeport.errors import InvalidWorkspaceError

__all__ = ["canonical_directory", "decode_candidate", "is_within", "within_any"]


def decode_candidate(value: str) -> Path:
    """Decode a path or `file://` URI into an absolute path (not yet resolved).

    Raises:
        InvalidWorkspaceError: NUL bytes, a non-`file` scheme, a `file` URI naming a remote host,
            an empty value or a relative path.
    """
    if "\x00" in value:
        raise InvalidWorkspaceError(f"workspace {value!r} contains a NUL byte; pass a plain absolute path")
    text = value.strip()
    if not text:
        raise InvalidWorkspaceError("workspace is empty; pass an absolute path such as /home/you/project")
    if text.startswith("/"):  # the common case, an absolute POSIX path: no scheme to parse
        return Path(text)
    parsed = urlparse(text)
    # A one-letter scheme is a Windows drive ("C:/src"), not a URI.
    if parsed.scheme and len(parsed.scheme) > 1:
        if parsed.scheme.lower() != "file":
            raise InvalidWorkspaceError(
                f"workspace {value!r} uses the {parsed.scheme}:// scheme; only local paths and file:// URIs "
                "are served (a remote workspace needs a Homeport running on that machine)"
            )
        if parsed.netloc not in ("", "localhost"):
            raise InvalidWorkspaceError(
                f"workspace {value!r} names the host {parsed.netloc!r}; only local file:// URIs are served"
            )
        text = unquote(parsed.path)
        if "\x00" in text:
            raise InvalidWorkspaceError(f"workspace {value!r} decodes to a path with a NUL byte")
    path = Path(text)
    if not path.is_absolute():
        raise InvalidWorkspaceError(
            f"workspace {value!r} is a relative path; pass an absolute path or a file:// URI "
            "(relative paths are never resolved against the server's directory)"
        )
    return path


def canonical_directory(value: str | os.PathLike[str]) -> Path:
    """Decode `value` and resolve it to an existing directory with every symlink followed.

    Raises:
        InvalidWorkspaceError: as `decode_candidate`, or the path does not exist or is not a directory.
    """
    path = decode_candidate(os.fspath(value))
    try:
        real = Path(os.path.realpath(path, strict=True))
    except (FileNotFoundError, NotADirectoryError):
        raise InvalidWorkspaceError(
            f"workspace {os.fspath(path)!r} does not exist; create the directory or pass an existing one"
        ) from None
    except OSError as exc:
        raise InvalidWorkspaceError(f"workspace {os.fspath(path)!r} cannot be resolved: {exc.strerror}") from exc
    if not real.is_dir():
        raise InvalidWorkspaceError(f"workspace {os.fspath(path)!r} is not a directory; pass the project's directory")
    return real


def is_within(path: Path, root: Path) -> bool:
    """True if `path` is `root` or below it, compared by components (both already canonical).

    On canonical paths this is a string test with the separator appended, so `/work/app-evil`
    is not inside `/work/app`; it costs a fraction of comparing `Path.parents`.
    """
    p, r = str(path), str(root)
    return p == r or p.startswith(_dir_prefix(r))


def within_any(path: Path, roots: Iterable[Path]) -> Path | None:
    """The deepest of `roots` that contains `path`, or None."""
    best: Path | None = None
    for root in roots:
        if is_within(path, root) and (best is None or len(str(root)) > len(str(best))):
            best = root
    return best


def _dir_prefix(root: str) -> str:
    return root if root.endswith(os.sep) else root + os.sep
