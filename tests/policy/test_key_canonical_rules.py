"""Issue 22, finding 19: access rules on logical keys were case- and suffix-sensitive. A rule denying
`acme/vault` did not cover `acme/Vault`, `acme/vault.`, `acme/vault.git` or `acme/vault/sub`, which
became separate workspaces. Keys are now canonical (lower case, no trailing `.` or `.git` on a
segment) before a rule sees them, a key pattern covers the keys below it, and any two spellings of
one key get the same decision."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from homeport.errors import ConfigError
from homeport.policy.access_rules import Principal, decide_workspace_rules, parse_access_rules
from homeport.workspace.keys import canonical_key

RULES = """
[[workspaces]]
name = "acme"
who = "*"
paths = ["acme/**"]
access = "write"

[[workspaces]]
name = "the vault"
who = "*"
paths = ["acme/vault"]
access = "none"
"""
ADA = Principal("ada")


def decide(rules, key: str, *, write: bool = False):
    # As core.access names a logical workspace: its store's directory (one for every spelling), then its key.
    return decide_workspace_rules(rules, ADA, ("/srv/data/logical-workspaces/the-store", key), write=write)


@pytest.mark.parametrize(
    "key",
    ["acme/vault", "acme/Vault", "ACME/VAULT", "acme/vault.", "acme/vault.git", "acme/vault/sub", "acme/Vault.git/x"],
)
def test_a_rule_denying_a_key_covers_its_other_spellings_and_the_keys_below_it(key: str) -> None:
    rules = parse_access_rules(RULES)
    decision = decide(rules, key)
    assert not decision.allowed, (key, decision.reason)
    assert decision.rules == ("workspaces rule 2 'the vault' of the access rules",)


def test_a_neighbour_is_not_covered_by_the_vault_rule() -> None:
    rules = parse_access_rules(RULES)
    for key in ("acme/vaults", "acme/vault-2", "acme/app", "acme/vaul"):
        assert decide(rules, key, write=True).allowed, key


def test_a_more_specific_rule_below_the_denied_key_still_decides_for_its_keys() -> None:
    rules = parse_access_rules(
        RULES + '\n[[workspaces]]\nwho = "*"\npaths = ["Acme/Vault/Public.git"]\naccess = "read"\n'
    )
    assert decide(rules, "acme/vault/public").allowed
    assert not decide(rules, "acme/vault/public", write=True).allowed
    assert not decide(rules, "acme/vault/private").allowed


def test_a_key_pattern_that_is_nothing_once_canonical_is_refused_when_the_rules_are_read() -> None:
    with pytest.raises(ConfigError, match=r"\.git"):
        parse_access_rules('[[workspaces]]\nwho = "*"\npaths = ["acme/.git"]\naccess = "read"\n')


def test_path_patterns_stay_exact_and_case_sensitive() -> None:
    rules = parse_access_rules('[[workspaces]]\nwho = "*"\npaths = ["/srv/Acme"]\naccess = "write"\n')
    assert decide_workspace_rules(rules, ADA, ("/srv/Acme",), write=True).allowed
    assert not decide_workspace_rules(rules, ADA, ("/srv/acme",), write=True).allowed
    assert not decide_workspace_rules(rules, ADA, ("/srv/Acme/sub",), write=True).allowed


# A canonical key, then ways to write it that must mean the same workspace.
_SEGMENT = st.from_regex(r"[a-z0-9_-][a-z0-9._-]{0,8}", fullmatch=True).filter(lambda s: canonical_key(s) == s)
_KEYS = st.lists(_SEGMENT, min_size=1, max_size=4).map("/".join)
_PATTERNS = st.sampled_from(
    ["acme/**", "acme/*", "acme/vault", "*", "**", "acme/vault/*", "other/**", "ACME/Vault.git"]
)
_LEVELS = st.sampled_from(["none", "read", "write"])


@st.composite
def spelling(draw: st.DrawFn, key: str) -> str:
    out = []
    for segment in key.split("/"):
        cased = "".join(c.upper() if c.isalpha() and draw(st.booleans()) else c for c in segment)
        out.append(cased + draw(st.sampled_from(["", ".", ".git", ".git.", "..", ".GIT"])))
    return "/".join(out)


@st.composite
def two_spellings(draw: st.DrawFn) -> tuple[str, str]:
    key = draw(st.one_of(_KEYS, st.sampled_from(["acme/vault", "acme/vault/sub", "acme/app"])))
    return draw(spelling(key)), draw(spelling(key))


@given(two_spellings(), st.lists(st.tuples(_PATTERNS, _LEVELS), min_size=1, max_size=4), st.booleans())
def test_two_spellings_of_one_key_get_the_same_access_decision(pair, drawn, write) -> None:
    first, second = pair
    assert canonical_key(first) == canonical_key(second)
    text = "".join(f'[[workspaces]]\nwho = "*"\npaths = ["{p}"]\naccess = "{a}"\n' for p, a in drawn)
    rules = parse_access_rules(text)
    assert decide(rules, first, write=write) == decide(rules, second, write=write)
