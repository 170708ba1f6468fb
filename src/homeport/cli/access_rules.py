"""`homeport access check`: what the access rules decide for one principal, workspace and tool, and why."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import click

from homeport.cli._compose import domain_errors, shell_path
from homeport.cli._lazy import HelpfulGroup
from homeport.errors import ConfigError

__all__ = ["access"]


@click.group(cls=HelpfulGroup)
def access() -> None:
    """Explain the access rules of `homeport serve --http --auth ... --access-rules FILE`.

    \b
    Example:
      homeport access check ada /srv/acme/app --access-rules rules.toml
      homeport access check rita /srv/acme/app --tool log_decision --group reviewers --access-rules rules.toml
    """


def _claims(groups: tuple[str, ...], claims: tuple[str, ...]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for claim in claims:
        key, sep, value = claim.partition("=")
        if not sep or not key:
            raise click.BadParameter(f"{claim!r} is not KEY=VALUE", param_hint="--claim")
        out.setdefault(key, []).append(value)
    flat: dict[str, Any] = {k: v[0] if len(v) == 1 else v for k, v in out.items()}
    if groups:
        flat["groups"] = list(groups)
    return flat


@access.command("check")
@click.argument("principal")
@click.argument("workspace")
@click.option("--tool", "tool_name", metavar="NAME", help="The tool called (default: a read, no tool allowlist).")
@click.option("--write", is_flag=True, help="Check a write (implied by a --tool that writes).")
@click.option("--group", "groups", multiple=True, metavar="G", help="A group of the principal (JWT `groups`).")
@click.option("--claim", "claims", multiple=True, metavar="KEY=VALUE", help="Another claim of the principal.")
@click.option(
    "--access-rules",
    "rules_file",
    required=True,
    type=click.Path(dir_okay=False, exists=True, path_type=Path),
    metavar="FILE",
    help="The rules file the server is started with.",
)
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@domain_errors
def access_check(
    principal: str,
    workspace: str,
    tool_name: str | None,
    write: bool,
    groups: tuple[str, ...],
    claims: tuple[str, ...],
    rules_file: Path,
    as_json: bool,
) -> None:
    """Say whether PRINCIPAL may use WORKSPACE (and call --tool), which rule decided, and why.

    PRINCIPAL is a token's agent or a JWT's `sub`; WORKSPACE a workspace root (symlinks are
    resolved, as the server does). Exit status 0 when allowed, 1 when refused.
    """
    from homeport.core.access import AccessRulesFile
    from homeport.policy.access_rules import Principal, decide_tool, decide_workspace_rules

    rules = AccessRulesFile(rules_file.absolute()).get()
    who = Principal.from_claims(principal, _claims(groups, claims))
    root = os.path.realpath(shell_path(workspace) or workspace)
    steps: list[dict[str, Any]] = []
    if tool_name is not None:
        from homeport.core import tools as _tools  # noqa: F401  (declares every tool)
        from homeport.core.catalog import CATALOG

        try:
            spec = CATALOG[tool_name]
        except KeyError:
            raise ConfigError(f"no tool named {tool_name!r}; `homeport schema` lists them") from None
        write = write or spec.write
        decided = decide_tool(rules, who, spec.name, spec.group)
        steps.append({"step": "tool", "allowed": decided.allowed, "rules": list(decided.rules), "why": decided.reason})
    if all(s["allowed"] for s in steps):
        decided = decide_workspace_rules(rules, who, (root,), write=write)
        steps.append(
            {"step": "workspace", "allowed": decided.allowed, "rules": list(decided.rules), "why": decided.reason}
        )
    allowed = all(s["allowed"] for s in steps)
    action = "write" if write else "read"
    if as_json:
        shown = {"principal": principal, "workspace": root, "tool": tool_name, "action": action}
        click.echo(json.dumps({**shown, "allowed": allowed, "steps": steps}, indent=2))
    else:
        verdict = "may" if allowed else "may not"
        click.echo(f"{principal} {verdict} {action} {root}" + (f" with {tool_name}" if tool_name else ""))
        for s in steps:
            click.echo(f"  {s['step']}: {'allowed' if s['allowed'] else 'refused'}: {s['why']}")
    if not allowed:
        raise SystemExit(1)
