"""A reader for `.env` files as frameworks write them (Laravel, Django, Rails with dotenv, Node).

    KEY=value               unquoted: trimmed, cut at " #" (an inline comment)
    export KEY=value        the shell prefix is ignored
    KEY="a \\"b\\" ${X}"     double quotes: escapes \\n \\t \\" \\\\ and ${X} expansion
    KEY='literal ${X}'      single quotes: taken as written
    # comment               ignored, as are blank lines

``${X}`` expands from keys defined earlier in the file, then from the environment mapping the
caller passes; an unknown name is left as written. The last definition of a key wins.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path

from homeport.errors import ConfigError

__all__ = ["read_dotenv"]

_LINE = re.compile(r"^\s*(?:export\s+)?(?P<key>[A-Za-z_][A-Za-z0-9_.]*)\s*=\s*(?P<value>.*)$")
_REFERENCE = re.compile(r"\$\{(?P<name>[A-Za-z_][A-Za-z0-9_]*)\}")
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", '"': '"', "\\": "\\"}


def read_dotenv(path: Path, environ: Mapping[str, str]) -> dict[str, str]:
    """The variables `path` defines; an empty mapping when the file does not exist.

    Raises:
        ConfigError: the file exists but cannot be read as UTF-8 text.
    """
    try:
        text = path.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path} cannot be read: {exc}") from exc
    values: dict[str, str] = {}
    for line in text.splitlines():
        match = _LINE.match(line)
        if match is None:
            continue
        raw = match["value"].strip()
        if raw.startswith("'"):
            end = raw.find("'", 1)
            values[match["key"]] = raw[1:end] if end > 0 else raw[1:]
        elif raw.startswith('"'):
            values[match["key"]] = _expand(_double_quoted(raw), values, environ)
        else:
            values[match["key"]] = _expand(re.split(r"\s+#", raw, maxsplit=1)[0].strip(), values, environ)
    return values


def _double_quoted(raw: str) -> str:
    out: list[str] = []
    index = 1
    while index < len(raw):
        char = raw[index]
        if char == "\\" and index + 1 < len(raw):
            following = raw[index + 1]
            out.append(_ESCAPES.get(following, "\\" + following))
            index += 2
            continue
        if char == '"':
            break
        out.append(char)
        index += 1
    return "".join(out)


def _expand(value: str, defined: Mapping[str, str], environ: Mapping[str, str]) -> str:
    def lookup(match: re.Match[str]) -> str:
        name = match["name"]
        if name in defined:
            return defined[name]
        return environ.get(name, match.group(0))

    return _REFERENCE.sub(lookup, value)
