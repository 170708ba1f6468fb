"""Logical workspace keys and git remotes: every accepted key round-trips, every refusal has a reason,
and a remote's key is the same for each way of writing it, free of credentials, and stable."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from homeport.errors import InvalidWorkspaceError
from homeport.workspace.keys import MAX_KEY_LENGTH, key_from_remote, key_problem, looks_like_path, validate_key

SEGMENT_CHARS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-"
segments = st.text(SEGMENT_CHARS, min_size=1, max_size=20).filter(lambda s: s not in (".", ".."))
keys = st.lists(segments, min_size=1, max_size=6).map("/".join).filter(lambda k: len(k) <= MAX_KEY_LENGTH)


@given(keys)
def test_every_accepted_key_round_trips_unchanged(key: str) -> None:
    assert key_problem(key) is None
    assert validate_key(key) == key
    assert not looks_like_path(key)


@given(st.text(max_size=240))
def test_every_refused_key_says_why_and_names_the_value(value: str) -> None:
    problem = key_problem(value)
    if problem is None:
        assert validate_key(value) == value
        return
    with pytest.raises(InvalidWorkspaceError) as caught:
        validate_key(value)
    assert problem in caught.value.message and repr(value) in caught.value.message


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        ("", "empty"),
        ("/srv/acme", "empty segment"),
        ("acme/", "empty segment"),
        ("acme//api", "empty segment"),
        ("acme/../etc", "'..' segment"),
        ("./acme", "'.' segment"),
        ("acme/a pi", "' '"),
        ("acme\\api", "'\\\\'"),
        ("a" * (MAX_KEY_LENGTH + 1), "at most 200"),
    ],
)
def test_refusals_name_their_reason(value: str, reason: str) -> None:
    problem = key_problem(value)
    assert problem is not None and reason in problem


@pytest.mark.parametrize(
    "url",
    [
        "https://github.com/acme/api.git",
        "https://github.com/acme/api",
        "https://github.com/acme/api/",
        "https://user:s3cret@github.com/acme/api.git",
        "https://x-access-token:ghp_abc123@GitHub.com:443/acme/api.git",
        "git@github.com:acme/api.git",
        "git@github.com:acme/api",
        "ssh://git@github.com/acme/api",
        "ssh://git@github.com:22/acme/api.git",
        "git://github.com/acme/api.git",
        "github.com/acme/api",
    ],
)
def test_every_spelling_of_one_remote_gives_one_key(url: str) -> None:
    assert key_from_remote(url) == "github.com/acme/api"


@pytest.mark.parametrize("url", ["file:///srv/repos/api.git", "/srv/repos/api.git", "../api", "api", "https://host/"])
def test_remotes_without_a_host_and_path_give_no_key(url: str) -> None:
    assert key_from_remote(url) is None


hosts = st.lists(st.text("abcdefghijklmnopqrstuvwxyz0123456789-", min_size=1, max_size=10), min_size=1, max_size=3).map(
    ".".join
)
secret = st.text("abcdefghijklmnopqrstuvwxyz0123456789", min_size=4, max_size=12).map(lambda s: "SECRET" + s)


@st.composite
def remotes(draw: st.DrawFn) -> tuple[str, str]:
    host = draw(hosts)
    path = "/".join(draw(st.lists(segments, min_size=1, max_size=4)))
    user, password = draw(secret), draw(secret)
    form = draw(st.sampled_from(["https-cred", "https-user", "scp", "ssh", "ssh-port", "key"]))
    url = {
        "https-cred": f"https://{user}:{password}@{host}/{path}",
        "https-user": f"https://{user}@{host}/{path}.git",
        "scp": f"{user}@{host}:{path}",
        "ssh": f"ssh://{user}@{host}/{path}",
        "ssh-port": f"ssh://{user}:{password}@{host}:2222/{path}.git",
        "key": f"{host}/{path}",
    }[form]
    return url, password


@given(remotes())
def test_normalising_a_remote_is_idempotent_and_credential_free(drawn: tuple[str, str]) -> None:
    url, _password = drawn
    key = key_from_remote(url)
    if key is None:
        return
    assert key_problem(key) is None
    assert key_from_remote(key) == key
    assert "SECRET" not in key and "@" not in key and ":" not in key


@given(st.text(max_size=120))
def test_whatever_a_remote_holds_its_key_is_valid_and_stable(url: str) -> None:
    key = key_from_remote(url)
    if key is not None:
        assert key_problem(key) is None
        assert key_from_remote(key) == key
        assert "@" not in key


@pytest.mark.parametrize("value", ["/srv/acme", "file:///srv/acme", "~/src/api", "C:\\src\\api", "C:/src/api"])
def test_paths_are_recognised_as_paths(value: str) -> None:
    assert looks_like_path(value)
