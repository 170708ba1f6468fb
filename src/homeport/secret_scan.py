"""Secrets in what an agent writes to memory, found before anything is stored.

Memory is meant to be shared (exports are committed, stores are copied to teammates), so a write
that carries an API key, a token, a private key or a password in a connection string is refused
unless the caller says `allow_secrets=true`. The detectors are detect-secrets' (Yelp), a
maintained library of patterns for each provider, run in process on each line of each text:

- its provider detectors (AWS, GitHub, GitLab, Slack, Stripe, OpenAI, Twilio, SendGrid, npm, PyPI,
  Discord, Telegram, Mailchimp, Artifactory, Azure storage, IBM, Cloudant, Softlayer, Square),
  private keys, JSON web tokens, passwords in URLs (`scheme://user:password@host`) and the keyword
  detector in its quotes-required form (`password = "..."`, `api_key: "..."`);
- not its two entropy detectors, which flag hashes, git SHAs, UUIDs and base64 images (ordinary
  content of project memory), nor its public IP detector (an address is not a credential);
- with its heuristic filters: templated values (`${DB_PASSWORD}`, `<password>`), indirect
  references (`secret = vault.get("db")`), sequences, UUIDs and id-like strings.

Nothing here verifies a secret against its provider (that would send it over the network). The
library is imported on the first scan, not when Homeport starts.
"""

from __future__ import annotations

import functools
import importlib
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["SecretFinding", "describe_findings", "find_secrets"]

_MAX_LINE = 20_000  # longer lines (a base64 image) are scanned in slices of this size
# Every word of the keyword detector's deny list (detect_secrets.plugins.keyword.DENYLIST) holds one of these.
_KEYWORD_STEMS = ("key", "pass", "pwd", "secret", "contrase")
# detect-secrets' names that do not say what was found, in words a person recognises.
_PLAIN_KINDS = {
    "Basic Auth Credentials": "a password in a URL (user:password@host)",
    "Secret Keyword": "a password or key assigned to a secret-sounding name",
}


@dataclass(frozen=True)
class SecretFinding:
    """One secret: its kind (the detector's name for it), the field that holds it and the line there."""

    kind: str  # detect-secrets' name ("AWS Access Key", "Private Key"), or plainer words for two of them
    field: str
    line: int

    def describe(self) -> str:
        where = self.field or "the value"
        return f"{self.kind} in {where}" + (f" (line {self.line})" if self.line > 1 else "")


def find_secrets(values: Mapping[str, Any] | Any, *, prefix: str = "") -> list[SecretFinding]:
    """Every secret in the strings of `values` (nested dicts and lists walked), in field order.

    Field names are paths: `rationale`, `items[2].description`, `content.database.url`. A dict's
    one-word string values are also scanned as `key: "value"`, so `{"db_password": "..."}` is found
    too, and so is custom data whose key names a password.
    """
    findings: list[SecretFinding] = []
    seen: set[tuple[str, str, int]] = set()
    for field, text in _texts(values, prefix):
        for number, line in enumerate(text.splitlines() or [text], start=1):
            for kind in _kinds_in(line):
                if (kind, field, number) not in seen:
                    seen.add((kind, field, number))
                    findings.append(SecretFinding(kind, field, number))
    return findings


def describe_findings(findings: list[SecretFinding], limit: int = 3) -> str:
    """`AWS Access Key in rationale; Private Key in details (line 3)`, the first `limit` of them."""
    shown = "; ".join(f.describe() for f in findings[:limit])
    more = len(findings) - limit
    return shown + (f"; and {more} more" if more > 0 else "")


def _texts(value: Any, path: str) -> Iterator[tuple[str, str]]:
    if isinstance(value, str):
        yield path, value
    elif isinstance(value, Mapping):
        # Custom data is a key and its value: {"key": "db_password", "value": "..."} is one pair too.
        named = value.get("key"), value.get("value")
        if isinstance(named[0], str) and _word(named[1]):
            yield (f"{path}.value" if path else "value"), f'{named[0]}: "{named[1]}"'
        for key, item in value.items():
            child = f"{path}.{key}" if path else str(key)
            if path:  # the keys of the top level are argument names
                yield from _texts(str(key), child)
            if _word(item):
                yield child, f'{key}: "{item}"'
            yield from _texts(item, child)
    elif isinstance(value, list | tuple):
        for index, item in enumerate(value):
            yield from _texts(item, f"{path}[{index}]")


def _word(value: Any) -> bool:
    """A value that can be a password: one word. ("password": "hashed with argon2" is prose, not one.)"""
    return isinstance(value, str) and bool(value) and not any(c.isspace() for c in value)


