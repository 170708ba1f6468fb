"""Access rules: which principal may call which tools, and read or write which workspaces.

The rules come from a TOML file (`homeport serve --http --auth ... --access-rules FILE`), are
parsed here from its text, and decide every call (see docs/access-rules.md):

1. **Tools first.** The `[[tools]]` entries whose `who` matches the principal form its allowlist
   (the union of their `allow`: tool names or tool groups). A principal that no entry names may
   call every tool; one that some entry names may call only the tools listed for it.
2. **Then the workspace.** Among the `[[workspaces]]` rules whose `who` matches the principal and
   one of whose `paths` matches the workspace, the most specific decide (specificity: how many
   path components of the matching pattern hold no wildcard); among those equally specific the
   least access wins (`none` < `read` < `write`). No matching rule: refused.

So a call is allowed only if some rule grants it and no rule at least as specific denies it.
Pure: no I/O. The caller passes canonical workspace names (the root after symlinks are resolved)
and patterns whose literal part it has canonicalised the same way. Logical keys, and patterns
that do not start with `/`, are made canonical here (lower case, no trailing `.` or `.git` on a
segment: `homeport.workspace.keys.canonical_key`), and a key pattern covers the keys below the
ones it matches, so `acme/vault` decides for `acme/Vault.git` and `acme/vault/sub` too.
"""

from __future__ import annotations

import tomllib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from functools import cached_property, lru_cache
from typing import Any

from homeport.errors import ConfigError, InvalidWorkspaceError
from homeport.workspace.keys import canonical_key

__all__ = [
    "ACCESS_LEVELS",
    "AccessDecision",
    "AccessRules",
    "Principal",
    "ToolRule",
    "WorkspaceRule",
    "decide_tool",
    "decide_workspace_rules",
    "matches_principal",
    "parse_access_rules",
    "pattern_matches",
    "specificity",
]

# Ordered: a level grants every level before it.
ACCESS_LEVELS: tuple[str, ...] = ("none", "read", "write")
_WILDCARDS = frozenset("*?[")


@dataclass(frozen=True)
class Principal:
    """A verified caller: its name (token's agent or JWT `sub`), groups and other claims."""

    name: str
    groups: tuple[str, ...] = ()
    claims: Mapping[str, Any] = field(default_factory=dict, compare=False, hash=False)

    @classmethod
    def from_claims(cls, name: str, claims: Mapping[str, Any] | None) -> Principal:
        """`groups` from the `groups` claim, a list or a space-separated string."""
        claims = dict(claims or {})
        raw = claims.get("groups", ())
        groups = tuple(raw.split()) if isinstance(raw, str) else tuple(str(g) for g in raw or ())
        return cls(name, groups, claims)

    @cached_property
    def matchers(self) -> frozenset[str]:
        """Every `who` string that names this principal (what `matches_principal` accepts), for set lookups."""
        out = {"*", *(f"group:{g}" for g in self.groups)}
        if not self.name.startswith(("group:", "claim:")):
            out.add(self.name)  # as `matches_principal`: a name never passes for a group or a claim
        for key, claim in self.claims.items():
            if "=" in key:
                continue  # `claim:K=V` splits at the first '=': such a key is never named
            values = claim if isinstance(claim, list | tuple) else (claim,)
            out.update(f"claim:{key}={v}" for v in values if v is not None)
        return frozenset(out)


@dataclass(frozen=True)
class ToolRule:
    name: str
    who: tuple[str, ...]
    allow: tuple[str, ...]


@dataclass(frozen=True)
class WorkspaceRule:
    name: str
    who: tuple[str, ...]
    paths: tuple[str, ...]
    access: str  # one of ACCESS_LEVELS


@dataclass(frozen=True)
class AccessRules:
    tools: tuple[ToolRule, ...] = ()
    workspaces: tuple[WorkspaceRule, ...] = ()
    source: str = "the access rules"


