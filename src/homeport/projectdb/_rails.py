"""The ``development`` database of a Rails `config/database.yml`, ERB included where it is simple.

Rails renders the file with ERB before reading the YAML. Homeport evaluates the forms that
database.yml files actually use and refuses the rest by name:

    <%= ENV["X"] %>  <%= ENV['X'] || "default" %>
    <%= ENV.fetch("X") %>  <%= ENV.fetch("X", "default") %>  <%= ENV.fetch("X") { default } %>
    any of these followed by .to_i or .to_s; a bare literal (<%= 5 %>); <%# comments %>

Anything else in an output tag becomes an error only if the development entry uses its value
(``pool: <%= something_clever %>`` is harmless). Control tags (``<% if ... %>``) are an error.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sqlalchemy.engine import URL

from homeport.errors import ConfigError

__all__ = ["RAILS_CONFIG", "rails_development_url"]

RAILS_CONFIG = Path("config") / "database.yml"
_HINT = "set [database] url in .homeport/config.toml instead"
_TAG = re.compile(r"<%(?P<kind>[=#-]?)(?P<body>.*?)-?%>", re.DOTALL)
_LITERAL = r"""(?:"[^"]*"|'[^']*'|-?\d+(?:\.\d+)?|nil|true|false)"""
_NAME = r"""(?P<q>["'])(?P<name>[A-Za-z_][A-Za-z0-9_]*)(?P=q)"""
_CONVERSION = r"""(?:\s*\.\s*to_[is])?"""
_INDEX_FORM = re.compile(rf"^ENV\[\s*{_NAME}\s*\](?:\s*\|\|\s*(?P<default>{_LITERAL}))?{_CONVERSION}$")
_FETCH_FORM = re.compile(
    rf"^ENV\.fetch\(\s*{_NAME}\s*(?:,\s*(?P<arg>{_LITERAL})\s*)?\)"
    rf"(?:\s*\{{\s*(?P<block>{_LITERAL})?\s*\}})?{_CONVERSION}$"
)
_LITERAL_FORM = re.compile(rf"^(?P<literal>{_LITERAL}){_CONVERSION}$")
_USED_KEYS = ("url", "adapter", "host", "port", "username", "password", "database", "socket")


def rails_development_url(path: Path, root: Path, lookup: Callable[[str], str | None]) -> tuple[URL | str, str]:
    """The URL (or raw URL text) of the development database `path` describes, and the entry used.

    `lookup` reads an environment variable (the caller decides where from).

    Raises:
        ConfigError: the file is not valid YAML, has no usable development entry, or needs ERB
            that Homeport cannot evaluate.
        FileNotFoundError: there is no such file.
    """
    import yaml  # only Rails projects need it: not loaded at start-up

    text = path.read_text(encoding="utf-8")
    rendered, unresolved = _render_erb(text, lookup, path)
    try:
        document = yaml.safe_load(rendered)
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path} is not valid YAML after ERB: {exc}") from exc
    development = document.get("development") if isinstance(document, dict) else None
    if not isinstance(development, dict):
        raise LookupError("no development entry")
    entry, label = _primary(development)
    for key in _USED_KEYS:
        value = entry.get(key)
        for marker, (expression, why) in unresolved.items():
            if value is not None and marker in str(value):
                raise ConfigError(
                    f"{path} {label}.{key} uses <%= {expression} %>, which Homeport cannot evaluate ({why}); {_HINT}"
                )
    return _entry_url(entry, root, path, label), label


def _render_erb(text: str, lookup: Callable[[str], str | None], path: Path) -> tuple[str, dict[str, tuple[str, str]]]:
    unresolved: dict[str, tuple[str, str]] = {}

    def replace(match: re.Match[str]) -> str:
        kind, body = match["kind"], match["body"].strip()
        if kind == "#":
            return ""
        if kind != "=":
            raise ConfigError(f"{path} uses ERB code <% {body} %>, which Homeport cannot run; {_HINT}")
        try:
            return _evaluate(body, lookup)
        except LookupError as exc:
            marker = f"__homeport_erb_{len(unresolved)}__"
            unresolved[marker] = (body, str(exc.args[0]))
            return marker

    return _TAG.sub(replace, text), unresolved


def _evaluate(expression: str, lookup: Callable[[str], str | None]) -> str:
    """The text ERB would print for `expression`; LookupError names why it cannot be known."""
    if match := _INDEX_FORM.match(expression):
        value = lookup(match["name"])
        if value is not None:
            return value
        return _literal(match["default"]) if match["default"] else ""
    if match := _FETCH_FORM.match(expression):
        value = lookup(match["name"])
        if value is not None:
            return value
        default = match["arg"] or match["block"]
        if default is None:
            raise LookupError(f"{match['name']} is not set and ENV.fetch has no default")
        return _literal(default)
    if match := _LITERAL_FORM.match(expression):
        return _literal(match["literal"])
    raise LookupError("only ENV[...], ENV.fetch(...) and literals are understood")


def _literal(text: str) -> str:
    if text[:1] in ("'", '"'):
        return text[1:-1]
    return "" if text == "nil" else text


def _primary(development: dict[str, Any]) -> tuple[dict[str, Any], str]:
    """The entry itself, or on multi-database apps (Rails 6+) its ``primary`` (else first) database."""
    if any(key in development for key in ("adapter", "url", "database")):
        return development, "development"
    nested = {name: value for name, value in development.items() if isinstance(value, dict)}
    if "primary" in nested:
        return nested["primary"], "development.primary"
    if nested:
        name = next(iter(nested))
        return nested[name], f"development.{name}"
    raise LookupError("the development entry names no database")


def _entry_url(entry: dict[str, Any], root: Path, path: Path, label: str) -> URL | str:
    if entry.get("url"):
        return str(entry["url"])
    adapter = str(entry.get("adapter") or "").lower()
    database = entry.get("database")
    if adapter in ("sqlite3", "sqlite"):
        if not database:
            raise ConfigError(f"{path} {label} uses sqlite3 but names no database file; {_HINT}")
        return f"sqlite3:{database}"
    if adapter in ("postgresql", "postgis"):
        drivername, default_host = "postgresql+psycopg", None
    elif adapter in ("mysql2", "trilogy", "mysql"):
        drivername, default_host = "mysql+pymysql", "localhost"
    else:
        shown = adapter or "no adapter"
        raise ConfigError(
            f"{path} {label} uses {shown}; Homeport can open sqlite3, postgresql, mysql2 and trilogy; {_HINT}"
        )
    socket = entry.get("socket")
    query = {"unix_socket": str(socket)} if socket and drivername.startswith("mysql") else {}
    host = entry.get("host") or (str(socket) if socket and drivername.startswith("postgresql") else default_host)
    try:
        port = int(entry["port"]) if entry.get("port") not in (None, "") else None
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"{path} {label}.port is not a number: {entry.get('port')!r}") from exc
    username = str(entry["username"]) if entry.get("username") else None
    password = str(entry["password"]) if entry.get("password") not in (None, "") else None
    if password is not None and username is None:
        query["password"] = password  # a URL cannot hold a password without a user name
    return URL.create(
        drivername,
        username=username,
        password=password if username is not None else None,
        host=str(host) if host else None,
        port=port,
        database=str(database) if database else None,
        query=query,
    )
