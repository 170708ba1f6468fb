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

What is scanned is each text as a person would read it: NFKC-normalised (fullwidth letters,
U+FF01 to U+FF5E, become their ASCII letters), with invisible characters removed (zero-width
spaces and joiners, the soft hyphen, bidi controls, every format character and default-ignorable
code point), so a zero-width space inside a token does not hide it; ASCII text, nearly every
write, skips this in one check. The texts of one item are also read together: where one field
ends and another begins (`summary` and `rationale`, custom data's `key` and `value`, consecutive
strings of a list), the last line of the one joined to the first line of the other is scanned
too, so a token split between two fields is found. Long lines are scanned in overlapping slices,
so no token hides across a slice boundary.

What it cannot catch: a secret it has no detector for (see the README), look-alike letters of
other scripts (a Cyrillic a for a Latin one), a token split across three or more fields or across
separate calls, or one encoded (base64, hex, reversed). It is a guard against accidents and
careless agents, not against a determined one.

Nothing here verifies a secret against its provider (that would send it over the network). The
library is imported on the first scan, not when Homeport starts.
"""

from __future__ import annotations

import functools
import importlib
import itertools
import re
import unicodedata
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["SecretFinding", "describe_findings", "find_secrets", "normalise"]

_MAX_LINE = 20_000  # longer lines (a base64 image) are scanned in slices of this size
_OVERLAP = 1_000  # ... that overlap by this much, longer than any token a detector matches
_SEAM = _MAX_LINE // 2  # what is read on each side of the place where two fields meet
_SEAMED_FIELDS = 4  # up to this many texts in one item are joined in every order; more, only neighbours
# Where two texts meet, this many words on each side: a secret split anywhere leaves at most this many
# of its words on one side (a private key's header is 5 words; `password = "..."` with a one- to
# three-word value is 3 to 5). Each word costs: the detectors' union reads about 0.4 µs a character.
_SEAM_WORDS = 5
_FIRST_WORDS = re.compile(rf"\s*(?:\S+\s+){{0,{_SEAM_WORDS - 1}}}\S*")
# Invisible characters, removed before scanning: format characters (Unicode category Cf) and the other
# default-ignorable code points (variation selectors, Hangul fillers, the combining grapheme joiner).
# A test checks the class against the running Python's Unicode database.
_INVISIBLE = re.compile(
    "[\u00ad\u034f\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2\u115f\u1160\u17b4\u17b5"
    "\u180b-\u180f\u200b-\u200f\u202a-\u202e\u2060-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0"
    "\ufff0-\ufffb\U000110bd\U000110cd\U00013430-\U0001343f\U0001bca0-\U0001bca3"
    "\U0001d173-\U0001d17a\U000e0000-\U000e0fff]+"
)
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
    too, and so is custom data whose key names a password. A secret found only where two texts of
    one item meet is named by both: `summary+rationale`.
    """
    findings: list[SecretFinding] = []
    seen: set[tuple[str, str, int]] = set()

    def add(kind: str, field: str, number: int) -> None:
        if (kind, field, number) not in seen:
            seen.add((kind, field, number))
            findings.append(SecretFinding(kind, field, number))

    for field, text in _texts(values, prefix):
        text = normalise(text)
        for number, line in enumerate(text.splitlines() or [text], start=1):
            for kind in _kinds_in(line):
                add(kind, field, number)
    found_in = {(f.kind, f.field) for f in findings}
    seams = []
    for (first, before), (second, after) in _seams(values, prefix):
        tail, head = _last_line(before), _first_line(after)
        if tail and head:
            seams.append((first, second, tail + head, len(before.splitlines()) or 1))
    # One search over all of them first: joined by line breaks, nothing a detector finds in one seam is
    # lost (their anchors accept a line break as a start or end), and most writes stop here.
    if seams and _may_hold_secret("\n".join(seam for _, _, seam, _ in seams)):
        for first, second, seam, number in seams:
            for kind in _kinds_in(seam):
                if (kind, first) not in found_in and (kind, second) not in found_in:
                    add(kind, f"{first}+{second}", number)
    return findings