@dataclass(frozen=True)
class AccessDecision:
    """The answer and why: the rules that decided (empty when none matched) and a sentence."""

    allowed: bool
    reason: str
    rules: tuple[str, ...] = ()
    level: str | None = None  # workspace decisions: the access the deciding rules give


def matches_principal(matcher: str, principal: Principal) -> bool:
    """`*` anyone; `group:G` a member of G; `claim:K=V` claim K is V (or a list holding V); else the name."""
    if matcher == "*":
        return True
    if matcher.startswith("group:"):
        return matcher[len("group:") :] in principal.groups
    if matcher.startswith("claim:"):
        key, _, value = matcher[len("claim:") :].partition("=")
        claim = principal.claims.get(key)
        if isinstance(claim, list | tuple):
            return value in (str(c) for c in claim)
        return claim is not None and str(claim) == value
    return matcher == principal.name


def _names(who: Sequence[str], principal: Principal) -> bool:
    return not principal.matchers.isdisjoint(who)


def pattern_matches(pattern: str, name: str) -> bool:
    """Glob by path components: `*`, `?` and `[...]` stay inside one component, `**` spans any number (even none)."""
    return _match(tuple(pattern.split("/")), tuple(name.split("/")))


@lru_cache(maxsize=4096)
def _match(pattern: tuple[str, ...], parts: tuple[str, ...]) -> bool:
    if not pattern:
        return not parts
    head, rest = pattern[0], pattern[1:]
    if head == "**":
        return any(_match(rest, parts[i:]) for i in range(len(parts) + 1))
    return bool(parts) and fnmatchcase(parts[0], head) and _match(rest, parts[1:])


def specificity(pattern: str) -> int:
    """How many components of `pattern` are literal (hold no wildcard)."""
    return sum(1 for part in pattern.split("/") if part and not (_WILDCARDS & set(part)))


def decide_tool(rules: AccessRules, principal: Principal, tool: str, group: str) -> AccessDecision:
    """Whether `principal` may call `tool` (of `group`): checked before any workspace rule."""
    listing = [r for r in rules.tools if _names(r.who, principal)]
    if not listing:
        return AccessDecision(True, f"no tool allowlist names {principal.name!r}: every tool is allowed")
    names = tuple(r.name for r in listing)
    granted = [r.name for r in listing if tool in r.allow or group in r.allow]
    if granted:
        return AccessDecision(True, f"tool {tool!r} (group {group!r}) is allowed by {', '.join(granted)}", names)
    allowed = sorted({a for r in listing for a in r.allow})
    return AccessDecision(
        False,
        f"tool {tool!r} (group {group!r}) is not in the tool allowlist of {principal.name!r} "
        f"({', '.join(names)}: {', '.join(allowed) or 'nothing'})",
        names,
    )


def _key_names(name: str) -> tuple[str, ...]:
    """What a pattern is matched against for workspace name `name`: a path as it is; a logical key
    in its canonical form and each key above it (`acme/vault/sub`, `acme/vault`, `acme`), so a rule
    on a key covers the keys below it."""
    if name.startswith("/"):
        return (name,)
    try:
        key = canonical_key(name)
    except InvalidWorkspaceError:
        return (name,)
    parts = key.split("/")
    return tuple("/".join(parts[:n]) for n in range(len(parts), 0, -1))


def decide_workspace_rules(
    rules: AccessRules, principal: Principal, workspace: Sequence[str], *, write: bool
) -> AccessDecision:
    """Whether `principal` may read (or `write`) the workspace known by the names in `workspace`
    (canonical paths; a logical key in any spelling, see `_key_names`)."""
    need = "write" if write else "read"
    matched: list[tuple[int, WorkspaceRule]] = []
    names = [n for name in workspace for n in _key_names(name)]
    for rule in rules.workspaces:
        if not _names(rule.who, principal):
            continue
        levels = [specificity(p) for p in rule.paths for n in names if pattern_matches(p, n)]
        if levels:
            matched.append((max(levels), rule))
    shown = workspace[0] if workspace else "?"
    if not matched:
        return AccessDecision(False, f"no workspace rule in {rules.source} gives {principal.name!r} {shown!r}")
    top = max(level for level, _ in matched)
    deciding = [r for level, r in matched if level == top]
    least = min(deciding, key=lambda r: ACCESS_LEVELS.index(r.access))
    allowed = ACCESS_LEVELS.index(least.access) >= ACCESS_LEVELS.index(need)
    if allowed:
        reason = f"{least.name} gives {principal.name!r} {least.access} access to {shown!r}"
    elif least.access == "read":
        reason = f"{least.name} gives {principal.name!r} read-only access to {shown!r}, and this call writes"
    else:
        reason = f"{least.name} refuses {principal.name!r} {shown!r}"
    return AccessDecision(allowed, reason, (least.name,), least.access)


