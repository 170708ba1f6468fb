"""The secret check of one call: refuse, or let through and record the override.

The pipeline makes one `SecretGate` per call of a tool declared with `Scan` and is the only code
that runs it: on the arguments (`Scan.ARGUMENTS`) before the executor, or on the content the
executor read (`Scan.CONTENT`, through `Call.screen`). After a successful write it records every
override in the memory itself, as custom data in the category `SecretOverrides` (the tool, the
caller, each secret's kind, field and line, never the secret), so `get_recent_activity` and
`homeport activity` show it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from homeport.errors import InvalidItemError, SecretDetectedError
from homeport.secret_scan import SecretFinding, describe_findings, find_secrets
from homeport.store import Store
from homeport.store._common import now
from homeport.store.custom_data import log_custom_data

__all__ = ["OVERRIDES_CATEGORY", "SecretGate"]

OVERRIDES_CATEGORY = "SecretOverrides"


@dataclass
class SecretGate:
    tool: str
    allowed: bool
    overridden: list[SecretFinding] = field(default_factory=list)

    def check(self, values: Any, *, prefix: str = "") -> None:
        """Scan `values`; refuse unless the caller allowed secrets, in which case remember them.

        Raises:
            SecretDetectedError: a secret was found and `allow_secrets` is false.
            InvalidItemError: a value nested too deeply to be read (refused: what is not checked is not written).
        """
        try:
            findings = find_secrets(values, prefix=prefix)
        except RecursionError:
            raise InvalidItemError(
                f"{self.tool}: a value holds lists or objects nested too deeply to be checked for secrets; nothing "
                "was written. Flatten it: a few levels of nesting are plenty for project memory"
            ) from None
        if not findings:
            return
        if not self.allowed:
            raise SecretDetectedError(
                f"{self.tool}: {describe_findings(findings)} looks like a secret; nothing was written. "
                "Memory is shared with whoever reads this project's store or export: keep the secret in an "
                "environment variable or a secret manager and record only its name. To write it anyway, call "
                "again with allow_secrets=true (shell: --allow-secrets); the override is recorded in the memory "
                f"(custom data category {OVERRIDES_CATEGORY})."
            )
        self.overridden += findings

    def record(self, store: Store | None, principal: str) -> None:
        """Write the overrides of a call that succeeded (no-op when none)."""
        if not self.overridden or store is None:
            return
        findings = [{"kind": f.kind, "field": f.field, "line": f.line} for f in self.overridden]
        stamp = now()
        log_custom_data(
            store,
            OVERRIDES_CATEGORY,
            f"{stamp} {self.tool}",
            {"tool": self.tool, "principal": principal, "at": stamp, "secrets": findings},
        )