def normalise(text: str) -> str:
    """`text` as scanned: invisible characters removed, then NFKC (fullwidth and other compatibility
    forms become their plain letters). ASCII text is returned as it is."""
    if text.isascii():  # nearly every write: one C-speed check
        return text
    return unicodedata.normalize("NFKC", _INVISIBLE.sub("", text))


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


def _seams(value: Any, path: str) -> Iterator[tuple[tuple[str, str], tuple[str, str]]]:
    """Pairs of texts of one item (normalised), first and second, by field path: the string values of
    one dict in every order (only neighbours past _SEAMED_FIELDS of them), consecutive strings of a list."""
    if isinstance(value, Mapping):
        texts = [(_child(path, key), normalise(v)) for key, v in value.items() if isinstance(v, str) and v]
        if len(texts) <= _SEAMED_FIELDS:
            yield from itertools.permutations(texts, 2)
        else:
            for a, b in itertools.pairwise(texts):
                yield a, b
                yield b, a
        for key, item in value.items():
            yield from _seams(item, _child(path, key))
    elif isinstance(value, list | tuple):
        previous: tuple[str, str] | None = None
        for index, item in enumerate(value):
            here = (f"{path}[{index}]", normalise(item)) if isinstance(item, str) and item else None
            if previous is not None and here is not None:
                yield previous, here
            previous = here
            if not isinstance(item, str):
                yield from _seams(item, f"{path}[{index}]")


def _child(path: str, key: Any) -> str:
    return f"{path}.{key}" if path else str(key)


def _last_line(text: str) -> str:
    """The last words of the text's last line ("" when the text ends with a line break)."""
    lines = text[-_SEAM:].splitlines(keepends=True)
    if not lines or lines[-1].splitlines()[0] != lines[-1]:
        return ""
    reversed_line = lines[-1][::-1]
    words = _FIRST_WORDS.match(reversed_line)
    return reversed_line[: words.end() if words else None][::-1]


def _first_line(text: str) -> str:
    """The first words of the text's first line."""
    lines = text[:_SEAM].splitlines()
    if not lines:
        return ""
    words = _FIRST_WORDS.match(lines[0])
    return lines[0][: words.end() if words else None]


def _word(value: Any) -> bool:
    """A value that can be a password: one word. ("password": "hashed with argon2" is prose, not one.)"""
    return isinstance(value, str) and bool(value) and not any(c.isspace() for c in value)


def _kinds_in(line: str) -> set[str]:
    if not line.strip():
        return set()
    kinds: set[str] = set()
    for start in range(0, max(len(line) - _OVERLAP, 1), _MAX_LINE - _OVERLAP):
        piece = line[start : start + _MAX_LINE]
        keyworded = _keyworded(piece)
        if not keyworded and not _matches_a_pattern(piece):
            continue
        for detector in _detectors():
            if not keyworded and detector.secret_type == "Secret Keyword":
                continue
            for secret in detector.analyze_string(piece):
                if secret and not _filtered(secret, piece, detector):
                    kind = str(detector.secret_type)
                    kinds.add(_PLAIN_KINDS.get(kind, kind))
    return kinds


def _keyworded(text: str) -> bool:
    # The keyword detector's patterns all need one of its keywords and cost more than all the other
    # detectors together; a substring test decides first (a decision's write: 350 -> 144 µs).
    lowered = text.lower()
    return any(stem in lowered for stem in _KEYWORD_STEMS)


def _matches_a_pattern(text: str) -> bool:
    # Every other detector reports only matches of its own patterns, so a text that matches none of
    # them (one pass of their union) holds nothing they would report: exact, and most lines stop here.
    return len(text) >= _shortest_match() and _any_pattern().search(text) is not None


def _may_hold_secret(text: str) -> bool:
    return _keyworded(text) or _matches_a_pattern(text)


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