def _kinds_in(line: str) -> set[str]:
    if not line.strip():
        return set()
    kinds: set[str] = set()
    for start in range(0, len(line), _MAX_LINE):
        piece = line[start : start + _MAX_LINE]
        # The keyword detector's patterns all need one of its keywords and cost more than all the other
        # detectors together; a substring test decides first (a decision's write: 350 -> 144 µs).
        keyworded = any(stem in piece.lower() for stem in _KEYWORD_STEMS)
        # Every other detector reports only matches of its own patterns, so a line that matches none of
        # them (one pass of their union) holds nothing they would report: exact, and most lines stop here.
        if not keyworded and (len(piece) < _shortest_match() or _any_pattern().search(piece) is None):
            continue
        for detector in _detectors():
            if not keyworded and detector.secret_type == "Secret Keyword":
                continue
            for secret in detector.analyze_string(piece):
                if secret and not _filtered(secret, piece, detector):
                    kind = str(detector.secret_type)
                    kinds.add(_PLAIN_KINDS.get(kind, kind))
    return kinds


def _filtered(secret: str, line: str, detector: Any) -> bool:
    from detect_secrets.filters import heuristic

    if heuristic.is_templated_secret(secret) or heuristic.is_prefixed_with_dollar_sign(secret):
        return True
    if heuristic.is_sequential_string(secret) or heuristic.is_potential_uuid(secret):
        return True
    if heuristic.is_likely_id_string(secret, line, detector) or heuristic.is_not_alphanumeric_string(secret):
        return True
    return heuristic.is_indirect_reference(line)


@functools.cache
def _shortest_match() -> int:
    """The fewest characters any pattern-based detector can match (from the patterns themselves)."""
    try:  # the standard library's own pattern parser gives exact widths
        parser = importlib.import_module("re._parser")
    except ImportError:  # a Python without it: no shortcut, every line is searched
        return 0
    return int(min(parser.parse(p.pattern, p.flags).getwidth()[0] for p in _patterns()))


def _patterns() -> list[re.Pattern[str]]:
    from detect_secrets.plugins.base import RegexBasedDetector

    return [p for d in _detectors() if isinstance(d, RegexBasedDetector) for p in d.denylist]


@functools.cache
def _any_pattern() -> re.Pattern[str]:
    """The union of the pattern-based detectors' patterns (each keeps its own flags)."""
    parts = []
    for pattern in _patterns():
        flags = "".join(
            letter for flag, letter in ((re.I, "i"), (re.M, "m"), (re.S, "s"), (re.X, "x")) if pattern.flags & flag
        )
        parts.append(f"(?{flags}:{pattern.pattern})" if flags else f"(?:{pattern.pattern})")
    return re.compile("|".join(parts))


@functools.cache
def _detectors() -> tuple[Any, ...]:
    from detect_secrets.plugins.artifactory import ArtifactoryDetector
    from detect_secrets.plugins.aws import AWSKeyDetector
    from detect_secrets.plugins.azure_storage_key import AzureStorageKeyDetector
    from detect_secrets.plugins.basic_auth import BasicAuthDetector
    from detect_secrets.plugins.cloudant import CloudantDetector
    from detect_secrets.plugins.discord import DiscordBotTokenDetector
    from detect_secrets.plugins.github_token import GitHubTokenDetector
    from detect_secrets.plugins.gitlab_token import GitLabTokenDetector
    from detect_secrets.plugins.ibm_cloud_iam import IbmCloudIamDetector
    from detect_secrets.plugins.ibm_cos_hmac import IbmCosHmacDetector
    from detect_secrets.plugins.jwt import JwtTokenDetector
    from detect_secrets.plugins.keyword import KeywordDetector
    from detect_secrets.plugins.mailchimp import MailchimpDetector
    from detect_secrets.plugins.npm import NpmDetector
    from detect_secrets.plugins.openai import OpenAIDetector
    from detect_secrets.plugins.private_key import PrivateKeyDetector
    from detect_secrets.plugins.pypi_token import PypiTokenDetector
    from detect_secrets.plugins.sendgrid import SendGridDetector
    from detect_secrets.plugins.slack import SlackDetector
    from detect_secrets.plugins.softlayer import SoftlayerDetector
    from detect_secrets.plugins.square_oauth import SquareOAuthDetector
    from detect_secrets.plugins.stripe import StripeDetector
    from detect_secrets.plugins.telegram_token import TelegramBotTokenDetector
    from detect_secrets.plugins.twilio import TwilioKeyDetector

    classes: tuple[type[Any], ...] = (
        AWSKeyDetector,
        ArtifactoryDetector,
        AzureStorageKeyDetector,
        BasicAuthDetector,
        CloudantDetector,
        DiscordBotTokenDetector,
        GitHubTokenDetector,
        GitLabTokenDetector,
        IbmCloudIamDetector,
        IbmCosHmacDetector,
        JwtTokenDetector,
        KeywordDetector,
        MailchimpDetector,
        NpmDetector,
        OpenAIDetector,
        PrivateKeyDetector,
        PypiTokenDetector,
        SendGridDetector,
        SlackDetector,
        SoftlayerDetector,
        SquareOAuthDetector,
        StripeDetector,
        TelegramBotTokenDetector,
        TwilioKeyDetector,
    )
    return tuple(cls() for cls in classes)
