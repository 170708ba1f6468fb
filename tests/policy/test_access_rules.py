"""The access rules decide tools first, then workspaces: the most specific matching rule, least access on a tie."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from homeport.errors import ConfigError
from homeport.policy.access_rules import (
    ACCESS_LEVELS,
    AccessRules,
    Principal,
    WorkspaceRule,
    decide_tool,
    decide_workspace_rules,
    matches_principal,
    parse_access_rules,
    pattern_matches,
    specificity,
)

RULES = """
[[tools]]
name = "reviewers read memory"
who = ["group:reviewers"]
allow = ["workspace", "get_decisions", "search"]

[[workspaces]]
name = "acme team"
who = ["ada", "group:platform"]
paths = ["/srv/acme/**"]
access = "write"

[[workspaces]]
name = "acme secrets"
who = "*"
paths = ["/srv/acme/vault"]
access = "none"

[[workspaces]]
name = "shared library"
who = ["claim:org=acme"]
paths = ["/srv/shared/*"]
access = "read"
"""


def rules() -> AccessRules:
    return parse_access_rules(RULES, source="rules.toml")


ADA = Principal("ada")
REVIEWER = Principal.from_claims("rita", {"groups": ["reviewers"], "org": "acme"})
PLATFORM = Principal.from_claims("pat", {"groups": "platform ops"})


def test_a_rule_grants_its_principal_every_workspace_its_pattern_matches():
    for ws in ("/srv/acme", "/srv/acme/app", "/srv/acme/app/sub"):
        assert decide_workspace_rules(rules(), ADA, (ws,), write=True).allowed, ws


def test_a_group_from_a_space_separated_claim_matches():
    assert decide_workspace_rules(rules(), PLATFORM, ("/srv/acme/app",), write=True).allowed


def test_a_more_specific_deny_beats_a_broader_grant_and_is_named():
    decision = decide_workspace_rules(rules(), ADA, ("/srv/acme/vault",), write=False)
    assert not decision.allowed
    assert decision.rules == ("workspaces rule 2 'acme secrets' of rules.toml",)
    assert "refuses 'ada'" in decision.reason


def test_no_matching_rule_refuses():
    decision = decide_workspace_rules(rules(), ADA, ("/srv/other/app",), write=False)
    assert not decision.allowed and decision.rules == ()
    assert "no workspace rule in rules.toml" in decision.reason


def test_read_access_serves_reads_and_refuses_writes_naming_the_rule():
    assert decide_workspace_rules(rules(), REVIEWER, ("/srv/shared/lib",), write=False).allowed
    refused = decide_workspace_rules(rules(), REVIEWER, ("/srv/shared/lib",), write=True)
    assert not refused.allowed and refused.level == "read"
    assert "'shared library'" in refused.reason and "read-only" in refused.reason


def test_a_single_star_stays_in_one_component():
    assert not decide_workspace_rules(rules(), REVIEWER, ("/srv/shared/lib/deep",), write=False).allowed


def test_equally_specific_rules_give_the_least_access():
    both = AccessRules(
        workspaces=(
            WorkspaceRule("w", ("ada",), ("/srv/*",), "write"),
            WorkspaceRule("r", ("group:x",), ("/srv/*",), "read"),
        )
    )
    ada_in_x = Principal("ada", ("x",))
    assert decide_workspace_rules(both, ada_in_x, ("/srv/a",), write=False).allowed
    assert not decide_workspace_rules(both, ada_in_x, ("/srv/a",), write=True).allowed
    assert decide_workspace_rules(both, Principal("ada"), ("/srv/a",), write=True).allowed


def test_a_tool_allowlist_lists_tools_and_groups_and_applies_to_its_principals_only():
    r = rules()
    assert decide_tool(r, REVIEWER, "get_decisions", "memory").allowed
    assert decide_tool(r, REVIEWER, "where_am_i", "workspace").allowed  # by group
    refused = decide_tool(r, REVIEWER, "log_decision", "memory")
    assert not refused.allowed
    assert "'log_decision'" in refused.reason and "reviewers read memory" in refused.reason
    assert decide_tool(r, ADA, "log_decision", "memory").allowed  # no allowlist names ada


@pytest.mark.parametrize(
    ("pattern", "name", "expected"),
    [
        ("/srv/**", "/srv", True),
        ("/srv/**", "/srv/a/b", True),
        ("/srv/**/app", "/srv/app", True),
        ("/srv/**/app", "/srv/x/y/app", True),
        ("/srv/*", "/srv/a/b", False),
        ("/srv/a*", "/srv/a-evil", True),
        ("/srv/a", "/srv/a-evil", False),
        ("/srv/a", "/srv/a/b", False),
        ("acme/*", "acme/app", True),
    ],
)
def test_patterns_match_by_path_components(pattern, name, expected):
    assert pattern_matches(pattern, name) is expected


def test_specificity_counts_literal_components():
    assert specificity("/srv/acme/**") == 2
    assert specificity("/srv/acme/vault") == 3
    assert specificity("/srv/a*/x") == 2


@pytest.mark.parametrize(
    ("matcher", "expected"),
    [("*", True), ("rita", True), ("group:reviewers", True), ("claim:org=acme", True), ("claim:org=beta", False)],
)
def test_principal_matchers(matcher, expected):
    assert matches_principal(matcher, REVIEWER) is expected


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ("[[workspaces]]\nwho='a'\npaths='/x'\naccess='admin'", "access must be one of none, read, write"),
        ("[[workspaces]]\nwho='a'\naccess='read'", "paths must be a non-empty string"),
        ("[[workspaces]]\nwho='a'\npaths='/x'\naccess='read'\nwrite=true", "unknown key write"),
        ("[[tools]]\nwho=[]\nallow='memory'", "who must be a non-empty"),
        ("[rules]\n", "unknown section rules"),
        ("[[workspaces]\n", "not valid TOML"),
    ],
)
def test_invalid_rules_are_refused_with_the_cause(text, named):
    with pytest.raises(ConfigError) as err:
        parse_access_rules(text, source="rules.toml")
    assert named in err.value.message and "rules.toml" in err.value.message


# The property: over small random rule sets, principals and workspaces, a call is allowed exactly
# when some matching rule grants it and no matching rule at least as specific gives less.
_PATTERNS = ["/p", "/p/*", "/p/**", "/p/a", "/p/a/**", "/p/a/b", "/p/*/b", "/p/**/b", "/q/**", "/**"]
_WORKSPACES = ["/p", "/p/a", "/p/b", "/p/a/b", "/p/c/b", "/q/a", "/r"]
_WHO = ["*", "ada", "bob", "group:g", "claim:org=acme"]

_rule = st.builds(
    lambda i, who, paths, access: WorkspaceRule(f"r{i}", tuple(who), tuple(paths), access),
    st.integers(0, 99),
    st.lists(st.sampled_from(_WHO), min_size=1, max_size=2),
    st.lists(st.sampled_from(_PATTERNS), min_size=1, max_size=2),
    st.sampled_from(ACCESS_LEVELS),
)
_principal = st.builds(
    lambda name, groups, org: Principal(name, tuple(groups), {"org": org}),
    st.sampled_from(["ada", "bob", "cy"]),
    st.lists(st.sampled_from(["g", "h"]), max_size=2),
    st.sampled_from(["acme", "beta"]),
)


def _oracle(rules: list[WorkspaceRule], who: Principal, workspace: str, write: bool) -> bool:
    need = ACCESS_LEVELS.index("write" if write else "read")

    def level(rule: WorkspaceRule) -> int | None:
        if not any(matches_principal(m, who) for m in rule.who):
            return None
        hits = [specificity(p) for p in rule.paths if pattern_matches(p, workspace)]
        return max(hits) if hits else None

    matching = [(level(r), r) for r in rules if level(r) is not None]
    return any(
        ACCESS_LEVELS.index(g.access) >= need
        and not any(s2 >= s1 and ACCESS_LEVELS.index(d.access) < need for s2, d in matching)  # type: ignore[operator]
        for s1, g in matching
    )


@settings(max_examples=400, deadline=None)
@given(st.lists(_rule, max_size=6), _principal, st.sampled_from(_WORKSPACES), st.booleans())
def test_allowed_exactly_when_a_rule_grants_and_no_rule_as_specific_denies(rule_list, who, workspace, write):
    decision = decide_workspace_rules(AccessRules(workspaces=tuple(rule_list)), who, (workspace,), write=write)
    assert decision.allowed == _oracle(rule_list, who, workspace, write)
    if decision.allowed:
        assert decision.rules, "an allowed call names the rule that granted it"