def parse_access_rules(
    text: str, *, source: str = "the access rules", canonical: Callable[[str], str] = lambda p: p
) -> AccessRules:
    """The rules in `text` (TOML). `canonical` maps each pattern's literal prefix (symlinks resolved by the caller).

    Raises:
        ConfigError: not TOML, an unknown key, a missing or ill-typed field, an unknown access level.
    """
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{source} is not valid TOML: {exc}") from None
    unknown = sorted(set(data) - {"tools", "workspaces"})
    if unknown:
        raise ConfigError(f"{source}: unknown section {', '.join(unknown)}; use [[tools]] and [[workspaces]]")
    tools = tuple(_tool_rule(entry, i, source) for i, entry in enumerate(_tables(data, "tools", source), 1))
    workspaces = tuple(
        _workspace_rule(entry, i, source, canonical) for i, entry in enumerate(_tables(data, "workspaces", source), 1)
    )
    return AccessRules(tools, workspaces, source)


def _tables(data: dict[str, Any], key: str, source: str) -> list[dict[str, Any]]:
    value = data.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
        raise ConfigError(f"{source}: {key} must be an array of tables ([[{key}]])")
    return value


def _strings(entry: dict[str, Any], key: str, where: str) -> tuple[str, ...]:
    value = entry.get(key)
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not value or not all(isinstance(v, str) and v for v in value):
        raise ConfigError(f"{where}: {key} must be a non-empty string or list of strings")
    return tuple(value)


def _label(entry: dict[str, Any], kind: str, index: int, source: str) -> str:
    name = entry.get("name")
    label = f"{kind} rule {index}" + (f" {name!r}" if isinstance(name, str) and name else "")
    return f"{label} of {source}"


def _check_keys(entry: dict[str, Any], allowed: set[str], where: str) -> None:
    unknown = sorted(set(entry) - allowed)
    if unknown:
        raise ConfigError(f"{where}: unknown key {', '.join(unknown)}; keys are {', '.join(sorted(allowed))}")


def _tool_rule(entry: dict[str, Any], index: int, source: str) -> ToolRule:
    where = _label(entry, "tools", index, source)
    _check_keys(entry, {"name", "who", "allow"}, where)
    return ToolRule(where, _strings(entry, "who", where), _strings(entry, "allow", where))


def _workspace_rule(entry: dict[str, Any], index: int, source: str, canonical: Callable[[str], str]) -> WorkspaceRule:
    where = _label(entry, "workspaces", index, source)
    _check_keys(entry, {"name", "who", "paths", "access"}, where)
    access = entry.get("access")
    if access not in ACCESS_LEVELS:
        raise ConfigError(f"{where}: access must be one of {', '.join(ACCESS_LEVELS)}, not {access!r}")
    paths = tuple(_key_pattern(canonical(p), where) for p in _strings(entry, "paths", where))
    return WorkspaceRule(where, _strings(entry, "who", where), paths, str(access))


def _key_pattern(pattern: str, where: str) -> str:
    """A path pattern as it is; a key pattern in the canonical form keys take (`Acme/Vault.git` is `acme/vault`)."""
    if pattern.startswith("/"):
        return pattern
    try:
        return canonical_key(pattern, where=f"{where}: the key pattern")
    except InvalidWorkspaceError as exc:
        raise ConfigError(exc.message) from None
